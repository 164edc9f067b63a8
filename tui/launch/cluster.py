"""Attempts that span several nodes: as Slurm jobs (``run --slurm``) or over SSH on named
nodes (``run --nodes n1,n2``), each watched as a :class:`~tui.cluster.ClusterSession`.

:class:`SlurmRunner` is the Slurm runner: it writes an attempt's batch script
(``tui.core.slurm.batch_script``: directives, one ``srun`` task per node, per-task output
files named after the attempt), submits it with ``sbatch``, stops it with ``scancel`` and
then verifies the job has left the queue, and answers "alive?" from ``squeue``. Its
processes are the job's tasks, on the job's nodes.

:class:`SlurmLaunch` is the attempt lifecycle on top: v1 is submitted, watched as a
:class:`~tui.cluster.ClusterSession` (the job's state, then its tasks' logs); ``x`` cancels
it; a relaunch cancels the running job and submits vN+1 with the edited command and
environment. The history records each attempt with its job id.

:class:`NodesLaunch` runs the same command on every node over SSH (one detached process
group and log per node, ``{node_rank}``/``{nnodes}``/``{master}`` substituted); stop and
relaunch act on every node; a node whose command disagrees with the others' (another
dist-init address, model, node count) is a suspect the barrier view puts first.
"""

from __future__ import annotations

import asyncio
import os
import signal as signals
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tui.cluster import ClusterSession
from tui.core.errors import UsageError
from tui.launch.spec import LaunchError, StopPlan, attempt_paths
from tui.core.events import ProcessExited
from tui.core.multinode import master_host, node_commands, suspects
from tui.core.options import NodeSpec
from tui.core.slurm import ENDED, GONE, SlurmRequest, batch_script
from tui.core.state import FAILED, READY, STOPPED
from tui.sources.slurm import SlurmJobSource, slurm_command, task_logs

#: How long a stop waits for the cancelled job to leave the queue before saying it has not.
STOP_TIMEOUT = 60.0
#: Seconds between two squeue polls while waiting for a job to end.
POLL = 0.2


@dataclass(slots=True)
class SlurmRun:
    """One attempt submitted as a job."""

    attempt: int
    name: str  # NAME-vN: the job's name, and the stem of its files
    job_id: str
    script: Path
    task_output: str  # srun -o pattern of the tasks' logs
    batch_output: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    stopped_by_user: bool = False


class SlurmRunner:
    """Starts, signals and stops attempts as Slurm jobs (the Slurm client commands, no daemon of ours)."""

    host = "slurm"

    def __init__(self, request: SlurmRequest, log_dir: Path, *, poll: float = POLL) -> None:
        self.request = request
        self.log_dir = log_dir
        self.poll = poll

    async def start(
        self, attempt: int, name: str, command: Sequence[str], env: Mapping[str, str], cwd: str | None = None
    ) -> SlurmRun:
        """Write the attempt's batch script and submit it; UsageError (sbatch's words) when refused."""
        stem = f"{name}-v{attempt}"
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{self.log_dir}: cannot create the log directory: {exc.strerror or exc}") from None
        task_output = str(self.log_dir / f"{stem}-%j-%t.log")
        batch_output = str(self.log_dir / f"{stem}-%j.out")
        script = self.log_dir / f"{stem}.sbatch"
        script.write_text(batch_script(list(command), self.request, name=stem, task_output=task_output,
                                       batch_output=batch_output, cwd=cwd))
        # the environment goes to sbatch, which hands it to the job (--export=ALL): never into the script
        code, out, err = await slurm_command("sbatch", "--parsable", str(script), env={**os.environ, **env})
        job_id = out.strip().split(";")[0]
        if code != 0 or not job_id:
            words = (err.strip().splitlines() or [f"sbatch exited {code}"])[-1]
            raise UsageError(f"sbatch refused {stem}: {words}")
        return SlurmRun(attempt, stem, job_id, script, task_output, batch_output, tuple(command), dict(env))

    async def state(self, run: SlurmRun) -> str:
        """The job's state from squeue; GONE once Slurm has forgotten it; "" when Slurm cannot say."""
        code, out, err = await slurm_command("squeue", "-j", run.job_id, "-h", "-o", "%T")
        if code == 0:
            return out.strip().splitlines()[0] if out.strip() else GONE
        return GONE if "Invalid job id" in err else ""

    async def alive(self, run: SlurmRun) -> bool:
        """Queued or running (an unknown answer counts as alive)."""
        state = await self.state(run)
        return not (state in ENDED or state == GONE)

    async def signal(self, run: SlurmRun, sig: int) -> bool:
        """Send ``sig`` to every task and the batch script (``scancel --signal --full``)."""
        name = signals.Signals(sig).name.removeprefix("SIG")
        code, _, _ = await slurm_command("scancel", "--full", f"--signal={name}", run.job_id)
        return code == 0

    async def wait(self, run: SlurmRun, timeout: float) -> bool:
        """Until the job has ended (True) or ``timeout`` seconds have passed (False)."""
        try:
            async with asyncio.timeout(timeout):
                while await self.alive(run):
                    await asyncio.sleep(self.poll)
        except TimeoutError:
            return False
        return True

    async def stop(self, run: SlurmRun, timeout: float = STOP_TIMEOUT) -> bool:
        """``scancel`` the job, then verify it is no longer queued or running."""
        run.stopped_by_user = True
        await slurm_command("scancel", run.job_id)
        return await self.wait(run, timeout)

    def processes(self, run: SlurmRun, job: Any = None) -> list[str]:
        """The job's tasks, as "node task N" (from the latest job state, when known)."""
        nodes = getattr(job, "nodes", ()) or ()
        return [f"{node} task {index}" for index, node in enumerate(nodes)]


