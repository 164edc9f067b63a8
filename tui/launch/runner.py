"""The seam every way of running a server plugs into: one async ``Runner`` interface.

A runner starts an attempt, signals all of its processes, waits for them to be gone,
says whether any is still alive and lists them. An attempt's processes may live on
several hosts (a multi-node launch over SSH, a Slurm job): a process is a
:class:`ProcessRef` (host, pid), and ``signal`` / ``wait`` / ``alive`` cover all of
them. The stop escalation (SIGINT → SIGTERM → SIGKILL with grace periods) is written
once, here, on top of those primitives; the local runner (``tui.launch.local``), the SSH
runner (``tui.launch.remote``) and later ones only say how to reach their processes.
"""

from __future__ import annotations

import abc
import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.core.events import ProcessExited, ProcessStarted, ProcessStopping, SourceEvent
from tui.core.verdict import ProcessStatus
from tui.launch.oom import MemoryWatch
from tui.launch.spec import StopPlan

if TYPE_CHECKING:
    from tui.cluster import ClusterSession
    from tui.core.options import NodeSpec
    from tui.session import WatchSession

Emit = Callable[[SourceEvent], None]


@dataclass(frozen=True, slots=True)
class ProcessRef:
    """One process of an attempt: where it runs and its pid there (``command`` when known)."""

    host: str
    pid: int
    command: str = ""

    @property
    def text(self) -> str:
        where = "" if self.host == "localhost" else f"{self.host}:"
        return f"{where}pid {self.pid}" + (f" ({self.command})" if self.command else "")


@dataclass(slots=True)
class AttemptRun:
    """One running (or finished) attempt of a launch: its main process and how it ended."""

    attempt: int
    command: tuple[str, ...]
    env: dict[str, str]
    log_path: Path
    pid_path: Path
    host: str = "localhost"
    pid: int | None = None  # the attempt's main process (locally and over SSH: the exit-status wrapper)
    pgid: int | None = None
    server_pid: int | None = None  # the server's own process under the wrapper, where known
    started_at: float = 0.0
    returncode: int | None = None
    signal: int | None = None
    exited_at: float | None = None
    stopped_by_user: bool = False
    exit_known: bool = True  # False when the exit status could not be learnt (no exit file)
    stopping: ProcessStopping | None = None
    memory: MemoryWatch | None = None  # its memory cgroup at the start (local attempts)
    oom_evidence: str | None = None  # what says the OOM killer struck, once it died by SIGKILL
    _exited: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def alive(self) -> bool:
        return self.pid is not None and not self._exited.is_set()

    @property
    def status(self) -> ProcessStatus:
        return ProcessStatus(
            alive=self.alive,
            returncode=self.returncode,
            signal=self.signal,
            stopped_by_user=self.stopped_by_user,
            oom_evidence=self.oom_evidence,
            pid=self.shown_pid,
        )

    @property
    def shown_pid(self) -> int | None:
        """The pid an operator acts on: the server's own, not the wrapper's, where known."""
        return self.server_pid or self.pid

    async def wait(self) -> None:
        """Until the main process has exited (its status is then known, or known to be unknown)."""
        await self._exited.wait()

    def exited(self, returncode: int | None, signum: int | None, *, known: bool = True) -> ProcessExited:
        """Record the main process's end; the event to emit."""
        self.returncode, self.signal, self.exit_known = returncode, signum, known
        self.exited_at = time.time()
        self._exited.set()
        return self.exited_event()

    def exited_event(self) -> ProcessExited:
        if not self.exit_known:
            detail = "exited (status unknown: no exit status was recorded)"
        else:
            detail = self.status.exit_text
        return ProcessExited(
            attempt=self.attempt,
            pid=self.pid or 0,
            returncode=self.returncode,
            signal=self.signal,
            at=self.exited_at or time.time(),
            detail=detail,
        )

    def started_event(self) -> ProcessStarted:
        return ProcessStarted(
            attempt=self.attempt,
            pid=self.pid or 0,
            command=self.command,
            log_path=str(self.log_path),
            host=self.host,
            at=self.started_at,
        )


@dataclass(frozen=True, slots=True)
class StopResult:
    """How a stop ended: ``gone``, and the processes that needed SIGKILL or had left the group."""

    gone: bool
    killed: tuple[ProcessRef, ...] = ()
    escaped: tuple[ProcessRef, ...] = ()  # outside the attempt's process group (setsid), stopped too

    def __bool__(self) -> bool:
        return self.gone

    @property
    def text(self) -> str:
        """What had to be done beyond a polite stop, in words ('' when nothing)."""
        parts = []
        if self.escaped:
            parts.append("stopped outside its process group: " + ", ".join(p.text for p in self.escaped))
        if self.killed:
            parts.append("needed SIGKILL: " + ", ".join(p.text for p in self.killed))
        return "; ".join(parts)


