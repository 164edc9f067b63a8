"""`watch --plain` and `run --plain`: one line per event, a clear verdict, an exit status.

The operator's old bash loop (tail, grep a list of error words, sleep 15) done right:
event-driven, every exception type, one line per event and a verdict. Both front ends
are a :class:`~tui.session.WatchSession` and a presenter reading the session's lossless
event queue (``WatchSession.listen``): text output never drops an event, however fast
the log grows. :class:`~tui.present.event_words.EventWords` words the tracker's events for both.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any, TextIO, assert_never

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
from tui.core.hints import hint_lines
from tui.core.lines import Line, clean
from tui.core.options import WatchOptions
from tui.core.state import FAILED, QUEUED, READY, STOPPED
from tui.core.verdict import (
    DEAD,
    EXIT_FAILED,
    EXIT_STARTING,
    EXIT_USAGE,
    LOADING,
    STALLED,
    STARTING,
    judge,
)
from tui.core.wording import duration, log_notice, phase_words
from tui.present.event_words import EventWords, error_fields, hint_said, title
from tui.launch.events import AttemptFinished, AttemptStarted, LaunchEvent, Note
from tui.present.records import JsonLines, Said
from tui.session import SessionEvent, WatchSession
from tui.session.judging import NoteFound, VerdictChanged

#: After the first fatal error or a ready line, keep reading this long (the root cause may
#: follow an error; a new startup in the same log may follow a ready line).
GRACE_S = 2.0
#: ... or until the log has been quiet this long.
QUIET_S = 0.5
#: Seconds between two weight-load progress lines (sooner when the time left moves a lot).
PROGRESS_EVERY_S = 5.0



class _Done:
    """The end of a replay's events, queued after its last one."""


_DONE = _Done()
Heard = asyncio.Queue[SessionEvent | _Done]


def verdict_said(verdict: Any, text: str, **more: Any) -> Said:
    """A verdict change (loading, stalled?, dead, failed …) as a record."""
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