Notify = Callable[[str], None]


class ClusterLaunch:
    """What both kinds share: the attempt counter, the history record, the notes, x and r."""

    host = "cluster"

    def __init__(
        self, name: str, command: Sequence[str], env: Mapping[str, str], *, make_session: Callable[[NodeSpec], Any],
        history: Any = None, cwd: str | None = None, gpus: str = "none",
    ) -> None:
        self.name = name
        self.command = list(command)
        self.env = dict(env)
        self.make_session = make_session
        self.history = history
        self.cwd = cwd
        self.gpus = gpus
        self.attempt = 0
        self.session: ClusterSession | None = None
        self.record: Any = None
        self.notes: list[Notify] = []

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

    # ------------------------------------------------------------ written once

    async def start(self) -> ClusterSession:
        """Start the next attempt and return the session that follows it."""
        attempt = self.history.next_attempt(self.name) if self.history is not None else self.attempt + 1
        session = await self.submit(attempt)
        self.attempt, self.session = attempt, session
        if self.history is not None:
            self.record = self.history.start(self.name, command=self.command, env=self.env, attempt=attempt,
                                             **self.history_fields())
        session.subscribe(lambda _node, _update: self.finish(session))
        return session

    async def relaunch(self, command: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> ClusterSession:
        """Stop the running attempt (verified, on every node), then start vN+1 with the edits."""
        if self.session is not None and await self.alive():
            if not await self.stop():
                raise UsageError(f"v{self.attempt} is still running: not starting another")
        if self.session is not None:
            await self.session.stop()
        if command is not None:
            self.command = list(command)
        if env is not None:
            self.env = dict(env)
        return await self.start()

    def finish(self, session: ClusterSession) -> None:
        """Keep the history up to date: the outcome once decided (ready stays ready after a stop),
        then how the attempt ended, in words. Called on every update; writes only changes."""
        record = self.record
        if self.history is None or record is None or session is not self.session or record.ended_at is not None:
            return
        verdict = session.verdict()
        ended = self.ended(session)
        outcome = {READY: "ready", FAILED: "failed", STOPPED: "ready"}.get(verdict.outcome)
        if record.outcome in ("ready", "failed"):
            outcome = record.outcome  # the first verdict is the attempt's
        if outcome is None and not ended:
            return  # still queued or starting
        if outcome == record.outcome and not ended:
            return
        self.history.update(
            record,
            outcome=outcome or "failed",
            first_error=verdict.error.title if verdict.error is not None else None,
            exit_text=session.job_words() or verdict.words,
            ended_at=time.time() if ended else None,
        )

    def ended(self, session: ClusterSession) -> bool:
        """Whether the attempt is over (so its record is closed)."""
        job = session.job
        return job is not None and (job.state in ENDED or job.state == GONE)

    def _note(self, text: str) -> None:
        for note in self.notes:
            note(text)


class SlurmLaunch(ClusterLaunch):
    """A launch whose attempts are Slurm jobs."""

    def __init__(self, name: str, command: Sequence[str], env: Mapping[str, str], runner: SlurmRunner, *,
                 interval: float = 1.0, **kwargs: Any) -> None:
        super().__init__(name, command, env, **kwargs)
        self.runner = runner
        self.interval = interval
        self.run: SlurmRun | None = None

    async def submit(self, attempt: int) -> ClusterSession:
        run = await self.runner.start(attempt, self.name, self.command, self.env, self.cwd)
        self.run = run
        self._note(f"v{attempt}: submitted as Slurm job {run.job_id} ({run.script})")

        async def outputs(job: Any) -> list[NodeSpec]:
            return [NodeSpec(node, path, None, self.gpus) for node, path in await task_logs(job, run.task_output)]

        return ClusterSession(make_session=self.make_session, job=SlurmJobSource(run.job_id, interval=self.interval),
                              job_outputs=outputs)

    def history_fields(self) -> dict[str, Any]:
        assert self.run is not None
        return {"host": "slurm", "log_path": self.run.task_output.replace("%j", self.run.job_id),
                "pid": int(self.run.job_id)}

    async def alive(self) -> bool:
        return self.run is not None and await self.runner.alive(self.run)

    def stop_hint(self) -> str:
        job = self.run.job_id if self.run is not None else "?"
        return f"job {job} (scancel {job} stops it)"

    async def stop(self) -> bool:
        """``x``: cancel the job, verified gone. The verdict then says who cancelled it."""
        if self.run is None:
            return True
        if self.session is not None:
            self.session.cancelled_by = "Watchtower (stop)"
        gone = await self.runner.stop(self.run)
        self._note(f"job {self.run.job_id} cancelled" if gone else
                   f"job {self.run.job_id} still in the queue after {STOP_TIMEOUT:.0f} s of scancel")
        return gone


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
        self.stopping = False

    def commands(self) -> dict[str, list[str]]:
        """Each node's command line, by node name (what the agreement check reads)."""
        return dict(zip(self.names, node_commands(self.command, self.hosts, self.extra)))

    async def submit(self, attempt: int) -> ClusterSession:
        from tui.launch.remote import RemoteRunner
        from tui.sources.ssh import SshTarget

        commands = self.commands()
        self.stopping = False
        session_ref: list[ClusterSession] = []

        def emit(node: str, event: object) -> None:
            if isinstance(event, ProcessExited) and session_ref and not self.stopping:
                session_ref[0].node_died(node, event.detail or "exited")

        starts = []
        specs = []
        for host, node in zip(self.hosts, self.names):
            runner = self.runners.get(node) or RemoteRunner(SshTarget.parse(host), partial(emit, node))
            self.runners[node] = runner
            log_path, pid_path = attempt_paths(self.log_dir, f"{self.name}-{node}", attempt)
            starts.append(runner.start(attempt, commands[node], self.env, log_path, pid_path, self.cwd))
            specs.append(NodeSpec(node, str(log_path), host, self.gpus))
        results = await asyncio.gather(*starts, return_exceptions=True)
        failed = [(node, r) for node, r in zip(self.names, results) if isinstance(r, BaseException)]
        self.runs = {node: r for node, r in zip(self.names, results) if not isinstance(r, BaseException)}
        if failed:
            await self.stop()
            node, exc = failed[0]
            if not isinstance(exc, (LaunchError, UsageError)):
                raise exc
            raise UsageError(f"{node}: {exc}")
        session = ClusterSession(specs, make_session=self.make_session)
        session.suspects = suspects(commands)
        session.launched = True
        session_ref.append(session)
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
        stops = [self.runners[node].stop(run, self.plan) for node, run in self.runs.items()]
        gone = all(await asyncio.gather(*stops))
        self._note("stopped on every node" if gone else "not every node's processes are gone")
        if self.session is not None:
            self.finish(self.session)
        return gone

    def ended(self, session: ClusterSession) -> bool:
        return bool(self.runs) and not any(run.alive for run in self.runs.values())

    async def close(self) -> None:
        for runner in self.runners.values():
            await runner.close()


def _node_name(host: str) -> str:
    return master_host(host)
