"""The launch loop: launch → watch → fix → relaunch, as attempts v1…vN.

A :class:`Launch` owns one named launch and only its lifecycle, on one host or across
nodes: it starts attempts through a :class:`~tui.launch.runner.Runner` (a local process
group; detached over SSH; the same command on every node over SSH, ``tui.launch.nodes``; a
Slurm job, ``tui.launch.slurm``). On one host it follows each attempt's own log
(``tui.launch.attempt_log``), probes ``--health``, keeps recent GPU samples
(``tui.launch.gpu_release``) and gives the session's judging stage its evidence (``decide``:
the process, ``--health``, the ETA; ``tui.session.judging``): it is an event source for a
:class:`~tui.session.WatchSession` (``events()``). An attempt across nodes is followed by the
node set its runner makes (``Runner.node_set``; ``nodes`` either way), judged by that set's own
stage. Relaunch, stop, attach, the history and the attempts are the same for both. It tells its subscribers
what happened in typed events (``tui.launch.events``: AttemptStarted, the stage's
VerdictChanged, AttemptFinished, Note); the
history record, bell, title and hooks are one such subscriber (``tui.launch.outcome``).
No Textual: the dashboard and ``watchtower run --plain`` use it alike.

Secrets: the real environment only lives in memory, for the next relaunch; what is
shown, stored or handed to hooks goes through a :class:`~tui.core.secrets.Masker`.

Start, reattach, stop and relaunch share the attempt's state, hence one class; the pieces
that stand alone are the other modules of this package.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shlex
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.core import cmdline
from tui.core.events import GpuSample, PhaseStarted, ProcessExited, ProcessStarted, ProcessStopping
from tui.core.hints import Diagnosis, knowledge
from tui.core.profiles import ProfileError
from tui.core.secrets import MASK, Masker, mask_argv
from tui.core.state import READY
from tui.core.events import HealthStatus, SourceEvent
from tui.core.evidence import judge
from tui.core.verdict import DEAD, STARTING, ProcessStatus, Verdict, describe_exit
from tui.history import AttemptRecord, Expectations, History, HistoryError
from tui.launch.attempt_log import AttemptLog
from tui.sources.procscan import available as procscan_available
from tui.sources.writers import ProcessTreeIO
from tui.launch.events import AttemptFinished, AttemptStarted, LaunchEvent, Note
from tui.session.judging import VerdictChanged
from tui.launch.gpu_release import GPU_RELEASE_TIMEOUT, GpuBusy, GpuHolder, GpuWatch
from tui.launch.outcome import Outcome
from tui.launch.proctable import command_line, group_members, is_alive, wait_pids_gone
from tui.launch.runner import AttemptRun, Emit, Runner, StopResult
from tui.launch.spec import LaunchError, LaunchSpec, attempt_paths, exit_path
from tui.sources.health import HealthProbe

if TYPE_CHECKING:
    from tui.cluster import ClusterSession
    from tui.core.options import NodeSpec
    from tui.session import WatchSession
    from tui.sources.probe import PortHolder  # imported when used: it reads the agent's source

#: Longest wait for the log's last bytes before a process exit is passed on.
EXIT_DRAIN = 0.5

Subscriber = Callable[[LaunchEvent], None]
#: Runs the preflight for (command, env); returns a report with ``.failed`` (tui.preflight.Report).
Preflight = Callable[[Sequence[str], Mapping[str, str]], Awaitable[Any]]


class PreflightRefused(LaunchError):
    """The preflight found a ✗ (the server would fail for certain): the attempt is not started."""

    def __init__(self, report: Any) -> None:
        failed = report.failed
        super().__init__(f"preflight: {len(failed)} check(s) failed, not launching (--no-check launches anyway): "
                         + "; ".join(c.line for c in failed))
        self.report = report


class Launch:
    """One named launch and its attempts. Create (across nodes: with ``make_node``, how a node is
    followed), ``attach(session)`` (on one host: the session its log feeds), then ``await start()``."""

    def __init__(
        self,
        spec: LaunchSpec,
        *,
        history: History | None = None,
        runner: Callable[[Emit], Runner] | None = None,
        clock: Callable[[], float] = time.time,
        terminal: Callable[[str], None] | None = None,
        make_node: Callable[[NodeSpec], WatchSession] | None = None,
    ) -> None:
        self.spec = spec
        self.history = history
        self.clock = clock
        self.terminal = terminal  # writes bell / title sequences to the terminal, if any
        self.masker = Masker.for_launch(spec.env, spec.command)
        # how attempts run, made with where the runner reports (default: here, or the spec's SSH host)
        self.runner = runner(self._emit) if runner is not None else self._default_runner()
        #: A node's session, for a runner whose attempts span several nodes (``Runner.node_set``).
        self.make_node = make_node
        #: The attempt runs here: its processes, leftovers and log files can be looked at directly.
        self.local = spec.host is None and not self.runner.spans
        self.timeout: float | None = None  # --timeout: each attempt's node set keeps its own deadline
        self.run: AttemptRun | None = None
        self.record: AttemptRecord | None = None
        self.records: list[AttemptRecord] = []  # this launch's attempts, oldest first
        self.expect = Expectations(None, {})
        self.health: HealthStatus | None = None
        self._io_pid: int | None = None  # the launched server whose I/O counters are read
        self.session: WatchSession | None = None  # the one log's, across attempts (``attach``)
        self._one: ClusterSession | None = None  # ... as a node set of one
        self.attempt_nodes: ClusterSession | None = None  # an attempt across several nodes: its node set
        self.gpus = GpuWatch(local=self.local, mask=self.masker.text)
        self.gpu_enabled = False  # whether the session has a GPU source
        self.verdict_now: Verdict | None = None
        self.old_pgids: list[int] = []  # process groups of earlier attempts
        self.phase_started_at: dict[str, float] = {}
        self.reattached = False  # the current attempt was started by an earlier Watchtower
        self.activity = ""  # what a relaunch is waiting for, in words, while it waits
        self.preflight: Preflight | None = None  # checks before every launch (None: --no-check)
        self.preflight_report: Any = None  # the last one, shown as phase zero
        self.refused: Any = None  # the report that refused the latest launch, until one starts
        self.applied: str | None = None  # the hint whose fix the next attempt applies (the F key)
        self.stopping_since: float | None = None  # a confirmed stop is under way (since then)
        self._subscribers: list[Subscriber] = []
        self._queue: asyncio.Queue[SourceEvent | None] = asyncio.Queue()  # None: the end
        self._log: AttemptLog | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._notified: set[int] = set()
        self._claimed = False  # this launch holds the history's lock on its name
        self.outcome = Outcome(self)

    def _default_runner(self) -> Runner:
        if self.spec.host is None:
            from tui.launch.local import LocalRunner

            return LocalRunner(self._emit)
        from tui.launch.remote import RemoteRunner
        from tui.sources.ssh import SshTarget

        return RemoteRunner(SshTarget.parse(self.spec.host), self._emit)

    # ------------------------------------------------------------ subscribers

    def subscribe(self, callback: Subscriber) -> None:
        self._subscribers.append(callback)

    def publish(self, event: LaunchEvent) -> None:
        for callback in list(self._subscribers):
            callback(event)

    # ------------------------------------------------------------ source interface

    async def events(self) -> AsyncIterator[SourceEvent]:
        """Process and log events of the current attempt, in order, for the session."""
        while True:
            event = await self._queue.get()
            if event is None:
                return
            yield event

    def _emit(self, event: SourceEvent) -> None:
        if self.runner.spans:  # its nodes' own logs and deaths are the node set's (``Runner.node_set``)
            if isinstance(event, ProcessExited):
                self._exit_seen(event)  # (no log of its own to drain first, nor a session to pass it through)
            return
        if isinstance(event, ProcessExited):
            # the log's last words first: a traceback printed just before the exit must
            # reach the tracker before the exit does, or a failure would read as a silent death
            self._spawn(self._on_exit(event))
        else:
            self._queue.put_nowait(event)

    # ------------------------------------------------------------ session glue

    @property
    def watched(self) -> WatchSession:
        """The session this launch feeds and judges (``attach``)."""
        assert self.session is not None, "the launch is attached to no session"
        return self.session

    @property
    def nodes(self) -> ClusterSession:
        """What follows the attempt: its node set (a runner's across several nodes, made for each
        attempt), or the one log's session as a node set of one."""
        nodes = self._following
        assert nodes is not None, "no attempt is followed yet"
        return nodes

    @property
    def followed(self) -> bool:
        """Whether an attempt is followed (``nodes`` is there)."""
        return self._following is not None

    @property
    def _following(self) -> ClusterSession | None:
        return self.attempt_nodes if self.runner.spans else self._one

    @property
    def host_label(self) -> str:
        """Where the attempts run, as the history keeps it: the host, or the nodes (``h1,h2``, ``slurm``)."""
        return self.runner.host if self.runner.spans else self.spec.host_label

    def attach(self, session: WatchSession) -> None:
        """Feed ``session`` and follow its state (attempt changes, GPU samples, outcome)."""
        from tui.cluster import ClusterSession

        self.session = session
        self._one = ClusterSession.of_one(session)
        session.info.host = self.spec.host_label
        session.info.command = self.command_text
        session.add_source(self)
        session.measure_checkpoints = self.spec.host is None  # the model folder is here to measure
        session.measure_host = self.spec.host  # ... or there, by the probe agent
        if self.spec.smoke:  # after the ready line (and --health's 200): one tiny completion
            session.want_smoke(self.spec.host)
            session.smoke_after_health = lambda: self.health is None or self.health.ok
        session.handlers.setdefault(ProcessStarted, []).append(self._on_started)
        session.handlers.setdefault(GpuSample, []).append(self.gpus.add)
        session.handlers.setdefault(ProcessExited, []).append(self._exit_seen)
        session.subscribe(self._on_update)
        session.judging.take_over(self.decide, self.hints)  # the stage judges with the launch's evidence
        session.judging.subscribe(self._verdict_pushed)

    def _on_started(self, event: ProcessStarted) -> None:
        session = self.watched
        if session.info.attempt != event.attempt or session.info.log_path != event.log_path:
            session.new_attempt(event.attempt, event.log_path)
            session.process = event
        if self.local and event.pid != self._io_pid and procscan_available():
            self._io_pid = event.pid  # the weight load's bytes read, from the server's /proc/PID/io
            session.add_source(ProcessTreeIO(event.pid, source=event.log_path))
        session.info.command = self.command_text

    def _on_update(self, update: Any) -> None:
        if "state" in update.topics or "process" in update.topics:
            for event in update.events:
                if isinstance(event, PhaseStarted):
                    self.phase_started_at.setdefault(event.phase, self.clock())
            self.outcome.on_update_events(update.events)

    # ------------------------------------------------------------ what is shown

    @property
    def command_text(self) -> str:
        """The command line with its env overrides, secrets masked: for the header."""
        env = " ".join(f"{k}={v}" for k, v in self.masker.env(self.spec.env).items())
        cmd = shlex.join(mask_argv(self.spec.command, self.masker))
        return f"{env} {cmd}".strip()

    @property
    def attempt(self) -> int:
        return self.run.attempt if self.run else 0

    def hints(self, _verdict: Verdict | None = None) -> list[Diagnosis]:
        """Known-failure hints for this attempt's errors, with the numbers of its own command line;
        after a refused launch, the failed checks (those with a fix first: what ``F`` applies)."""
        if self.refused is not None:
            failed = [c.diagnosis() for c in self.refused.failed]
            return [d for d in failed if d.fix] + [d for d in failed if not d.fix]
        if self.session is None:
            return []
        try:
            kb = knowledge()
        except ProfileError:  # refused with its one line when the launch began
            return []
        return kb.diagnose(self.watched.state, cmdline.parse(self.spec.command, self.spec.env))

    def status(self) -> ProcessStatus | None:
        return self.run.status if self.run else None

    def refusal(self) -> Verdict | None:
        """``REFUSED · ✗ …`` while the latest launch was refused by its preflight, else None."""
        from tui.core.preflight import refusal

        return None if self.refused is None else refusal(self.refused.checks)

    def verdict(self) -> Verdict:
        """The verdict now, as the judging stage decides it (the one log's, with this launch's evidence)."""
        return self.nodes.judging.evaluate().verdict

    def decide(self) -> Verdict:
        """What the judging stage decides for a launch: REFUSED while the latest launch was refused;
        the log's own verdict before an attempt runs and past ``--timeout``; else the attempt judged
        with its process, ``--health``, GPUs and the ETA from earlier attempts."""
        refused = self.refusal()
        if refused is not None:
            return refused
        if self.run is None or self.watched.timed_out:
            return self.watched.own_verdict()
        now = self.clock()
        if self._last_words_due():
            return Verdict(STARTING, "the server's process exited: reading the rest of its log before judging")
        session = self.watched
        state = session.state
        # what this attempt's log said last: the bar being rewritten, else the last line
        progress = session.scrollback.progress
        last_line = progress.text if progress is not None else (getattr(state, "last_text", "") or None)
        phase = state.current_phase
        started = self.phase_started_at.get(phase.name) if phase else None
        eta = self.expect.eta(
            phase.name if phase else None,
            None if started is None else now - started,
            now - (self.run.started_at if self.run else now),
        )
        # the node's own evidence (its GPUs, --stall-limit given at construction, the load, --smoke),
        # with what only the launch knows: its process, --health, history's phase times, the time left
        evidence = dataclasses.replace(
            session.evidence(self.status()),
            health=self.health,
            last_activity=session.last_output_at or (self.run.started_at if self.run else None),
            last_line=None if last_line is None else self.masker.text(last_line)[-160:],
            expected_phase=self.expect.longest.get(phase.name) if phase else None,
            eta=eta,
            timed_out=None,
        )
        return judge(state, evidence)

    def _last_words_due(self) -> bool:
        """The runner saw the process exit, but the log's last bytes and the exit (``_on_exit``)
        have not reached the session yet: a judgement now would outrun them (DEAD with the
        traceback still on its way). Not beyond a few seconds (a log that cannot be read further)."""
        run = self.run
        if run is None or run.alive or run.exited_at is None or time.time() - run.exited_at > EXIT_DRAIN + 2.0:
            return False
        seen = self.watched.exit
        return seen is None or seen.attempt != run.attempt

    def evaluate(self) -> Verdict | None:
        """Have the judging stage decide now (a change reaches the subscribers); None before an attempt."""
        if not self.followed or self.run is None:
            return None
        return self.nodes.judging.evaluate().verdict

    def _verdict_pushed(self, change: VerdictChanged) -> None:
        """The stage decided a new verdict for the running attempt: tell the subscribers; a final
        one also as the attempt's end (once per attempt)."""
        if self.run is None:
            return  # a refusal: the header says it, the plain output its own way
        verdict = change.verdict
        self.verdict_now = verdict
        self.publish(change)
        if verdict.final and self.run.attempt not in self._notified:
            self._notified.add(self.run.attempt)
            self.publish(AttemptFinished(self.run, verdict))

    def stop_countdown(self, now: float | None = None) -> str | None:
        """``SIGINT sent, SIGTERM in 7 s`` while a stop is under way."""
        stopping: ProcessStopping | None = self.run.stopping if self.run else None
        if stopping is None:
            return None
        now = self.clock() if now is None else now
        left = max(0.0, stopping.at + stopping.grace - now)
        nxt = {2: "SIGTERM", 15: "SIGKILL"}.get(stopping.signal)
        sent = {2: "SIGINT", 15: "SIGTERM", 9: "SIGKILL"}.get(stopping.signal, str(stopping.signal))
        if nxt is None:
            return f"{sent} sent, waiting for the group to go ({left:.0f} s)"
        return f"{sent} sent, {nxt} in {left:.0f} s"

    # ------------------------------------------------------------ lifecycle

    async def start(self, launch: bool = True) -> AttemptRun:
        """Reattach to the latest attempt if it still runs (never two servers of one name on the
        same GPUs), else launch attempt vN+1. ``launch=False`` (``watchtower attach``) only
        reattaches: LaunchError when nothing runs.
        """
        async with self._claim():  # a second `run --name X` at this moment waits, then reattaches
            return await self._start(launch)

    async def _start(self, launch: bool) -> AttemptRun:
        if self.history is not None:
            self.records = await asyncio.to_thread(self.history.attempts, self.spec.name)
        found = await self.reattach()
        if found is not None:
            return found
        if not launch:
            latest = self.records[-1] if self.records else None
            which = f"v{latest.attempt} of {self.spec.name}" if latest else self.spec.name
            raise LaunchError(f"{which} is not running any more; start it again with `watchtower run`")
        return await self._launch()

    async def reattach(self) -> AttemptRun | None:
        latest = self.records[-1] if self.records else None
        if latest is None or latest.outcome not in (STARTING, READY) or latest.host != self.host_label:
            return None
        log_path, pid_path = attempt_paths(Path(latest.log_path).parent, self.spec.name, latest.attempt)
        run = await self.runner.reattach(latest.attempt, latest.command, log_path, pid_path)
        if run is None:
            await self._ended_unwatched(latest, pid_path)
            return None
        self.record = latest
        self.run = run
        self.reattached = True
        self._follow(run)
        await self._load_expectations()
        self._started(run, reattached=True)
        return run

    def _restore_secrets(self) -> None:
        """A command recovered from the history (``attach``) has its secrets masked: take them
        from our own environment where it has them, else refuse rather than launch ``****``."""
        missing = []
        for key, value in list(self.spec.env.items()):
            if value == MASK:
                if os.environ.get(key):
                    self.spec.env[key] = os.environ[key]
                else:
                    missing.append(key)
        missing += [word for word in self.spec.command if MASK in word]
        if missing:
            raise LaunchError(
                f"secrets were not kept ({', '.join(missing)}): set them again with R, or relaunch with `watchtower run`"
            )

    async def _ended_unwatched(self, record: AttemptRecord, pid_path: Path) -> None:
        """The latest attempt ended while no Watchtower watched: put its end in the history."""
        found = await self.runner.exit_status(pid_path)
        how = describe_exit(*found) if found is not None else "exited (status unknown)"
        outcome = record.outcome if record.outcome == READY else DEAD
        if self.history is not None:
            await self.outcome.writes.db(self.history.update, record, outcome=outcome, exit_text=f"{how}, while unwatched")

    async def launch(self, command: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> AttemptRun:
        """Start the next attempt (the current one must have ended)."""
        async with self._claim():
            return await self._launch(command, env)

    async def _launch(self, command: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> AttemptRun:
        if self.run is not None and self.run.alive:
            raise LaunchError(f"attempt v{self.run.attempt} is still running: stop it first")
        applied, self.applied = self.applied, None  # this attempt's alone, started or refused
        if command is not None:
            self.spec.command = list(command)
        if env is not None:
            self.spec.env = dict(env)
        self._restore_secrets()
        self.masker.add(Masker.for_launch(self.spec.env, self.spec.command).values)
        if self.preflight is not None:
            self.activity = "preflight checks"
            try:
                self.preflight_report = await self.preflight(self.spec.command, self.spec.env)
            finally:
                self.activity = ""
            self.refused = self.preflight_report if self.preflight_report.failed else None
            if self.session is not None:
                self.session.info.preflight = self.preflight_report
                self.session.info.refused = self.refused is not None
            if self.refused is not None:
                raise PreflightRefused(self.preflight_report)
        number = await self._next_attempt()
        log_path, pid_path = attempt_paths(self.spec.log_dir, self.spec.name, number)
        await self._close_log()
        self.health = HealthStatus(self.spec.health_url) if self.spec.health_url else None
        self.phase_started_at = {}
        self._forget_group()
        await self._load_expectations()
        record, history = None, self.history
        if history is not None:  # recorded first: a history that cannot be written stops us here
            record = await self.outcome.writes.db(
                history.start,
                self.spec.name,
                command=self.spec.command,
                env=self.spec.env,
                host=self.host_label,
                log_path=str(log_path),
                attempt=number,
                applied=applied,
            )
        try:
            run = await self.runner.start(number, self.spec.command, self.spec.env, log_path, pid_path, self.spec.cwd)
        except BaseException:
            if history is not None and record is not None:
                await self.outcome.writes.db(history.forget, record)  # nothing was launched: no attempt
            raise
        self.run = run
        self.reattached = False
        self.verdict_now = None
        if history is not None and record is not None:
            self.record = record
            self.records.append(record)
            await self.outcome.writes.stored(history.update, record, masker=self.masker, pid=run.pid,
                                             log_path=str(run.log_path))  # (across nodes: the first node's)
        self._follow(run)
        self._started(run, reattached=False)
        return run

    async def stop(self) -> bool:
        """Stop every process of the running attempt (SIGINT → SIGTERM → SIGKILL); True once gone.

        What had to be done beyond a polite stop (SIGKILL, processes that had left the
        group) is said in a Note, naming the processes.
        """
        if self.run is None or not self.run.alive and not self.runner.processes(self.run):
            return True
        self.stopping_since = time.time()
        if self.attempt_nodes is not None:  # what its nodes print meanwhile (a KeyboardInterrupt) is no failure
            self.attempt_nodes.stopping = True
        try:
            result: StopResult = await self.runner.stop(self.run, self.spec.plan)
        finally:
            self.stopping_since = None
        if result.text:
            self.publish(Note(f"v{self.run.attempt}: {result.text}"))
        self.evaluate()
        return result.gone

    def stop_handover(self) -> dict[str, Any] | None:
        """The rest of a stop under way, for a keeper to carry out when Watchtower must go (its
        terminal hung up): the signals still to send and when (``tui.launch.keeper``); None when
        no stop is under way, or the attempt runs elsewhere."""
        from tui.launch.keeper import plan_of

        run = self.run
        if run is None or self.stopping_since is None or not self.local or run.pgid is None:
            return None
        steps = list(self.spec.plan.steps())
        stopping, at = run.stopping, time.time()
        signals = [sig for sig, _ in steps]
        if stopping is not None and stopping.signal in signals:  # sent: the next one is due after its grace
            at = stopping.at + stopping.grace
            steps = steps[signals.index(stopping.signal) + 1:]
        remaining = []
        for sig, grace in steps:
            remaining.append((sig, at))
            at += grace
        history = str(self.history.path) if self.history is not None else None
        return plan_of(pgid=run.pgid, members=[p.pid for p in self.runner.processes(run)], steps=remaining,
                       history=history, name=self.spec.name, attempt=run.attempt, exit_file=exit_path(run.pid_path))

    async def relaunch(
        self,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        force: bool = False,
        gpu_timeout: float = GPU_RELEASE_TIMEOUT,
    ) -> AttemptRun:
        """Stop the current attempt if needed, wait for its GPU memory, start vN+1.

        Raises :class:`GpuBusy` when processes that are not ours hold GPU memory
        (unless ``force``): the caller lists them and offers to kill them.
        """
        if command is not None:
            self.spec.command = list(command)
        if env is not None:
            self.spec.env = dict(env)
        self._restore_secrets()  # before anything is stopped
        old_pids: set[int] = set()
        if self.run is not None:
            old_pids = self._our_pids() | {self.run.pid or 0}
            if self.run.alive or self.runner.processes(self.run):
                if not await self.stop():
                    left = ", ".join(p.text for p in self.runner.processes(self.run))
                    raise LaunchError(f"attempt v{self.run.attempt} would not die: {left}")
            self._forget_group()
        exited = self.run.exited_at if self.run is not None else None
        self.activity = "waiting for the old attempt's GPU memory to be released"
        try:
            if self.runner.spans and self.run is not None:  # on each node, as its node set saw it
                await self.runner.released(self.run, lambda text: self.publish(Note(text)))
            else:
                await self.gpus.wait_release(
                    old_pids, exited or self.clock(), gpu_timeout, lambda: any(h.ours for h in self.gpu_holders())
                )
        finally:
            self.activity = ""
        if not force:
            foreign = [h for h in self.gpu_holders() if not h.ours]
            if foreign:
                raise GpuBusy(foreign)
        return await self.launch()

    def gpu_holders(self) -> list[GpuHolder]:
        """Processes holding GPU memory in the latest sample, ours marked."""
        return self.gpus.holders(self._our_pids(), self.old_pgids)

    async def port_holder(self, port: int) -> PortHolder | None:
        """The process listening on ``port`` where the server runs (the ``free_port`` fix), or None."""
        from tui.sources.probe import PortHolder, ProbeError, port_holder

        try:
            holder = await port_holder(self.spec.host, port)
        except ProbeError as exc:
            return PortHolder(pid=None, cmd=str(exc))
        if holder is not None and holder.get("cmd"):
            holder["cmd"] = self.masker.text(holder["cmd"])
        return holder

    def gpu_unknown(self) -> str | None:
        """Why the processes holding GPU memory cannot be known now, in words; None when they can."""
        if self.runner.spans:
            return "the attempt runs on several nodes: their GPUs are each node's own (the node rows)"
        if not self.gpu_enabled:
            return "there is no GPU source (--gpus none)"
        if not self.gpus.pids_real:
            return "the GPUs are simulated (--gpus sim): their processes are made up"
        if not self.gpus.samples:
            return "no GPU sample has come in (NVML or nvidia-smi not answering)"
        return None

    def leftovers(self) -> list[GpuHolder]:
        """Processes of this launch's attempts, other than the running one, still alive (their
        process groups, here): what may hold GPU memory when the GPUs cannot be asked."""
        if not self.local:
            return []
        groups = list(self.old_pgids)
        if self.run is not None and not self.run.alive and self.run.pgid:
            groups.append(self.run.pgid)
        return [
            GpuHolder(pid, self.masker.text(command_line(pid)), {}, stale=True)
            for pgid in dict.fromkeys(groups)
            for pid in group_members(pgid)
        ]

    async def kill_holders(self, pids: Sequence[int]) -> list[str]:
        """Kill leftover GPU holders (SIGTERM, then SIGKILL after a few seconds); errors in words."""
        errors = await self.runner.kill_pids(pids, signal.SIGTERM)
        if self.local:
            if not await wait_pids_gone(lambda: [p for p in pids if is_alive(p)], 5.0):
                errors += await self.runner.kill_pids(pids, signal.SIGKILL)
        return errors

    async def settle(self) -> None:
        """Until the history writes and hooks started so far have finished."""
        await self.outcome.writes.settle()

    async def close(self, stop_server: bool = False) -> None:
        """Stop following (and the server too when asked); the server otherwise keeps running."""
        if stop_server:
            await self.stop()
        await self._close_log()
        for task in list(self._tasks):
            task.cancel()
        self._queue.put_nowait(None)
        if self.runner.spans:  # the node set and the runner's watchers are the launch's own
            if self.attempt_nodes is not None:
                await self.attempt_nodes.stop()
            await self.runner.close()
        await self.outcome.writes.close()

    @property
    def server_running(self) -> bool:
        return self.run is not None and self.run.alive

    # ------------------------------------------------------------ internals

    def _our_pids(self) -> set[int]:
        return {p.pid for p in self.runner.processes(self.run)} if self.run is not None else set()

    def _forget_group(self) -> None:
        """The current attempt's group becomes an earlier one (its leftovers are 'stale')."""
        if self.run is not None and self.run.pgid and self.run.pgid not in self.old_pgids:
            self.old_pgids.append(self.run.pgid)

    async def _next_attempt(self) -> int:
        number = max(self.records[-1].attempt if self.records else 0, self.attempt) + 1
        if self.history is not None:
            number = max(number, await asyncio.to_thread(self.history.next_attempt, self.spec.name))
        while self.local and attempt_paths(self.spec.log_dir, self.spec.name, number)[0].exists():
            number += 1  # a log from a run the database does not know: never reuse it
        return number

    async def _load_expectations(self) -> None:
        if self.history is not None:
            self.expect = await asyncio.to_thread(self.history.expectations, self.spec.command, self.host_label)

    def _follow(self, run: AttemptRun) -> None:
        """Tail the attempt's own log file and probe its health URL; or, across several nodes,
        follow the node set its runner makes (each node its own log), judged by its own stage."""
        if self.runner.spans:
            assert self.make_node is not None, "a launch across nodes is given how to follow a node"
            nodes = self.runner.node_set(run, self.make_node)
            assert nodes is not None
            old, self.attempt_nodes = self.attempt_nodes, nodes
            if old is not None:
                self._spawn(old.stop())
            nodes.timeout, nodes.attempt = self.timeout, run.attempt
            for node in nodes.nodes.values():  # (a Slurm job's nodes are told as they come)
                node.info.attempt = run.attempt
            nodes.judging.subscribe(lambda change: self._verdict_pushed(change) if nodes is self.attempt_nodes else None)
            if self.spec.health_url:  # ready once the serving node's URL answers too
                nodes.probe_health(self.spec.health_url)
            return
        self._log = AttemptLog(self.runner.tailer(run), self.masker, self._queue.put_nowait, local=self.local)
        if self.spec.health_url:
            self._spawn(self._probe(run))

    def _started(self, run: AttemptRun, *, reattached: bool) -> None:
        words = self.runner.started_words(run, reattached)
        if words:  # where it runs, as only its runner can say (a Slurm job's id, the nodes)
            self.publish(Note(f"v{run.attempt}: {words}"))
        self.publish(AttemptStarted(run, reattached=reattached))

    async def _close_log(self) -> None:
        log, self._log = self._log, None
        if log is not None:
            await log.close()

    async def _probe(self, run: AttemptRun) -> None:
        assert self.spec.health_url is not None
        probe = HealthProbe(self.spec.health_url, target=getattr(self.runner, "target", None))
        async for status in probe.statuses():
            if self.run is not run:
                return
            self.health = status
            if status.ok and self.session is not None and self.session.smoke_wanted:
                self.session.send_smoke()  # the ready line may have come first: now it may go
            self.evaluate()

    async def _on_exit(self, event: ProcessExited) -> None:
        if self._log is not None:
            await self._log.drain(EXIT_DRAIN)
        self._queue.put_nowait(event)  # the session hands it to the tracker, then to _exit_seen

    def _exit_seen(self, event: ProcessExited) -> None:
        notified = event.attempt in self._notified
        self.evaluate()
        self.outcome.on_exit(event, notified)

    @contextlib.asynccontextmanager
    async def _claim(self) -> AsyncIterator[None]:
        """Hold the history's lock on this name (once: ``start`` launches inside it)."""
        if self.history is None or self._claimed:
            yield
            return
        self._claimed = True
        try:
            async with self.history.claim(self.spec.name):
                yield
        except HistoryError as exc:
            raise LaunchError(str(exc)) from None
        finally:
            self._claimed = False

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
