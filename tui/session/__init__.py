"""The glue between live sources and the views: no Textual, no parsing of its own.

A :class:`WatchSession` owns the sources (a log tailer, a GPU source, later the
launched process), pumps their events through the :class:`~tui.core.lines.LineAssembler`
and the startup tracker, and keeps the models the views render: the startup state,
a bounded scrollback, GPU history and the connection state. Subscribers (the app)
are told *that* something changed, at most ``max_rate`` times a second, however
fast the log grows — the views pull what they need from the session then. Text
presenters (``--plain``) ``hear()`` instead (or ``listen()``, a queue of their own): told
every tracker event and source notice as it happens, unthrottled and lossless.

Data flows one way: sources -> events -> state (here) -> views. The models it keeps are
in ``tui.session.models``; the session itself stays one class (pumping, styling, notifying
share its state), hence this module's length.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, assert_never

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
from tui.core.counting import CountEstimate, CountEstimator
from tui.core.loading import Checkpoint, LoadEstimate, LoadEstimator, LoadFacts, LoadReads, split_of
from tui.core.state import FAILED, PHASE_TITLES, READY, STARTING, StartupState, origin
from tui.core.hints import Diagnosis, knowledge
from tui.core.profiles import Profile, ProfileError
from tui.core.events import HealthStatus
from tui.core.evidence import Evidence, judge
from tui.core.verdict import ProcessStatus, SmokeStatus, Verdict, VerdictKind, gpu_activity, listening_port
from tui.core.wording import connection_said, log_notice
from tui.core.writers import WriterState
from tui.session.judging import Judging, NoteFound
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

__all__ = [
    "CODES", "ERROR", "MARK", "NORMAL", "NOTABLE", "PHASE", "PROGRESS", "STYLES", "WARNING",
    "BlockText", "GpuBoard", "LogEntry", "Scrollback", "SessionInfo", "Silence", "Update", "WatchSession",
]

#: Stretches without log output at least this long (seconds, by arrival) are recorded for the timeline.
SILENCE_SECONDS = 5.0
#: Log silence (s) after which an open traceback whose exception line came is over.
QUIET_S = 0.5
#: Bytes of a log chunk fed between two yields to the event loop (cut at a line's end): about
#: 270 serving-log lines, ~1 ms, so a key press in a flood waits behind little feeding.
SLICE_BYTES = 32 * 1024
#: Lines of one error block that copying or a report takes (its head and its tail beyond this).
BLOCK_LINES = 2000
#: Bytes read at most when re-reading a block's lines from the log file.
REREAD_BYTES = 64 << 20
#: Error blocks still styled as they grow, and for how many lines after their last one.
GROWING_BLOCKS, GROWING_LINES = 16, 200


def marker_search(profile: Any = None):
    """Where a line may hold a marker word of any profile: lines without one cannot change
    the startup state, so a flood of "Decode batch" lines costs the tracker nothing (the
    rule `watchtower scan` uses, tui.core.scan). One pass per chunk finds the byte offsets
    of every word; a line spanning two chunks is checked on its own text."""
    from tui.core.profiles import builtin_profiles, prefilter_words
    from tui.core.scan import prefilter

    profiles = builtin_profiles() + ([profile] if profile is not None else [])
    return prefilter(tuple(sorted(set(prefilter_words(profiles)))))


#: How long the rest of a gone writer's log may go without a byte read before it is judged anyway.
REST_PATIENCE_S = 10.0


def _size(nbytes: int) -> str:
    """``1.4 GB``, ``380 MB``, ``12 kB``: a log's size as people say it."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}" if nbytes < 10 * scale else f"{nbytes / scale:.0f} {unit}"
    return f"{nbytes} bytes"


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


#: What ``listen()`` queues, in order: source notices, tracker events, warnings' notes (the
#: judging stage's) and, when asked for, the log's lines. Presenters dispatch on it with ``match``.
SessionEvent = SourceEvent | TrackerEvent | NoteFound | Line
Hearer = Callable[[SessionEvent], None]  # told each event ``listen`` would queue (``hear``)

