"""`watch --plain` and `run --plain`: one line per event, a clear verdict, an exit status.

The operator's old bash loop (tail, grep a list of error words, sleep 15) done right:
event-driven, every exception type, one line per event — wall-clock time, time since
the watch began, what happened — and a verdict.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections import deque
from typing import Any

from tui.core.events import (
    ConnectionState,
    ErrorFound,
    GpuSample,
    GpuUnavailable,
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
    Ready,
    ServerDetected,
    Stopped,
    WarningFound,
    WriterGone,
    WritersFound,
)
from tui.core.hints import hint_lines, load_knowledge
from tui.core.lines import Line, LineAssembler
from tui.core.options import WatchOptions
from tui.core.state import FAILED, PHASE_TITLES, READY, STOPPED, ErrorReport
from tui.core.verdict import (
    DEAD,
    EXIT_FAILED,
    EXIT_READY,
    EXIT_STARTING,
    EXIT_USAGE,
    LOADING,
    STALLED,
    STARTING,
    ProcessStatus,
    Verdict,
    gpu_activity,
    judge,
)
from tui.core.writers import WriterState, describe
from tui.core.wording import duration
from tui.sources import log_tailer, make_gpu_source, writer_source

#: After the first fatal error or a ready line, keep reading this long (the root cause may
#: follow an error; a new startup in the same log may follow a ready line).
GRACE_S = 2.0
#: ... or until the log has been quiet this long.
QUIET_S = 0.5
#: A phase's progress is printed at most this often.
PROGRESS_EVERY_S = 3.0
#: Warnings printed one by one; later ones are only counted.
MAX_WARNINGS_SHOWN = 20
#: Lines of a traceback shown with the error.
BLOCK_TAIL = 5


def title(phase: str) -> str:
    return PHASE_TITLES.get(phase, phase)


class PlainWatch:
    """Follow one log (local, or remote with --host); print events; return the exit status."""

    def __init__(
        self,
        options: WatchOptions,
        profile: Any,
        label: str | None = None,
        ended: asyncio.Event | None = None,
    ) -> None:
        from tui.core.tracker import StartupTracker
        from tui.history import WatchedStartups

        self.args = options
        self.label = label or options.log  # the log as named to the user
        self.ended = ended  # set when nothing more will be written (a replay played out)
        self.memory = WatchedStartups()  # this server/model/TP size's phase times: stall limits
        self.judged = STARTING  # the kind of the last verdict printed for a quiet log
        self.data_seen = False
        self.writers = WriterState()  # the processes behind the log, when discovery names them
        self.seen_pids: set[int] = set()
        self.ended_at: float | None = None  # when the processes said the server is gone
        self.gpu_samples: deque[GpuSample] = deque(maxlen=64)  # stamped on arrival (monotonic)
        self.gpu_note: str | None = None  # why there are no GPU samples, once said
        self.tracker = StartupTracker(profile)
        self.lines = LineAssembler()
        self.started = time.monotonic()
        self.decided_at: float | None = None  # when the current startup became ready or failed
        self.last_data = self.started
        self.waiting: str | None = None
        self.progress_at: dict[str, float] = {}
        self.warnings_shown = 0
        self.printed: dict[tuple[str, str], list[ErrorReport]] = {}  # (kind, message) -> errors
        self.messages: dict[int, str] = {}  # error id -> message printed
        self.hints = load_knowledge()
        self.hinted: set[str] = set()  # warning hints already printed

    # ------------------------------------------------------------ output

    def say(self, text: str, indent: str = "") -> None:
        now = time.monotonic() - self.started
        minutes, secs = divmod(now, 60)
        stamp = f"{time.strftime('%H:%M:%S')}  +{int(minutes):02d}:{secs:04.1f}"
        for i, line in enumerate(text.splitlines() or [""]):
            print(f"{stamp}  {indent}{line}" if i == 0 else f"{' ' * len(stamp)}  {indent}{line}")

    # ------------------------------------------------------------ main loop

    async def run(self) -> int:
        tailer = log_tailer(self.args.log, host=self.args.host, from_end=self.args.from_end, writers=True)
        writers = writer_source(self.args.log, host=self.args.host)  # the server behind the log
        gpus = make_gpu_source(self.args.gpus.kind, self.args.host, self.args.gpus.interval)  # loading or stalled?
        sides = [source for source in (writers, gpus) if source is not None]
        queue: asyncio.Queue = asyncio.Queue(maxsize=16)
        done = object()

        async def pump() -> None:
            try:
                async for event in tailer.events():
                    await queue.put(event)
            finally:
                await queue.put(done)

        async def pump_side(source: Any) -> None:
            async for event in source.events():
                await queue.put(event)

        self.say(f"watching {self.label}" + (f" (server: {self.tracker.profile.name})" if self.tracker.profile else ""))
        self.tracker.prime()  # before the tailer starts: the first marker then finds the automata built
        task = asyncio.create_task(pump())
        side_tasks = [asyncio.create_task(pump_side(source)) for source in sides]
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
                if event is done:
                    self.show(self.tracker.finish())
                    return self.verdict()
                if isinstance(event, ConnectionState) and event.state == "refused":
                    self.say(f"{event.host}: connection refused: {event.detail}")
                    return EXIT_USAGE  # a host key or login problem: retrying will not fix it
                if event is not None:
                    self.handle(event)
                elif self.ended is not None and self.ended.is_set():  # written out, and read to the end
                    self.show(self.tracker.finish())
                    return self.verdict()
                else:
                    self.show(self.tracker.quiet())
                sys.stdout.flush()  # once per event: all it printed goes out in one write
                status = self.check(deadline, caught_up=queue.empty())
                if status is not None:
                    return status
        finally:
            sys.stdout.flush()
            for pending in (task, *side_tasks):
                pending.cancel()
            await tailer.close()
            for source in sides:
                await source.close()
            await self.memory.close()
            for pending in (task, *side_tasks):
                try:
                    await pending
                except (asyncio.CancelledError, Exception):
                    pass

    def check(self, deadline: float | None, caught_up: bool = True) -> int | None:
        """The exit status once the watch is over, else None.

        Ready or failed is final once the log has been read to its end (``caught_up``) and
        has been quiet a moment, or after a grace period: what follows may be the root cause
        of the failure, or a new startup that makes the verdict of this one moot.
        """
        state = self.tracker.state
        now = time.monotonic()
        if state.outcome in (READY, STOPPED, FAILED):
            if self.decided_at is None:
                self.decided_at = now
            if caught_up and (now - self.decided_at >= GRACE_S or now - self.last_data >= QUIET_S):
                self.show(self.tracker.finish())
                return self.verdict()
        else:
            self.decided_at = None  # a new startup: undecided again
            status = self.quiet_verdict(now, caught_up)
            if status is not None:
                return status
        if deadline is not None and now >= deadline:
            self.show(self.tracker.finish())
            return self.verdict(timed_out=True)
        return None

    def judge(self) -> Verdict:
        """The verdict now (``tui.core.verdict``): for a quiet log, loading, stalled? or dead."""
        state = self.tracker.state
        phase = state.current_phase
        return judge(
            state,
            now=time.monotonic(),
            last_activity=self.last_data if self.data_seen else None,
            last_line=state.last_text[-160:] or None,
            process=self.writers.status(),
            gpu=gpu_activity(self.gpu_samples, time.monotonic(), pids=self.writers.pids or None),
            expected_phase=self.memory.longest.get(phase.name) if phase is not None else None,
            limits=self.args.stall_limits,
        )

    def quiet_verdict(self, now: float, caught_up: bool) -> int | None:
        """What the log alone does not say: dead or failed (the processes behind it), and
        loading or stalled? (said once as it begins, and when the log moves again)."""
        verdict = self.judge()
        if verdict.kind in (DEAD, FAILED):  # the server's processes say so; its last words may follow
            if self.ended_at is None:
                self.ended_at = now
            if not caught_up or now - self.ended_at < QUIET_S:
                return None
            self.show(self.tracker.finish())
            final = self.judge()
            self.say(final.text)
            return EXIT_FAILED if final.kind in (DEAD, FAILED) else self.verdict()
        self.ended_at = None
        kind = verdict.kind if verdict.kind in (LOADING, STALLED) else STARTING
        if kind == self.judged:
            return
        if kind != STARTING:
            self.say(verdict.text)
        elif self.judged == STALLED:
            self.say("the log moves again")
        self.judged = kind
        return None

    def writer(self, event: WritersFound | WriterGone | NoWriter) -> None:
        """The processes behind the log: each one once as it appears, each one that ends."""
        if not self.writers.apply(event):
            return
        if isinstance(event, WritersFound):
            for process in event.processes:
                if process.pid in self.seen_pids:
                    continue
                self.seen_pids.add(process.pid)
                rank = f" [{process.rank}]" if process.rank else ""
                how = "writes the log" if process.writes_log else f"child of {process.ppid}"
                self.say(f"{'server' if process.role == 'main' else process.role}{rank}: {describe(process)}, {how}")
        elif isinstance(event, WriterGone):
            process = event.process
            rank = f" [{process.rank}]" if process.rank else ""
            how = ProcessStatus(False, event.returncode, event.signal, exit_known=event.exit_known).exit_text
            self.say(f"gone: {process.role}{rank} {describe(process)}, {how}")
        elif isinstance(event, NoWriter):
            self.say(f"no writer found: {event.detail}; judging by the log and the GPUs alone")

    def handle(self, event) -> None:
        if isinstance(event, LogChunk):
            self.data_seen = True
            self.last_data = time.monotonic()
            self.waiting = None
            for item in self.lines.feed(event.data):
                if self.args.echo and isinstance(item, Line):
                    self.say(item.text, indent="| ")
                self.show(self.tracker.feed(item, event.at))
            self.memory.update(self.tracker.state)
        elif isinstance(event, (WritersFound, WriterGone, NoWriter)):
            self.writer(event)
        elif isinstance(event, GpuSample):
            self.gpu_samples.append(dataclasses.replace(event, at=time.monotonic()))
            self.gpu_note = None
        elif isinstance(event, GpuUnavailable):
            self.gpu_samples.clear()
            if event.reason != self.gpu_note:
                self.gpu_note = event.reason
                self.say(f"no GPU data: {event.reason}")
        elif isinstance(event, LogWaiting):
            if event.reason != self.waiting:
                self.waiting = event.reason
                self.say(f"waiting for the log: {event.reason}")
        elif isinstance(event, LogRestart):
            self.show(self.tracker.finish())
            self.lines.reset()
            self.tracker.restart()
            self.progress_at.clear()
            self.say(f"the log was {event.reason}: a new attempt starts at line 1")
        elif isinstance(event, LogTruncated):  # a gap, not a new attempt
            self.lines.reset()
            self.lines.skip(event.lines, event.size)
            self.say(f"note: the log was truncated to {event.size} bytes; following on from line {event.lines + 1}")
        elif isinstance(event, LogMoved):
            if event.done:
                self.say(f"finished the moved log {event.moved_to}")
            else:
                pids = ", ".join(map(str, event.writers)) or "?"
                self.say(f"the log was moved to {event.moved_to} and is still written there (pid {pids}): following it too")
        elif isinstance(event, ConnectionState):
            retry = f", retrying in {event.retry_in:.0f} s" if event.retry_in else ""
            detail = f": {event.detail}" if event.detail else ""
            self.say(f"{event.host}: {event.state}{detail}{retry}")
        elif isinstance(event, LogGap):
            self.say(f"note: {event.nbytes} bytes at offset {event.offset} could not be read ({event.reason})")

    # ------------------------------------------------------------ events

    def show(self, events: list) -> None:
        for event in events:
            if isinstance(event, ServerDetected):
                self.say(f"server: {event.server} (line {event.line})")
            elif isinstance(event, PhaseStarted):
                self.say(f"{title(event.phase)} started (line {event.line})")
            elif isinstance(event, PhaseProgress):
                self.progress(event)
            elif isinstance(event, PhaseEnded):
                phase = self.tracker.state.phase(event.phase)
                span = f"lines {phase.start_line}-{event.line}" if phase else f"line {event.line}"
                ranks = f", slowest {event.slowest_rank} of {event.ranks} ranks" if event.ranks > 1 else ""
                self.say(f"{title(event.phase)} done in {duration(event.seconds)} ({span}{ranks})")
            elif isinstance(event, Ready):
                self.say(f"READY (line {event.line}): the server is up after {duration(event.seconds)} of log time")
            elif isinstance(event, Stopped):
                self.say(f"stopped (line {event.line}): {event.text}")
            elif isinstance(event, NewStartup):
                self.new_startup(event)
            elif isinstance(event, WarningFound):
                self.warning(event)
            elif isinstance(event, ErrorFound):
                self.error(event.error)

    def new_startup(self, event: NewStartup) -> None:
        before = event.previous
        error = f", {before.first_error}" if before.first_error else ""
        self.say(f"new startup at line {event.line} (attempt {event.attempt} in this log); "
                 f"attempt {before.number} (lines {before.start_line}-{before.end_line}): {before.outcome}{error}")
        self.progress_at.clear()
        self.printed.clear()  # the same error in this attempt is news again
        self.warnings_shown = 0

    def progress(self, event: PhaseProgress) -> None:
        now = time.monotonic()
        last = self.progress_at.get(event.phase)
        if last is not None and now - last < PROGRESS_EVERY_S:
            return
        self.progress_at[event.phase] = now
        pct = "" if event.fraction is None else f"{event.fraction * 100:.0f}% "
        self.say(f"{title(event.phase)} {pct}{event.detail}".rstrip())

    def warning(self, event: WarningFound) -> None:
        self.warnings_shown += 1
        if self.warnings_shown <= MAX_WARNINGS_SHOWN:
            self.say(f"warning (line {event.line}): {event.text}")
        elif self.warnings_shown == MAX_WARNINGS_SHOWN + 1:
            self.say("more warnings: counted, not shown")
        hint = self.hints.for_warning(event.text, line=event.line, server=self.tracker.state.server)
        if hint is not None and hint.id not in self.hinted:
            self.hinted.add(hint.id)
            self.say("\n".join(hint_lines([hint], indent="")), indent="  ")

    def error(self, error: ErrorReport) -> None:
        key = (error.kind, error.message)
        previous = self.messages.get(id(error))
        if previous == error.message:
            return
        self.messages[id(error)] = error.message
        same = self.printed.setdefault(key, [])
        same.append(error)
        if len(same) > 1:
            return  # the same error from another rank: named in the verdict
        rank = f" [{error.rank}]" if error.rank else ""
        what = "note" if error.secondary else "error" if error.fatal else "not fatal"
        cause = "cause now" if previous is not None else what
        self.say(f"{cause}: line {error.line}{rank}: {error.message}")
        tail = [text for _, text in error.block[-BLOCK_TAIL:]] if len(error.block) > 1 else []
        for text in tail:
            self.say(text.rstrip()[:300], indent="    | ")

    # ------------------------------------------------------------ verdict

    def verdict(self, timed_out: bool = False) -> int:
        state = self.tracker.state
        if state.outcome in (READY, STOPPED):
            return EXIT_READY
        if state.outcome == FAILED:
            error = state.first_error
            if error is None:
                self.say("FAILED")
                return EXIT_FAILED
            rank = f" [{error.rank}]" if error.rank else ""
            also = list(dict.fromkeys(
                e.rank for e in self.printed.get((error.kind, error.message), []) if e.rank and e.rank != error.rank
            ))
            others = f" (also on {', '.join(also)})" if also else ""
            which = f" (attempt {state.attempt} in this log)" if state.attempt > 1 else ""
            self.say(f"FAILED at line {error.line}{rank}: {error.message}{others}{which}")
            hints = self.hints.diagnose(state)
            if hints:
                self.say("\n".join(hint_lines(hints, indent="")), indent="  ")
            return EXIT_FAILED
        current = state.current_phase
        where = ""
        if current is not None:
            pct = "" if current.progress is None else f" {current.progress * 100:.0f}%"
            where = f"; in {title(current.name)}{pct} since line {current.start_line}"
        last = f"; last line {state.last_line}" if state.last_line else "; the log is empty"
        if timed_out:
            self.say(f"TIMEOUT after {duration(self.args.timeout)}: still starting{where}{last}")
        else:
            self.say(f"the log ended: still starting{where}{last}")
        return EXIT_STARTING


class PlainPrinter:
    """Text mode: one line per phase, error and verdict change, masked and control-free."""

    def __init__(self, out, launch=None) -> None:
        from tui.core.verdict import STARTING

        self.launch = launch
        self.out = out
        self.final = asyncio.Event()
        self._last_kind = STARTING

    def say(self, text: str) -> None:
        from tui.core.lines import clean

        self.out.write(clean(self.launch.masker.text(text)) + "\n")
        self.out.flush()

    def started(self) -> None:
        run = self.launch.run
        where = "" if self.launch.spec.host is None else f" on {self.launch.spec.host}"
        how = "reattached to the running" if self.launch.reattached else "started"
        self.say(f"v{run.attempt} {how}{where}: pid {run.pid}, log {run.log_path}")
        self.say(f"  {self.launch.command_text}")

    def update(self, update) -> None:
        from tui.core.events import ErrorFound, PhaseEnded, PhaseStarted, Ready, WarningFound
        from tui.core.state import PHASE_TITLES
        from tui.core.verdict import EXIT_KINDS
        from tui.core.wording import clock

        for event in update.events:
            if isinstance(event, PhaseStarted):
                self.say(f"  {PHASE_TITLES.get(event.phase, event.phase)} started (line {event.line})")
            elif isinstance(event, PhaseEnded):
                slow = f", slowest {event.slowest_rank}" if event.slowest_rank and event.ranks > 1 else ""
                took = f" in {clock(event.seconds)}" if event.seconds is not None else ""
                self.say(f"  {PHASE_TITLES.get(event.phase, event.phase)} done{took}{slow}")
            elif isinstance(event, ErrorFound):
                err = event.error
                if err.kind in EXIT_KINDS or getattr(err, "secondary", False):
                    continue  # the exit is in the verdict; consequences are in the log
                rank = f" ({err.rank})" if getattr(err, "rank", None) else ""
                self.say(f"  error at line {err.line}{rank}: {err.title}")
            elif isinstance(event, WarningFound):
                pass
            elif isinstance(event, Ready):
                self.say(f"  ready marker at line {event.line}")

    def verdict(self, verdict, previous) -> None:
        from tui.core.verdict import LOADING, STALLED

        if verdict.kind != self._last_kind or verdict.kind in (LOADING, STALLED) and previous is not None and (
            previous.kind != verdict.kind
        ):
            self.say(verdict.text)
        self._last_kind = verdict.kind
        if verdict.final:
            self.final.set()

    def left_running(self) -> None:
        launch = self.launch
        if launch.server_running:
            self.say(
                f"v{launch.run.attempt} keeps running (pid {launch.run.pid}); follow it again with"
                f" `watchtower attach {launch.spec.name}`"
            )