class PlainWatch:
    """Follow one log (local, or remote with --host); print events; return the exit status."""

    def __init__(
        self, options: WatchOptions, profile: Any, label: str | None = None, ended: asyncio.Event | None = None,
        json: bool = False,
    ) -> None:
        from tui.history.watched import WatchedStartups
        from tui.sources.factory import log_tailer, make_gpu_source, writer_source

        self.args = options
        self.label = label or clean(options.log)  # the log as named to the user
        self.ended = ended  # set when nothing more will be written (a replay played out)
        self.session = WatchSession(
            log=log_tailer(options.log, host=options.host, from_end=options.from_end, writers=True),
            gpu=make_gpu_source(options.gpus.kind, options.host, options.gpus.interval),  # loading or stalled?
            profile=profile,
            scrollback=10,
            stall_limits=options.stall_limits,
        )
        # the server behind the log; none for a replay, whose writer is the replay itself
        writers = writer_source(options.log, host=options.host) if ended is None else None
        if writers is not None:
            self.session.add_source(writers)
        if options.health:
            self.session.probe_health(options.health, options.host)
        if options.smoke:
            self.session.want_smoke(options.host)
        self.memory = WatchedStartups()  # this server/model/TP size's phase times: stall limits
        self.session.expected = self.memory.longest
        self.words = EventWords(self.emit, lambda: self.session.state, health_url=options.health,
                                count=lambda: self.session.count_estimate())
        self.started = time.monotonic()
        self.json = JsonLines(started=self.started) if json else None  # --json: the records, not the words
        self.decided_at: float | None = None  # when the current startup became ready or failed
        self.ended_at: float | None = None  # when its processes said the server is gone
        self.said_reading = False  # "reading the rest of the log" said (its writer is gone)
        self.judged = STARTING  # the kind of the last quiet-log verdict printed
        self.health_said: str | None = None  # what --health's URL answered, as last said
        self.seen_pids: set[int] = set()
        self.gpu_note: str | None = None  # why there are no GPU samples, once said
        self.waiting: str | None = None
        self.progress_said: tuple[float, Any] | None = None  # (when, estimate) of the last progress line

    def say(self, text: str, indent: str = "") -> None:
        now = time.monotonic() - self.started
        minutes, secs = divmod(now, 60)
        stamp = f"{time.strftime('%H:%M:%S')}  +{int(minutes):02d}:{secs:04.1f}"
        for i, line in enumerate(text.split("\n")):  # \n only: clean() shows U+2028 and the rest
            line = clean(line)
            print(f"{stamp}  {indent}{line}" if i == 0 else f"{' ' * len(stamp)}  {indent}{line}")

    def emit(self, said: Said) -> None:
        """One record: its words (plain), or the whole record as a JSON line (``--json``)."""
        if self.json is not None:
            self.json.write(said)
        elif said.text:
            self.say(said.text, said.indent)

    # ------------------------------------------------------------ main loop

    async def run(self) -> int:
        status = await self.follow()
        self.emit(Said("exit", fields={"exit": status, "verdict": str(self.session.verdict().kind)}))
        sys.stdout.flush()
        return status

    async def follow(self) -> int:
        session = self.session
        queue: Heard = session.listen(lines=self.args.echo)  # type: ignore[assignment]  # (and _DONE, queued below)
        profile = session.profile
        self.emit(Said("start", f"watching {self.label}" + (f" (server: {profile.name})" if profile else ""),
                       fields={"log": self.label, "host": self.args.host, "server": profile.name if profile else None}))
        session.start()  # primes the tracker first: the first marker finds the automata built

        async def ended() -> None:
            await session.wait()
            queue.put_nowait(_DONE)

        watcher = asyncio.create_task(ended())
        deadline = None if self.args.timeout is None else self.started + self.args.timeout
        try:
            while True:
                now = time.monotonic()
                wait = QUIET_S
                if deadline is not None:
                    wait = min(wait, deadline - now)
                if self.decided_at is not None:
                    wait = min(wait, self.decided_at + GRACE_S - now)
                try:
                    async with asyncio.timeout(max(0.0, wait)):  # no task per wait, unlike wait_for
                        event = await queue.get()
                except TimeoutError:
                    event = None
                if isinstance(event, _Done):
                    return self.finish(queue)
                if isinstance(event, ConnectionState) and event.state == "refused":
                    self.emit(Said("connection", f"{event.host}: connection refused: {clean(event.detail or '')}",
                                   fields={"host": event.host, "state": event.state, "detail": event.detail}))
                    return EXIT_USAGE  # a host key or login problem: retrying will not fix it
                if event is not None:
                    self.handle(event)
                    while not queue.empty():  # everything already queued, then one flush
                        nxt = queue.get_nowait()
                        if isinstance(nxt, _Done) or isinstance(nxt, ConnectionState) and nxt.state == "refused":
                            queue.put_nowait(nxt)  # handled on the next turn, after what came before
                            break
                        self.handle(nxt)
                elif self.ended is not None and self.ended.is_set():  # written out, and read to the end
                    return self.finish(queue)
                elif self.log_quiet():
                    session.quiet()
                    self.drain(queue)
                sys.stdout.flush()  # once per batch: all it printed goes out in one write
                status = self.check(deadline, queue)
                if status is not None:
                    return status
        finally:
            sys.stdout.flush()
            watcher.cancel()
            await session.stop()
            await self.memory.close()

    def interrupted(self) -> None:
        """Ctrl-C: the verdict so far, so that an interrupted watch still ends with one."""
        try:
            verdict = self.session.verdict()
        except Exception as exc:  # noqa: BLE001  (a last line must never become a traceback)
            self.emit(Said("interrupted", f"interrupted (Ctrl-C); no verdict: {exc}", fields={"exit": 130}))
        else:
            self.emit(Said("interrupted", f"interrupted (Ctrl-C); the verdict so far: {verdict.text}",
                           fields={"verdict": str(verdict.kind), "detail": verdict.detail, "exit": 130}))
        self.emit(Said("exit", fields={"exit": 130, "verdict": None}))  # --json's last object, as always
        sys.stdout.flush()

    def log_quiet(self) -> bool:
        """No log bytes for QUIET_S."""
        last = self.session.last_output_at
        return last is None or self.session.clock() - last >= QUIET_S

    def drain(self, queue: Heard) -> None:
        while not queue.empty():
            event = queue.get_nowait()
            if not isinstance(event, _Done):
                self.handle(event)

    def finish(self, queue: Heard, timed_out: bool = False) -> int:
        self.session.finish()
        self.drain(queue)
        return self.verdict(timed_out)

    def check(self, deadline: float | None, queue: Heard) -> int | None:
        """The exit status once the watch is over, else None.

        Ready or failed is final once everything read is handled and the log has been quiet
        a moment, or after a grace period (a log that keeps growing): what follows may be the
        root cause of a failure, or a new startup in the same log that makes this one moot.
        """
        session = self.session
        state = session.state
        now = time.monotonic()
        self.memory.update(state)
        self.load_progress(now)
        if session.gpus.unavailable and session.gpus.unavailable != self.gpu_note:
            self.gpu_note = session.gpus.unavailable
            self.emit(Said("gpu_unavailable", f"no GPU data: {clean(self.gpu_note)}", fields={"reason": self.gpu_note}))
        if state.outcome == READY and self.health_pending():
            self.decided_at = None  # the log says ready; the URL has not answered 200 yet
        elif state.outcome in (READY, STOPPED, FAILED):
            if self.decided_at is None:
                self.decided_at = now
            smoke = session.smoke
            if state.outcome == READY and session.smoke_wanted and (smoke is None or smoke.url and not smoke.answer):
                self.decided_at = now  # ready means it answers: wait for the smoke test's answer
            elif now - self.decided_at >= GRACE_S or (queue.empty() and self.log_quiet()):
                return self.finish(queue)
        else:
            self.decided_at = None  # a new startup: undecided again
            status = self.quiet_verdict(now, queue)
            if status is not None:
                return status
        if deadline is not None and now >= deadline:
            return self.finish(queue, timed_out=True)
        return None

    def health_pending(self) -> bool:
        """``--health``: the URL has not answered 200 yet (said as it changes)."""
        health = self.session.health
        if health is None:
            return False
        if health.detail != self.health_said:
            self.health_said = health.detail
            fields = {"url": health.url, "ok": health.ok, "detail": health.detail}
            if health.ok:
                self.emit(Said("health", f"{health.url} answers: {clean(health.detail)}", fields=fields))
            elif self.session.state.outcome == READY:
                self.emit(Said("health", f"{health.url}: {clean(health.detail)}; not ready until it answers 200",
                               fields=fields))
        return not health.ok

    def load_progress(self, now: float) -> None:
        """A weight-load progress line (see :func:`progress_due`)."""
        estimate = self.session.load_estimate()
        if estimate is not None and progress_due(self.progress_said, now, estimate):
            self.progress_said = (now, estimate)
            self.emit(Said("weight_load_progress", f"  weight load {estimate.words()}", fields=estimate.to_json()))

    def quiet_verdict(self, now: float, queue: Heard) -> int | None:
        """What the log alone does not say: dead or failed (the processes behind it), and
        loading or stalled? (said once as it begins, and when the log moves again)."""
        verdict = self.session.verdict()
        if verdict.kind in (DEAD, FAILED):  # the server's processes say so; its last words may follow
            if self.ended_at is None:
                self.ended_at = now
            if not queue.empty() or now - self.ended_at < QUIET_S:
                return None
            self.session.finish()
            self.drain(queue)
            final = self.session.verdict()
            self.emit(verdict_said(final, f"{final.word}: {final.detail}"))
            return EXIT_FAILED if final.kind in (DEAD, FAILED) else self.verdict()
        self.ended_at = None
        if self.session.reading_rest and not self.said_reading:  # the writer is gone: reading its log to the end
            self.said_reading = True
            self.emit(Said("reading_rest", verdict.detail, fields={"bytes": self.session.reading_rest}))
        kind = verdict.kind if verdict.kind in (LOADING, STALLED) else STARTING
        if kind != self.judged:
            if kind != STARTING:
                self.emit(verdict_said(verdict, f"{verdict.word}: {verdict.detail}"))
            elif self.judged == STALLED:
                self.emit(verdict_said(verdict, "the log moves again"))
            self.judged = kind
        return None

    def handle(self, event: SessionEvent) -> None:
        match event:
            case Line():
                self.emit(Said("log", event.text, "| ", line=event.number, fields={"truncated": event.truncated}))
                self.waiting = None
            case LogWaiting():
                if event.reason != self.waiting:
                    self.waiting = event.reason
                    self.emit(Said("waiting", f"waiting for the log: {clean(event.reason)}", fields={"reason": event.reason}))
            case LogRestart():
                self.words.restarted()
                self.emit(Said("log_restart", log_notice(event), fields={"reason": event.reason}))
            case LogTruncated():  # a gap in the same startup, not a new attempt
                self.emit(Said("log_truncated", f"note: {log_notice(event)}", line=event.lines + 1, fields={"size": event.size}))
            case LogMoved():
                self.emit(Said("log_moved", log_notice(event), fields={  # (say() cleans the path it names)
                    "moved_to": event.moved_to, "done": event.done, **({} if event.done else {"writers": list(event.writers)})}))
            case ConnectionState():
                retry = f", retrying in {event.retry_in:.0f} s" if event.retry_in else ""
                detail = f": {clean(event.detail)}" if event.detail else ""
                self.emit(Said("connection", f"{event.host}: {event.state}{detail}{retry}", fields={
                    "host": event.host, "state": event.state, "detail": event.detail, "retry_in": event.retry_in}))
            case LogGap():
                fields = {"files": event.files} if event.files else {"offset": event.offset, "bytes": event.nbytes}
                self.emit(Said("log_gap", f"note: {log_notice(event)}", fields={**fields, "reason": event.reason}))
            case WritersFound() | WriterGone() | NoWriter():
                self.words.process(event, self.seen_pids, self.session.writers.main_pid)
            case Ready() if self.session.smoke_wanted:  # READY once it answered
                self.words.ready_marker(event, self.session.health.url if self.session.health is not None else None)
            case SmokeAnswered():
                self.words.smoke(event)
            case (ServerDetected() | PhaseStarted() | PhaseEnded() | PhaseProgress() | ErrorFound() | WarningFound()
                  | Ready() | Stopped() | NewStartup() | NoteFound()):
                self.words.show(event)
            case (LogChunk() | GpuSample() | GpuUnavailable() | ReadCounters() | CheckpointFound() | HealthStatus()
                  | ProcessStarted() | ProcessExited() | ProcessStopping() | SlurmJobState() | SlurmTaskEnded() | CacheGrowth() | DiskBusy()):
                pass  # not a line of their own: the verdict, progress and GPU lines say what they change
            case _:
                assert_never(event)

    # ------------------------------------------------------------ verdict

    def verdict(self, timed_out: bool = False) -> int:
        state = self.session.state
        status = judge(state).exit_status
        health = self.session.health
        if state.outcome == READY and health is not None and not health.ok:
            self.emit(Said("verdict", f"{'TIMEOUT after ' + duration(self.args.timeout) + ': ' if timed_out else ''}"
                           f"the log says ready (line {state.ready_line}) but {health.url} has not answered 200: "
                           f"{clean(health.detail)}", line=state.ready_line,
                           fields={"verdict": "timeout" if timed_out else "starting", "final": True,
                                   "health": health.url, "detail": health.detail}))
            return EXIT_STARTING
        if state.outcome == READY and self.session.smoke_wanted:
            smoke = self.session.verdict()  # ready means it answered the smoke test
            answer = self.session.smoke.answer if self.session.smoke is not None else None
            fields = {"smoke": None if answer is None else answer.url, "detail": smoke.detail,
                      "ttft_s": None if answer is None or answer.ttft is None else round(answer.ttft, 3)}
            if smoke.kind != READY:
                timeout = f"TIMEOUT after {duration(self.args.timeout)}: " if timed_out else ""
                kind = "failed" if smoke.kind == FAILED else "timeout" if timed_out else "starting"
                self.emit(Said("verdict", f"{timeout}{smoke.word}: {smoke.detail}", line=state.ready_line,
                               fields={"verdict": kind, "final": True, **fields}))
                scrollback = self.session.scrollback
                around = [e for e in scrollback.entries(scrollback.end_seq - 5) if e.number > 0]
                if around:  # what the log said around it: the server may have logged the error too
                    self.emit(Said("", "the log's last lines:\n" + "\n".join(f"{e.number}: {e.text}" for e in around),
                                   indent="  "))
                return EXIT_FAILED if smoke.kind == FAILED else EXIT_STARTING
            self.emit(Said("verdict", f"{smoke.word}: {smoke.detail}", line=state.ready_line,
                           fields={"verdict": "ready", "final": True, **fields}))
            self.profile(state)
            return status
        if state.outcome == READY and health is not None:
            self.profile(state)
            self.emit(Said("verdict", f"READY: the log's ready line (line {state.ready_line}) and {health.url} "
                           "answering 200", line=state.ready_line,
                           fields={"verdict": "ready", "final": True, "health": health.url}))
            return status
        totals = self.words.totals()
        if totals:
            self.emit(Said("note", totals, fields={"warnings": self.words.warnings}))
        if state.outcome == FAILED:
            error = state.first_error
            if error is None:
                self.emit(Said("verdict", "FAILED", fields={"verdict": str(FAILED), "final": True}))
                return status
            rank = f" [{error.rank}]" if error.rank else ""
            also = self.words.also_on(error)
            others = f" (also on {', '.join(also)})" if also else ""
            which = f" (attempt {state.attempt} in this log)" if state.attempt > 1 else ""
            after = state.follow_on(error)
            self.emit(Said("verdict", f"FAILED at line {error.line}{rank}: {error.message}{others}{which}", line=error.line,
                           fields={"verdict": str(FAILED), "final": True, "attempt": state.attempt,
                                   "error": error_fields(error), "also_on": also,
                                   "follow_on": None if after is None else {"line": after.line, **error_fields(after)}}))
            if after is not None:  # the line that explains it came first: the exception follows from it
                self.emit(Said("", f"then, at line {after.line}: {after.title}", "  ", line=after.line))
            for hint in self.session.judging.evaluate().hints:  # as the judging stage diagnosed them
                self.emit(hint_said(hint))
            return status
        if status != EXIT_STARTING:
            if state.outcome == READY:  # where the time went, and what would make the next start faster
                self.profile(state)
            self.emit(Said("verdict", fields={"verdict": str(judge(state).kind), "final": True}))  # READY said it
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
        if timed_out:
            self.emit(Said("verdict", f"TIMEOUT after {duration(self.args.timeout)}: still starting{where}{last}",
                           fields={"verdict": "timeout", **fields}))
        else:
            self.emit(Said("verdict", f"the log ended: still starting{where}{last}", fields={"verdict": "starting", **fields}))
        note = self.session.judging.evaluate().note  # what it is doing meanwhile (waiting for Ray's GPUs, …)
        if note is not None:
            self.emit(hint_said(note))
        return status


    def profile(self, state: Any) -> None:
        """After READY: the startup profile and its speed advice (one ``profile`` record with --json)."""
        from tui.present.startup import profile_json, profile_lines

        load = self.session.load_facts()  # a download, what the load's processes read, as watched
        lines = profile_lines(state, load)
        if lines:
            self.emit(Said("profile", "\n".join(lines), indent="  ", fields=profile_json(state, load) or {}))