class Runner(abc.ABC):
    """Starts, watches and stops attempts; reports ProcessStarted/Stopping/Exited through ``emit``.

    An attempt on one host is followed through its log (``tailer``); one that spans several
    nodes (``spans``: SSH nodes, a Slurm job's tasks) by the node set its runner makes
    (``node_set``), each node its own log."""

    host: str = "localhost"
    #: Its attempts span several nodes: ``node_set`` follows each (``host`` names them all).
    spans: bool = False

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------ what each runner says

    @abc.abstractmethod
    async def start(
        self,
        attempt: int,
        command: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        pid_path: Path,
        cwd: str | None = None,
    ) -> AttemptRun:
        """Launch the attempt; LaunchError (one line) when it cannot start."""

    @abc.abstractmethod
    async def reattach(self, attempt: int, command: Sequence[str], log_path: Path, pid_path: Path) -> AttemptRun | None:
        """An attempt an earlier Watchtower started, if it still runs."""

    @abc.abstractmethod
    async def signal(self, run: AttemptRun, sig: int) -> bool:
        """Send ``sig`` to every process of the attempt; False when none was left to signal."""

    @abc.abstractmethod
    async def wait(self, run: AttemptRun, timeout: float) -> bool:
        """Until no process of the attempt is alive (True), or ``timeout`` seconds (False)."""

    @abc.abstractmethod
    async def alive(self, run: AttemptRun) -> bool:
        """Whether any process of the attempt is alive (an unknown answer counts as alive)."""

    @abc.abstractmethod
    def processes(self, run: AttemptRun) -> list[ProcessRef]:
        """The attempt's live processes, as last seen (cheap: for GPU holders and stop notes)."""

    @abc.abstractmethod
    async def exit_status(self, pid_path: Path) -> tuple[int | None, int | None] | None:
        """``(returncode, signal)`` an attempt's wrapper recorded when it ended; None if none was."""

    @abc.abstractmethod
    async def kill_pids(self, pids: Sequence[int], sig: int) -> list[str]:
        """Signal processes that are not ours (leftover GPU holders); errors in words."""

    @abc.abstractmethod
    def tailer(self, run: AttemptRun) -> Any:
        """The event source following the attempt's log."""

    # ------------------------------------------------------------ written once

    def outside_group(self, run: AttemptRun) -> list[ProcessRef]:
        """Processes of the attempt a group signal does not reach (none, unless a runner tracks them)."""
        return []

    def node_set(self, run: AttemptRun, make_session: Callable[[NodeSpec], WatchSession]) -> ClusterSession | None:
        """The nodes that follow an attempt spanning several (``spans``); None: its one log (``tailer``)."""
        return None

    def label(self, run: AttemptRun) -> str:
        """The attempt's processes in a few words, for the screen: ``pid 4211`` (the server's)."""
        return f"pid {run.shown_pid}"

    def stop_words(self, run: AttemptRun, plan: StopPlan) -> str:
        """What ``x`` will do to the attempt, in words, asked before it is done."""
        return f"Stop v{run.attempt} ({self.label(run)}) and its whole process group?\n{plan.words}"

    def started_words(self, run: AttemptRun, reattached: bool) -> str | None:
        """Where an attempt of a node set runs, in words, once started or found again (None: the launch's own words)."""
        return None

    def stop_hint(self, run: AttemptRun, name: str) -> str:
        """How the operator stops launch ``name``'s attempt left running, in words (a command to paste,
        on the host it runs on), and how to follow it again."""
        where = "" if self.host == "localhost" else f"on {self.host}: "
        return (f"v{run.attempt} (pid {run.shown_pid}; {where}kill -INT -- -{run.pgid} stops it,"
                f" or `watchtower attach {name}` then x)")

    async def released(self, run: AttemptRun, note: Callable[[str], None]) -> None:
        """Before the next attempt of a node set: until each node's GPU memory of this one is released
        (an attempt on one host is waited for by the launch's own GPU watch)."""
        return None

    async def stop(self, run: AttemptRun, plan: StopPlan) -> StopResult:
        """SIGINT, SIGTERM, SIGKILL to every process, each after the previous grace; gone or not."""
        run.stopped_by_user = True
        escaped = {p.pid: p for p in self.outside_group(run)}
        killed: list[ProcessRef] = []
        for sig, grace in plan.steps():
            before = self.processes(run)
            if not await self.signal(run, sig):
                break
            escaped.update((p.pid, p) for p in self.outside_group(run))
            if sig == 9:
                killed = before
            run.stopping = ProcessStopping(run.attempt, run.pid or 0, int(sig), grace, time.time())
            self._emit(run.stopping)
            if await self.wait(run, grace):
                break
        run.stopping = None
        gone = not await self.alive(run)
        if gone and run.pid is not None and run.exit_known:
            try:
                async with asyncio.timeout(10.0):
                    await run.wait()  # the main process is reaped and reported
            except asyncio.TimeoutError:
                pass
        return StopResult(gone, tuple(killed), tuple(escaped.values()))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
