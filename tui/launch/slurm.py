"""The Slurm runner: an attempt is a batch job.

``start`` writes the attempt's batch script beside its log (``NAME-vN.sbatch``:
``tui.core.slurm.batch_script``: directives, one ``srun`` task per node, per-task logs
``NAME-vN-JOBID-TASK.log``), submits it with ``sbatch`` (the environment through sbatch,
never into the file) and keeps the job id in the attempt's pid file. The attempt's "pid"
is the job id, its processes are the job's tasks. ``signal`` is ``scancel --signal``,
``alive`` asks ``squeue``, and ``stop`` is ``scancel``, then waiting until the job has
left the queue (verified gone). When the job ends its ``ExitCode`` is the attempt's exit.
"""

from __future__ import annotations

import asyncio
import os
import signal as signals
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.core.errors import UsageError
from tui.core.slurm import ENDED, GONE, SlurmRequest, batch_script, output_path, parse_job
from tui.launch.runner import AttemptRun, Emit, ProcessRef, Runner, StopResult
from tui.launch.spec import StopPlan
from tui.sources.slurm import slurm_command

if TYPE_CHECKING:
    from tui.cluster import ClusterSession
    from tui.core.events import SlurmJobState
    from tui.core.options import NodeSpec
    from tui.session import WatchSession

#: How long a stop waits for the cancelled job to leave the queue before saying it has not.
STOP_TIMEOUT = 60.0
#: Seconds between two squeue polls while waiting for a job to end (a stop, a relaunch).
POLL = 0.2
#: Seconds between two squeue polls of the job's liveness while it runs.
WATCH_POLL = 2.0


@dataclass(frozen=True, slots=True)
class SlurmJob:
    """What the runner submitted for one attempt."""

    job_id: str
    script: Path
    task_output: str  # the srun -o pattern of the tasks' logs
    batch_output: str

    @property
    def logs(self) -> Path:
        """The tasks' logs with the job id filled in (``%t`` left): what the history keeps."""
        return Path(self.task_output.replace("%j", self.job_id))


