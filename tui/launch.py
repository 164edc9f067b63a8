"""The launch loop: launch → watch → fix → relaunch, as attempts v1…vN.

A :class:`Launch` owns one named launch: it starts attempts through a runner
(local process group, or detached over SSH), follows each attempt's own log file
(``NAME-vN.log``, so a ready line of an earlier attempt can never count), records
attempts in the history database, probes ``--health``, keeps recent GPU samples,
and computes the verdict (``tui.core.verdict``). It is an event source for a
:class:`~tui.session.WatchSession` (``events()``) and needs no Textual: the
dashboard and ``watchtower run --plain`` use it alike.

Secrets: the real environment only lives in memory, for the next relaunch; what is
shown, stored or handed to hooks goes through a :class:`~tui.core.secrets.Masker`.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.core.events import GpuSample, LogChunk, LogRestart, PhaseEnded, PhaseStarted, ProcessExited, ProcessStarted, ProcessStopping
from tui.core.limits import StallLimits
from tui.core.secrets import MASK, Masker, mask_argv
from tui.core.state import READY, STOPPED
from tui.core.verdict import (
    DEAD,
    HealthStatus,
    ProcessStatus,
    Verdict,
    gpu_activity,
    describe_exit,
    judge,
    log_error,
)
from tui.history import Attempt as AttemptRecord
from tui.history import Expectations, History, phase_seconds
from tui.notify import BELL, hook_env, run_hook, title_sequence
from tui.sources.health import HealthProbe
from tui.sources.process import (
    Attempt,
    LaunchError,
    LocalRunner,
    RemoteRunner,
    StopPlan,
    attempt_paths,
    command_line,
    holds_gpu_device,
    is_alive,
    wait_pids_gone,
)

#: How long a relaunch waits for the old attempt's GPU memory to be released.
GPU_RELEASE_TIMEOUT = 60.0
#: Longest wait for the log's last bytes before a process exit is passed on.
EXIT_DRAIN = 0.5
_END = object()


@dataclass(slots=True)
class LaunchSpec:
    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)  # overrides on top of Watchtower's environment
    log_dir: Path = Path(".")
    host: str | None = None  # None: this machine
    health_url: str | None = None
    plan: StopPlan = field(default_factory=StopPlan)
    stall_limit: StallLimits | None = None  # --stall-limit
    on_ready: str | None = None
    on_fail: str | None = None
    cwd: str | None = None

    @property
    def host_label(self) -> str:
        return self.host or "localhost"


@dataclass(frozen=True, slots=True)
class GpuHolder:
    """A process holding GPU memory: ``ours`` when it belongs to the running attempt."""

    pid: int
    command: str
    per_gpu: dict[int, int]  # GPU index -> bytes
    ours: bool = False
    stale: bool = False  # left over from an earlier attempt of ours
    device_open: bool | None = None  # has /dev/nvidia* open here (False: maybe another namespace's pid)

    @property
    def text(self) -> str:
        gib = ", ".join(f"GPU{i} {b / 2**30:.1f} GiB" for i, b in sorted(self.per_gpu.items()))
        tag = " (ours)" if self.ours else " (stale, from an earlier attempt)" if self.stale else ""
        doubt = " [no GPU device open here: is this pid from another container?]" if self.device_open is False else ""
        return f"pid {self.pid}{tag}: {self.command or '?'} — {gib or 'memory unknown'}{doubt}"


class GpuBusy(Exception):
    """Processes that are not ours hold GPU memory: launching now would end in an OOM crash."""

    def __init__(self, holders: list[GpuHolder]) -> None:
        super().__init__("GPUs still in use by: " + "; ".join(h.text for h in holders))
        self.holders = holders


VerdictListener = Callable[[Verdict, Verdict | None], None]


class Launch:
    """One named launch and its attempts. Create, ``attach(session)``, then ``await start()``."""

    def __init__(
        self,
        spec: LaunchSpec,
        *,
        history: History | None = None,
        runner: Any = None,
        clock: Callable[[], float] = time.time,
        terminal: Callable[[str], None] | None = None,
    ) -> None:
        self.spec = spec
        self.history = history
        self.clock = clock
        self.terminal = terminal  # writes bell / title sequences to the terminal, if any
        self.masker = Masker.for_launch(spec.env, spec.command)
        self.runner = runner or self._default_runner()
        self.run: Attempt | None = None
        self.record: AttemptRecord | None = None
        self.records: list[AttemptRecord] = []  # this launch's attempts, oldest first
        self.expect = Expectations(None, {})
        self.health: HealthStatus | None = None
        self.session: Any = None
        self.gpu_samples: deque[GpuSample] = deque(maxlen=120)
        self.verdict_now: Verdict | None = None
        self.listeners: list[VerdictListener] = []
        self.notes: list[Callable[[str], None]] = []  # one-line messages for the operator (hook results)
        self.old_pgids: list[int] = []  # process groups of earlier attempts
        self.phase_started_at: dict[str, float] = {}
        self._queue: asyncio.Queue = asyncio.Queue()
        self._tailer: Any = None
        self._tail_task: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._writes: set[asyncio.Task] = set()  # history updates and hooks
        self._db_lock = asyncio.Lock()
        self._gpu_event = asyncio.Event()
        self._notified: set[int] = set()
        self._ticker: asyncio.Task | None = None
        self.gpu_enabled = False  # whether the session has a GPU source
        self.gpu_pids_real = True  # False for the simulated GPUs: their pids name no process here
        self._pumped = 0  # bytes of the current log passed on to the session
        self.reattached = False  # the current attempt was started by an earlier Watchtower
        self.activity = ""  # what a relaunch is waiting for, in words, while it waits

    def _default_runner(self) -> Any:
        if self.spec.host is None:
            return LocalRunner(self._emit)
        from tui.sources.ssh import SshTarget

        return RemoteRunner(SshTarget.parse(self.spec.host), self._emit)

    # ------------------------------------------------------------ source interface

    async def events(self):
        """Process and log events of the current attempt, in order, for the session."""
        while True:
            event = await self._queue.get()
            if event is _END:
                return
            yield event

    def _emit(self, event: object) -> None:
        if isinstance(event, ProcessExited):
            # the log's last words first: a traceback printed just before the exit must
            # reach the tracker before the exit does, or a failure would read as a silent death
            self._spawn(self._on_exit(event))
        else:
            self._queue.put_nowait(event)

    # ------------------------------------------------------------ session glue

    def attach(self, session: Any) -> None:
        """Feed ``session`` and follow its state (attempt changes, GPU samples, outcome)."""
        self.session = session
        session.info.host = self.spec.host_label
        session.info.command = self.command_text
        session.add_source(self)
        session.handlers.setdefault(ProcessStarted, []).append(self._on_started)
        session.handlers.setdefault(GpuSample, []).append(self._on_gpu)
        session.handlers.setdefault(ProcessExited, []).append(self._exit_seen)
        session.subscribe(self._on_update)

    def _on_started(self, event: ProcessStarted) -> None:
        session = self.session
        if session.info.attempt != event.attempt or session.info.log_path != event.log_path:
            session.new_attempt(event.attempt, event.log_path)
            session.process = event
        session.info.command = self.command_text

    def _on_gpu(self, sample: GpuSample) -> None:
        self.gpu_samples.append(sample)
        self._gpu_event.set()

    def _on_update(self, update: Any) -> None:
        if "state" in update.topics or "process" in update.topics:
            phase_ended = False
            for event in update.events:
                if isinstance(event, PhaseStarted):
                    self.phase_started_at.setdefault(event.phase, self.clock())
                phase_ended |= isinstance(event, PhaseEnded)
            self.evaluate()
            if phase_ended and self.session is not None:
                self._store(phases=phase_seconds(self.session.state))

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

    def verdict(self, now: float | None = None) -> Verdict:
        now = self.clock() if now is None else now
        session = self.session
        state = session.state
        last_activity = session.last_output_at or (self.run.started_at if self.run else None)
        # what this attempt's log said last: the bar being rewritten, else the last line
        progress = session.scrollback.progress
        last_line = progress.text if progress is not None else (getattr(state, "last_text", "") or None)
        if last_line is not None:
            last_line = self.masker.text(last_line)[-160:]
        phase = state.current_phase
        started = self.phase_started_at.get(phase.name) if phase else None
        eta = self.expect.eta(
            phase.name if phase else None,
            None if started is None else now - started,
            now - (self.run.started_at if self.run else now),
        )
        return judge(
            state,
            now=now,
            last_activity=last_activity,
            last_line=last_line,
            process=self.status(),
            gpu=gpu_activity(self.gpu_samples, now),
            health=self.health,
            expected_phase=self.expect.longest.get(phase.name) if phase else None,
            limits=self.spec.stall_limit,
            eta=eta,
        )

    def evaluate(self) -> Verdict | None:
        """Recompute the verdict; on a change tell the listeners, on a final one notify once."""
        if self.session is None or self.run is None:
            return None
        verdict = self.verdict()
        previous, self.verdict_now = self.verdict_now, verdict
        if previous is None or (previous.kind, previous.detail) != (verdict.kind, verdict.detail):
            for listener in list(self.listeners):
                listener(verdict, previous)
        if verdict.final and self.run.attempt not in self._notified:
            self._notified.add(self.run.attempt)
            self._finished(verdict)
        return verdict

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

    async def start(self, launch: bool = True) -> Attempt:
        """Reattach to the latest attempt if it still runs (never two servers of one name on the
        same GPUs), else launch attempt vN+1. ``launch=False`` (``watchtower attach``) only
        reattaches: LaunchError when nothing runs.
        """
        if self.history is not None:
            self.records = await asyncio.to_thread(self.history.attempts, self.spec.name)
        found = await self.reattach()
        if found is not None:
            return found
        if not launch:
            latest = self.records[-1] if self.records else None
            which = f"v{latest.attempt} of {self.spec.name}" if latest else self.spec.name
            raise LaunchError(f"{which} is not running any more; start it again with `watchtower run`")
        return await self.launch()

    async def reattach(self) -> Attempt | None:
        latest = self.records[-1] if self.records else None
        if latest is None or latest.outcome not in ("starting", "ready") or latest.host != self.spec.host_label:
            return None
        log_path, pid_path = attempt_paths(Path(latest.log_path).parent, self.spec.name, latest.attempt)
        run = await _maybe_await(self.runner.reattach(latest.attempt, latest.command, log_path, pid_path))
        if run is None:
            await self._ended_unwatched(latest, pid_path)
            return None
        self.record = latest
        self.run = run
        self.reattached = True
        self._ensure_ticker()
        await self._follow(run)
        await self._load_expectations()
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
        found = await _maybe_await(self.runner.exit_status(pid_path))
        how = describe_exit(*found) if found is not None else "exited (status unknown)"
        outcome = record.outcome if record.outcome == READY else DEAD
        if self.history is not None:
            await self._db(self.history.update, record, outcome=outcome, exit_text=f"{how}, while unwatched")

    async def launch(self, command: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> Attempt:
        """Start the next attempt (the current one must have ended)."""
        if self.run is not None and self.run.alive:
            raise LaunchError(f"attempt v{self.run.attempt} is still running: stop it first")
        if command is not None:
            self.spec.command = list(command)
        if env is not None:
            self.spec.env = dict(env)
        self._restore_secrets()
        self.masker.add(Masker.for_launch(self.spec.env, self.spec.command).values)
        number = await self._next_attempt()
        log_path, pid_path = attempt_paths(self.spec.log_dir, self.spec.name, number)
        await self._close_tailer()
        self.health = HealthStatus(self.spec.health_url) if self.spec.health_url else None
        self.phase_started_at = {}
        if self.run is not None and self.run.pgid and self.run.pgid not in self.old_pgids:
            self.old_pgids.append(self.run.pgid)
        await self._load_expectations()
        run = await self.runner.start(number, self.spec.command, self.spec.env, log_path, pid_path, self.spec.cwd)
        self.run = run
        self.reattached = False
        self.verdict_now = None
        if self.history is not None:
            self.record = await self._db(
                self.history.start,
                self.spec.name,
                command=self.spec.command,
                env=self.spec.env,
                host=self.spec.host_label,
                log_path=str(log_path),
                attempt=number,
                started_at=run.started_at,
                pid=run.pid,
            )
            self.records.append(self.record)
        self._ensure_ticker()
        await self._follow(run)
        return run

    async def stop(self) -> bool:
        """Stop the running attempt's whole process group (SIGINT → SIGTERM → SIGKILL)."""
        if self.run is None or not self.run.alive and not self.runner.members(self.run):
            return True
        gone = await self.runner.stop(self.run, self.spec.plan)
        self.evaluate()
        return gone

    async def relaunch(
        self,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        force: bool = False,
        gpu_timeout: float = GPU_RELEASE_TIMEOUT,
    ) -> Attempt:
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
            old_pids = set(self.runner.members(self.run)) | {self.run.pid or 0}
            if self.run.alive or self.runner.members(self.run):
                if not await self.stop():
                    raise LaunchError(
                        f"attempt v{self.run.attempt} would not die: pids {self.runner.members(self.run)}"
                    )
            if self.run.pgid and self.run.pgid not in self.old_pgids:
                self.old_pgids.append(self.run.pgid)
        exited = self.run.exited_at if self.run is not None else None
        self.activity = "waiting for the old attempt's GPU memory to be released"
        try:
            await self.wait_gpu_release(old_pids, exited or self.clock(), gpu_timeout)
        finally:
            self.activity = ""
        if not force:
            foreign = [h for h in self.gpu_holders() if not h.ours]
            if foreign:
                raise GpuBusy(foreign)
        return await self.launch()

    async def wait_gpu_release(self, pids: set[int], after: float, timeout: float) -> bool:
        """Until a GPU sample taken after ``after`` lists none of ``pids`` (the old attempt's
        processes) and no live process of ours holds memory (True); False on timeout.

        GPU memory is freed a little after the processes die; launching before that ends in
        an out-of-memory crash minutes later. Without a GPU source there is nothing to wait for.
        """
        if not self.gpu_samples:
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        def released() -> bool:
            sample = self.gpu_samples[-1]
            if sample.at < after:
                return False
            listed = {p.pid for gpu in sample.gpus for p in gpu.processes}
            return not (listed & pids) and not [h for h in self.gpu_holders() if h.ours]

        while not released():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            self._gpu_event.clear()
            try:
                await asyncio.wait_for(self._gpu_event.wait(), remaining)
            except asyncio.TimeoutError:
                return False
        return True

    def gpu_holders(self) -> list[GpuHolder]:
        """Processes holding GPU memory in the latest sample, ours marked (pid, command, bytes per GPU)."""
        if not self.gpu_samples or not self.gpu_pids_real:
            return []
        sample = self.gpu_samples[-1]
        per_pid: dict[int, dict[int, int]] = {}
        names: dict[int, str] = {}
        for gpu in sample.gpus:
            for proc in gpu.processes:
                per_pid.setdefault(proc.pid, {})[gpu.index] = proc.used_bytes or 0
                if proc.name:
                    names[proc.pid] = proc.name
        ours = set(self.runner.members(self.run)) if self.run is not None else set()
        local = self.spec.host is None
        holders = []
        for pid, per_gpu in sorted(per_pid.items()):
            stale = False
            if local and pid not in ours:
                try:
                    stale = os.getpgid(pid) in self.old_pgids
                except OSError:
                    continue  # gone since the sample
            command = self.masker.text(command_line(pid) if local else names.get(pid, ""))
            device = holds_gpu_device(pid) if local else None
            holders.append(GpuHolder(pid, command or names.get(pid, ""), per_gpu, pid in ours, stale, device))
        return holders

    async def kill_holders(self, pids: Sequence[int]) -> list[str]:
        """Kill leftover GPU holders (SIGTERM, then SIGKILL after a few seconds); errors in words."""
        errors = await _maybe_await(self.runner.kill_pids(pids, signal.SIGTERM))
        if self.spec.host is None:
            if not await wait_pids_gone(lambda: [p for p in pids if is_alive(p)], 5.0):
                errors += await _maybe_await(self.runner.kill_pids(pids, signal.SIGKILL))
        return errors

    async def settle(self) -> None:
        """Until the history writes and hooks started so far have finished."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    async def close(self, stop_server: bool = False) -> None:
        """Stop following (and the server too when asked); the server otherwise keeps running."""
        if stop_server:
            await self.stop()
        if self._ticker is not None:
            self._ticker.cancel()
        await self._close_tailer()
        for task in list(self._tasks):
            task.cancel()
        self._queue.put_nowait(_END)
        writes = [t for t in self._writes if not t.get_name().startswith("hook")]
        if writes:  # the history keeps what it was told; a hook keeps running on its own
            await asyncio.wait(writes, timeout=5.0)

    @property
    def server_running(self) -> bool:
        return self.run is not None and self.run.alive

    # ------------------------------------------------------------ internals

    async def _next_attempt(self) -> int:
        number = (self.records[-1].attempt if self.records else 0) + 1
        if self.history is not None:
            number = max(number, await asyncio.to_thread(self.history.next_attempt, self.spec.name))
        while self.spec.host is None and attempt_paths(self.spec.log_dir, self.spec.name, number)[0].exists():
            number += 1  # a log from a run the database does not know: never reuse it
        return number

    async def _load_expectations(self) -> None:
        if self.history is not None:
            self.expect = await asyncio.to_thread(
                self.history.expectations, self.spec.command, self.spec.host_label
            )

    async def _follow(self, run: Attempt) -> None:
        """Tail the attempt's own log file, and probe its health URL."""
        self._tailer = self._make_tailer(run)
        self._pumped = 0
        tailer = self._tailer

        masker = self.masker
        masker.new_stream()

        async def pump() -> None:
            async for event in tailer.events():
                if isinstance(event, LogChunk):
                    end = event.offset + len(event.data)
                    if masker:
                        # secrets the server echoes (server_args=…api_key=…) never reach the screen
                        data, held = masker.chunk(event.data)
                        event = LogChunk(event.source, event.offset - held, data, event.at) if data else None
                    if event is not None:
                        self._queue.put_nowait(event)
                    self._pumped = end
                    continue
                if isinstance(event, LogRestart):
                    self._pumped = 0
                self._queue.put_nowait(event)

        self._tail_task = asyncio.create_task(pump())
        if self.spec.health_url:
            self._spawn(self._probe(run))

    def _make_tailer(self, run: Attempt) -> Any:
        maker = getattr(self.runner, "tailer", None)
        if maker is not None:
            return maker(run)
        from tui.sources.local import LocalTailer

        return LocalTailer(run.log_path)

    async def _drain_log(self, timeout: float) -> None:
        """Until every byte of the attempt's log has been passed on (local), or ``timeout``."""
        if self._tailer is None:
            return
        if self.spec.host is not None:
            await asyncio.sleep(min(timeout, 0.3))  # the remote agent polls every few ms
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        path = self._tailer.path
        while loop.time() < deadline:
            try:
                if self._pumped >= os.path.getsize(path):
                    return
            except OSError:
                return
            await asyncio.sleep(0.01)

    async def _close_tailer(self) -> None:
        """Let the tailer deliver the old attempt's last bytes, then stop it."""
        tailer, task = self._tailer, self._tail_task
        if tailer is None or task is None:
            return
        self._tailer = self._tail_task = None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 2.0
        if self.spec.host is not None:
            await asyncio.sleep(0.5)  # the remote agent polls every few ms; its size is not ours to stat
        while self.spec.host is None and loop.time() < deadline and not task.done():
            try:
                if tailer.offset >= os.path.getsize(tailer.path):
                    break
            except OSError:
                break
            await asyncio.sleep(0.02)
        await tailer.close()
        try:
            await asyncio.wait_for(task, 2.0)
        except (asyncio.TimeoutError, asyncio.CancelledError, Exception):
            task.cancel()

    async def _probe(self, run: Attempt) -> None:
        probe = HealthProbe(self.spec.health_url, target=getattr(self.runner, "target", None))
        async for status in probe.statuses():
            if self.run is not run:
                return
            self.health = status
            self.evaluate()

    def _ensure_ticker(self) -> None:
        """Silence and stop countdowns change with time alone: re-judge once a second."""
        if self._ticker is None or self._ticker.done():

            async def tick() -> None:
                while True:
                    await asyncio.sleep(1.0)
                    self.evaluate()

            self._ticker = asyncio.create_task(tick())

    async def _on_exit(self, event: ProcessExited) -> None:
        await self._drain_log(EXIT_DRAIN)
        self._queue.put_nowait(event)  # the session hands it to the tracker, then to _exit_seen

    def _exit_seen(self, event: ProcessExited) -> None:
        notified = event.attempt in self._notified
        self.evaluate()
        if notified and self.record is not None and self.record.attempt == event.attempt:
            # the verdict came first (an error in the log); the exit completes the record
            self._store(ended_at=event.at, exit_text=event.detail)

    def _finished(self, verdict: Verdict) -> None:
        """A final verdict for this attempt: record it, ring, retitle, run the hook."""
        run = self.run
        state = self.session.state
        error = log_error(state) if verdict.kind != STOPPED else None  # a traceback our SIGINT caused is no cause
        error_text = None
        if error is not None:
            error_text = error.title
        outcome = verdict.kind
        ready_seconds = (self.clock() - run.started_at) if outcome == READY else None
        if self.record is not None:
            self._store(
                phases=phase_seconds(state),
                outcome=outcome,
                first_error=error_text,
                ended_at=None if outcome == READY else (run.exited_at or self.clock()),
                ready_seconds=ready_seconds,
                exit_text=None if run.alive else run.exited_event().detail,
            )
        if outcome == STOPPED:
            return
        ok = outcome == READY
        if self.terminal is not None:
            mark = "✓" if ok else "✗"
            self.terminal(BELL + title_sequence(f"{mark} {self.spec.name} v{run.attempt} {outcome}"))
        hook = self.spec.on_ready if ok else self.spec.on_fail
        if hook:
            env = hook_env(
                {
                    "outcome": outcome,
                    "verdict": verdict.text,
                    "error": error_text or (verdict.detail if not ok else ""),
                    "attempt": run.attempt,
                    "name": self.spec.name,
                    "host": self.spec.host_label,
                    "log": str(run.log_path),
                    "pid": run.pid,
                    "exit": "" if run.alive else run.exited_event().detail,
                    "seconds": f"{self.clock() - run.started_at:.1f}",
                },
                self.masker,
            )
            self._spawn(self._hook(hook, env), write=True, name="hook")

    async def _hook(self, command: str, env: dict[str, str]) -> None:
        code, first = await run_hook(command, env)
        said = f": {self.masker.text(first)}" if first else ""
        text = f"hook {'ran' if code == 0 else 'failed'} ({'timeout' if code is None else f'exit {code}'}){said}"
        for note in list(self.notes):
            note(text)

    def _store(self, **fields: Any) -> None:
        if self.history is None or self.record is None:
            return
        self._spawn(self._db(self.history.update, self.record, masker=self.masker, **fields), write=True)

    async def _db(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        async with self._db_lock:
            return await asyncio.to_thread(fn, *args, **kwargs)

    def _spawn(self, coro, *, write: bool = False, name: str | None = None) -> None:
        """A background task; ``write`` ones (history updates, hooks) are awaited by ``settle``."""
        task = asyncio.create_task(coro, name=name)
        tasks = self._writes if write else self._tasks
        tasks.add(task)
        task.add_done_callback(tasks.discard)


async def _maybe_await(value: Any) -> Any:
    if asyncio.iscoroutine(value):
        return await value
    return value


__all__ = [
    "GpuBusy",
    "GpuHolder",
    "Launch",
    "LaunchError",
    "LaunchSpec",
    "StopPlan",
]
