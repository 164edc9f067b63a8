"""A Slurm job as an event source: its state, polled cheaply, as ``SlurmJobState`` events.

Every ``interval`` seconds one ``squeue -j ID -h -o %T`` (a few milliseconds of the
controller's time) says the job's state; only when it changes — and every
``detail_every`` seconds while the job is pending, for the queue position — does
``scontrol show job -o ID`` fetch the details. No busy loop: one short subprocess per
poll, awaited. The stream ends after the state that ends the job. An unreachable
controller is a ``ConnectionState`` ("lost", retrying), never a verdict.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

from tui.core.events import ConnectionState, SlurmJobState, SlurmTaskEnded
from tui.core.files import read_tail
from tui.core.slurm import (
    ENDED, GONE, QUEUED, answering_steps, fields, node_has_task, output_path, parse_job, task_failures, task_outputs,
)
from tui.sources.base import pause

#: Seconds one Slurm client command may take before the poll counts as failed.
COMMAND_TIMEOUT = 20.0
CLIENTS = ("squeue", "scontrol")


def missing_clients(*more: str) -> list[str]:
    """The Slurm client programs not on the PATH (``watch --slurm`` needs squeue and scontrol)."""
    return [name for name in (*CLIENTS, *more) if shutil.which(name) is None]


async def slurm_command(
    *argv: str, timeout: float = COMMAND_TIMEOUT, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run one Slurm client command: (return code, stdout, stderr). Never raises for its failure."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
    except OSError as exc:
        return 127, "", f"{argv[0]}: {exc.strerror or exc}"
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return 124, "", f"{argv[0]} took longer than {timeout:.0f} s"
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


async def batch_script(job_id: str) -> str:
    """The job's batch script as Slurm stored it ("" when it cannot be had)."""
    code, out, _ = await slurm_command("scontrol", "write", "batch_script", job_id, "-")
    return out if code == 0 else ""


async def task_logs(job: SlurmJobState, pattern: str | None = None) -> list[tuple[str, str]]:
    """(node, output file) per task of a running job: from ``pattern`` (an ``srun -o`` pattern),
    else from the ``srun -o …%t`` line of its batch script, else the job's one StdOut."""
    pattern = pattern or task_outputs(await batch_script(job.job_id))
    if pattern is None:  # the job's one StdOut: named by its node when it ran on one, else by the job (several nodes' lines)
        return [(job.nodes[0] if len(job.nodes) == 1 else "job", job.stdout)] if job.stdout else []
    count = job.tasks or len(job.nodes) or 1
    names = job.nodes if count == len(job.nodes) else tuple(f"task{t}" for t in range(count))
    return [
        (names[t], output_path(pattern, job, t, user=slurm_user(), workdir=job.workdir)) for t in range(count)
    ]


