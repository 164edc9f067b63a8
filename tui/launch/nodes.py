"""The node-set runner: one attempt across several nodes over SSH (``run --nodes``, ``run --cluster``).

The same command runs on every node (``{node_rank}``/``{nnodes}``/``{master}`` substituted, a
node's own extra words appended), each as a detached process group with its own log and pid
file (``NAME-NODE-vN.log``), through that node's :class:`~tui.launch.remote.RemoteRunner`. The
attempt is one :class:`~tui.launch.runner.AttemptRun` whose processes are every node's: alive
while any node's is, stopped on every node at once. It is followed by a node set
(``tui.cluster.ClusterSession``, one node per host): a node whose process exits is told to it
as a death — or, while the attempt is being stopped, as the stop's end.
"""

from __future__ import annotations

import asyncio
import signal as signals
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from tui.core.errors import UsageError
from tui.core.events import GpuSample, ProcessExited, ProcessStopping, SourceEvent
from tui.core.multinode import SOCKET_IFNAMES, master_host, node_commands, suspects
from tui.core.options import NodeSpec
from tui.launch.gpu_release import GPU_RELEASE_TIMEOUT, GpuWatch
from tui.launch.remote import RemoteRunner
from tui.launch.runner import AttemptRun, Emit, ProcessRef, Runner, StopResult
from tui.launch.spec import LaunchError, StopPlan

if TYPE_CHECKING:
    from tui.cluster import ClusterSession
    from tui.session import WatchSession


def node_paths(path: Path, node: str) -> Path:
    """``DIR/NAME-vN.log`` → ``DIR/NAME-NODE-vN.log`` (the same for ``.pid``): one node's file."""
    stem, dot, suffix = path.name.rpartition(".")
    name, _, attempt = stem.rpartition("-v")
    return path.with_name(f"{name}-{node}-v{attempt}{dot}{suffix}")


@dataclass(slots=True)
class NodeRuns:
    """One attempt's processes, node by node, and the node set that follows it."""

    runs: dict[str, AttemptRun]
    commands: dict[str, list[str]]
    logs: dict[str, Path]  # every node's log, its process found or not
    gone: list[str] = field(default_factory=list)  # nodes whose process was not found (attach)
    held: dict[str, set[int]] = field(default_factory=dict)  # a stopped node's processes (its GPU memory's holders)
    watched: ClusterSession | None = None
    whole: AttemptRun | None = None  # the attempt they make together


