"""`watch --plain`, `run --plain` (and ``--json``), for one log or several nodes: one line per
event, a clear verdict, an exit status.

The operator's old bash loop (tail, grep a list of error words, sleep 15) done right:
event-driven, every exception type, one line per event and a verdict. One presenter for 1..N
nodes (a single log is a node set of one, ``ClusterSession.of_one``), with one loop: it hears
every node's events, losslessly and in order (``ClusterSession.hear``), so text output never
drops an event however fast the logs grow, the verdict as the judging stage pushes it, and the
end of the watch as the judging side decides it (``tui.session.ending.WatchOver``: a final verdict
held for its root cause, or ``--timeout``); it words every node's events in the one wording
(:class:`~tui.present.event_words.EventWords`) and decides nothing. Where there are several nodes (or a Slurm job,
or Ray's), each line is led by its ``[node]``, a line says each milestone every rank has passed,
and the barrier view (who is not there yet) comes with the verdict. With a launch (``run
--plain``) it prints the launch's own events too, in the order they happened.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, ClassVar, TextIO, assert_never

from tui.cluster import ClusterSession, JobEvent, OneLog
from tui.core.cluster import BarrierRow
from tui.core.events import (
    CacheGrowth,
    DiskBusy,
    CheckpointFound,
    ConnectionState,
    ErrorFound,
    GpuSample,
    GpuUnavailable,
    HealthStatus,
    LogChunk,
    LogGap,
    LogLimited,
    LogMoved,
    LogRestart,
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
    Ready,
    ServerDetected,
    SlurmJobState,
    SlurmTaskEnded,
    SmokeAnswered,
    Stopped,
    WarningFound,
    WriterGone,
    WritersFound,
)
from tui.core.evidence import Evidence, Weighing, decide
from tui.core.hints import load_knowledge
from tui.core.lines import Line, clean
from tui.core.state import FAILED, QUEUED, READY, STOPPED
from tui.core.verdict import (
    DEAD,
    EXIT_FAILED,
    EXIT_READY,
    EXIT_STARTING,
    EXIT_USAGE,
    LOADING,
    STALLED,
    STARTING,
    Verdict,
)
from tui.core.wording import clock, connection_said, duration, log_notice, phase_words, plural
from tui.core.writers import Survivor
from tui.launch.events import AttemptExited, AttemptFinished, AttemptRecorded, AttemptStarted, LaunchEvent, Note
from tui.present.event_words import EventWords, error_fields, hint_said, title
from tui.present.records import JsonLines, Said
from tui.core.ending import launch_hold, nodes_hold
from tui.session import SessionEvent, Update, WatchSession
from tui.session.ending import WatchEnding, WatchOver
from tui.session.judging import NoteFound, VerdictChanged

#: Seconds between two weight-load progress lines (sooner when the time left moves a lot).
PROGRESS_EVERY_S = 5.0


#: What the presenter hears, in the order it happened, each with its node (None: the node set's
#: own — the verdict's pushes, a Slurm job's events, the end of the watch): every node's events,
#: a launch's, the nodes' updates (a barrier may have moved), and the watch's end.
Heard = asyncio.Queue[tuple[str | None, SessionEvent | LaunchEvent | Update | WatchOver]]
#: Seconds between two looks at what the samples say while nothing is heard (progress, GPUs, health).
LOOK_EVERY_S = 0.5


def verdict_said(verdict: Verdict, text: str, /, **more: Any) -> Said:
    """A verdict change (loading, stalled?, dead, failed …) as a record; ``more`` adds or overrides fields."""
    return Said("verdict", text, fields={"verdict": str(verdict.kind), "detail": verdict.detail,
                                         "ranks": list(verdict.ranks), "silence": verdict.silence,
                                         "node": verdict.node, "final": verdict.final, **more})


def progress_due(said: tuple[float, Any] | None, now: float, estimate: Any) -> bool:
    """Whether a weight-load progress line is due: the first figure, then at most one every
    PROGRESS_EVERY_S, sooner (but not within a second) when the time left became known or moved
    by half or more."""
    if said is None:
        return True
    when, before = said
    if estimate == before or now - when < 1.0:
        return False
    jumped = (before.left is None) != (estimate.left is None) or (
        before.left is not None and estimate.left is not None
        and abs(sum(estimate.left) - sum(before.left)) > 0.5 * max(sum(before.left), 2.0)
    )
    return now - when >= PROGRESS_EVERY_S or jumped


def barrier_lines(rows: list[BarrierRow], limit: int = 4) -> list[str]:
    """The barrier view as text: per milestone not everyone reached, who is missing, laggard first."""
    out = []
    said: tuple[str, ...] = ()
    for row in rows:
        if row.done:
            continue
        labels = tuple(lag.label for lag in row.missing)
        if labels == said:  # the same ranks as the row above: not the same long list again
            out.append(f"{row.words}: {row.reached}/{row.total} ranks; not yet: the same {len(labels)}")
            continue
        said = labels
        who, suspected = [], set()
        for lag in row.missing[:limit]:
            quiet = f", quiet {clock(lag.quiet_for)}" if lag.quiet_for is not None else ""
            line = f" line {lag.last_line}" if lag.last_line else ""
            text = f": {lag.last_text[:80]}" if lag.last_text else ""
            why = f" [suspect: {lag.suspect}]" if lag.suspect and lag.node not in suspected else ""  # once a node
            if lag.suspect:
                suspected.add(lag.node)
            gone = f"{lag.out}, " if lag.out else ""  # it will not get there
            who.append(f"{lag.label} ({gone}{line.strip() or 'no line'}{quiet}{text}){why}")
        more = f", +{len(row.missing) - limit} more" if len(row.missing) > limit else ""
        out.append(f"{row.words}: {row.reached}/{row.total} ranks; not yet: {'; '.join(who)}{more}")
    return out


class PlainPresenter:
    """One line per event of 1..N nodes, and the verdict; ``run`` follows a watch to its exit
    status. What differs between one log and a node set — the first line, what a pushed verdict
    adds, the last verdict, the barrier — is its subtype's: :class:`LogPresenter` (one log, and a
    launch's) and :class:`NodesPresenter` (``[node]`` before each line)."""

    #: Each line led by its node (a node set: a Slurm job, Ray's, a cluster file's).
    prefixed: ClassVar[bool] = False

    def __init__(
        self, cluster: ClusterSession, *, out: TextIO | None = None, json: bool = False, launch: Any = None,
        title: str = "", timeout: float | None = None, echo: bool = False,
    ) -> None:
        self.cluster = cluster
        self.launch = launch
        self.out = out  # None: sys.stdout as it is when written to (a test's capture)
        self.title = title  # the first line's words (default: what is watched)
        self.timeout = timeout  # --timeout: a watch still starting after it ends with TIMEOUT (exit 3)
        #: What happened to a log (a restart, a truncation, a gap, a move; waiting for it, its connection)
        #: gets a line of its own, a node's led by its name; a launch's log is its own (it says its restarts).
        self.notices = launch is None
        self.indent = "" if launch is None else "  "  # the events' lines, under a launch's own
        self.began = time.monotonic()
        mask = launch.masker.text if launch is not None else None
        self.mask: Callable[[str], str] = mask or (lambda text: text)
        self.json = JsonLines(out, mask=mask, started=self.began) if json else None  # --json: the records
        load_knowledge()  # a bad hints file is refused now, in one line, before the first line (not mid-watch)
        self.words: dict[str, EventWords] = {}  # each node's events in the one wording (made as its first event comes)
        self.seen: dict[str, set[int]] = {}  # each node's writer processes already named
        # everything heard, none lost, in the order it happened: each node's events (a single log's with
        # its lines too with --echo; a node set's with those of nodes added later, a Slurm job's tasks),
        # a launch's events, the verdict's pushes and, last, the end of the watch
        self.heard: Heard = asyncio.Queue()
        cluster.hear(self.heard_from, lines=echo)
        cluster.hear_job(partial(self.heard_from, None))  # a Slurm job's own: its state, its poller's connection
        #: When the watch is over, decided beside the verdict (each subtype's own, ``ends_with``):
        #: pushed, as the last thing heard.
        self.ending: WatchEnding
        self.final = asyncio.Event()  # a launch's verdict became final
        self.progress_said: dict[str, tuple[float, Any]] = {}  # node -> (when, estimate) of its last progress line
        self.gpu_note: dict[str, str] = {}  # node -> why it has no GPU samples, once said
        self.health_said: dict[str, str] = {}  # node -> what its --health URL answered, as last said
        self.waiting: dict[str, str] = {}  # node -> why its log is not there, as last said
        self.trouble: dict[str, str] = {}  # node of several -> what its connection's trouble is, as said
        self.file_notice: LogRestart | LogTruncated | LogMoved | LogGap | LogLimited | None = None  # the last log notice said
        self.said_reading: set[str] = set()  # nodes whose final log is being read to its end, said once
        self.last_job: str | None = None  # the Slurm job's state, as last said

    def ends_with(self, ending: WatchEnding) -> None:
        self.ending = ending
        ending.subscribe(partial(self.heard_from, None))

    def heard_from(self, node: str | None, what: SessionEvent | LaunchEvent | Update | WatchOver) -> None:
        self.heard.put_nowait((node, what))

    # ------------------------------------------------------------ what differs: one log, a node set

    def start_said(self) -> Said:
        """The first line: what is watched."""
        raise NotImplementedError

    def watch_verdict(self, change: VerdictChanged) -> None:
        """The verdict as the judging stage pushed it: what the end of the watch will not say."""
        raise NotImplementedError

    def final_verdict(self, over: WatchOver) -> int:
        """The last verdict, with what explains it; the exit status."""
        raise NotImplementedError

    def follow_updates(self) -> None:
        """Hear what the nodes' updates move (a node set's barrier); one log has none to hear."""

    def updated(self, update: Update) -> None:
        """A node's (or the Slurm job's) update was heard."""

    def milestones(self) -> None:
        """After each batch heard: a milestone every rank has now passed (a node set's)."""

    # ------------------------------------------------------------ output

    def say(self, text: str, indent: str = "", node: str | None = None) -> None:
        """Words, a line each (\\n only: clean() shows U+2028 and the rest): stamped in a watch, led by
        ``[node]`` where there are several; the lines after the first aligned under it."""
        where = clean(f"[{node}] ") if node is not None and self.prefixed else ""
        stamp = ""
        if self.launch is None:
            minutes, secs = divmod(time.monotonic() - self.began, 60)
            stamp = f"{time.strftime('%H:%M:%S')}  +{int(minutes):02d}:{secs:04.1f}  "
        for i, line in enumerate(text.split("\n")):
            lead = stamp + where if i == 0 else " " * len(stamp + where)
            print(f"{lead}{indent}{clean(self.mask(line))}", file=self.out or sys.stdout)

    def emit(self, said: Said, node: str | None = None, *, own: bool = False) -> None:
        """One record: its words (plain), or the whole record as a JSON line (``--json``), with
        ``node`` where there are several; ``own``: a line of the launch's, not under it."""
        if self.json is not None:
            self.json.write(said, node if self.prefixed else None)
        elif said.text:
            self.say(said.text, ("" if own else self.indent) + said.indent, node)

    def flush(self) -> None:
        (self.out or sys.stdout).flush()

    def node_words(self, node: str) -> EventWords:
        words = self.words.get(node)
        if words is None:
            session = self.cluster.nodes[node]
            words = self.words[node] = EventWords(lambda said: self.emit(said, node), lambda: session.state,
                                                  health_url=self.health_url(session), count=session.weight.count_estimate)
        return words

    def health_url(self, session: WatchSession) -> str | None:
        """--health: the URL whose 200 ready also needs (the launch's, or the node's)."""
        if self.launch is not None:
            return self.launch.spec.health_url
        return session.health.url if session.health is not None else None

    # ------------------------------------------------------------ events

    def job_event(self, event: JobEvent) -> None:
        """The Slurm job's own events: its state, and its poller's connection."""
        match event:
            case SlurmJobState():
                words = self.cluster.job_words()
                if words != self.last_job:
                    self.last_job = words
                    self.emit(Said("slurm_job", words, fields={
                        "job": event.job_id, "state": event.state, "reason": event.reason, "nodes": list(event.nodes),
                        "exit_code": event.exit_code, "ahead": event.ahead}))
            case ConnectionState():
                self.emit(Said("connection", f"slurm: {event.state}" + (f": {event.detail}" if event.detail else ""),
                               fields={"host": "slurm", "state": event.state, "detail": event.detail}))
            case _:
                assert_never(event)

    def handle(self, node: str, event: SessionEvent | LaunchEvent) -> None:
        """One event of ``node``, in words."""
        match event:
            case VerdictChanged():
                self.watch_verdict(event)
            case Note():
                self.emit(Said("note", event.text))
            case AttemptStarted() | AttemptFinished() | AttemptExited() | AttemptRecorded():
                pass  # said by ``started`` and the final verdict; a history write is said by ``history``
            case Line():  # (queued with --echo only)
                self.emit(Said("log", event.text, "| ", line=event.number, fields={"truncated": event.truncated}))
                self.waiting.pop(node, None)
            case LogRestart() | LogTruncated() | LogMoved() | LogGap() | LogLimited():
                if self.notices:
                    self.log_notice(node, event)
            case LogWaiting() | ConnectionState():
                if self.notices:
                    self.source_notice(node, event)
            case WritersFound() | WriterGone() | NoWriter():
                session = self.cluster.nodes[node]
                self.node_words(node).process(event, self.seen.setdefault(node, set()), session.process.writers)
            case Ready() if self.cluster.nodes[node].smoke.wanted:  # READY once it answered
                self.node_words(node).ready_marker(event, self.health_url(self.cluster.nodes[node]))
            case SmokeAnswered():
                self.node_words(node).smoke(event)
            case ErrorFound() if event.error.secondary and self.launch is not None:
                pass  # a consequence of the cause: it is in the launch's log
            case (ServerDetected() | PhaseStarted() | PhaseEnded() | PhaseProgress() | ErrorFound() | WarningFound()
                  | Ready() | Stopped() | NewStartup() | NoteFound()):
                self.node_words(node).show(event)
            case (LogChunk() | GpuSample() | GpuUnavailable() | ReadCounters() | CheckpointFound() | HealthStatus()
                  | ProcessStarted() | ProcessExited() | ProcessStopping() | SlurmJobState() | SlurmTaskEnded()
                  | CacheGrowth() | DiskBusy()):
                pass  # not a line of their own: the verdict, progress and GPU lines say what they change
            case _:
                assert_never(event)

    def log_notice(self, node: str, event: LogRestart | LogTruncated | LogMoved | LogGap | LogLimited) -> None:
        """What happened to ``node``'s log file: a new file (a new attempt), a truncation, a move, a
        gap. Said once per file: Ray's nodes share the head's log, and each gets its restart."""
        match event:
            case LogRestart():
                self.node_words(node).restarted()
                said = Said("log_restart", log_notice(event), fields={"reason": event.reason})
            case LogTruncated():  # a gap in the same startup, not a new attempt
                said = Said("log_truncated", f"note: {log_notice(event)}", line=event.lines + 1, fields={"size": event.size})
            case LogMoved():
                said = Said("log_moved", log_notice(event), fields={  # (say() cleans the path it names)
                    "moved_to": event.moved_to, "done": event.done, **({} if event.done else {"writers": list(event.writers)})})
            case LogLimited():
                said = Said("log_limited", f"note: {log_notice(event)}")
            case LogGap():
                fields = {"files": event.files} if event.files else {"offset": event.offset, "bytes": event.nbytes}
                said = Said("log_gap", f"note: {log_notice(event)}", fields={**fields, "reason": event.reason})
            case _:
                assert_never(event)
        if event is not self.file_notice:  # (the same event handed to another node of the same file)
            self.file_notice = event
            self.emit(said, node)

    def source_notice(self, node: str, event: LogWaiting | ConnectionState) -> None:
        """Waiting for ``node``'s log (once per reason), and its connection: each change for a single
        log; for a node of several, what :meth:`connection_news` lets through."""
        match event:
            case LogWaiting():
                if event.reason != self.waiting.get(node):
                    self.waiting[node] = event.reason
                    self.emit(Said("waiting", f"waiting for the log: {clean(event.reason)}", fields={"reason": event.reason}),
                              node)
            case ConnectionState():
                if self.prefixed and not self.connection_news(node, event):
                    return
                retry = f", retrying in {duration(event.retry_in)}" if event.retry_in else ""  # (not "in 0 s")
                self.emit(Said("connection", f"{event.host}: {clean(connection_said(event))}{retry}", fields={
                    "host": event.host, "state": event.state, "detail": event.detail, "retry_in": event.retry_in}), node)
            case _:
                assert_never(event)

    def connection_news(self, node: str, event: ConnectionState) -> bool:
        """Whether a node of several says this change of its connection: a trouble once (not each
        retry of it), and connected again after one. Every node connecting as the watch begins and
        each retry would bury the rest; its verdict and barrier row say where it stands. A refusal
        ends the watch, said by :meth:`refused`."""
        trouble = self.trouble.get(node)
        if event.state == "connected":
            self.trouble.pop(node, None)
            return trouble is not None
        if event.state in ("connecting", "refused") or (event.detail or event.state) == trouble:
            return False
        self.trouble[node] = event.detail or event.state
        return True

    def drain(self) -> None:
        """Say everything heard so far, in the order it happened (the end of the watch aside)."""
        heard = self.heard
        while not heard.empty():
            node, what = heard.get_nowait()
            if isinstance(what, WatchOver):
                self.final.set()  # (a launch's: its wiring ends it; a watch's is heard once, by ``follow``)
            else:
                self.dispatch(node, what)

    def dispatch(self, node: str | None, what: SessionEvent | LaunchEvent | Update) -> None:
        """One thing heard, in words: a node's event, or the node set's own."""
        match what:
            case VerdictChanged():
                self.watch_verdict(what)
            case Update():  # a node's or the Slurm job's
                self.updated(what)
            case SlurmJobState() | ConnectionState() if node is None:  # the Slurm job's own (``hear_job``)
                self.job_event(what)
            case _ if node is None:
                raise AssertionError(f"heard from no node: {what!r}")
            case _:
                self.handle(node, what)

    def looked(self) -> None:
        """What the samples say and the events do not (each node's), and the milestones every
        rank has now passed."""
        now = time.monotonic()
        for name in self.cluster.nodes:
            self.samples_said(name, now, "" if self.launch is not None else "  ")
        self.milestones()

    def samples_said(self, node: str, now: float, indent: str = "  ") -> None:
        """What a node's samples say and its events do not: its weight load's progress (see
        :func:`progress_due`), why it has no GPU figures (once), and — once its log says ready —
        what its ``--health`` URL answers, as it changes (ready needs a 200 too)."""
        session = self.cluster.nodes[node]
        estimate = session.weight.estimate()
        if estimate is not None and progress_due(self.progress_said.get(node), now, estimate):
            self.progress_said[node] = (now, estimate)
            self.emit(Said("weight_load_progress", f"{indent}weight load {estimate.words()}", fields=estimate.to_json()),
                      node)
        unavailable = session.gpus.unavailable
        if unavailable and unavailable != self.gpu_note.get(node):
            self.gpu_note[node] = unavailable
            self.emit(Said("gpu_unavailable", f"no GPU data: {clean(unavailable)}", fields={"reason": unavailable}), node)
        health = session.health
        if health is not None and session.state.outcome == READY and health.detail != self.health_said.get(node):
            self.health_said[node] = health.detail
            fields = {"url": health.url, "ok": health.ok, "detail": health.detail}
            if health.ok:
                self.emit(Said("health", f"{health.url} answers: {clean(health.detail)}", fields=fields), node)
            else:
                self.emit(Said("health", f"{health.url}: {clean(health.detail)}; not ready until it answers 200",
                               fields=fields), node)

    # ------------------------------------------------------------ a watch

    async def run(self) -> int:
        """Follow the watch to its verdict; the exit status (``--json``'s last object says it)."""
        self.emit(self.start_said())
        cluster = self.cluster
        self.follow_updates()
        cluster.judging.subscribe(partial(self.heard_from, None))  # the verdict, as the judging stage pushes it
        cluster.start()  # primes the tracker first: the first marker finds the automata built
        self.ending.start()
        try:
            status = await self.follow()
        finally:
            self.ending.stop()
            self.flush()
            await cluster.stop()
        self.emit(Said("exit", fields={"exit": status, "verdict": str(cluster.verdict().kind)}))
        self.flush()
        return status

    async def follow(self) -> int:
        """The one loop, for one log, several nodes and a launch alike: say everything heard as it
        comes, each batch written out at once; between batches (and every LOOK_EVERY_S) what the
        samples say. A watch ends with the verdict the judging side pushed as final (or with a
        refused connection); a launch's goes on until cancelled (its wiring awaits ``final``)."""
        heard = self.heard
        while True:
            try:
                async with asyncio.timeout(LOOK_EVERY_S):  # (no task per wait, unlike wait_for)
                    node, what = await heard.get()
            except TimeoutError:
                pass
            else:
                while True:
                    if isinstance(what, WatchOver):
                        if self.launch is not None:
                            self.final.set()
                        else:
                            return self.concluded(what)
                    elif isinstance(what, ConnectionState) and what.state == "refused" and node is not None and (
                        self.launch is None
                    ):
                        return self.refused(node, what)
                    else:
                        self.dispatch(node, what)
                    if heard.empty():
                        break
                    node, what = heard.get_nowait()
            self.looked()
            self.flush()  # once per batch: all it printed goes out in one write

    def concluded(self, over: WatchOver) -> int:
        """The watch is over: what was heard before its end, then its last verdict; the exit status."""
        self.drain()
        self.looked()
        status = self.final_verdict(over)
        self.nodes_survivors()  # last of all
        return status

    def refused(self, node: str, conn: ConnectionState) -> int:
        """A node's host refused the connection (a host key or login problem: retrying will not fix
        it): said, and the exit status of bad input."""
        self.emit(Said("connection", f"{conn.host}: {clean(connection_said(conn))}", fields={
            "host": conn.host, "state": conn.state, "detail": conn.detail}), node)
        return EXIT_USAGE

    def interrupted(self, by: str = "Ctrl-C", status: int = 130) -> int:
        """Ctrl-C, SIGTERM or SIGHUP (``by``): the verdict so far, so that an ended watch still ends
        with one (and ``--json`` with its ``exit`` object); ``status``, the exit status that says
        what ended it (128 + the signal), is returned."""
        fields: dict[str, Any] = {"signal": "SIGINT" if by == "Ctrl-C" else by, "exit": status}
        try:
            verdict = self.cluster.verdict()
        except Exception as exc:  # noqa: BLE001  (a last line must never become a traceback)
            self.emit(Said("interrupted", f"interrupted ({by}); no verdict: {exc}", fields=fields))
        else:
            self.emit(Said("interrupted", f"interrupted ({by}); the verdict so far: {verdict.text}",
                           fields={"verdict": str(verdict.kind), "detail": verdict.detail, **fields}))
        self.emit(Said("exit", fields={"exit": status, "verdict": None}))  # --json's last object, as always
        self.flush()
        return status

    # ------------------------------------------------------------ both

    def reading_rest(self, node: str, verdict: Verdict, reading: int | None) -> None:
        """The writer (a node's task) is gone: its log is read to its end before judging, said once."""
        if reading and node not in self.said_reading:
            self.said_reading.add(node)
            self.emit(Said("reading_rest", verdict.detail, fields={"bytes": reading}), node)

    def survivors_said(self, node: str, host: str, left: Sequence[Survivor]) -> None:
        """A dead server's processes that still run on ``host`` (its ranks, holding their GPUs;
        nothing stops them once Watchtower has gone): named, with the command that stops them
        there, last of all — ``node``'s, as writer discovery found them or a launch's group holds them."""
        if not left:
            return
        pids = " ".join(str(s.pid) for s in left)
        where = "" if host == "localhost" else f" on {host}"
        self.emit(Said("survivors", f"{plural(len(left), 'of its processes', 'of its processes')} still run: "
                       f"{', '.join(s.words for s in left)}; stop them{where}: kill {pids}",
                       indent="  ", fields={"host": host, "stop": f"kill {pids}", "processes": [
                           {"pid": s.pid, "rank": s.label, "command": s.process.command or s.process.title}
                           for s in left]}),
                  node, own=True)

    def nodes_survivors(self) -> None:
        """Each node's dead server's processes that still run (writer discovery's), under its name."""
        for name, session in self.cluster.nodes.items():
            self.survivors_said(name, session.info.host, session.process.writers.survivors)