Subscriber = Callable[[Update], None]
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
    ) -> None:
        self.info = info or SessionInfo()
        self.clock = clock
        self.profile = profile
        self.stall_limits = stall_limits  # --stall-limit
        #: The longest each phase took in earlier startups of the same server, model and TP size
        #: (``tui.history.watched.WatchedStartups`` fills it in once the log has said what it is).
        self.expected: dict[str, float] = {}
        #: Recent GPU samples, stamped with this session's clock on arrival (a replay's clock runs
        #: at its own speed): the verdict reads memory rates and utilisation from them.
        self.gpu_samples: deque[GpuSample] = deque(maxlen=64)
        #: The processes behind the log (writer discovery), for a server Watchtower did not launch.
        self.writers = WriterState()
        #: The weight load's bytes: what there is (the checkpoint, measured once the log names it)
        #: and what has been read so far (tui.core.loading). ``measure_checkpoints``: look at the
        #: model folder on this machine (False for a log on another host: it is not here).
        self.load = LoadEstimator()
        self.checkpoint: CheckpointFound | None = None
        self.measure_checkpoints = getattr(log, "reread_path", None) is not None
        #: A log on another host (``watch --host``): the checkpoint is measured there, by the probe agent.
        target = getattr(log, "target", None)
        self.measure_host: str | None = None if target is None else str(target)
        self._measured: tuple[str, ...] | None = None
        #: ``--smoke``: after the ready line, one tiny completion to ``smoke_host`` at the port the
        #: log names; ready only once it answered (``smoke`` holds where it stands).
        self.smoke_wanted = False
        self.smoke_host = "127.0.0.1"
        self.smoke: SmokeStatus | None = None
        self._listening: int | None = None  # the port the log last said the server listens on
        #: ``--health``'s answer must come before the smoke test is sent (run/attach set it).
        self.smoke_after_health: Callable[[], bool] | None = None
        self.scrollback = Scrollback(scrollback, time_of=self._line_time)
        self.gpus = GpuBoard()
        self.connection: ConnectionState | None = None
        self.connected_once = False  # the log's host was reached at least once (a later loss is "lost")
        self.health: HealthStatus | None = None  # --health: what the URL answered last
        self.waiting: str | None = None  # why the log is not being read yet
        self.process: ProcessStarted | None = None
        self.exit: ProcessExited | None = None
        self.silences: list[Silence] = []
        self.started_at: float | None = None  # arrival of the first log bytes
        self.finished_at: float | None = None  # when the verdict became ready/failed
        self.last_output_at: float | None = None
        self.handlers: dict[type, list[EventHandler]] = {}
        self.badges: dict[str, str] = {}  # extra header fields, e.g. {"health": "pending"}
        #: ``--timeout``: seconds the startup was given; ``timed_out`` once they passed while starting.
        self.timeout: float | None = None
        self.timed_out = False
        #: The local file the log source reads: a block's old lines can be re-read from it by offset.
        self.log_file: str | None = getattr(log, "reread_path", None)
        #: The server's process is gone (or a rank's) while this many bytes of its log, final now,
        #: are still unread: the verdict waits until they are read (see ``_unread_rest``).
        self.reading_rest: int | None = None
        self._rest_progress: tuple[int, float] | None = None  # (unread bytes, when last fewer)
        self._stream_base = 0  # file offset of the stream's first byte
        self._sources: list[EventSource] = [s for s in (log, gpu) if s is not None]
        self._gpu_source = gpu
        #: A GPU source feeds it (else no sample will ever come: a node with ``gpus = none``).
        self.gpu_watched = gpu is not None
        # sources that follow the startup (the simulated GPUs tie their memory curve to the phases)
        self._followers = [s.feed for s in self._sources if isinstance(s, StartupFollower)]
        self._tasks: list[asyncio.Task[None]] = []
        self._subscribers: list[Subscriber] = []
        self._listeners: list[Hearer] = []  # ``hear``: each told every event, in order
        self._line_listeners: list[Hearer] = []
        self._closers: list[Callable[[], Awaitable[None]]] = []  # ``close_with``
        self._topics: set[Topic] = set()
        self._events: list[Any] = []
        self._flush_handle: asyncio.TimerHandle | None = None
        self._quiet_handle: asyncio.TimerHandle | None = None
        self._last_flush = 0.0
        self._min_interval = 1.0 / max_rate
        self._growing: list[list[Any]] = []  # [error report, last line styled] (reset with the tracker)
        self._last_ts: float | None = None
        self._ts_offset = 0.0  # log time minus arrival time, as of the last timestamped line
        #: The verdict, decided here once (after each batch and each second) and pushed; a launch
        #: takes it over with its own evidence (``Launch.attach``).
        self.judging = Judging(self.own_verdict, self.own_hints, self.quiet_note)
        self._ticker: asyncio.Task[None] | None = None
        self._deadline: asyncio.TimerHandle | None = None  # --timeout's, from start()
        self._download_watched = False  # the model's cache folder is watched (once per session)
        self._disk_watched = False  # the checkpoint's block device is watched (once per session)
        #: attempt number in the log -> what its weight load's processes read (the profile sets them beside)
        self._earlier_reads: dict[int, LoadReads] = {}
        self._quiet_note: tuple[tuple[int, int, str], Diagnosis | None] | None = None  # (state key, note)
        self._new_tracker()

    # ---------------------------------------------------------------- public

    @property
    def state(self) -> StartupState:
        return self.tracker.state

    def subscribe(self, callback: Subscriber) -> None:
        self._subscribers.append(callback)

    def listen(self, *, lines: bool = False) -> asyncio.Queue[SessionEvent]:
        """A queue of every tracker event and source notice (not log chunks or GPU samples)
        from now on, in order, none dropped; with ``lines`` each log :class:`Line` too."""
        queue: asyncio.Queue[SessionEvent] = asyncio.Queue()
        self.hear(queue.put_nowait, lines=lines)
        return queue

    def hear(self, put: Hearer, *, lines: bool = False) -> None:
        """``put`` is told what :meth:`listen` queues, as it happens (several nodes' into one queue)."""
        self._listeners.append(put)
        if lines:
            self._line_listeners.append(put)

    def quiet(self) -> None:
        """The log has been quiet a while: tracebacks whose exception line came are over."""
        self._apply(self.tracker.quiet())
        self._changed("state")

    def probe_health(self, url: str, host: str | None = None) -> None:
        """``--health URL``: ready needs it to answer 200 too (asked from ``host``'s machine)."""
        from tui.sources.health import HealthSource

        self.health = HealthStatus(url)
        self.add_source(HealthSource(url, host))

    def add_source(self, source: EventSource) -> None:
        """Add an event source (a launch's process and log events); starts it if running."""
        self._sources.append(source)
        if self._tasks:
            self._tasks.append(asyncio.create_task(self._pump(source)))

    def start(self) -> None:
        """Start pumping every source (call from inside the running event loop)."""
        if not self._tasks:
            self.tracker.prime()
            self._tasks = [asyncio.create_task(self._pump(s)) for s in self._sources]
            self._ticker = asyncio.create_task(self._tick())
            if self.timeout is not None:
                self._deadline = asyncio.get_running_loop().call_later(self.timeout, self.time_out)

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
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks = []
        for source in self._sources:
            try:
                result = source.close()
                if result is not None:
                    await result
            except Exception:
                pass
        for handle in (self._flush_handle, self._quiet_handle):
            if handle is not None:
                handle.cancel()
        self._flush_handle = self._quiet_handle = None
        for close in self._closers:
            await close()

    def close_with(self, close: Callable[[], Awaitable[None]]) -> None:
        """Await ``close`` when the session stops, after its sources: what writes for it in the
        background (the memory of its startups) finishes, whichever front end stops it."""
        self._closers.append(close)

    async def wait(self) -> None:
        """Until every source has ended (a replay that has played out, for instance)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def new_attempt(self, attempt: int, log_path: str | None = None) -> None:
        """A relaunch: a fresh tracker and clock; the scrollback keeps the old lines above a marker."""
        self._flush_pending_line()
        self.info.attempt = attempt
        if log_path is not None:
            self.info.log_path = log_path
        self._new_tracker()
        self.judging.new_attempt()
        self.load = LoadEstimator(self.load.checkpoint)
        self._earlier_reads.clear()  # a fresh tracker: its attempts are numbered afresh
        self.smoke, self._listening = None, None
        self.scrollback.mark(f"── attempt v{attempt} ──")
        self.scrollback.new_file()
        self.started_at = self.finished_at = self.last_output_at = None
        self.exit = None
        self.silences.clear()
        self._changed("log", "state")

    def time_out(self) -> None:
        """The ``--timeout`` passed: a startup still undecided stays 'timed out' from now on."""
        if self.state.outcome == STARTING and self.exit is None:
            self.timed_out = True
            self._changed("state")

    def elapsed(self) -> float | None:
        """Seconds since the first log bytes arrived, frozen at the verdict."""
        if self.started_at is None:
            return None
        end = self.finished_at if self.finished_at is not None else self.clock()
        return max(0.0, end - self.started_at)

    def quiet_for(self) -> float | None:
        """Seconds since the log last grew, while the startup is still undecided."""
        if self.last_output_at is None or self.finished_at is not None:
            return None
        return max(0.0, self.clock() - self.last_output_at)

    def log_now(self) -> float | None:
        """'Now' in log time: the last timestamp, moved on by the arrival time since; frozen at the
        verdict (when the process died, not at the last line it wrote before a quiet stretch)."""
        last = self.tracker.state.last_ts
        if last is None:
            return last
        now = self.finished_at if self.finished_at is not None else self.clock()
        return max(last, now + self._ts_offset)

    def startup_elapsed(self) -> float | None:
        """Time since the startup began, in the log's own time (right for a log read after the
        fact too); the watcher's own clock before the log has given a timestamp."""
        start, now = origin(self.state), self.log_now()
        if start is not None and now is not None:
            return max(0.0, now - start)
        return self.elapsed()

    def verdict(self) -> Verdict:
        """The verdict now, as the judging stage decides it (and pushes it, when it changed)."""
        return self.judging.evaluate().verdict

    def own_hints(self, _verdict: Verdict | None = None) -> list[Diagnosis]:
        """Known-failure hints from the log's own errors; none while the startup has not failed
        (a launch diagnoses with its command line's numbers instead: ``Launch.hints``)."""
        if self.state.outcome != FAILED and self.exit is None and not self.info.refused:
            return []
        try:
            return knowledge().diagnose(self.state)
        except ProfileError:  # refused with its one line when the watch began
            return []

    def quiet_note(self) -> Diagnosis | None:
        """Why this start takes long (a restart whose torch.compile cache key changed), else what a
        server quiet after its last line is doing meanwhile (a silent Hub download, a compile)."""
        state = self.state
        key = (state.lines, state.attempt, state.outcome)
        if self._quiet_note is not None and self._quiet_note[0] == key:
            return self._quiet_note[1]  # decided each second and each batch: only new lines change it
        try:
            kb = knowledge()
        except ProfileError:
            return None
        note = next(iter(kb.restart_advice(state)), None) or kb.for_quiet(state)
        self._quiet_note = (key, note)
        return note

    def own_verdict(self) -> Verdict:
        """The log, weighed with the GPUs, the silence limits and — for a server Watchtower did
        not launch — its processes: what the judging stage decides unless a launch took it over."""
        status = self.writers.status()
        if status is not None and (not status.alive or status.lost) and self._unread_rest():
            # the writer is gone and its file is final: judged once read to its end, not before
            verdict = judge(self.state, self.evidence(None))
            if verdict.kind in (FAILED, READY):
                return verdict
            return Verdict(VerdictKind.STARTING,
                           f"the server's process is gone: reading the rest of the log ({_size(self.reading_rest or 0)}) before judging")
        return judge(self.state, self.evidence(status))

    def unread_bytes(self) -> int | None:
        """Bytes of the local log file not taken in yet; None where unknown (a remote log, a pipe)."""
        if self.log_file is None:
            return None
        try:
            size = os.stat(self.log_file).st_size
        except OSError:
            return None
        return max(0, size - (self._stream_base + self._assembler.offset))

    def _unread_rest(self) -> int:
        """What is left to read of a log whose writer is gone (``reading_rest``): 0 once all is
        read, where unknown, or when reading made no progress for REST_PATIENCE_S."""
        unread = self.unread_bytes() or 0
        now = time.monotonic()
        if unread and (self._rest_progress is None or unread < self._rest_progress[0]):
            self._rest_progress = (unread, now)
        elif unread and self._rest_progress is not None and now - self._rest_progress[1] > REST_PATIENCE_S:
            unread = 0  # stuck (a file that cannot be read further): judge on what was read
        self.reading_rest = unread or None
        return unread

    def rest_to_read(self) -> str | None:
        """For a log known to be final (its Slurm task ended): "reading the rest of the log (1.4 GB)"
        while bytes are left to read, None once read to its end (or when it cannot be read further)."""
        rest = self._unread_rest()
        return f"reading the rest of the log ({_size(rest)})" if rest else None

    def evidence(self, process: ProcessStatus | None) -> Evidence:
        """This node's evidence now, with ``process`` as its process status (its writers', or the
        one a launch or node set knows): the one assembly every mode's verdict reads."""
        now = self.clock()
        state = self.state
        progress = self.scrollback.progress
        last_line = progress.text if progress is not None else (state.last_text or None)
        samples = () if self.gpus.unavailable else self.gpu_samples
        phase = state.current_phase
        return Evidence(
            process=process,
            health=self.health,
            gpus=gpu_activity(samples, now, pids=self.writers.pids or None),
            now=now,
            last_activity=None if self.finished_at is not None else self.last_output_at,
            last_line=None if last_line is None else last_line[-160:],
            waiting=self.waiting,
            elapsed=self.startup_elapsed(),
            expected_phase=self.expected.get(phase.name) if phase is not None else None,
            limits=self.stall_limits,
            timed_out=self.timeout if self.timed_out else None,
            blind=self.blind(),
            loading=self.loading_words(),
            smoke=self.smoke if self.smoke_wanted else None,
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
                self.gpus.update(event)
                self.gpu_samples.append(dataclasses.replace(event, at=self.clock()))
                self.load.gpus(event, self.clock(), self.writers.pids or None)
                self._changed("gpu", *(("process",) if self.writers.apply(event) else ()))
            case GpuUnavailable():
                self.gpus.lost(event.reason)
                self._changed("gpu")
            case LogGap():
                self.scrollback.mark(f"⋯ {log_notice(event)}")
                self._changed("log")
            case LogRestart():
                self._flush_pending_line()
                self._apply(self.tracker.finish())  # the old file's open traceback is reported, not lost
                self._assembler.reset()
                self.scrollback.mark(f"── {log_notice(event)} ──")
                self.scrollback.new_file()
                self._tracker_restart()
                self._changed("log", "state")
            case LogTruncated():  # a gap in the same log, not a new attempt
                self._flush_pending_line()
                self._assembler.reset()
                self._assembler.skip(event.lines, event.size)
                self.scrollback.mark(f"⋯ {log_notice(event)}")
                if not event.size:
                    self.scrollback.new_file()
                self._changed("log")
            case LogMoved():
                self.scrollback.mark(f"── {log_notice(event)} ──")
                self._changed("log")
            case LogWaiting():
                self.waiting = event.reason
                self._changed("connection")
            case HealthStatus():  # --health: ready also needs the URL to answer
                self.health = event
                if event.ok and self.smoke_wanted and self.smoke is None and self.state.outcome == READY:
                    self.send_smoke()  # --smoke goes once the URL answers
                self._changed("state")
            case ConnectionState():
                self.connection = event
                self.connected_once = self.connected_once or event.state == "connected"
                self._changed("connection", "state")
            case WritersFound() | WriterGone() | NoWriter():
                self.writers.logged(self.tracker.process_pids)  # who writes the ranks' lines: evidence of a rank
                judged = self.writers.verdict_inputs()
                if self.writers.apply(event):  # a helper's coming and going: no judging, no relayout
                    self._changed("process", *(("state",) if self.writers.verdict_inputs() != judged else ()))
            case ReadCounters():
                self.load.reads(self.clock(), event.counters)
                if self.load.running:
                    self._changed("state")
            case SmokeAnswered():
                if self.smoke is not None and self.smoke.url == event.url and self.smoke.answer is None:
                    self.smoke = dataclasses.replace(self.smoke, answer=event)
                    if not event.ok:
                        self.scrollback.mark(f"✖ smoke test: {event.detail}")
                self._changed("state")
            case CheckpointFound():
                before = self.checkpoint
                if before is not None and before.model == event.model and event.filesystem is None:
                    event = dataclasses.replace(event, filesystem=before.filesystem, device=before.device)
                self.checkpoint = event
                if event.total:
                    self.load.checkpoint = Checkpoint(event.model, event.total, event.split, event.draft, event.filesystem,
                                                      self._storage_kind(event.filesystem), event.device)
                self._watch_disk(event.device)
                self._changed("state")
            case DiskBusy():  # the checkpoint's block device: how much of the time it had I/O in flight
                self.load.disk_busy(self.clock(), event.busy_ms)
            case ProcessStarted():
                self.process = event
                self._changed("process")
            case ProcessExited():
                self.exit = event
                self._flush_pending_line()
                self._apply(self.tracker.process_exited(event.returncode, event.signal, event.at or self.clock()))
                if self.finished_at is None:  # the process is gone: time stops, whatever the log said
                    self.finished_at = self.clock()
                self._changed("process", "state")
            case CacheGrowth():  # a Hugging Face download, seen from its cache folder
                self.load.download(self.clock(), event.on_disk, event.downloading)
                if self.load.running:
                    self._changed("state")
            case ProcessStopping() | SlurmJobState() | SlurmTaskEnded():
                pass  # a stop's countdown is the launch's; a job's state and its tasks' ends are the node set's
            case _:
                assert_never(event)
        for handler in self.handlers.get(type(event), ()):
            handler(event)
        if self._listeners and not isinstance(event, (LogChunk, GpuSample, GpuUnavailable, ReadCounters, DiskBusy)):
            for put in self._listeners:
                put(event)

    def finish(self) -> None:
        """End of input (a finished replay): the unterminated last line counts."""
        self._flush_pending_line()
        self._apply(self.tracker.finish())
        self._changed("state")

    # ---------------------------------------------------------------- pumping

    async def _pump(self, source: EventSource) -> None:
        try:
            await self._pump_events(source)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failing source must not take the view down: say so in it
            reason = f"{type(source).__name__} stopped: {exc or type(exc).__name__}"
            self.scrollback.mark(f"── {reason} ──")
            if source is self._gpu_source:
                self.gpus.lost(reason)
            self._changed("log", "gpu")

    async def _pump_events(self, source: EventSource) -> None:
        async for event in source.events():
            if isinstance(event, LogChunk) and len(event.data) > SLICE_BYTES:
                if self._assembler.offset == 0:
                    self._stream_base = event.offset
                await self._feed_in_slices(event.data)
                for handler in self.handlers.get(LogChunk, ()):
                    handler(event)
            else:
                self.handle(event)

    async def _feed_in_slices(self, data: bytes) -> None:
        """A big chunk fed a slice of whole lines at a time, the event loop let through between
        slices: assembling, searching and feeding a 256 KiB read in one go would hold a key press
        (and the screen's refresh) back for ~10 ms."""
        view = memoryview(data)
        start = 0
        while start < len(data):
            end = data.find(b"\n", min(len(data), start + SLICE_BYTES) - 1) + 1 or len(data)
            self._feed_chunk(bytes(view[start:end]))
            start = end
            if start < len(data):
                await asyncio.sleep(0)

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
        if self.started_at is None:
            self.started_at = now
        self._note_silence(now)
        self.last_output_at = now
        self.waiting = None
        scrollback = self.scrollback
        append = scrollback.append
        tracker = self.tracker
        smoke, listeners = self.smoke_wanted, self._line_listeners
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
                    self._listening = listening_port((item.text,)) or self._listening
                for put in listeners:
                    put(item)
            if events:
                self._apply(events, None if isinstance(item, Progress) else item.number)
        if self._growing:
            self._style_blocks()
        last_ts = tracker.state.last_ts
        if last_ts is not None and last_ts != self._last_ts:
            self._last_ts = last_ts
            self._ts_offset = last_ts - now
        if tracker.classifier.open and self._quiet_handle is None:
            self._quiet_soon()
        self._changed("log")

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
        last = self.last_output_at
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
                    self._grow(event.error)
                case NewStartup():
                    self._new_startup(event)
                case ServerDetected() | PhaseProgress():
                    pass
                case _:
                    assert_never(event)
            if getattr(event, "phase", None) == "weight_load":
                self._load_event(event)
            if isinstance(event, PhaseProgress) and (event.total or event.took is not None):
                self.counts.feed(event.phase, self.clock(), event.done or 0, event.total, event.took, event.cached)
            for follower in self._followers:
                follower(event)
            for put in self._listeners:
                put(event)
                if note is not None:  # the warning's hint, new this attempt: after the warning itself
                    put(NoteFound(note))
            if len(self._events) < 1000:  # the screen needs no more per refresh; listeners get all
                self._events.append(event)
            self._topics.add("state")
        state = self.tracker.state
        if self.finished_at is None and state.outcome in (READY, FAILED):
            self.finished_at = self.clock()
        if (self.measure_checkpoints or self.measure_host) and "model" in state.identity:
            self._measure(state.identity)
        if self.smoke_wanted and self.smoke is None and state.outcome == READY:
            self.send_smoke()

    # ---------------------------------------------------------------- --smoke

    def want_smoke(self, host: str | None = None) -> None:
        """``--smoke``: after the ready line, ask the server on ``host`` (an SSH ``[user@]host[:port]``
        spec, or None for this machine) for one token."""
        self.smoke_wanted = True
        if host:
            self.smoke_host = host.rpartition("@")[2].split(":")[0] or self.smoke_host

    def smoke_port(self) -> int | None:
        """The port the log names: where the server says it listens, else its arguments' port."""
        port = self._listening
        if port is None and (said := self.state.identity.get("port", "")).isdigit():
            port = int(said)
        return port

    def send_smoke(self) -> None:
        """Send ``--smoke``'s one completion (once per startup; after ``--health`` answered where given)."""
        if self.smoke is not None or not self._tasks:
            return
        if self.smoke_after_health is not None and not self.smoke_after_health():
            return  # asked again when the health probe answers
        if self.health is not None and not self.health.ok:
            return  # watch --health: asked again when the URL answers 200
        port = self.smoke_port()
        if port is None:
            self.smoke = SmokeStatus(None, why_not="the log names no port (no 'Uvicorn running on …', no port= argument)")
            self._changed("state")
            return
        host = self.smoke_host
        self.smoke = SmokeStatus(f"http://{host}:{port}")
        from tui.sources.smoke import smoke

        async def ask() -> None:
            self.handle(await smoke(host, port))

        self._tasks.append(asyncio.get_running_loop().create_task(ask()))
        self._changed("state")

    # ---------------------------------------------------------------- the weight load

    def _load_event(self, event: Any) -> None:
        now = self.clock()
        if isinstance(event, PhaseStarted):
            self.load.start(now)
        elif isinstance(event, PhaseEnded):
            self.load.end(now)
        elif isinstance(event, PhaseProgress) and event.fraction is not None:
            self.load.bar(now, event.fraction)

    def _measure(self, identity: dict[str, str]) -> None:
        """Measure the checkpoint the log names (once per model, split and draft), in a thread."""
        split = split_of(identity.get("tp_size"), identity.get("pp_size"))
        key = (identity["model"], str(split), identity.get("draft_model", ""))
        if key == self._measured or not self._tasks:
            return
        self._measured = key
        from tui.sources.checkpoint import measure_async, measure_remote

        async def measure() -> None:
            try:
                if self.measure_host is not None and not self.measure_checkpoints:
                    self.handle(await measure_remote(self.measure_host, key[0], split, key[2] or None))
                    return
                self.handle(await measure_async(key[0], split, key[2] or None))
            except Exception as exc:  # noqa: BLE001  (a folder that cannot be read: no total, said)
                self.handle(CheckpointFound(key[0], None, split, detail=f"{type(exc).__name__}: {exc}"))

        try:
            self._tasks.append(asyncio.get_running_loop().create_task(measure()))
        except RuntimeError:  # no loop (a synchronous replay in a test): nothing to measure with
            self._measured = None
            return
        if self.measure_checkpoints:  # the cache folder is here to watch
            self._watch_download(key[0], split)

    @staticmethod
    def _storage_kind(filesystem: str | None) -> str | None:
        """"block" or "network": what the hints file says of the checkpoint's filesystem."""
        try:
            return knowledge().storage.kind(filesystem)
        except ProfileError:
            return None  # a hints file that cannot be read: its errors are said where hints are shown

    def _watch_disk(self, device: str | None) -> None:
        """The checkpoint's block device: how busy it is while the weights load (once per session,
        and only here: a remote host's device is not this machine's)."""
        from tui.sources.diskstats import DiskSource

        if device is None or self._disk_watched or not self.measure_checkpoints:
            return
        self._disk_watched = True
        self.add_source(DiskSource(device))

    def load_facts(self) -> LoadFacts:
        """What was watched of the weight loads: a download during the current one, what its
        processes read, and what earlier attempts' loads read (for the startup profile)."""
        return LoadFacts(self.load.downloaded(), self.load.reading(), dict(self._earlier_reads))

    def _watch_download(self, model: str, split: int) -> None:
        """A repo id: watch its Hugging Face cache folder grow while the server downloads it
        (``tui.sources.download``), once per session."""
        from tui.sources.download import DownloadSource, repo_folder

        folder = repo_folder(model)
        if folder is None or self._download_watched:
            return
        self._download_watched = True
        self.add_source(DownloadSource(model, folder, split))

    def load_estimate(self) -> LoadEstimate | None:
        """The running weight load's progress (None when it is not running or nothing moved)."""
        if not self.load.running or self.state.outcome != STARTING:
            return None
        phase = self.state.phase("weight_load")
        if phase is None or phase.done:
            return None
        return self.load.estimate(self.clock())

    def loading_words(self) -> str | None:
        """``weight load 212/547 GB · 0.87 GB/s · ~6:25 left (from …)`` while its bytes move (else
        a counting phase's ``CUDA graphs 16/36 · 2.4/s · ~0:08 left in this bar`` while it counts)."""
        estimate = self.load_estimate()
        if estimate is None or not estimate.moving:
            return self.counting_words()
        phase = self.state.phase("weight_load")
        detail = f"{phase.detail} · " if estimate.signal == "log" and phase is not None and phase.detail else ""
        return f"weight load {detail}{estimate.words()}"

    def count_estimate(self) -> CountEstimate | None:
        """The running phase's bar count and its time left (a graph capture's batch sizes …); None
        when it draws no counting bar, or it is the weight load (its bytes say more)."""
        phase = self.state.current_phase
        if self.state.outcome != STARTING or phase is None or phase.name == "weight_load":
            return None
        return self.counts.estimate(phase.name, self.clock())

    def counting_words(self) -> str | None:
        """``CUDA graphs 16/36 · 2.4/s · ~0:08 left in this bar`` while the running phase's bar counts."""
        count = self.count_estimate()
        if count is None or not count.moving:
            return None
        return f"{PHASE_TITLES.get(count.phase, count.phase)} {count.words()}"

    def _new_startup(self, event: NewStartup) -> None:
        """A new startup in the same log: its clock and silences start afresh (the tracker's
        state already has); the scrollback marks where."""
        self._style_line(event.line, PHASE)
        self.scrollback.mark(f"── new startup at line {event.line} (attempt {event.attempt} in this log) ──")
        self.judging.new_attempt()
        reads = self.load.reading()
        if reads is not None:
            self._earlier_reads[event.previous.number] = reads
        self.load = LoadEstimator(self.load.checkpoint)
        self.started_at = self.clock()
        self.finished_at = None
        self.silences.clear()
        self.smoke, self._listening = None, None
        self.counts = CountEstimator()
        self._topics.add("log")

    def _grow(self, report: Any) -> None:
        """Style a block's lines as errors, and keep styling those it gains (message lines
        after the exception, a chained traceback) while it may still grow."""
        if not any(item[0] is report for item in self._growing):
            self._growing.append([report, 0])
            del self._growing[:-GROWING_BLOCKS]
        self._style_blocks()

    def _style_blocks(self) -> None:
        current = self.tracker.state.lines
        for item in self._growing:
            report, done = item
            for number in report.numbers(after=done):
                self._style_line(number, ERROR)
                done = number
            item[1] = done
        self._growing = [item for item in self._growing if current - item[1] <= GROWING_LINES]

    def block_text(self, error: Any, limit: int = BLOCK_LINES) -> BlockText:
        """Every line of ``error``'s block — from the scrollback, else re-read from the log file
        by offset — or, past ``limit`` lines, its head and tail and which lines were left out."""
        head: list[int] = []
        tail: deque[int] = deque(maxlen=max(1, limit // 4))
        head_count = max(1, limit - (tail.maxlen or 1))
        size = 0
        first_out: int | None = None
        last_out = 0
        for number in error.numbers():
            size += 1
            if len(head) < head_count:
                head.append(number)
                continue
            if len(tail) == tail.maxlen:
                last_out = tail[0]
                first_out = last_out if first_out is None else first_out
            tail.append(number)
        numbers = head + list(tail)
        texts: dict[int, str] = {}
        for number in numbers:
            entry = self.scrollback.find_line(number)
            if entry is not None:
                texts[number] = entry.text
        missing = {n for n in numbers if n not in texts}
        if missing and error.offset is not None and self.log_file:
            texts.update(self._reread(error.line, self._stream_base + error.offset, missing))
        lines = [(n, texts[n]) for n in numbers if n in texts]
        while lines and not lines[-1][1].strip() and lines[-1][0] > error.line:
            lines.pop()  # a blank line that closed the block
        left_out = None if first_out is None else (first_out, last_out)
        return BlockText(lines or list(error.block), size, left_out, size - len(numbers), len(numbers) - len(texts))

    def _reread(self, line: int, offset: int, wanted: set[int]) -> dict[int, str]:
        """Lines ``wanted`` of the log file, counting from ``line`` at byte ``offset``."""
        from tui.core.lines import MAX_LINE_BYTES, make_line

        found: dict[int, str] = {}
        last = max(wanted)
        budget = REREAD_BYTES
        try:
            with open(self.log_file, "rb") as f:  # type: ignore[arg-type]
                f.seek(offset)
                for number in range(line, last + 1):
                    raw = f.readline(MAX_LINE_BYTES + 1)
                    budget -= len(raw)
                    if not raw or budget < 0:
                        break
                    more = raw
                    while not more.endswith(b"\n") and more:  # a line over the cap: skip the rest
                        more = f.readline(MAX_LINE_BYTES)
                        budget -= len(more)
                    if number in wanted:
                        found[number] = make_line(number, offset, raw.rstrip(b"\n").removesuffix(b"\r")).text
        except OSError:
            pass
        return found

    def _style_line(self, number: int, style: str) -> None:
        entry = self.scrollback.find_line(number)
        if entry is not None:
            self.scrollback.restyle(entry, style)

    def _note_silence(self, now: float) -> None:
        """Record the stretch since the last output if it was long: arrival time, drawn in log time."""
        last = self.last_output_at
        if last is None or now - last < SILENCE_SECONDS:
            return
        self.silences.append(Silence(last + self._ts_offset, now + self._ts_offset))
        if len(self.silences) > 256:
            del self.silences[0]

    def _flush_pending_line(self) -> None:
        if self._assembler.pending:
            self._feed_lines(self._assembler.flush())
        self.scrollback.progress = None

    def _line_time(self, text: str) -> float | None:
        """A scrollback line's own time, by the profile the tracker reads the log as now: read when
        the log merged across nodes first asks for it, so a single node's flood pays nothing."""
        return self._line_times.time_of(text, self.tracker.profile, self.clock())

    def _new_tracker(self) -> None:
        from tui.core.line_time import LineTimes
        from tui.core.scan import LineFeeder
        from tui.core.tracker import StartupTracker

        self.tracker = StartupTracker(profile=self.profile)
        self._line_times = LineTimes()  # each line's own time, by the profile the tracker reads the log as
        self._feeder = LineFeeder(marker_search(self.profile))
        self._assembler = LineAssembler()
        self.counts = CountEstimator()  # the running phase's bar count (graph capture …)
        self._growing = []
        self._last_ts = None
        self._ts_offset = 0.0
        self._quiet_note = None

    def _tracker_restart(self) -> None:
        self.tracker.restart()
        self._quiet_note = None
        self.counts = CountEstimator()
        self._last_ts = None
        self._growing = []
        self.started_at = self.finished_at = None

    # ---------------------------------------------------------------- notifying

    def _changed(self, *topics: Topic) -> None:
        self._topics.update(topics)
        if self._flush_handle is not None or not self._subscribers:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        delay = max(0.0, self._last_flush + self._min_interval - loop.time())
        self._flush_handle = loop.call_later(delay, self.flush)

    def flush(self) -> None:
        """Tell the subscribers what changed since last time (the timer calls this)."""
        self._flush_handle = None
        if not self._topics:
            return
        try:
            self._last_flush = asyncio.get_running_loop().time()
        except RuntimeError:
            pass
        update = Update(frozenset(self._topics), tuple(self._events))
        self._topics = set()
        self._events = []
        if self.judging.subscribed:
            self.judging.evaluate()  # before the views are told: they render what it decided
        for callback in list(self._subscribers):
            callback(update)
