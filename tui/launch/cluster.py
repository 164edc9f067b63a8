"""Attempts that span several nodes: as Slurm jobs (``run --slurm``) or over SSH on named
nodes (``run --nodes n1,n2``), each watched as a :class:`~tui.cluster.ClusterSession`.

:class:`SlurmLaunch` is the attempt lifecycle on the Slurm runner (``tui.launch.slurm``): v1
is submitted, watched as a :class:`~tui.cluster.ClusterSession` (the job's state, then its
tasks' logs); ``x`` cancels
it; a relaunch cancels the running job and submits vN+1 with the edited command and
environment. The history records each attempt with its job id.

:class:`NodesLaunch` runs the same command on every node over SSH (one detached process
group and log per node, ``{node_rank}``/``{nnodes}``/``{master}`` substituted); stop and
relaunch act on every node; a node whose command disagrees with the others' (another
dist-init address, model, node count) is a suspect the barrier view puts first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from tui.cluster import ClusterSession
from tui.core.errors import UsageError
from tui.core.events import GpuSample, ProcessExited
from tui.core.multinode import SOCKET_IFNAMES, master_host, node_commands, suspects
from tui.core.options import NodeSpec
from tui.core.slurm import ENDED, GONE
from tui.core.secrets import Masker
from tui.core.verdict import DEAD, FAILED, READY, STOPPED, Verdict
from tui.history import AttemptRecord, History
from tui.launch.gpu_release import GPU_RELEASE_TIMEOUT, GpuWatch
from tui.launch.outcome import HistoryWrites, announce, run_outcome_hook
from tui.launch.runner import AttemptRun
from tui.launch.slurm import STOP_TIMEOUT, SlurmRunner
from tui.launch.spec import LaunchError, StopPlan, attempt_paths
from tui.sources.slurm import SlurmJobSource, task_logs

Notify = Callable[[str], None]


class ClusterLaunch:
    """What both kinds share: the attempt counter, the history record, the notes, x and r; and
    what an attempt's end leaves behind as a launch on one host leaves it (``tui.launch.outcome``):
    the history written off the event loop, masked; the bell and title; ``--on-ready``/``--on-fail``."""

    host = "cluster"

    def __init__(
        self, name: str, command: Sequence[str], env: Mapping[str, str], *, make_session: Callable[[NodeSpec], Any],
        history: History | None = None, cwd: str | None = None, gpus: str = "none", on_ready: str | None = None,
        on_fail: str | None = None, terminal: Callable[[str], None] | None = None,
    ) -> None:
        self.name = name
        self.command = list(command)
        self.env = dict(env)
        self.make_session = make_session
        self.history = history
        self.cwd = cwd
        self.gpus = gpus
        self.hooks = {READY: on_ready, FAILED: on_fail}
        self.terminal = terminal  # writes the bell and title sequences, if any
        self.masker = Masker.for_launch(self.env, self.command)
        self.attempt = 0
        self.session: ClusterSession | None = None
        self.record: AttemptRecord | None = None
        self.notes: list[Notify] = []
        self.writes = HistoryWrites(self._note)
        self._announced: int | None = None  # the attempt whose final verdict was announced
        self.timeout: float | None = None  # --timeout: each attempt's session keeps its own deadline

    # ------------------------------------------------------------ what each kind says

    async def submit(self, attempt: int) -> ClusterSession:
        """Start attempt ``attempt`` (``self.command``, ``self.env``); the session following it."""
        raise NotImplementedError

    async def stop(self) -> bool:
        """``x``: every process of the attempt, on every node, verified gone."""
        raise NotImplementedError

    async def alive(self) -> bool:
        raise NotImplementedError

    def history_fields(self) -> dict[str, Any]:
        """host / log_path / pid of the attempt's history record."""
        raise NotImplementedError

    def stop_hint(self) -> str:
        """How the operator stops what is left running, in words (a command to paste)."""
        raise NotImplementedError

    async def close(self) -> None:
        """Stop following (what runs keeps running); the history keeps what it was told."""
        await self.writes.close()

    async def released(self, session: ClusterSession) -> None:
        """Before the next attempt: until the stopped one's GPU memory is released (where it can be told)."""

    # ------------------------------------------------------------ written once

    async def start(self) -> ClusterSession:
        """Start the next attempt and return the session that follows it."""
        attempt = await self.writes.db(self.history.next_attempt, self.name) if self.history is not None else self.attempt + 1
        session = await self.submit(attempt)
        record = None
        if self.history is not None:
            record = await self.writes.db(self.history.start, self.name, command=self.command, env=self.env,
                                          attempt=attempt, **self.history_fields())
        return self._follow(attempt, session, record)

    def _follow(self, attempt: int, session: ClusterSession, record: Any) -> ClusterSession:
        """Attempt ``attempt`` is ``session``'s, written to ``record`` as it goes."""
        self.attempt, self.session, self.record = attempt, session, record
        session.timeout = self.timeout
        session.attempt = attempt
        for node in session.nodes.values():  # (a Slurm job's nodes are told as they come)
            node.info.attempt = attempt
        session.subscribe(lambda _node, _update: self.finish(session))
        return session

    async def relaunch(self, command: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> ClusterSession:
        """Stop the running attempt (verified, on every node), then start vN+1 with the edits."""
        if self.session is not None and await self.alive():
            if not await self.stop():
                raise UsageError(f"v{self.attempt} is still running: not starting another")
        if self.session is not None:
            await self.released(self.session)
            await self.session.stop()
        if command is not None:
            self.command = list(command)
        if env is not None:
            self.env = dict(env)
        return await self.start()

    def finish(self, session: ClusterSession, *, ended: bool = False, words: str | None = None) -> None:
        """Keep the history up to date: the outcome once decided (ready stays ready after a stop;
        a stop before ready is "stopped"), then how the attempt ended, in words. Called on every
        update (``ended``: the launch knows it is over before the job's state says so, ``words``: how)."""
        if session is not self.session:
            return
        verdict = session.verdict()
        self._announce(verdict)
        record = self.record
        if self.history is None or record is None or record.ended_at is not None:
            return
        ended = ended or self.ended(session)
        outcome = {READY: "ready", FAILED: "failed", DEAD: "failed", STOPPED: "stopped"}.get(verdict.kind)
        if outcome is None and ended and session.stopping:
            outcome = "stopped"
        if record.outcome in ("ready", "failed"):
            outcome = record.outcome  # the first verdict is the attempt's
        if outcome is None and not ended:
            return  # still queued or starting
        if outcome == record.outcome and not ended:
            return
        fields: dict[str, Any] = {
            "outcome": outcome or "failed",
            "first_error": session.first_error(verdict),
            "exit_text": words or session.job_words() or verdict.text,  # the launch's own words first: it knows before the poll
            "ended_at": time.time() if ended else None,
        }
        record.outcome = fields["outcome"]  # decided now (the next update's guards): the write follows off the loop
        record.ended_at = fields["ended_at"]
        self.writes.store(self.history, record, self.masker, **fields)

    def _announce(self, verdict: Verdict) -> None:
        """The attempt's first final verdict, ready or failed: the bell and title, and its hook."""
        outcome = {READY: READY, FAILED: FAILED, DEAD: FAILED}.get(verdict.kind)
        session = self.session
        if outcome is None or self._announced == self.attempt or session is None or session.stopping:
            return
        self._announced = self.attempt
        announce(self.terminal, self.name, self.attempt, outcome)
        run_outcome_hook(self.writes, self.hooks[outcome], {
            "outcome": outcome,
            "verdict": verdict.text,
            "error": session.first_error(verdict) or (verdict.detail if outcome != READY else ""),
            "attempt": self.attempt,
            "name": self.name,
            "host": self.history_fields()["host"],
            "node": verdict.node or "",
            "seconds": f"{time.time() - session.started_at:.1f}" if session.started_at is not None else "",
        }, self.masker)

    def ended(self, session: ClusterSession) -> bool:
        """Whether the attempt is over (so its record is closed)."""
        job = session.job
        return job is not None and (job.state in ENDED or job.state == GONE)

    def _note(self, text: str) -> None:
        for note in self.notes:
            note(text)


class SlurmLaunch(ClusterLaunch):
    """A launch whose attempts are Slurm jobs (through the Slurm runner)."""

    def __init__(self, name: str, command: Sequence[str], env: Mapping[str, str], runner: SlurmRunner,
                 log_dir: Path, *, interval: float = 1.0, **kwargs: Any) -> None:
        super().__init__(name, command, env, **kwargs)
        self.runner = runner
        self.log_dir = log_dir
        self.interval = interval
        self.run: AttemptRun | None = None

    @property
    def job_id(self) -> str:
        return str(self.run.pid) if self.run is not None else "?"

    async def submit(self, attempt: int) -> ClusterSession:
        log_path, pid_path = attempt_paths(self.log_dir, self.name, attempt)
        run = await self.runner.start(attempt, self.command, self.env, log_path, pid_path, self.cwd)
        self.run = run
        job = self.runner.job(run)
        self._note(f"v{attempt}: submitted as Slurm job {job.job_id} ({job.script})")
        return self._job_session(job)

    async def resume(self, record: Any) -> ClusterSession:
        """``attach``: follow the job an earlier Watchtower submitted for ``record`` (the job id
        its history keeps), never submitting one; x and r act on it as after a ``run``."""
        log_path, pid_path = attempt_paths(self.log_dir, self.name, record.attempt)
        job_id = str(record.pid or "")
        run = await self.runner.follow_job(record.attempt, record.command, log_path, pid_path, job_id)
        if run is None:
            raise UsageError(f"{self.name} v{record.attempt}: Slurm job {job_id or '?'} is no longer queued or "
                             f"running; relaunch it with `watchtower run --slurm`")
        self.run = run
        self._note(f"v{record.attempt}: following Slurm job {job_id} again")
        return self._follow(record.attempt, self._job_session(self.runner.job(run)), record)

    def _job_session(self, job: Any) -> ClusterSession:
        async def outputs(state: Any) -> list[NodeSpec]:
            return [NodeSpec(node, path, None, self.gpus) for node, path in await task_logs(state, job.task_output)]

        return ClusterSession(make_session=self.make_session, job=SlurmJobSource(job.job_id, interval=self.interval),
                              job_outputs=outputs)

    def history_fields(self) -> dict[str, Any]:
        assert self.run is not None
        return {"host": self.runner.host, "log_path": str(self.run.log_path).replace("%j", self.job_id), "pid": self.run.pid}

    async def alive(self) -> bool:
        return self.run is not None and await self.runner.alive(self.run)

    def stop_hint(self) -> str:
        return f"job {self.job_id} (scancel {self.job_id} stops it, or `watchtower attach {self.name}` then x)"

    async def stop(self) -> bool:
        """``x``: cancel the job, verified gone. The verdict then says who cancelled it."""
        if self.run is None:
            return True
        if self.session is not None:
            self.finish(self.session)  # the outcome as it stands (ready stays ready: a node's update may be pending)
            self.session.cancelled_by = "Watchtower (stop)"
            self.session.stopping = True
        gone = (await self.runner.stop(self.run)).gone
        self._note(f"job {self.job_id} cancelled" if gone else
                   f"job {self.job_id} still in the queue after {STOP_TIMEOUT:.0f} s of scancel")
        if gone and self.session is not None:  # recorded now: Watchtower may quit before the poll sees it
            self.finish(self.session, ended=True, words=f"job {self.job_id} CANCELLED by Watchtower (stop)")
        return gone

    async def close(self) -> None:
        await super().close()
        await self.runner.close()


class NodesLaunch(ClusterLaunch):
    """A launch whose attempts run the same command on every node over SSH."""

    def __init__(self, name: str, command: Sequence[str], env: Mapping[str, str], hosts: Sequence[str],
                 log_dir: Path, *, names: Sequence[str] | None = None, extra: Mapping[int, Sequence[str]] | None = None,
                 plan: Any = None, **kwargs: Any) -> None:
        super().__init__(name, command, env, **kwargs)
        self.hosts = list(hosts)
        self.names = list(names or [_node_name(h) for h in hosts])
        self.log_dir = log_dir
        self.extra = dict(extra or {})
        self.plan = plan or StopPlan()
        self.runners: dict[str, Any] = {}
        self.runs: dict[str, Any] = {}
        self.old_pids: dict[str, set[int]] = {}  # per node, the stopped attempt's processes
        self.stopping = False

    def commands(self) -> dict[str, list[str]]:
        """Each node's command line, by node name (what the agreement check reads)."""
        return dict(zip(self.names, node_commands(self.command, self.hosts, self.extra)))

    def _emit(self, node: str, event: object) -> None:
        """A node's process event: its exit is a death, or (while we stop it) the stop's end."""
        if isinstance(event, ProcessExited) and self.session is not None:
            if self.stopping:  # ours: the stop, not a death
                self.session.node_stopped(node, event.detail or "stopped")
            else:
                self.session.node_died(node, event.detail or "exited")

    def _runner(self, host: str, node: str) -> Any:
        from tui.launch.remote import RemoteRunner
        from tui.sources.ssh import SshTarget

        runner = self.runners.get(node) or RemoteRunner(SshTarget.parse(host), partial(self._emit, node))
        self.runners[node] = runner
        return runner

    def _session(self, attempt: int, commands: Mapping[str, Sequence[str]]) -> ClusterSession:
        """The session that follows attempt ``attempt``: one node per host, each its own log."""
        specs = [NodeSpec(node, str(attempt_paths(self.log_dir, f"{self.name}-{node}", attempt)[0]), host, self.gpus)
                 for host, node in zip(self.hosts, self.names)]
        session = ClusterSession(specs, make_session=self.make_session)
        session.suspects = suspects(commands, self.env)
        session.commands = {node: list(argv) for node, argv in commands.items()}
        session.launch_env = {k: v for k, v in self.env.items() if k in SOCKET_IFNAMES}  # (what is read of it)
        session.launched = True
        self.session = session  # (its node events arrive from now on)
        return session

    async def resume(self, record: Any) -> ClusterSession:
        """``attach``: follow the attempt an earlier Watchtower started on these nodes (its pid file
        on each node), never starting one; x and r act on it as after a ``run``."""
        commands = self.commands()
        self.stopping = False
        found = await asyncio.gather(*(
            self._runner(host, node).reattach(record.attempt, commands[node], *attempt_paths(
                self.log_dir, f"{self.name}-{node}", record.attempt))
            for host, node in zip(self.hosts, self.names)))
        self.runs = {node: run for node, run in zip(self.names, found) if run is not None}
        if not self.runs:
            raise UsageError(f"{self.name} v{record.attempt}: runs on none of {', '.join(self.names)} any more; "
                             f"relaunch it with `watchtower run --nodes`")
        missing = [node for node in self.names if node not in self.runs]
        session = self._session(record.attempt, commands)
        for node in missing:  # gone while nobody watched
            session.node_died(node, "its process is gone (found so on attach)")
        self._note(f"v{record.attempt}: following it again on {', '.join(self.runs)}")
        return self._follow(record.attempt, session, record)

    async def submit(self, attempt: int) -> ClusterSession:
        commands = self.commands()
        self.stopping = False
        starts = []
        for host, node in zip(self.hosts, self.names):
            log_path, pid_path = attempt_paths(self.log_dir, f"{self.name}-{node}", attempt)
            starts.append(self._runner(host, node).start(attempt, commands[node], self.env, log_path, pid_path, self.cwd))
        results = await asyncio.gather(*starts, return_exceptions=True)
        failed = [(node, r) for node, r in zip(self.names, results) if isinstance(r, BaseException)]
        self.runs = {node: r for node, r in zip(self.names, results) if not isinstance(r, BaseException)}
        if failed:
            await self.stop()
            node, exc = failed[0]
            if not isinstance(exc, (LaunchError, UsageError)):
                raise exc
            raise UsageError(f"{node}: {exc}")
        session = self._session(attempt, commands)
        self._note(f"v{attempt}: started on {', '.join(self.names)}")
        return session

    def history_fields(self) -> dict[str, Any]:
        first = self.runs[self.names[0]]
        return {"host": ",".join(self.hosts), "log_path": str(first.log_path), "pid": first.pid}

    async def alive(self) -> bool:
        return any(run.alive for run in self.runs.values())

    def stop_hint(self) -> str:
        return "; ".join(f"{node}: kill -INT -- -{run.pgid}" for node, run in self.runs.items() if run.alive)

    async def stop(self) -> bool:
        """Every node's process group, each stopped (SIGINT → SIGTERM → SIGKILL) at once; all gone?"""
        self.stopping = True
        if self.session is not None:
            self.finish(self.session)  # the outcome as it stands (ready stays ready: a node's update may be pending)
            self.session.stopping = True  # what the servers print meanwhile (a KeyboardInterrupt) is no failure
        self.old_pids = {node: set(self.runners[node].members(run)) for node, run in self.runs.items()}
        stops = [self.runners[node].stop(run, self.plan) for node, run in self.runs.items()]
        results = await asyncio.gather(*stops)
        gone = all(result.gone for result in results)
        if self.session is not None:
            for node, result in zip(self.runs, results):
                if result.gone:
                    self.session.node_stopped(node, "stopped")  # (its exit event may say more, first)
        self._note("stopped on every node" if gone else "not every node's processes are gone")
        if self.session is not None:
            self.finish(self.session)
        return gone

    def ended(self, session: ClusterSession) -> bool:
        return bool(self.runs) and not any(run.alive for run in self.runs.values())

    async def released(self, session: ClusterSession) -> None:
        """Until a GPU sample taken after the stop, on every node, lists none of the old processes."""
        after = time.time()
        waits, names = [], []
        for node, samples in session.gpu_samples.items():
            if not samples:
                continue  # no GPU source on this node: nothing to wait for
            watch = GpuWatch(local=False, mask=str)
            for sample in samples:
                watch.add(sample)
            session.nodes[node].handlers.setdefault(GpuSample, []).append(watch.add)
            waits.append(watch.wait_release(self.old_pids.get(node, set()), after, GPU_RELEASE_TIMEOUT, lambda: False))
            names.append(node)
        if not waits:
            return
        self._note(f"waiting for the GPU memory to be released on {', '.join(names)}")
        late = [node for node, ok in zip(names, await asyncio.gather(*waits)) if not ok]
        if late:
            self._note(f"GPU memory still held after {GPU_RELEASE_TIMEOUT:.0f} s on {', '.join(late)}: launching anyway")

    async def close(self) -> None:
        await super().close()
        for runner in self.runners.values():
            await runner.close()


def _node_name(host: str) -> str:
    return master_host(host)
