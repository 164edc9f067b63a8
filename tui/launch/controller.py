"""The launch loop: launch → watch → fix → relaunch, as attempts v1…vN.

A :class:`Launch` owns one named launch and only its lifecycle, on one host or across
nodes: it starts attempts through a :class:`~tui.launch.runner.Runner` (a local process
group; detached over SSH; the same command on every node over SSH, ``tui.launch.nodes``; a
Slurm job, ``tui.launch.slurm``). On one host it follows each attempt's own log
(``tui.launch.attempt_log``), probes ``--health``, watches GPU memory for a relaunch
(``tui.launch.gpu_release``) and tells the session what only it knows — the process as its
runner sees it (started, stopping, exited: ``ProcessWitnesses.launched_as``), a refusal, history's
phase times and time left, ``--health``'s answers — never a verdict of its own: the session's
judging stage decides (``tui.session.judging``). It is an event source for a
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
from tui.core.events import GpuSample, ProcessExited, ProcessStarted, ProcessStopping, ServerProcess
from tui.core.secrets import MASK, Masker, mask_argv
from tui.core.state import READY
from tui.core.events import HealthStatus, SourceEvent
from tui.core.verdict import DEAD, STARTING, ProcessStatus, Verdict, describe_exit
from tui.history import AttemptRecord, Expectations, History, HistoryError
from tui.launch.attempt_log import AttemptLog
from tui.core.writers import Survivor, role_words
from tui.sources.procscan import available as procscan_available, process as procscan_process
from tui.sources.writers import ProcessTreeIO, server_process
from tui.launch.events import AttemptExited, AttemptFinished, AttemptStarted, LaunchEvent, Note
from tui.session.judging import VerdictChanged
from tui.launch.gpu_release import GPU_RELEASE_TIMEOUT, GpuBusy, GpuHolder, GpuWatch
from tui.launch.outcome import Outcome
from tui.launch.proctable import group_members, stop_pids
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
        self._io_pid: int | None = None  # the launched server whose I/O counters are read
        self.session: WatchSession | None = None  # the one log's, across attempts (``attach``)
        self._one: ClusterSession | None = None  # ... as a node set of one
        self.attempt_nodes: ClusterSession | None = None  # an attempt across several nodes: its node set
        self.gpus = GpuWatch(local=self.local, mask=self.masker.text)
        self.gpu_enabled = False  # whether the session has a GPU source
        self.gpu_source: str | None = None  # what it is, in a word (NVML, nvidia-smi, simulated, none), for the history
        self.verdict_now: Verdict | None = None
        self.old_pgids: list[int] = []  # process groups of earlier attempts
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
        #: attempt -> set once its exit is judged: its log read to the end, the verdict (and hints) decided
        self._exits_judged: dict[int, asyncio.Event] = {}
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
        session.weight.here = self.spec.host is None  # the model folder is here to measure
        session.weight.host = self.spec.host  # ... or there, by the probe agent
        if self.spec.smoke:  # after the ready line (and --health's 200): one tiny completion
            session.smoke.want(self.spec.host, self.spec.smoke_timeout)
        session.mask = self.masker.text  # the log's last line in a verdict: secrets masked
        session.command_facts = cmdline.parse(self.spec.command, self.spec.env)  # the hints' numbers
        session.limits.expect(self.expect.longest, self.expect)
        session.handlers.setdefault(ProcessStarted, []).append(self._on_started)
        session.handlers.setdefault(ProcessStopping, []).append(lambda _event: self._tell_process())
        session.handlers.setdefault(GpuSample, []).append(self.gpus.add)
        session.handlers.setdefault(ProcessExited, []).append(self._exit_seen)
        session.hear(self.outcome.heard)  # every tracker event, none dropped: the record's phase times
        session.judging.subscribe(self._verdict_pushed)

    def _tell_process(self, stopping: bool = False) -> None:
        """Tell the session the attempt's process as the runner knows it now (``stopping``: a stop
        begins, what it prints meanwhile is no failure). A launch across nodes is attached to no
        session: its node set tells each node its process (``ClusterSession``)."""
        if self.session is None or self.run is None:
            return
        status = self.run.status
        self.session.process.launched_as(dataclasses.replace(status, stopped_by_user=True) if stopping else status,
                                 since=self.run.started_at)

    @property
    def health(self) -> HealthStatus | None:
        """``--health``'s last answer for the attempt on one host (the session keeps it)."""
        return self.session.health if self.session is not None else None

    def _on_started(self, event: ProcessStarted) -> None:
        session = self.watched
        if session.info.attempt != event.attempt or session.info.log_path != event.log_path:
            session.new_attempt(event.attempt, event.log_path)
        self._tell_process()
        if self.local and event.pid != self._io_pid and procscan_available():
            self._io_pid = event.pid  # the weight load's bytes read, from the server's /proc/PID/io
            session.add_source(ProcessTreeIO(event.pid, source=event.log_path))
        session.info.command = self.command_text

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

    def status(self) -> ProcessStatus | None:
        return self.run.status if self.run else None

    def refusal(self) -> Verdict | None:
        """``REFUSED · ✗ …`` while the latest launch was refused by its preflight, else None."""
        from tui.core.preflight import refusal

        return None if self.refused is None else refusal(self.refused.checks)

    def verdict(self) -> Verdict:
        """The verdict now, as the judging stage decides it (the one log's session's, or the node set's)."""
        return self.nodes.judging.evaluate().verdict

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
        self._tell_process()
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
                self.session.refuse(self.refusal(), self.refused.failed if self.refused is not None else ())
            if self.refused is not None:
                raise PreflightRefused(self.preflight_report)
        number = await self._next_attempt()
        log_path, pid_path = attempt_paths(self.spec.log_dir, self.spec.name, number)
        await self._close_log()
        if self.session is not None and self.spec.health_url:
            self.session.handle(HealthStatus(self.spec.health_url))  # not answered yet, this attempt
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
                gpu_source=self.gpu_source,
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
        self._follow(run)  # before any await: a server that ends at once is drained to its last line first
        self._tell_process()
        if history is not None and record is not None:
            self.record = record
            self.records.append(record)
            await self.outcome.writes.stored(history.update, record, masker=self.masker, pid=run.pid,
                                             log_path=str(run.log_path))  # (across nodes: the first node's)
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
        self._tell_process(stopping=True)
        try:
            result: StopResult = await self.runner.stop(self.run, self.spec.plan)
        finally:
            self.stopping_since = None
            self._tell_process()
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

    def leftover_processes(self) -> list[ServerProcess]:
        """Processes of this launch's attempts, other than the running one, still alive (their
        process groups, here), each with the role and rank its title claims (``sglang::scheduler_TP0``
        is TP0's): what may hold GPU memory when the GPUs cannot be asked."""
        if not self.local:
            return []
        groups = list(self.old_pgids)
        if self.run is not None and not self.run.alive and self.run.pgid:
            groups.append(self.run.pgid)
        found = (procscan_process(pid) for pgid in dict.fromkeys(groups) for pid in group_members(pgid))
        return [dataclasses.replace(process, command=self.masker.text(process.command))
                for process in (server_process(dict(info), None) for info in found if info is not None)]

    def leftovers(self) -> list[GpuHolder]:
        """:meth:`leftover_processes`, as GPU holders of an earlier attempt (``k``'s)."""
        return [GpuHolder(p.pid, p.command, {}, stale=True) for p in self.leftover_processes()]

    def survivors(self) -> list[Survivor]:
        """Once the server's main process has ended: this launch's processes that still run (its
        ranks in the attempt's process group, holding their GPUs; an earlier attempt's leftovers),
        which nothing stops once Watchtower has gone. None while the server runs."""
        if self.server_running:
            return []
        return [Survivor(p, role_words(p)) for p in self.leftover_processes()]

    async def kill_holders(self, pids: Sequence[int]) -> list[str]:
        """Kill leftover GPU holders (SIGTERM, then SIGKILL after a few seconds); errors in words."""
        if self.local:
            return await stop_pids(pids)
        return await self.runner.kill_pids(pids, signal.SIGTERM)

    async def settle(self) -> None:
        """Until the history writes and hooks started so far have finished (the phase times queued
        for this turn of the loop among them)."""
        self.outcome.store_due_phases()
        await self.outcome.writes.settle()

    async def close(self, stop_server: bool = False) -> None:
        """Stop following (and the server too when asked); the server otherwise keeps running."""
        if stop_server:
            await self.stop()
        await self._close_log()
        for task in list(self._tasks):
            task.cancel()
        self._queue.put_nowait(None)
        if self.attempt_nodes is not None:  # an attempt's node set is the launch's own (one log's is the wiring's)
            await self.attempt_nodes.stop()
        await self.runner.close()  # its watchers (a remote process's exit, a Slurm job's state)
        await self.outcome.writes.close()

    @property
    def server_running(self) -> bool:
        """The attempt's server runs: its main process has not exited and, across nodes, its Slurm
        job has not ended (the node set hears that at its own poll, the runner's is slower: a job
        FAILED is not offered a stop in the meantime)."""
        if self.run is None or not self.run.alive:
            return False
        return self.attempt_nodes is None or not self.attempt_nodes.job_ended

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
        if self.session is not None:
            self.session.limits.expect(self.expect.longest, self.expect)
            self.session.command_facts = cmdline.parse(self.spec.command, self.spec.env)

    def _follow(self, run: AttemptRun) -> None:
        """Tail the attempt's own log file and probe its health URL; or, across several nodes,
        follow the node set its runner makes (each node its own log), judged by its own stage."""
        if self.runner.spans:
            assert self.make_node is not None, "a launch across nodes is given how to follow a node"
            nodes = self.runner.node_set(run, self.make_node)
            assert nodes is not None
            self.follow_nodes(nodes, run.attempt)
            return
        self._log = AttemptLog(self.runner.tailer(run), self.masker, self._queue.put_nowait, local=self.local)
        if self.spec.health_url:
            self._spawn(self._probe(run))

    def follow_nodes(self, nodes: ClusterSession, attempt: int) -> None:
        """Follow attempt ``attempt``'s node set (its runner's): what the launch gives it, given in
        this one place — its deadline, its attempt number, ``--health`` on its serving node — and its
        verdict's pushes heard while it is the attempt's."""
        old, self.attempt_nodes = self.attempt_nodes, nodes
        if old is not None:
            self._spawn(old.stop())
        nodes.timeout, nodes.attempt = self.timeout, attempt
        for node in nodes.nodes.values():  # (a Slurm job's nodes are told as they come)
            node.info.attempt = attempt
        nodes.judging.subscribe(lambda change: self._verdict_pushed(change) if nodes is self.attempt_nodes else None)
        if self.spec.health_url:  # ready once the serving node's URL answers too
            nodes.probe_health(self.spec.health_url)

    def _started(self, run: AttemptRun, *, reattached: bool) -> None:
        words = self.runner.started_words(run, reattached)
        if words:  # where it runs, as only its runner can say (a Slurm job's id, the nodes)
            self.publish(Note(f"v{run.attempt}: {words}", launch_line=True))
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
            if self.session is not None:
                self.session.handle(status)  # (--smoke goes once it answers, the ready line having come)
            self.evaluate()

    async def _on_exit(self, event: ProcessExited) -> None:
        if self._log is not None:
            await self._log.drain(EXIT_DRAIN)
        self._queue.put_nowait(event)  # the session hands it to the tracker, then to _exit_seen

    def _exit_seen(self, event: ProcessExited) -> None:
        notified = event.attempt in self._notified
        self._tell_process()
        self.evaluate()
        self._exit_judged(event.attempt).set()
        self.outcome.on_exit(event, notified)
        if self.run is not None and self.run.attempt == event.attempt:
            self.publish(AttemptExited(self.run))

    def _exit_judged(self, attempt: int) -> asyncio.Event:
        return self._exits_judged.setdefault(attempt, asyncio.Event())

    async def exit_judged(self, run: AttemptRun) -> None:
        """Until ``run``'s exit is judged: its log drained to its last line and the verdict decided
        with it, the hints its last lines call for among them. The process can be reaped first (its
        ``wait`` returns): a front end that ends there may end before the failure's later words are
        read (a real llama.cpp names its KV cache three lines after its first allocation error)."""
        await self._exit_judged(run.attempt).wait()

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