class LogPresenter(PlainPresenter):
    """One log (a node set of one, :class:`tui.cluster.OneLog`). With ``launch`` (its
    ``tui.launch.controller.Launch``), the launch's events are printed too, under its own lines
    (unstamped, masked), and the wiring drives it: ``consume`` (the same loop as ``run``'s),
    ``final`` (set as the launch's verdict is final), ``exit``."""

    def __init__(self, cluster: OneLog, *, launch: Any = None, ended: asyncio.Event | None = None, **kwargs: Any) -> None:
        super().__init__(cluster, launch=launch, **kwargs)
        self.session = cluster.node
        self.seen_kind = STARTING  # a launch: the kind of the last verdict printed
        self.hints_said: set[str] = set()  # a launch: the hints printed for its failure so far
        self.judged = STARTING  # the kind of the last quiet-log verdict printed
        if launch is not None:  # the launch's events join its node's: everything in the order it happened
            launch.subscribe(partial(self.heard_from, self.cluster_node))
        # a launch's ends as its verdict is final (the wiring then ends it); a replay's once ``ended``
        # is set, nothing more being written
        self.ends_with(WatchEnding(cluster.judging, launch_hold, pushes=launch.subscribe) if launch is not None
                       else WatchEnding.of_log(self.session, timeout=self.timeout, played_out=ended, began=self.began))

    @property
    def cluster_node(self) -> str:
        """Its node's name (a launch's): the name its queue and words are kept under."""
        return next(iter(self.cluster.nodes))

    def start_said(self) -> Said:
        session = self.session
        profile, log = session.profile, session.info.log_path
        host = self.cluster.specs[self.cluster_node].host
        return Said("start", (self.title or f"watching {clean(log or '')}") + (f" (server: {profile.name})" if profile else ""),
                    fields={"log": log, "host": host, "server": profile.name if profile else None})

    def watch_verdict(self, change: VerdictChanged) -> None:
        """A watch's: what its end will not say (``log_verdict``); a launch's: each new kind (and
        loading ⇄ stalled?), with a failure's hints, and a hint the failure's later lines call for
        (a real llama.cpp names its KV cache three lines after its first allocation error, and the
        server runs on meanwhile: the hint for what is said first may not be the one that fits)."""
        if self.launch is None:
            self.log_verdict(change.verdict)
            return
        verdict, previous = change.verdict, change.previous
        if verdict.kind != self.seen_kind or verdict.kind in (LOADING, STALLED) and previous is not None and (
            previous.kind != verdict.kind
        ):
            if verdict.kind in (FAILED, DEAD):
                for hint in change.hints:  # as the judging stage diagnosed them, before the verdict
                    self.emit(hint_said(hint), own=True)
                self.hints_said = {hint.id for hint in change.hints}
            self.emit(verdict_said(verdict, verdict.text), own=True)
        elif verdict.kind in (FAILED, DEAD):
            for hint in change.hints:
                if hint.id not in self.hints_said:
                    self.hints_said.add(hint.id)
                    self.emit(hint_said(hint), own=True)
        self.seen_kind = verdict.kind

    def log_verdict(self, verdict: Verdict) -> None:
        """What a single log alone does not say, as its verdict is pushed while it is undecided:
        its process gone while its log is read to its end, loading or stalled? (said once as it
        begins, and when the log moves again). Its end is said by :meth:`final_verdict`."""
        session = self.session
        if verdict.final or session.state.outcome in (READY, STOPPED, FAILED):
            return
        self.reading_rest(self.cluster_node, verdict, session.rest.unread)
        kind = verdict.kind if verdict.kind in (LOADING, STALLED) else STARTING
        if kind != self.judged:
            if kind != STARTING:
                self.emit(verdict_said(verdict, f"{verdict.word}: {verdict.detail}"))
            elif self.judged == STALLED:
                self.emit(verdict_said(verdict, "the log moves again"))
            self.judged = kind


    def final_verdict(self, over: WatchOver) -> int:
        """A single log's last verdict line, with what explains it; its exit status."""
        if over.why == "processes":  # the processes behind the log said it, after their last words
            final = over.change.verdict
            self.emit(verdict_said(final, f"{final.word}: {final.detail}"))
            if final.kind in (DEAD, FAILED):
                return EXIT_FAILED
        timed_out = over.why == "timeout"
        session = self.session
        state = session.state
        log_alone = decide(Weighing(state, Evidence()))  # the log's own reading, to end on
        status = log_alone.exit_status
        health = session.health
        timeout = f"TIMEOUT after {duration(self.timeout)}: " if timed_out else ""
        if state.outcome == READY and health is not None and not health.ok:
            self.emit(Said("verdict", f"{timeout}the log says ready (line {state.ready_line}) but {health.url} has not "
                           f"answered 200: {clean(health.detail)}", line=state.ready_line,
                           fields={"verdict": "timeout" if timed_out else "starting", "final": True,
                                   "health": health.url, "detail": health.detail}))
            return EXIT_STARTING
        if state.outcome == READY and session.smoke.wanted:
            smoke = session.verdict()  # ready means it answered the smoke test
            answer = session.smoke.status.answer if session.smoke.status is not None else None
            fields = {"smoke": None if answer is None else answer.url, "detail": smoke.detail,
                      "ttft_s": None if answer is None or answer.ttft is None else round(answer.ttft, 3)}
            if smoke.kind != READY:
                kind = "failed" if smoke.kind == FAILED else "timeout" if timed_out else "starting"
                self.emit(Said("verdict", f"{timeout}{smoke.word}: {smoke.detail}", line=state.ready_line,
                               fields={"verdict": kind, "final": True, **fields}))
                scrollback = session.scrollback
                around = [e for e in scrollback.entries(scrollback.end_seq - 5) if e.number > 0]
                if around:  # what the log said around it: the server may have logged the error too
                    self.emit(Said("", "the log's last lines:\n" + "\n".join(f"{e.number}: {e.text}" for e in around),
                                   indent="  "))
                return EXIT_FAILED if smoke.kind == FAILED else EXIT_STARTING
            self.emit(Said("verdict", f"{smoke.word}: {smoke.detail}", line=state.ready_line,
                           fields={"verdict": "ready", "final": True, **fields}))
            self.profile_one()
            return status
        if state.outcome == READY and health is not None:
            self.profile_one()
            self.emit(Said("verdict", f"READY: the log's ready line (line {state.ready_line}) and {health.url} "
                           "answering 200", line=state.ready_line,
                           fields={"verdict": "ready", "final": True, "health": health.url}))
            return status
        words = self.node_words(self.cluster_node)
        totals = words.totals()
        if totals:
            self.emit(Said("note", totals, fields={"warnings": words.warnings}))
        if state.outcome == FAILED:
            error = state.first_error
            if error is None:
                self.emit(Said("verdict", "FAILED", fields={"verdict": str(FAILED), "final": True}))
                return status
            rank = f" [{error.rank}]" if error.rank else ""
            also = words.also_on(error)
            others = f" (also on {', '.join(also)})" if also else ""
            which = f" (attempt {state.attempt} in this log)" if state.attempt > 1 else ""
            after = state.follow_on(error)
            process = session.process.status()  # a rank gone before the log's error is its likely cause: named
            lost = f"; {process.lost}" if process is not None and process.alive and process.lost else ""
            for hint in session.judging.evaluate().hints:  # as the judging stage diagnosed them; before the
                self.emit(hint_said(hint))  # final verdict, which a script may stop reading at
            self.emit(Said("verdict", f"FAILED at line {error.line}{rank}: {error.message}{others}{which}{lost}",
                           line=error.line,
                           fields={"verdict": str(FAILED), "final": True, "attempt": state.attempt,
                                   "error": error_fields(error), "also_on": also,
                                   "follow_on": None if after is None else {"line": after.line, **error_fields(after)}}))
            if after is not None:  # the line that explains it came first: the exception follows from it
                self.emit(Said("", f"then, at line {after.line}: {after.title}", "  ", line=after.line))
            return status
        if status != EXIT_STARTING:
            if state.outcome == READY:  # where the time went, and what would make the next start faster
                self.profile_one()
            self.emit(Said("verdict", fields={"verdict": str(log_alone.kind), "final": True}))  # READY said it
            return status
        current = state.current_phase
        where = ""
        if current is not None:
            pct = "" if current.progress is None else f" {current.progress * 100:.0f}%"
            doing = phase_words(current) if current.name == QUEUED else f"in {title(current.name)}"  # (a wait is no work)
            where = f"; {doing}{pct} since line {current.start_line}"
        last = f"; last line {state.last_line}" if state.last_line else "; the log is empty"
        fields = {"final": True, "phase": current.name if current else None,
                  "progress": current.progress if current else None, "last_line": state.last_line or None}
        note = self.session.judging.evaluate().note  # what it is doing meanwhile (waiting for Ray's GPUs, …)
        if note is not None:  # (before the final verdict, as every hint)
            self.emit(hint_said(note))
        if timed_out:
            self.emit(Said("verdict", f"{timeout}still starting{where}{last}", fields={"verdict": "timeout", **fields}))
        else:
            self.emit(Said("verdict", f"the log ended: still starting{where}{last}", fields={"verdict": "starting", **fields}))
        return status

    def launch_survivors(self) -> None:
        """A launch's: the attempt's processes alive after its main process ended (its process group's)."""
        self.survivors_said(self.cluster_node, self.launch.spec.host or "localhost", self.launch.survivors())

    def profile_one(self) -> None:
        """After READY: the startup profile and its speed advice (one ``profile`` record with --json)."""
        from tui.present.startup import profile_json, profile_lines

        state = self.session.state
        load = self.session.weight.facts()  # a download, what the load's processes read, as watched
        lines = profile_lines(state, load)
        if lines:
            self.emit(Said("profile", "\n".join(lines), indent="  ", fields=profile_json(state, load) or {}))

    # ------------------------------------------------------------ a launch (run --plain)

    def note(self, text: str, event: str = "note", **fields: Any) -> None:
        """A line of the launch's own (not indented): a refusal, a timeout, a server left running."""
        self.emit(Said(event, text, fields=fields), own=True)
        self.flush()

    def preflight(self, report: Any) -> None:
        """The checks before the launch: a summary, then each ⚠ and ✗ with its fix (words alone:
        the JSON record has them in ``checks``)."""
        self.note(report.summary, "preflight", checks=[c.to_json() for c in report.checks])
        for check in report.checks:
            if check.status != "ok":
                self.note(f"  {check.line}", "")

    def started(self) -> None:
        launch = self.launch
        run = launch.run
        where = "" if launch.spec.host is None else f" on {launch.spec.host}"
        how = "reattached to the running" if launch.reattached else "started"
        self.note(f"v{run.attempt} {how}{where}: pid {run.shown_pid}, log {run.log_path}", "start",
                  name=launch.spec.name, attempt=run.attempt, pid=run.shown_pid, log=str(run.log_path), host=launch.spec.host,
                  reattached=launch.reattached, command=launch.command_text)
        self.note(f"  {launch.command_text}", "")  # (words alone: the record has it in ``command``)

    async def consume(self) -> None:
        """A launch's: print everything heard, as it comes, until cancelled (``final`` is set
        once its verdict is final)."""
        self.ending.start()
        try:
            await self.follow()
        finally:
            self.ending.stop()

    def left_running(self) -> None:
        launch = self.launch
        if launch.server_running:
            self.note(
                f"v{launch.run.attempt} keeps running (pid {launch.run.shown_pid}); follow it again with"
                f" `watchtower attach {launch.spec.name}`", "left_running", pid=launch.run.shown_pid,
                attempt=launch.run.attempt, name=launch.spec.name,
            )

    def exit(self, status: int, verdict: Verdict | None = None) -> None:
        """``--json``'s last object: the exit status (the plain output ends with its verdict line)."""
        self.emit(Said("exit", fields={"exit": status, "verdict": None if verdict is None else str(verdict.kind)}))
        self.flush()