class SlurmRunner(Runner):
    """Starts, signals and stops attempts as Slurm jobs (the Slurm client commands, no daemon of ours)."""

    host = "slurm"
    spans = True

    def __init__(self, request: SlurmRequest, emit: Emit | None = None, *, poll: float = POLL,
                 watch_poll: float = WATCH_POLL, interval: float = 1.0, gpus: str = "none") -> None:
        super().__init__(emit or (lambda _event: None))
        self.request = request
        self.poll = poll
        self.watch_poll = watch_poll
        self.interval = interval  # between two polls of a followed job's state
        self.gpus = gpus  # each task's GPU source ("sim", or none: the tasks' GPUs are not here to ask)
        self.jobs: dict[str, SlurmJob] = {}  # by job id
        self.watched: dict[str, ClusterSession] = {}  # by job id: the node set following it

    def job(self, run: AttemptRun) -> SlurmJob:
        return self.jobs[str(run.pid)]

    async def start(
        self,
        attempt: int,
        command: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        pid_path: Path,
        cwd: str | None = None,
    ) -> AttemptRun:
        """Write the attempt's batch script and submit it; UsageError (sbatch's words) when refused."""
        stem = Path(log_path).name.removesuffix(".log")
        log_dir = Path(log_path).parent
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{log_dir}: cannot create the log directory: {exc.strerror or exc}") from None
        task_output = str(log_dir / f"{stem}-%j-%t.log")
        batch_output = str(log_dir / f"{stem}-%j.out")
        script = log_dir / f"{stem}.sbatch"
        script.write_text(batch_script(list(command), self.request, name=stem, task_output=task_output,
                                       batch_output=batch_output, cwd=cwd))
        # the environment goes to sbatch, which hands it to the job (--export=ALL): never into the script
        code, out, err = await slurm_command("sbatch", "--parsable", str(script), env={**os.environ, **env})
        job_id = out.strip().split(";")[0]
        if code != 0 or not job_id.isdigit():
            words = (err.strip().splitlines() or [f"sbatch exited {code}"])[-1]
            raise UsageError(f"sbatch refused {stem}: {words}")
        Path(pid_path).write_text(f"{job_id}\n")
        job = self.jobs[job_id] = SlurmJob(job_id, script, task_output, batch_output)
        return self._follow(AttemptRun(attempt, tuple(command), dict(env), job.logs, Path(pid_path),
                                       host=self.host, pid=int(job_id), started_at=time.time()))

    async def reattach(self, attempt: int, command: Sequence[str], log_path: Path, pid_path: Path) -> AttemptRun | None:
        """The job an earlier Watchtower submitted for this attempt, if it is still queued or running."""
        try:
            job_id = Path(pid_path).read_text().strip()
        except OSError:
            return None
        return await self.follow_job(attempt, command, log_path, pid_path, job_id)

    async def follow_job(self, attempt: int, command: Sequence[str], log_path: Path, pid_path: Path,
                         job_id: str) -> AttemptRun | None:
        """Job ``job_id`` (submitted for this attempt's paths), if it is still queued or running."""
        if not job_id.isdigit():
            return None
        stem = Path(log_path).name.removesuffix(".log")
        log_dir = Path(log_path).parent
        job = SlurmJob(job_id, log_dir / f"{stem}.sbatch", str(log_dir / f"{stem}-%j-%t.log"),
                       str(log_dir / f"{stem}-%j.out"))
        run = AttemptRun(attempt, tuple(command), {}, job.logs, Path(pid_path), host=self.host,
                         pid=int(job_id), started_at=time.time())
        if not await self.alive(run):
            return None
        self.jobs[job_id] = job
        return self._follow(run)

    def _follow(self, run: AttemptRun) -> AttemptRun:
        self._emit(run.started_event())
        self._spawn(self._watch(run))
        return run

    async def _watch(self, run: AttemptRun) -> None:
        """Until the job has ended; then its ExitCode is the attempt's exit."""
        while await self.alive(run):
            await asyncio.sleep(self.watch_poll)
        if run.exited_at is None:  # (a stop reports it at once)
            await self._ended(run)

    async def _ended(self, run: AttemptRun) -> None:
        status = await self.exit_status(run.pid_path)
        if run.exited_at is not None:  # (reported meanwhile)
            return
        returncode, signum = status if status is not None else (None, None)
        self._emit(run.exited(returncode, signum, known=status is not None))

    def node_set(self, run: AttemptRun, make_session: Callable[[NodeSpec], WatchSession]) -> ClusterSession:
        """The job's state first (queued is phase zero), then each task's log as a node."""
        from tui.cluster import ClusterSession
        from tui.core.options import NodeSpec
        from tui.sources.slurm import SlurmJobSource, task_logs

        job = self.job(run)

        async def outputs(state: SlurmJobState) -> list[NodeSpec]:
            return [NodeSpec(node, path, None, self.gpus) for node, path in await task_logs(state, job.task_output)]

        session = ClusterSession(make_session=make_session, job=SlurmJobSource(job.job_id, interval=self.interval),
                                 job_outputs=outputs)
        self.watched[job.job_id] = session
        return session

    def label(self, run: AttemptRun) -> str:
        return f"Slurm job {run.pid}"

    def stop_words(self, run: AttemptRun, plan: StopPlan) -> str:
        return (f"Cancel v{run.attempt} (Slurm job {run.pid})?\n"
                f"scancel (Slurm signals its tasks), then until the job has left the queue (up to {STOP_TIMEOUT:g} s).")

    def started_words(self, run: AttemptRun, reattached: bool) -> str:
        job = self.job(run)
        return f"following Slurm job {job.job_id} again" if reattached else f"submitted as Slurm job {job.job_id} ({job.script})"

    def stop_hint(self, run: AttemptRun, name: str) -> str:
        return f"job {run.pid} (scancel {run.pid} stops it, or `watchtower attach {name}` then x)"

    async def state(self, run: AttemptRun) -> str:
        """The job's state from squeue; GONE once Slurm has forgotten it; "" when Slurm cannot say."""
        code, out, err = await slurm_command("squeue", "-j", str(run.pid), "-h", "-o", "%T")
        if code == 0:
            return out.strip().splitlines()[0] if out.strip() else GONE
        return GONE if "Invalid job id" in err else ""

    async def alive(self, run: AttemptRun) -> bool:
        """Queued or running (an unknown answer counts as alive)."""
        state = await self.state(run)
        return not (state in ENDED or state == GONE)

    async def signal(self, run: AttemptRun, sig: int) -> bool:
        """Send ``sig`` to every task and the batch script (``scancel --signal --full``)."""
        name = signals.Signals(sig).name.removeprefix("SIG")
        code, _, _ = await slurm_command("scancel", "--full", f"--signal={name}", str(run.pid))
        return code == 0

    async def wait(self, run: AttemptRun, timeout: float) -> bool:
        """Until the job has ended (True) or ``timeout`` seconds have passed (False)."""
        try:
            async with asyncio.timeout(timeout):
                while await self.alive(run):
                    await asyncio.sleep(self.poll)
        except TimeoutError:
            return False
        return True

    async def stop(self, run: AttemptRun, plan: StopPlan | None = None) -> StopResult:
        """``scancel`` the job (Slurm signals its tasks, then kills them after KillWait), then
        verify it is no longer queued or running."""
        run.stopped_by_user = True
        await slurm_command("scancel", str(run.pid))
        gone = await self.wait(run, STOP_TIMEOUT)
        if gone:  # over now: Watchtower may quit before its poll sees it
            watched = self.watched.get(str(run.pid))
            if watched is not None:
                watched.job_cancelled(str(run.pid), "Watchtower (stop)")
            if run.exited_at is None:
                await self._ended(run)
        return StopResult(gone)

    def processes(self, run: AttemptRun) -> list[ProcessRef]:
        """The job itself (its tasks live on the job's nodes, where Slurm tracks them)."""
        return [ProcessRef(self.host, run.pid, f"job {run.pid}")] if run.pid is not None and run.alive else []

    async def exit_status(self, pid_path: Path) -> tuple[int | None, int | None] | None:
        """The job's ``ExitCode=status:signal`` while Slurm still knows the job."""
        try:
            job_id = Path(pid_path).read_text().strip()
        except OSError:
            return None
        code, out, _ = await slurm_command("scontrol", "show", "job", "-o", job_id)
        job = parse_job(out.strip()) if code == 0 and out.strip() else None
        status, _, signum = (job.exit_code if job is not None else "").partition(":")
        if not status.isdigit() or not signum.isdigit():
            return None
        return (None, int(signum)) if int(signum) else (int(status), None)

    async def kill_pids(self, pids: Sequence[int], sig: int = signals.SIGKILL) -> list[str]:
        return ["processes on a job's nodes are Slurm's to clean up (scancel the job that holds them)"]

    def tailer(self, run: AttemptRun) -> Any:
        """Task 0's log (the session of a job follows every task: ``tui.cluster``)."""
        from tui.core.events import SlurmJobState
        from tui.sources.local import LocalTailer

        job = SlurmJobState(str(run.pid), "RUNNING")
        return LocalTailer(output_path(self.job(run).task_output, job, 0))

