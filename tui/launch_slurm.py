"""Attempts as Slurm jobs: ``run --slurm``.

:class:`SlurmRunner` is the runner: it writes an attempt's batch script
(``tui.core.slurm.batch_script``: directives, one ``srun`` task per node, per-task output
files named after the attempt), submits it with ``sbatch``, stops it with ``scancel`` and
then verifies the job has left the queue, and answers "alive?" from ``squeue``. Its
processes are the job's tasks, on the job's nodes.

:class:`SlurmLaunch` is the attempt lifecycle on top: v1 is submitted, watched as a
:class:`~tui.cluster.ClusterSession` (the job's state, then its tasks' logs); ``x`` cancels
it; a relaunch cancels the running job and submits vN+1 with the edited command and
environment. The history records each attempt with its job id.
"""

from __future__ import annotations

import asyncio
import os
import signal as signals
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.cluster import ClusterSession
from tui.core.errors import UsageError
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


class SlurmLaunch:
    """One named launch whose attempts are Slurm jobs. ``await start()``, then watch ``session``."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        env: Mapping[str, str],
        runner: SlurmRunner,
        *,
        make_session: Callable[[NodeSpec], Any],
        history: Any = None,
        cwd: str | None = None,
        gpus: str = "none",
        interval: float = 1.0,
    ) -> None:
        self.name = name
        self.command = list(command)
        self.env = dict(env)
        self.runner = runner
        self.make_session = make_session
        self.history = history
        self.cwd = cwd
        self.gpus = gpus
        self.interval = interval
        self.run: SlurmRun | None = None
        self.session: ClusterSession | None = None
        self.record: Any = None
        self.notes: list[Notify] = []

    async def start(self) -> ClusterSession:
        """Submit the next attempt and return the session that follows it."""
        attempt = self.history.next_attempt(self.name) if self.history is not None else (
            self.run.attempt + 1 if self.run is not None else 1)
        run = await self.runner.start(attempt, self.name, self.command, self.env, self.cwd)
        self.run = run
        if self.history is not None:
            self.record = self.history.start(
                self.name, command=self.command, env=self.env, host="slurm",
                log_path=run.task_output.replace("%j", run.job_id), attempt=attempt, pid=int(run.job_id),
            )
        self._note(f"v{attempt}: submitted as Slurm job {run.job_id} ({run.script})")

        async def outputs(job: Any) -> list[NodeSpec]:
            return [NodeSpec(node, path, None, self.gpus) for node, path in await task_logs(job, run.task_output)]

        self.session = ClusterSession(make_session=self.make_session, job=SlurmJobSource(run.job_id, interval=self.interval),
                                      job_outputs=outputs)
        session = self.session
        session.subscribe(lambda _node, _update: self.finish(session))
        return session

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

    async def relaunch(self, command: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> ClusterSession:
        """Cancel the running job (verified), then submit vN+1 with the edited command/env."""
        if self.run is not None and await self.runner.alive(self.run):
            if not await self.stop():
                raise UsageError(f"job {self.run.job_id} is still in the queue: not submitting another")
        if self.session is not None:
            await self.session.stop()
        if command is not None:
            self.command = list(command)
        if env is not None:
            self.env = dict(env)
        return await self.start()

    def finish(self, session: ClusterSession) -> None:
        """Keep the history up to date: the outcome once decided (ready stays ready after a stop),
        then the job's end in words. Called on every update of the session; writes only changes."""
        record = self.record
        if self.history is None or record is None or session is not self.session or record.ended_at is not None:
            return
        verdict = session.verdict()
        job = session.job
        ended = job is not None and (job.state in ENDED or job.state == GONE)
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
            exit_text=session.job_words() or None,
            ended_at=(job.at or None) if ended and job is not None else None,
        )

    def _note(self, text: str) -> None:
        for note in self.notes:
            note(text)