class PlainPrinter:
    """`run --plain` (and ``--json``): the attempt's lines, the tracker's events and each verdict
    change, masked.

    Tracker events come from the session's lossless queue and launch events are put into
    the same queue, so everything prints in the order it happened.
    """

    def __init__(self, out: TextIO, session: WatchSession, launch: Any, json: bool = False) -> None:
        self.launch = launch
        self.out = out
        self.session = session
        self.progress_said: tuple[float, Any] | None = None  # (when, estimate) of the last progress line
        self.queue: asyncio.Queue[SessionEvent | LaunchEvent] = session.listen()  # type: ignore[assignment]
        self.words = EventWords(self.emit, lambda: session.state, health_url=launch.spec.health_url,
                                count=session.count_estimate)
        self.final = asyncio.Event()
        self._last_kind = STARTING
        self.json = JsonLines(out, mask=launch.masker.text) if json else None
        launch.subscribe(self.queue.put_nowait)

    def say(self, text: str) -> None:
        self.out.write(clean(self.launch.masker.text(text)) + "\n")
        self.out.flush()

    def emit(self, said: Said) -> None:
        """One record: its words, indented under the attempt's lines, or a JSON line (``--json``)."""
        if self.json is not None:
            self.json.write(said)
            self.out.flush()
        elif said.text:
            self.say(f"  {said.indent}{said.text}")

    def note(self, text: str, event: str = "note", **fields: Any) -> None:
        """A line of the launch's own (not indented): a refusal, a timeout, a server left running."""
        if self.json is not None:
            self.emit(Said(event, text, fields=fields))
        else:
            self.say(text)

    def preflight(self, report: Any) -> None:
        """The checks before the launch: a summary, then each ⚠ and ✗ with its fix."""
        if self.json is not None:
            self.emit(Said("preflight", report.summary, fields={"checks": [c.to_json() for c in report.checks]}))
            return
        self.say(report.summary)
        for check in report.checks:
            if check.status != "ok":
                self.say(f"  {check.line}")

    def started(self) -> None:
        run = self.launch.run
        where = "" if self.launch.spec.host is None else f" on {self.launch.spec.host}"
        how = "reattached to the running" if self.launch.reattached else "started"
        text = f"v{run.attempt} {how}{where}: pid {run.pid}, log {run.log_path}"
        if self.json is not None:
            self.emit(Said("start", text, fields={
                "name": self.launch.spec.name, "attempt": run.attempt, "pid": run.pid, "log": str(run.log_path),
                "host": self.launch.spec.host, "reattached": self.launch.reattached,
                "command": self.launch.command_text}))
            return
        self.say(text)
        self.say(f"  {self.launch.command_text}")

    async def consume(self) -> None:
        """Print everything queued, as it comes, until cancelled."""
        while True:
            self.handle(await self.queue.get())

    def drain(self) -> None:
        while not self.queue.empty():
            self.handle(self.queue.get_nowait())

    def handle(self, event: SessionEvent | LaunchEvent) -> None:
        match event:
            case VerdictChanged():
                self.verdict(event)
                estimate = self.session.load_estimate()  # re-judged once a second: the weight load's bytes
                now = time.monotonic()
                if estimate is not None and progress_due(self.progress_said, now, estimate):
                    self.progress_said = (now, estimate)
                    self.emit(Said("weight_load_progress", f"weight load {estimate.words()}", fields=estimate.to_json()))
            case Note():
                self.emit(Said("note", event.text))
            case SmokeAnswered():
                self.words.smoke(event)
            case Ready() if self.launch.spec.smoke:
                self.words.ready_marker(event, self.launch.spec.health_url)
            case ErrorFound() if event.error.secondary:
                pass  # a consequence of the cause: it is in the log
            case (ServerDetected() | PhaseStarted() | PhaseEnded() | PhaseProgress() | ErrorFound() | WarningFound()
                  | Ready() | Stopped() | NewStartup() | NoteFound()):
                self.words.show(event)
            case AttemptStarted() | AttemptFinished():
                pass  # said by ``started`` and the final verdict
            case (Line() | LogChunk() | LogGap() | LogRestart() | LogTruncated() | LogWaiting() | LogMoved()
                  | ConnectionState() | WritersFound() | WriterGone() | NoWriter() | ReadCounters() | CheckpointFound()
                  | GpuSample() | GpuUnavailable() | ProcessStarted() | ProcessExited() | ProcessStopping()
                  | SlurmJobState() | SlurmTaskEnded() | HealthStatus() | CacheGrowth() | DiskBusy()):
                pass  # no words of their own here: the verdict and progress lines say what they change
            case _:
                assert_never(event)

    def verdict(self, change: VerdictChanged) -> None:
        verdict, previous = change.verdict, change.previous
        if verdict.kind != self._last_kind or verdict.kind in (LOADING, STALLED) and previous is not None and (
            previous.kind != verdict.kind
        ):
            self.note(verdict.text, "verdict", **verdict_said(verdict, "").fields)
            if verdict.kind in (FAILED, DEAD):
                for hint in change.hints:  # as the judging stage diagnosed them
                    if self.json is not None:
                        self.emit(hint_said(hint))
                    else:
                        for line in hint_lines([hint], indent="  "):
                            self.say(line)
        self._last_kind = verdict.kind
        if verdict.final:
            self.final.set()

    def left_running(self) -> None:
        launch = self.launch
        if launch.server_running:
            self.note(
                f"v{launch.run.attempt} keeps running (pid {launch.run.pid}); follow it again with"
                f" `watchtower attach {launch.spec.name}`", "left_running", pid=launch.run.pid,
                attempt=launch.run.attempt, name=launch.spec.name,
            )

    def exit(self, status: int, verdict: Any = None) -> None:
        """``--json``'s last object: the exit status (the plain output ends with its verdict line)."""
        if self.json is not None:
            self.emit(Said("exit", fields={"exit": status, "verdict": None if verdict is None else str(verdict.kind)}))