class SlurmJobSource:
    """``events()``: the job's state each time it changes, until it has ended."""

    def __init__(
        self,
        job_id: str,
        *,
        interval: float = 1.0,
        detail_every: float = 5.0,
        task_every: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.job_id = str(job_id)
        self.interval = interval
        self.detail_every = detail_every
        self.task_every = task_every
        self.clock = clock
        self.latest: SlurmJobState | None = None
        self._closed = asyncio.Event()

    async def events(self) -> AsyncIterator[SlurmJobState | ConnectionState]:
        last_state, last_detail, lost = None, 0.0, False
        while not self._closed.is_set():
            code, out, err = await slurm_command("squeue", "-j", self.job_id, "-h", "-o", "%T")
            state = out.strip().splitlines()[0] if code == 0 and out.strip() else ""
            if code != 0 and "Invalid job id" not in err:
                if not lost:
                    lost = True
                    yield ConnectionState("slurm", "lost", err.strip() or f"squeue exited {code}", self.interval)
                await self._pause()
                continue
            if lost:
                lost = False
                yield ConnectionState("slurm", "connected")
            now = time.monotonic()
            if state != last_state or (state in QUEUED and now - last_detail >= self.detail_every):
                job = await self.details()
                last_state, last_detail = (job.state if state else state), now
                if job != self.latest:
                    self.latest = job
                    yield job
                if job.state in ENDED or job.state == GONE:
                    return
            await self._pause()

    async def details(self) -> SlurmJobState:
        """``scontrol show job``, the queue position while pending, and who cancelled it."""
        code, out, err = await slurm_command("scontrol", "show", "job", "-o", self.job_id)
        line = out.strip().splitlines()[0] if code == 0 and out.strip() else ""
        job = parse_job(line, at=self.clock()) if line else None
        if job is None:
            return SlurmJobState(self.job_id, GONE, reason=err.strip() or "no such job", at=self.clock())
        if job.state in QUEUED:
            job = replace(job, ahead=await self._ahead(fields(line)))
        elif job.state == "CANCELLED":
            job = replace(job, cancelled_by=await cancelled_by(self.job_id))
        if job.state in ENDED and job.stdout:
            job = replace(job, task_failures=task_failures(await asyncio.to_thread(_tail, job.stdout)))
        return job

    async def _ahead(self, job: dict[str, str]) -> int | None:
        """Pending jobs of the same partition that Slurm will consider before this one."""
        code, out, _ = await slurm_command("squeue", "-h", "-t", "PD", "-p", job.get("Partition", ""), "-o", "%i %Q")
        if code != 0:
            return None
        mine = (int(job.get("Priority", "0") or 0), -_job_number(self.job_id))
        ahead = 0
        for row in out.split("\n"):
            parts = row.split()
            if len(parts) == 2 and parts[0] != self.job_id and parts[1].isdigit():
                if (int(parts[1]), -_job_number(parts[0])) > mine:
                    ahead += 1
        return ahead

    async def task_ends(self, job: SlurmJobState) -> AsyncIterator[SlurmTaskEnded]:
        """While the job runs, each node whose task Slurm shows gone (``scontrol listpids JOB NODE``
        every ``task_every`` s), once: a task that died silently (no ``--kill-on-bad-exit``, srun
        said nothing) while the others run on. A node counts once its task was seen running (one
        not started yet looks the same), and only while the job still runs (at its end every task
        ends). listpids asks the node's slurmd through a local socket: it answers on the job's nodes
        (or a one-host cluster). Where it cannot (a login node), ``sstat`` can, without the node:
        it stops listing a step as soon as one of its nodes' part has ended, while the step runs on."""
        seen: set[str] = set()
        ended: set[str] = set()
        steps: set[str] = set()  # the task steps sstat listed
        by_node = True
        while not self._closed.is_set() and len(ended) < len(job.nodes):
            for node in job.nodes if by_node else ():
                if node in ended:
                    continue
                has = node_has_task(*await slurm_command("scontrol", "listpids", job.job_id, node))
                if has is None:
                    by_node = False
                    break
                if has:
                    seen.add(node)
                elif node in seen:
                    if not await self._running():  # the job is ending: its end says it all
                        return
                    ended.add(node)
                    yield SlurmTaskEnded(job.job_id, node, f"its task is gone: Slurm has no process of job "
                                         f"{job.job_id} left on {node} (scontrol listpids)")
            if not by_node:
                lost = await self._step_lost(steps)
                if lost is not None:  # a task lost (words), or "": sstat cannot tell, or the job is ending
                    if lost:
                        yield SlurmTaskEnded(job.job_id, None, lost)
                    return
            await self._pause(self.task_every)

    async def _step_lost(self, steps: set[str]) -> str | None:
        """A task step that sstat no longer lists while it still runs: words for the task it lost;
        None while every step is whole; "" where sstat cannot tell or the job is ending (its end
        says it all). ``steps``: the steps listed so far (updated)."""
        code, out, err = await slurm_command("sstat", "-n", "-P", "-a", "-j", self.job_id, "-o", "JobID")
        if code != 0 or ("error:" in err and "No steps running" not in err):
            return ""
        listed = answering_steps(out)
        gone = steps - listed
        steps |= listed
        for step in sorted(gone):
            code, out, _ = await slurm_command("scontrol", "show", "step", "-o", step)
            info = fields(out.splitlines()[0]) if code == 0 and out.strip() else {}
            if info.get("State") != "RUNNING":
                steps.discard(step)  # a step that ended whole: no task lost
                continue
            if not await self._running():
                return ""
            return (f"a task of step {step} is gone: sstat no longer reaches every node of it "
                    f"({info.get('NodeList', '?')}) while it runs on; which node, only the nodes' own slurmd can say")
        return None

    async def _running(self) -> bool:
        code, out, _ = await slurm_command("squeue", "-j", self.job_id, "-h", "-o", "%T")
        return code == 0 and out.strip() == "RUNNING"

    async def _pause(self, seconds: float | None = None) -> None:
        await pause(self._closed, self.interval if seconds is None else seconds)

    async def close(self) -> None:
        self._closed.set()


async def cancelled_by(job_id: str) -> str | None:
    """Who cancelled the job, from accounting ("CANCELLED by 0"); None where there is none."""
    if shutil.which("sacct") is None:
        return None
    code, out, _ = await slurm_command("sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State")
    words = out.split() if code == 0 else []
    if len(words) >= 3 and words[1] == "by" and words[2].isdigit():
        try:
            return pwd.getpwuid(int(words[2])).pw_name
        except KeyError:
            return f"uid {words[2]}"
    return None


def _tail(path: str, size: int = 64 * 1024) -> str:
    """The end of the batch output (where srun reports dead tasks); "" when unreadable."""
    try:
        return read_tail(path, size).decode(errors="replace")  # a regular file: not /dev/zero, not a FIFO
    except OSError:
        return ""


def _job_number(job_id: str) -> int:
    head = job_id.split("_")[0].split("+")[0]
    return int(head) if head.isdigit() else 0


def slurm_user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())