class NodesPresenter(PlainPresenter):
    """A node set (a Slurm job, Ray's, a cluster file's, a launch across nodes): each line led by
    its node; the barrier's milestones as every rank passes them, and who is not there yet at the end."""

    prefixed = True

    def __init__(self, cluster: ClusterSession, **kwargs: Any) -> None:
        super().__init__(cluster, **kwargs)
        self.done_milestones: set[str] = set()
        self.barrier_moved = False  # a node's update came: a milestone may have been passed by every rank
        self.stalled: str | None = None  # the node the last "stalled?" line named
        self.ends_with(WatchEnding(cluster.judging, nodes_hold, timeout=self.timeout, close=cluster.flush, began=self.began,
                                   backlog=lambda: sum(node.rest.backlog_left() for node in cluster.nodes.values())))

    def start_said(self) -> Said:
        specs = self.cluster.specs.values()
        return Said("start", self.title or "watching " + ", ".join(
            f"{s.name} ({s.host + ':' if s.host else ''}{s.log})" for s in specs), fields={
                "nodes": [{"node": s.name, "host": s.host, "log": s.log} for s in specs]})

    def follow_updates(self) -> None:
        self.cluster.subscribe(self.heard_from)  # the nodes' updates: a barrier may have moved

    def updated(self, update: Update) -> None:
        self.barrier_moved = self.barrier_moved or not update.samples_only  # (not with a GPU sample alone)

    def milestones(self) -> None:
        if self.barrier_moved:
            self.barrier_moved = False
            self.barrier_news()

    def watch_verdict(self, change: VerdictChanged) -> None:
        self.nodes_verdict(change.verdict)

    def nodes_verdict(self, verdict: Verdict) -> None:
        """What the node set's verdict says as it is pushed: a silent node (once, not every
        second), a node whose task ended while its log is read to its end."""
        if verdict.kind == STALLED and verdict.node != self.stalled:
            self.emit(verdict_said(verdict, verdict.text))
        self.stalled = verdict.node if verdict.kind == STALLED else None
        node = self.cluster.nodes.get(verdict.node or "")
        if verdict.kind == STARTING and verdict.node is not None and node is not None:  # its task ended
            self.reading_rest(verdict.node, verdict, node.rest.unread)

    def barrier_news(self) -> None:
        """A milestone every rank of every node has now reached."""
        nodes = len(self.cluster.nodes)
        if not nodes:
            return
        for row in self.cluster.barrier():
            if row.done and row.milestone not in self.done_milestones and row.milestone != "ready":
                self.done_milestones.add(row.milestone)
                self.emit(Said("barrier", f"barrier: {row.words} on all {row.total} ranks of {nodes} nodes",
                               fields={"milestone": row.milestone, "ranks": row.total, "nodes": nodes}))

    def node_verdicts(self) -> None:
        for name in self.cluster.nodes:
            verdict = self.cluster.node_verdict(name)
            self.emit(verdict_said(verdict, verdict.text, node=name, final=True), name)

    def barrier_report(self) -> None:
        """Who is not there yet, per milestone, with the verdict or the timeout."""
        rows = self.cluster.barrier()
        if self.json is not None:
            for row in rows:
                if not row.done:
                    self.emit(Said("barrier_missing", fields={
                        "milestone": row.milestone, "reached": row.reached, "ranks": row.total,
                        "missing": [{"rank": lag.label, "last_line": lag.last_line, "quiet_for": lag.quiet_for,
                                     "suspect": lag.suspect} for lag in row.missing]}))
            return
        for line in barrier_lines(rows):
            self.say(line)

    def profile_nodes(self) -> None:
        """After READY: where the time went, each phase's slowest node and rank (one ``profile`` record)."""
        from tui.core.cluster import SERVING, roles
        from tui.present.startup import nodes_profile

        serving = next((name for name, role in roles(self.cluster.statuses()).items() if role == SERVING), None)
        states = {name: session.state for name, session in self.cluster.nodes.items()}
        found = nodes_profile(states, serving) if serving is not None else None
        if found is not None:
            lines, fields = found
            self.emit(Said("profile", "\n".join(lines), indent="  ", fields=fields))

    def final_verdict(self, over: WatchOver) -> int:
        """The node set's last verdict, with each node's and — unless ready — who is not there
        yet; the exit status."""
        verdict = over.change.verdict
        if over.why == "timeout":
            if over.change.note is not None:  # what a node is doing meanwhile (waiting for Ray's GPUs, …), as one log's watch says it
                self.emit(hint_said(over.change.note), verdict.node)
            self.emit(verdict_said(verdict, f"TIMEOUT after {duration(self.timeout)}: {verdict.text}", verdict="timeout",
                                   final=True))
            self.node_verdicts()
            self.barrier_report()
            return EXIT_STARTING
        if verdict.kind in (READY, STOPPED):
            self.emit(verdict_said(verdict, verdict.text))
            if verdict.kind == READY:
                self.profile_nodes()
            return EXIT_READY
        for hint in over.change.hints:  # the failing node's, as the judging stage diagnosed them (before the verdict)
            self.emit(hint_said(hint), verdict.node)
        self.emit(verdict_said(verdict, verdict.text))  # the root cause may have arrived while it settled
        self.node_verdicts()
        self.barrier_report()
        return EXIT_FAILED