class NodesRunner(Runner):
    """Starts, stops and follows an attempt on every node at once."""

    spans = True

    def __init__(self, hosts: Sequence[str], emit: Emit, *, names: Sequence[str] | None = None,
                 extra: Mapping[int, Sequence[str]] | None = None, gpus: str = "none") -> None:
        super().__init__(emit)
        from tui.sources.ssh import SshTarget

        self.hosts = list(hosts)
        self.names = list(names or [master_host(h) for h in hosts])
        self.extra = dict(extra or {})
        self.gpus = gpus
        self.host = ",".join(self.hosts)
        self.runners = {node: RemoteRunner(SshTarget.parse(host), partial(self._node_event, node))
                        for host, node in zip(self.hosts, self.names)}
        self._attempts: dict[int, NodeRuns] = {}  # id(run) -> its nodes
        self.master: str | None = None  # node 0's address as its ssh config resolves it (resolve_master)

    async def resolve_master(self) -> None:
        """``{master}`` is node 0's real host name (``ssh -G``: an alias's HostName), not the alias."""
        from tui.sources import ssh

        if self.master is None:
            target = next(iter(self.runners.values())).target
            try:
                self.master = (await ssh.resolve(target)).hostname
            except ssh.SshError:
                self.master = None  # its connection says why; the name as given meanwhile

    def commands(self, command: Sequence[str]) -> dict[str, list[str]]:
        """Each node's command line, by node name (what the agreement check reads; ``{master}``
        resolved once :meth:`resolve_master` has run)."""
        return dict(zip(self.names, node_commands(command, self.hosts, self.extra, self.master)))

    def nodes_of(self, run: AttemptRun) -> NodeRuns:
        return self._attempts[id(run)]

    # ------------------------------------------------------------ start, attach

    async def start(self, attempt: int, command: Sequence[str], env: Mapping[str, str], log_path: Path,
                    pid_path: Path, cwd: str | None = None) -> AttemptRun:
        """Every node's process started (or, if one cannot start, the others stopped again)."""
        await self.resolve_master()
        commands = self.commands(command)
        results = await asyncio.gather(*(
            self.runners[node].start(attempt, commands[node], env, node_paths(log_path, node),
                                     node_paths(pid_path, node), cwd)
            for node in self.names), return_exceptions=True)
        runs = {node: r for node, r in zip(self.names, results) if isinstance(r, AttemptRun)}
        failed = [(node, r) for node, r in zip(self.names, results) if isinstance(r, BaseException)]
        if failed:
            await asyncio.gather(*(self.runners[node].stop(run, StopPlan()) for node, run in runs.items()))
            node, exc = failed[0]
            if not isinstance(exc, (LaunchError, UsageError)):
                raise exc
            raise LaunchError(f"{node}: {exc}")
        return self._attempt(attempt, command, env, runs, commands, log_path)

    async def reattach(self, attempt: int, command: Sequence[str], log_path: Path, pid_path: Path) -> AttemptRun | None:
        """The attempt an earlier Watchtower started, on the nodes where it still runs (those
        where it is gone are told as deaths, "found so on attach"); None where it runs on none."""
        await self.resolve_master()
        commands = self.commands(command)
        found = await asyncio.gather(*(
            self.runners[node].reattach(attempt, commands[node], node_paths(log_path, node), node_paths(pid_path, node))
            for node in self.names))
        runs = {node: run for node, run in zip(self.names, found) if run is not None}
        if not runs:
            return None
        run = self._attempt(attempt, command, {}, runs, commands, log_path)
        self.nodes_of(run).gone = [node for node in self.names if node not in runs]
        return run

    def _attempt(self, attempt: int, command: Sequence[str], env: Mapping[str, str], runs: dict[str, AttemptRun],
                 commands: dict[str, list[str]], log_path: Path) -> AttemptRun:
        first = next(iter(runs.values()))
        run = AttemptRun(attempt, tuple(command), dict(env), first.log_path, first.pid_path, host=self.host,
                         pid=first.pid, pgid=first.pgid, server_pid=first.server_pid, started_at=first.started_at)
        logs = {node: node_paths(log_path, node) for node in self.names}
        self._attempts[id(run)] = NodeRuns(runs, commands, logs, whole=run)
        self._emit(run.started_event())
        self._spawn(self._watch(run))
        return run

    async def _watch(self, run: AttemptRun) -> None:
        """The attempt ends when every node's process has: its exit is the first node's to fail."""
        parts = self.nodes_of(run).runs
        await asyncio.gather(*(part.wait() for part in parts.values()))
        ended = sorted(parts.values(), key=lambda p: p.exited_at or 0.0)
        worst = next((p for p in ended if p.returncode != 0), ended[0])
        self._emit(run.exited(worst.returncode, worst.signal, known=worst.exit_known))

    def _node_event(self, node: str, event: SourceEvent) -> None:
        """A node's process event: its exit is a death, or (while we stop it) the stop's end; a
        signal of the stop is the attempt's (the countdown to the next one)."""
        if isinstance(event, ProcessStopping):
            for attempt in self._attempts.values():
                part = attempt.runs.get(node)
                if part is not None and part.pid == event.pid and attempt.whole is not None:
                    attempt.whole.stopping = event
            return
        if not isinstance(event, ProcessExited):
            return
        for attempt in self._attempts.values():
            part = attempt.runs.get(node)
            if part is None or part.attempt != event.attempt or part.pid != event.pid or attempt.watched is None:
                continue
            if part.stopped_by_user:
                attempt.watched.node_stopped(node, event.detail or "stopped")
            else:  # the server's own pid, as one node's DEAD names it (never the wrapper's)
                pid = f" · pid {part.server_pid}" if part.server_pid else ""
                attempt.watched.node_died(node, f"{event.detail or 'exited'}{pid}")

    def node_set(self, run: AttemptRun, make_session: Callable[[NodeSpec], WatchSession]) -> ClusterSession:
        """One node per host, each following its own log; the commands' disagreements as suspects."""
        from tui.cluster import ClusterSession

        attempt = self.nodes_of(run)
        specs = [NodeSpec(node, str(attempt.logs[node]), host, self.gpus) for host, node in zip(self.hosts, self.names)]
        session = ClusterSession(specs, make_session=make_session)
        session.suspects = suspects(attempt.commands, run.env)
        session.commands = {node: list(argv) for node, argv in attempt.commands.items()}
        session.launch_env = {k: v for k, v in run.env.items() if k in SOCKET_IFNAMES}  # (what is read of it)
        session.launched = True
        for node in attempt.gone:  # gone while nobody watched
            session.node_died(node, "its process is gone (found so on attach)")
        attempt.watched = session
        return session

    # ------------------------------------------------------------ every node at once

    async def stop(self, run: AttemptRun, plan: StopPlan) -> StopResult:
        """Every node's process group, each stopped (SIGINT → SIGTERM → SIGKILL) at once; all gone?"""
        run.stopped_by_user = True
        attempt = self.nodes_of(run)
        attempt.held = {node: set(self.runners[node].members(part)) for node, part in attempt.runs.items()}
        results = await asyncio.gather(*(self.runners[node].stop(part, plan) for node, part in attempt.runs.items()))
        run.stopping = None
        for node, result in zip(attempt.runs, results):
            if result.gone and attempt.watched is not None:
                attempt.watched.node_stopped(node, "stopped")  # (its exit event may say more, first)
        return StopResult(all(r.gone for r in results), tuple(p for r in results for p in r.killed),
                          tuple(p for r in results for p in r.escaped))

    async def signal(self, run: AttemptRun, sig: int) -> bool:
        parts = self.nodes_of(run).runs
        return any(await asyncio.gather(*(self.runners[node].signal(part, sig) for node, part in parts.items())))

    async def wait(self, run: AttemptRun, timeout: float) -> bool:
        parts = self.nodes_of(run).runs
        return all(await asyncio.gather(*(self.runners[node].wait(part, timeout) for node, part in parts.items())))

    async def alive(self, run: AttemptRun) -> bool:
        parts = self.nodes_of(run).runs
        return any(await asyncio.gather(*(self.runners[node].alive(part) for node, part in parts.items())))

    def processes(self, run: AttemptRun) -> list[ProcessRef]:
        return [p for node, part in self.nodes_of(run).runs.items() for p in self.runners[node].processes(part)]

    def outside_group(self, run: AttemptRun) -> list[ProcessRef]:
        return [p for node, part in self.nodes_of(run).runs.items() for p in self.runners[node].outside_group(part)]

    def label(self, run: AttemptRun) -> str:
        return ", ".join(f"{node} pid {part.shown_pid}" for node, part in self.nodes_of(run).runs.items())

    def stop_words(self, run: AttemptRun, plan: StopPlan) -> str:
        return f"Stop v{run.attempt} on every node ({self.label(run)}), each node's whole process group?\n{plan.words}"

    def started_words(self, run: AttemptRun, reattached: bool) -> str:
        nodes = ", ".join(self.nodes_of(run).runs)
        return f"following it again on {nodes}" if reattached else f"started on {nodes}"

    def stop_hint(self, run: AttemptRun, name: str) -> str:
        stops = "; ".join(f"{node}: kill -INT -- -{part.pgid}" for node, part in self.nodes_of(run).runs.items()
                          if part.alive)
        return f"{stops}; or `watchtower attach {name}` then x"

    async def released(self, run: AttemptRun, note: Callable[[str], None]) -> None:
        """Until a GPU sample taken after the stop, on every node, lists none of the stopped processes."""
        attempt = self.nodes_of(run)
        session = attempt.watched
        if session is None:
            return
        after = time.time()
        waits, names = [], []
        for node, followed in session.nodes.items():
            samples = followed.gpus.samples  # (each node's one buffer of samples: its GpuBoard)
            part = attempt.runs.get(node)
            if not samples or part is None:
                continue  # no GPU source on this node: nothing to wait for
            watch = GpuWatch(local=False, mask=str)
            for sample in samples:
                watch.add(sample)
            session.nodes[node].handlers.setdefault(GpuSample, []).append(watch.add)
            waits.append(watch.wait_release(attempt.held.get(node, set()) | {part.pid or 0}, after, GPU_RELEASE_TIMEOUT, lambda: False))
            names.append(node)
        if not waits:
            return
        note(f"waiting for the GPU memory to be released on {', '.join(names)}")
        late = [node for node, ok in zip(names, await asyncio.gather(*waits)) if not ok]
        if late:
            note(f"GPU memory still held after {GPU_RELEASE_TIMEOUT:.0f} s on {', '.join(late)}: launching anyway")

    # ------------------------------------------------------------ what a node set does not do

    async def exit_status(self, pid_path: Path) -> tuple[int | None, int | None] | None:
        """The first node's recorded exit (each node keeps its own beside its log)."""
        node = self.names[0]
        return await self.runners[node].exit_status(node_paths(pid_path, node))

    async def kill_pids(self, pids: Sequence[int], sig: int = signals.SIGKILL) -> list[str]:
        return ["processes on several nodes: stop them on their node"]

    def tailer(self, run: AttemptRun) -> object:
        """The first node's log (the node set follows each node's: ``node_set``)."""
        node, part = next(iter(self.nodes_of(run).runs.items()))
        return self.runners[node].tailer(part)

    async def close(self) -> None:
        await super().close()
        for runner in self.runners.values():
            await runner.close()
