"""One node: its sources in, its models and its evidence out. No Textual, no parsing of its own.

A :class:`WatchSession` feeds its sources' events (read by its pump, ``tui.session.pump``)
through the :class:`~tui.core.lines.LineAssembler` and the startup tracker, keeps the bounded
scrollback the views render, and composes the owners of what else a node has — each one class,
fed by the session's events, read by whoever needs it:

=================  ==============================  ==========================================
attribute          owner (module)                  what it owns
=================  ==============================  ==========================================
``gpus``           ``GpuBoard`` (models)           the GPU samples: the one stamped buffer the
                                                   verdict reads, the panel's latest, sparklines
``process``        ``ProcessWitnesses`` (process)  the process status: writer discovery's view,
                                                   the runner's word, which one counts
``limits``         ``Allowance`` (limits)          ``--stall-limit`` and ``--timeout`` (given at
                                                   construction), history's phase times, time left
``times``          ``StartupTimes`` (times)        when output came and went quiet; elapsed time
                                                   in the log's own clock
``weight``         ``WeightLoad`` (weight_load)    the weight load's bytes, the counting bars
``smoke``          ``SmokeRequest`` (smoke)        ``--smoke``'s one completion
``rest``           ``RestOfLog`` (rest)            what is unread of a log whose writer is gone
``blocks``         ``ErrorBlocks`` (blocks)        error blocks styled as they grow, read back
``judging``        ``Judging`` (judging)           the verdict, decided here once and pushed
``notices``        ``Notices`` (notices)           who hears the session, and when
=================  ==============================  ==========================================

``evidence`` assembles the node's :class:`~tui.core.evidence.Evidence` from them, once, for its
judging stage (the one caller of ``judge``). ``--health`` (``health``) and the connection to the
log's host (``connection``, ``blind``) are single fields, kept here.

Data flows one way: sources -> events -> state (here) -> views.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, assert_never

from tui.core.events import (
    CacheGrowth,
    CheckpointFound,
    ConnectionState,
    DiskBusy,
    ErrorFound,
    GpuSample,
    GpuUnavailable,
    LogChunk,
    LogGap,
    LogLimited,
    LogMoved,
    LogRestart,
    LineUnparsed,
    LogTruncated,
    LogWaiting,
    NewStartup,
    NoWriter,
    PhaseEnded,
    PhaseProgress,
    PhaseStarted,
    ProcessExited,
    ProcessStarted,
    ProcessStopping,
    ReadCounters,
    ServerDetected,
    Ready,
    SlurmJobState,
    SlurmTaskEnded,
    SmokeAnswered,
    SourceEvent,
    Stopped,
    TrackerEvent,
    WarningFound,
    WriterGone,
    WritersFound,
)
from tui.core.limits import StallLimits
from tui.core.lines import Line, LineAssembler, Progress
from tui.core.state import FAILED, READY, STARTING, StartupState
from tui.core.profiles import Profile, ProfileError
from tui.core.events import HealthStatus
from tui.core.evidence import Evidence, Weighing
from tui.core.verdict import ProcessStatus, Verdict, gpu_activity
from tui.core.wording import connection_said, log_notice
from tui.session.blocks import BLOCK_LINES, ErrorBlocks
from tui.session.judging import Judging, NoteFound
from tui.session.notices import Hearer, Notices, SessionEvent, Subscriber
from tui.session.pump import Pump
from tui.session.limits import Allowance
from tui.session.process import ProcessWitnesses
from tui.session.rest import RestOfLog, size_words
from tui.session.smoke import SmokeRequest
from tui.session.times import StartupTimes
from tui.session.weight_load import WeightLoad
from tui.session.models import (
    CODES,
    ERROR,
    MARK,
    NORMAL,
    NOTABLE,
    PHASE,
    PROGRESS,
    STYLES,
    WARNING,
    BlockText,
    GpuBoard,
    LogEntry,
    Scrollback,
    SessionInfo,
    Silence,
    Topic,
    Update,
)
from tui.sources.base import EventSource, StartupFollower

if TYPE_CHECKING:
    from tui.core.hints import Diagnosis
    from tui.core.scan import LineFeeder

__all__ = [
    "CODES", "ERROR", "MARK", "NORMAL", "NOTABLE", "PHASE", "PROGRESS", "STYLES", "WARNING",
    "BlockText", "GpuBoard", "LogEntry", "Scrollback", "SessionEvent", "SessionInfo", "Silence", "Subscriber",
    "Topic", "Update", "WatchSession",
]

#: Log silence (s) after which an open traceback whose exception line came is over.
QUIET_S = 0.5


def marker_search(profile: Any = None):
    """Where a line may hold a marker word of any profile: lines without one cannot change
    the startup state, so a flood of "Decode batch" lines costs the tracker nothing (the
    rule `watchtower scan` uses, tui.core.scan). One pass per chunk finds the byte offsets
    of every word; a line spanning two chunks is checked on its own text."""
    from tui.core.profiles import builtin_profiles, prefilter_words
    from tui.core.scan import prefilter

    profiles = builtin_profiles() + ([profile] if profile is not None else [])
    return prefilter(tuple(sorted(set(prefilter_words(profiles)))))


def line_style(events: Sequence[TrackerEvent], number: int, style: str) -> str:
    """The style line ``number`` is appended with, from what the tracker found on it: a phase's
    line, a warning (the last event's wins) — styled once, before it is shown."""
    for event in events:
        match event:
            case PhaseStarted() | PhaseEnded() | Ready() | Stopped() if event.line == number:
                style = PHASE
            case WarningFound() | LineUnparsed() if event.line == number:
                style = WARNING
    return style


EventHandler = Callable[[Any], None]


class WatchSession:
    """Sources in, models out. Create it, ``subscribe``, then ``start()`` inside a running loop.

    Extension points for the launcher: :meth:`add_source` (a process event stream),
    :attr:`handlers` (extra callbacks per source event type) and :meth:`new_attempt`.
    """

    def __init__(
        self,
        *,
        log: EventSource | None = None,
        gpu: EventSource | None = None,
        profile: Profile | None = None,
        info: SessionInfo | None = None,
        scrollback: int = 100_000,
        clock: Callable[[], float] = time.time,
        max_rate: float = 15.0,
        stall_limits: StallLimits | None = None,
        timeout: float | None = None,
    ) -> None:
        self.info = info or SessionInfo()
        self.clock = clock
        self.profile = profile
        #: Its limits, given once here, and history's phase times (``tui.session.limits``).
        self.limits = Allowance(stall_limits, timeout)
        #: The server's process, as writer discovery and the runner that started it see it (``tui.session.process``).
        self.process = ProcessWitnesses()
        #: A launch refused by its preflight (``refuse``): its verdict and the checks that failed.
        self.refusal: Verdict | None = None
        self.refused_checks: Sequence[Any] = ()
        #: The launched command line's numbers, for the hints (``tui.core.cmdline``; a launch's).
        self.command_facts: Any = None
        #: How a line of the log is shown in a verdict (a launch masks its secrets).
        self.mask: Callable[[str], str] = str
        #: Its sources and background tasks (``tui.session.pump``).
        self.pump = Pump(self.handle, self._source_failed)
        #: The weight load's bytes and the counting bars (``tui.session.weight_load``): the model
        #: folder is measured here for a local log, on the log's host (``watch --host``) by the probe agent.
        target = getattr(log, "target", None)
        self.weight = WeightLoad(here=getattr(log, "reread_path", None) is not None,
                                 host=None if target is None else str(target), add_source=self.add_source,
                                 state=lambda: self.tracker.state, clock=clock)
        #: ``--smoke``: after the ready line, one tiny completion; ready only once it answered (``tui.session.smoke``).
        self.smoke = SmokeRequest()
        self.scrollback = Scrollback(scrollback, time_of=self._line_time)
        #: Its GPU samples, the one buffer (``GpuBoard``), and where they come from.
        self.gpus = GpuBoard(None if gpu is None else getattr(gpu, "kind", "?"))
        self.connection: ConnectionState | None = None
        self.connected_once = False  # the log's host was reached at least once (a later loss is "lost")
        self.health: HealthStatus | None = None  # --health: what the URL answered last
        self.waiting: str | None = None  # why the log is not being read yet
        #: When its output came and went quiet, its elapsed time in log time (``tui.session.times``).
        self.times = StartupTimes(clock)
        self.handlers: dict[type, list[EventHandler]] = {}
        self.badges: dict[str, str] = {}  # extra header fields, e.g. {"health": "pending"}
        #: The local file the log source reads: a block's old lines can be re-read from it by offset.
        self.log_file: str | None = getattr(log, "reread_path", None)
        #: What is left to read of the log once its writer is gone: the verdict waits for it (``tui.session.rest``).
        self.rest = RestOfLog(self.log_file, lambda: self._stream_base + self._assembler.offset)
        self._stream_base = 0  # file offset of the stream's first byte
        for source in (log, gpu):
            if source is not None:
                self.pump.add(source)
        self._gpu_source = gpu
        #: A local log read from its start: what it holds when the session starts is its backlog (``rest``).
        self._from_start = getattr(log, "from_end", True) is False
        # sources that follow the startup (the simulated GPUs tie their memory curve to the phases)
        self._followers = [s.feed for s in self.pump.sources if isinstance(s, StartupFollower)]
        self._closers: list[Callable[[], Awaitable[None]]] = []  # ``close_with``
        self._quiet_handle: asyncio.TimerHandle | None = None
        self.blocks = ErrorBlocks(self.scrollback)  # error blocks styled as they grow, read back whole
        #: The verdict, decided here once (after each batch and each second) and pushed.
        self.judging = Judging(self.reading, self.own_hints, self.quiet_note)
        #: Who hears it: subscribers told what changed (throttled), hearers each event (``tui.session.notices``).
        self.notices = Notices(max_rate, self._judge_for_views)
        self._ticker: asyncio.Task[None] | None = None
        self._deadline: asyncio.TimerHandle | None = None  # --timeout's, from start()
        self._quiet_note: tuple[tuple[int, int, str], Diagnosis | None] | None = None  # (state key, note)
        self._new_tracker()

    # ---------------------------------------------------------------- public

    @property
    def state(self) -> StartupState:
        return self.tracker.state

    def subscribe(self, callback: Subscriber) -> None:
        """``callback`` is told what changed, at most ``max_rate`` times a second (``Notices``)."""
        self.notices.subscribe(callback)

    def listen(self, *, lines: bool = False) -> asyncio.Queue[SessionEvent]:
        """A queue of every tracker event and source notice (not log chunks or GPU samples)
        from now on, in order, none dropped; with ``lines`` each log :class:`Line` too."""
        return self.notices.listen(lines=lines)

    def hear(self, put: Hearer, *, lines: bool = False) -> None:
        """``put`` is told what :meth:`listen` queues, as it happens (several nodes' into one queue)."""
        self.notices.hear(put, lines=lines)

    def quiet(self) -> None:
        """The log has been quiet a while: tracebacks whose exception line came are over."""
        self._apply(self.tracker.quiet())
        self.notices.changed("state")

    def probe_health(self, url: str, host: str | None = None) -> None:
        """``--health URL``: ready needs it to answer 200 too (asked from ``host``'s machine)."""
        from tui.sources.health import HealthSource

        self.health = HealthStatus(url)
        self.add_source(HealthSource(url, host))

    def add_source(self, source: EventSource) -> None:
        """Add an event source (a launch's process and log events); starts it if running."""
        self.pump.add(source)

    def start(self) -> None:
        """Start pumping every source (call from inside the running event loop)."""
        if not self.pump.running:
            if self._from_start:
                self.rest.mark_backlog()  # a watch that ends on a verdict reads what the file holds first
            self.tracker.prime()
            self.pump.start()
            self._ticker = asyncio.create_task(self._tick())
            if self.limits.timeout is not None:
                self._deadline = asyncio.get_running_loop().call_later(self.limits.timeout, self.time_out)

    async def _tick(self) -> None:
        """Silence, stall limits and countdowns change with time alone: decide once a second
        while someone follows the verdict."""
        while True:
            await asyncio.sleep(1.0)
            if self.judging.subscribed:
                self.judging.evaluate()

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        await self.pump.stop()
        self.notices.close()
        if self._quiet_handle is not None:
            self._quiet_handle.cancel()
            self._quiet_handle = None
        for close in self._closers:
            await close()

    def close_with(self, close: Callable[[], Awaitable[None]]) -> None:
        """Await ``close`` when the session stops, after its sources: what writes for it in the
        background (the memory of its startups) finishes, whichever front end stops it."""
        self._closers.append(close)

    async def wait(self) -> None:
        """Until every source has ended (a replay that has played out, for instance)."""
        await self.pump.wait()

    def new_attempt(self, attempt: int, log_path: str | None = None) -> None:
        """A relaunch: a fresh tracker and clock; the scrollback keeps the old lines above a marker."""
        self._flush_pending_line()
        self.info.attempt = attempt
        if log_path is not None:
            self.info.log_path = log_path
        self._new_tracker()
        self.judging.new_attempt()
        self.weight.new_attempt()
        self.limits.new_attempt()
        self.smoke.reset()
        self.scrollback.mark(f"── attempt v{attempt} ──")
        self.scrollback.new_file()
        self.times = StartupTimes(self.clock)
        self.process.new_attempt()
        self.notices.changed("log", "state")

    def time_out(self) -> None:
        """The ``--timeout`` passed: a startup still undecided stays 'timed out' from now on."""
        if self.state.outcome == STARTING and self.process.exit is None:
            self.limits.timed_out = True
            self.notices.changed("state")

    def startup_elapsed(self) -> float | None:
        """Time since the startup began, in the log's own time (``StartupTimes.startup_elapsed``)."""
        return self.times.startup_elapsed(self.state, self.info.attempt)

    def verdict(self) -> Verdict:
        """The verdict now, as the judging stage decides it (and pushes it, when it changed)."""
        return self.judging.evaluate().verdict

    def own_hints(self, _verdict: Verdict | None = None) -> list[Diagnosis]:
        """Known-failure hints from the log's own errors, with the launched command line's numbers
        where a launch told them; none while the startup has not failed. After a refused launch,
        the failed checks (those with a fix first: what ``F`` applies)."""
        if self.refusal is not None:
            failed = [check.diagnosis() for check in self.refused_checks]
            return [d for d in failed if d.fix] + [d for d in failed if not d.fix]
        if self.state.outcome != FAILED and self.process.exit is None and self.process.launched is None:
            return []
        from tui.core.hints import knowledge  # (not at a watch's start: see quiet_note)

        try:
            return knowledge().diagnose(self.state, self.command_facts)
        except ProfileError:  # refused with its one line when the watch began
            return []

    # ---------------------------------------------------------------- what others tell

    def refuse(self, verdict: Verdict | None, checks: Sequence[Any] = ()) -> None:
        """The launch's preflight refused it (its verdict and failed checks), or None: a launch started."""
        self.refusal, self.refused_checks = verdict, tuple(checks)
        self.info.refused = verdict is not None

    def quiet_note(self) -> Diagnosis | None:
        """Why this start takes long (a restart whose torch.compile cache key changed), else what a
        server quiet after its last line is doing meanwhile (a silent Hub download, a compile)."""
        state = self.state
        key = (state.lines, state.attempt, state.outcome)
        if self._quiet_note is not None and self._quiet_note[0] == key:
            return self._quiet_note[1]  # decided each second and each batch: only new lines change it
        if not (state.last_text or state.earlier):
            # nothing read yet (a watch's first frame): nothing is quiet, and the hints module need not
            # be imported (its import and what only it needs were ~5 ms of the first paint, measured)
            self._quiet_note = (key, None)
            return None
        from tui.core.hint_need import may_explain_quiet

        if not may_explain_quiet(state):
            self._quiet_note = (key, None)
            return None
        from tui.core.hints import knowledge  # (only where a hint may speak)

        try:
            kb = knowledge()
        except ProfileError:
            return None
        note = next(iter(kb.restart_advice(state)), None) or kb.for_quiet(state)
        self._quiet_note = (key, note)
        return note

    def reading(self) -> Verdict | Weighing:
        """What the judging stage decides from: a refused launch's verdict, else the log weighed
        with this node's evidence (``evidence``)."""
        if self.refusal is not None:
            return self.refusal
        status = self.process.status()
        if status is not None and (not status.alive or status.lost) and (left := self.rest.left()):
            # the writer is gone (as writer discovery or the runner saw it: a server that dies at once
            # is gone before discovery finds it) and its file is final: judged once read to its end
            rest = f"the server's process is gone: reading the rest of the log ({size_words(left)}) before judging"
            return Weighing(self.state, self.evidence(None), pending=rest)
        return Weighing(self.state, self.evidence(status))

    def evidence(self, process: ProcessStatus | None) -> Evidence:
        """This node's evidence now, with ``process`` as its process status (``process_status``):
        the one assembly every mode's verdict reads."""
        now = self.clock()
        state = self.state
        progress = self.scrollback.progress
        last_line = progress.text if progress is not None else (state.last_text or None)
        since = self.times.last_output_at or self.process.began()  # (before a line: since it started)
        return Evidence(
            process=process,
            health=self.health,
            gpus=gpu_activity(self.gpus.readable(), now, pids=self.process.writers.pids or None),
            now=now,
            last_activity=None if self.times.finished_at is not None else since,
            last_line=None if last_line is None else self.mask(last_line)[-160:],
            waiting=self.waiting,
            elapsed=self.startup_elapsed(),
            expected_phase=self.limits.expected_now(state),
            limits=self.limits.stall,
            eta=None if self.process.launched is None else self.limits.time_left(state, now, self.process.launched_since or now),
            timed_out=self.limits.timeout if self.limits.timed_out else None,
            blind=self.blind(),
            loading=self.weight.words(),
            smoke=self.smoke.status if self.smoke.wanted else None,
        )

    def blind(self) -> str | None:
        """Why neither the log nor its processes can be seen now: the connection to the host lost
        (or never made). None while connected, or before the first try has failed."""
        conn = self.connection
        if conn is None or conn.state in ("connected", "connecting"):
            return None
        detail = f": {connection_said(conn)}" if conn.detail else ""  # (its host said once)
        if not self.connected_once:
            return f"never connected to {conn.host}{detail}"
        return f"connection to {conn.host} lost{detail}"

    def handle(self, event: SourceEvent) -> None:
        """Apply one source event (synchronously; the pumps call this)."""
        match event:
            case LogChunk():
                if self._assembler.offset == 0:
                    self._stream_base = event.offset
                self._feed_chunk(event.data)
            case GpuSample():
                self.gpus.update(event, self.clock())
                writers = self.process.writers
                self.weight.load.gpus(event, self.clock(), writers.pids or None)
                self.notices.changed("gpu", *(("process",) if writers.apply(event) else ()))
            case GpuUnavailable():
                self.gpus.lost(event.reason)
                self.notices.changed("gpu")
            case LogGap() | LogLimited():
                self.scrollback.mark(f"⋯ {log_notice(event)}")
                self.notices.changed("log")
            case LogRestart():
                self._flush_pending_line()
                self.rest.forget_backlog()
                self._apply(self.tracker.finish())  # the old file's open traceback is reported, not lost
                self._assembler.reset()
                self.scrollback.mark(f"── {log_notice(event)} ──")
                self.scrollback.new_file()
                self._tracker_restart()
                self.notices.changed("log", "state")
            case LogTruncated():  # a gap in the same log, not a new attempt
                self._flush_pending_line()
                self.rest.forget_backlog()
                self._assembler.reset()
                self._assembler.skip(event.lines, event.size)
                self.scrollback.mark(f"⋯ {log_notice(event)}")
                if not event.size:
                    self.scrollback.new_file()
                self.notices.changed("log")
            case LogMoved():
                self.scrollback.mark(f"── {log_notice(event)} ──")
                self.notices.changed("log")
            case LogWaiting():
                self.waiting = event.reason
                self.notices.changed("connection")
            case HealthStatus():  # --health: ready also needs the URL to answer
                self.health = event
                if event.ok and self.smoke.wanted and self.state.outcome == READY:
                    self._send_smoke()  # --smoke goes once the URL answers
                self.notices.changed("state")
            case ConnectionState():
                self.connection = event
                self.connected_once = self.connected_once or event.state == "connected"
                self.notices.changed("connection", "state")
            case WritersFound() | WriterGone() | NoWriter():
                writers = self.process.writers
                writers.logged(self.tracker.process_pids)  # who writes the ranks' lines: evidence of a rank
                judged = writers.verdict_inputs()
                if writers.apply(event):  # a helper's coming and going: no judging, no relayout
                    self.notices.changed("process", *(("state",) if writers.verdict_inputs() != judged else ()))
            case ReadCounters():
                self.weight.load.reads(self.clock(), event.counters)
                if self.weight.load.running:
                    self.notices.changed("state")
            case SmokeAnswered():
                if self.smoke.answered(event) and not event.ok:
                    self.scrollback.mark(f"✖ smoke test: {event.detail}")
                self.notices.changed("state")
            case CheckpointFound():
                self.weight.found(event)
                self.notices.changed("state")
            case DiskBusy():  # the checkpoint's block device: how much of the time it had I/O in flight
                self.weight.load.disk_busy(self.clock(), event.busy_ms)
            case ProcessStarted():
                self.notices.changed("process")
            case ProcessExited():
                self.process.exited(event)
                self._flush_pending_line()
                self._apply(self.tracker.process_exited(event.returncode, event.signal, event.at or self.clock()))
                self.times.finish()  # the process is gone: time stops, whatever the log said
                self.notices.changed("process", "state")
            case CacheGrowth():  # a Hugging Face download, seen from its cache folder
                self.weight.load.download(self.clock(), event.on_disk, event.downloading)
                if self.weight.load.running:
                    self.notices.changed("state")
            case ProcessStopping() | SlurmJobState() | SlurmTaskEnded():
                pass  # a stop's countdown is the launch's; a job's state and its tasks' ends are the node set's
            case _:
                assert_never(event)
        for handler in self.handlers.get(type(event), ()):
            handler(event)
        if self.notices.hearers and not isinstance(event, (LogChunk, GpuSample, GpuUnavailable, ReadCounters, DiskBusy)):
            self.notices.tell(event)

    def finish(self) -> None:
        """End of input (a finished replay): the unterminated last line counts."""
        self._flush_pending_line()
        self._apply(self.tracker.finish())
        self.notices.changed("state")

    # ---------------------------------------------------------------- pumping

    def _source_failed(self, source: EventSource, reason: str) -> None:
        """A source stopped with an error (``Pump``): said in the log, and the GPU panel if it was the GPUs'."""
        self.scrollback.mark(f"── {reason} ──")
        if source is self._gpu_source:
            self.gpus.lost(reason)
        self.notices.changed("log", "gpu")

    def _feed_chunk(self, data: bytes) -> None:
        """Log bytes into lines, the lines into the scrollback and (where they can matter) the tracker."""
        base, hits = self._hits(data)
        self._feed_lines(self._assembler.feed(data), hits, base)

    def _hits(self, data: bytes) -> tuple[int, list[int]]:
        """The chunk's starting offset and the offsets of every marker word in it."""
        base = self._assembler.offset
        return base, [base + at for at in self._feeder.words.positions(data)]

    def _feed_lines(self, items: Sequence[Line | Progress], hits: list[int] | None = None, base: int = 0) -> None:
        """Lines into the scrollback, and into the tracker when they can matter to it."""
        now = self.clock()
        self.times.output(now)
        self.waiting = None
        scrollback = self.scrollback
        append = scrollback.append
        tracker = self.tracker
        smoke, listeners = self.smoke.wanted, self.notices.line_hearers
        for item, events in self._feeder.lines(tracker, items, now, hits, base):  # fed to the tracker if it can matter
            if isinstance(item, Progress):
                if scrollback.progress is None or scrollback.progress.number != item.number:
                    scrollback.progress = LogEntry(-1, item.number, item.text, PROGRESS)
                else:
                    scrollback.progress.text = item.text
            else:
                if scrollback.progress is not None and scrollback.progress.number == item.number:
                    scrollback.progress = None
                style = PROGRESS if len(item.segments) > 1 else NORMAL
                append(item.number, item.text, line_style(events, item.number, style) if events else style)
                if smoke and "://" in item.text:
                    self.smoke.heard(item.text)
                for put in listeners:
                    put(item)
            if events:
                self._apply(events, None if isinstance(item, Progress) else item.number)
        if self.blocks.growing:
            self.blocks.style(tracker.state.lines)
        self.times.timestamped(tracker.state.last_ts, now)
        if tracker.classifier.open and self._quiet_handle is None:
            self._quiet_soon()
        self.notices.changed("log")

    def _quiet_soon(self) -> None:
        """A traceback is open: if the log then stays quiet a moment, it is over (its exception
        line came), whoever shows the session — the dashboard as much as ``--plain``."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._quiet_handle = loop.call_later(QUIET_S, self._quiet_if_still)

    def _quiet_if_still(self) -> None:
        self._quiet_handle = None
        last = self.times.last_output_at
        if last is not None and self.clock() - last < QUIET_S:
            self._quiet_soon()  # more came meanwhile
        elif self.tracker.classifier.open:
            self.quiet()

    def _apply(self, events: Iterable[TrackerEvent], styled: int | None = None) -> None:
        """The tracker's events into the session's models (``styled``: the line they came with,
        already appended in its style)."""
        for event in events:
            note = None
            match event:  # (the line just appended was styled as it was: ``line_style``)
                case PhaseStarted() | PhaseEnded() | Ready() | Stopped():
                    if event.line != styled:
                        self._style_line(event.line, PHASE)
                case LineUnparsed():
                    if event.line != styled:
                        self._style_line(event.line, WARNING)
                    self.scrollback.mark(f"⚠ {event.text}")
                case WarningFound():
                    if event.line != styled:
                        self._style_line(event.line, WARNING)
                    note = self.judging.warning(event.text, event.line, self.state.server)
                case ErrorFound():
                    self.blocks.grow(event.error, self.tracker.state.lines)
                case NewStartup():
                    self._new_startup(event)
                case ServerDetected() | PhaseProgress():
                    pass
                case _:
                    assert_never(event)
            if isinstance(event, PhaseStarted):
                self.limits.phase_began(event.phase, self.clock())
            self.weight.tracker_event(event, self.clock())
            for follower in self._followers:
                follower(event)
            self.notices.tell(event)
            if note is not None:  # the warning's hint, new this attempt: after the warning itself
                self.notices.tell(NoteFound(note))
            self.notices.mark("state")
        state = self.tracker.state
        if state.outcome in (READY, FAILED):
            self.times.finish()
        if self.pump.running:
            self.weight.measure(state.identity, self.pump.spawn, self.handle)
        if self.smoke.wanted and self.smoke.status is None and state.outcome == READY:
            self._send_smoke()

    # ---------------------------------------------------------------- --smoke

    def _send_smoke(self) -> None:
        """Send ``--smoke``'s one completion (once per startup; after ``--health`` answered where given)."""
        if self.pump.running and self.smoke.send(self.state, self.health, self.pump.spawn, self.handle):
            self.notices.changed("state")

    def _new_startup(self, event: NewStartup) -> None:
        """A new startup in the same log: its clock and silences start afresh (the tracker's
        state already has); the scrollback marks where."""
        self._style_line(event.line, PHASE)
        self.scrollback.mark(f"── new startup at line {event.line} (attempt {event.attempt} in this log) ──")
        self.judging.new_attempt()
        self.weight.new_startup(event.previous.number)
        self.times.new_startup()
        self.smoke.reset()
        self.notices.mark("log")

    def error_entries(self) -> list[LogEntry]:
        """Each error's exception line in the scrollback (the last line of its block, where a
        traceback says what was raised; else its first), where still kept."""
        scrollback = self.scrollback
        found = (scrollback.find_line(error.end_line or error.line) or scrollback.find_line(error.line)
                 for error in self.state.errors)
        return [entry for entry in found if entry is not None]

    def block_text(self, error: Any, limit: int = BLOCK_LINES) -> BlockText:
        """Every line of ``error``'s block, or past ``limit`` lines its head and tail (``ErrorBlocks.text``)."""
        return self.blocks.text(error, self.log_file, self._stream_base, limit)

    def _style_line(self, number: int, style: str) -> None:
        entry = self.scrollback.find_line(number)
        if entry is not None:
            self.scrollback.restyle(entry, style)

    def _flush_pending_line(self) -> None:
        if self._assembler.pending:
            self._feed_lines(self._assembler.flush())
        self.scrollback.progress = None

    def _line_time(self, text: str) -> float | None:
        """A scrollback line's own time, by the profile the tracker reads the log as now: read when
        the log merged across nodes first asks for it, so a single node's flood pays nothing."""
        return self._line_times.time_of(text, self.tracker.profile, self.clock())

    @functools.cached_property
    def _feeder(self) -> LineFeeder:
        """The tracker's line filter (the marker words of every profile and this one), made at the
        first chunk, not with the session: compiling its words is 7 ms that a watch's first paint
        need not wait for; a restart keeps it, as the words do not change."""
        from tui.core.scan import LineFeeder

        return LineFeeder(marker_search(self.profile))

    def _new_tracker(self) -> None:
        from tui.core.line_time import LineTimes
        from tui.core.tracker import StartupTracker

        self.tracker = StartupTracker(profile=self.profile)
        self._line_times = LineTimes()  # each line's own time, by the profile the tracker reads the log as
        self._assembler = LineAssembler()
        self.weight.restart()
        self.blocks.clear()
        self._quiet_note = None

    def _tracker_restart(self) -> None:
        self.tracker.restart()
        self._quiet_note = None
        self.weight.restart()
        self.blocks.clear()
        self.times.new_file()

    # ---------------------------------------------------------------- notifying

    def flush(self) -> None:
        """Tell the subscribers what changed since last time, now (``Notices.flush``)."""
        self.notices.flush()

    def _judge_for_views(self) -> None:
        if self.judging.subscribed:
            self.judging.evaluate()  # before the views are told: they render what it decided
