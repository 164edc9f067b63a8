"""SlurmJobSource against the real test cluster: every state change, pending reasons, the end."""

from __future__ import annotations

import asyncio
import re

import pytest

from tui.core.events import SlurmJobState
from tui.core.slurm import job_words
from tui.sources.slurm import SlurmJobSource


def sbatch(slurm, *args: str) -> str:
    return slurm.run("sbatch", "--parsable", "-o", "/dev/null", *args).stdout.strip()


async def states(source: SlurmJobSource, until=None) -> list[SlurmJobState]:
    seen = []
    async with asyncio.timeout(60):
        async for event in source.events():
            if isinstance(event, SlurmJobState):
                seen.append(event)
                if until is not None and until(event):
                    break
    return seen


async def test_a_job_runs_on_both_nodes_then_completes(slurm_env):
    job = sbatch(slurm_env, "-N", "2", "--wrap", "srun sleep 1")
    seen = await states(SlurmJobSource(job, interval=0.2))
    names = [s.state for s in seen]
    assert names[-1] == "COMPLETED"
    assert "RUNNING" in names
    running = next(s for s in seen if s.state == "RUNNING")
    assert running.nodes == ("n1", "n2")
    assert job_words(running) == f"job {job} RUNNING on n1,n2"
    assert job_words(seen[-1]) == f"job {job} COMPLETED"


async def test_a_job_pending_on_resources_says_why_and_who_is_ahead(slurm_env):
    first = sbatch(slurm_env, "-N", "2", "--wrap", "sleep 60")
    await states(SlurmJobSource(first, interval=0.2), until=lambda s: s.state == "RUNNING")
    second = sbatch(slurm_env, "-N", "2", "--wrap", "sleep 60")
    third = sbatch(slurm_env, "-N", "2", "--wrap", "sleep 60")
    source = SlurmJobSource(third, interval=0.2)
    seen = await states(source, until=lambda s: s.state == "PENDING" and s.reason in ("Resources", "Priority"))
    pending = seen[-1]
    assert pending.ahead == 1  # the second job waits before it; the first runs
    assert job_words(pending) == f"job {third} PENDING (queued: {pending.reason}, 1 job ahead)"
    await source.close()
    slurm_env.run("scancel", first, second)
    # the third now gets the nodes: the source sees it start
    seen = await states(SlurmJobSource(third, interval=0.2), until=lambda s: s.state == "RUNNING")
    assert seen[-1].nodes == ("n1", "n2")


async def test_scancel_from_outside_ends_the_stream_cancelled(slurm_env):
    job = sbatch(slurm_env, "-N", "1", "--wrap", "sleep 60")
    seen: list[SlurmJobState] = []
    async with asyncio.timeout(60):
        async for event in SlurmJobSource(job, interval=0.2).events():
            seen.append(event)
            if event.state == "RUNNING":
                slurm_env.run("scancel", job)
    assert seen[-1].state == "CANCELLED"
    assert job_words(seen[-1]).startswith(f"job {job} CANCELLED")


async def test_a_job_killed_by_a_signal_fails_with_its_exit_code(slurm_env):
    job = sbatch(slurm_env, "-N", "1", "--wrap", "kill -9 $$")
    seen = await states(SlurmJobSource(job, interval=0.2))
    assert seen[-1].state == "FAILED"
    assert job_words(seen[-1]) == f"job {job} FAILED exit 0:9"


async def test_an_unknown_job_is_gone_not_a_hang(slurm_env):
    seen = await states(SlurmJobSource("999999", interval=0.2))
    assert [s.state for s in seen] == ["GONE"]
    assert "no longer knows" in job_words(seen[0])


async def test_an_unreachable_controller_is_a_lost_connection(slurm_env, tmp_path, monkeypatch):
    conf = tmp_path / "slurm.conf"
    text = slurm_env.conf.read_text()
    conf.write_text(re.sub(r"SlurmctldPort=\d+", "SlurmctldPort=1", text) + "MessageTimeout=1\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    source = SlurmJobSource("1", interval=0.2)
    async with asyncio.timeout(60):
        event = await anext(aiter(source.events()))
    await source.close()
    assert event.state == "lost" and event.host == "slurm"


pytestmark = pytest.mark.usefixtures("slurm_env")
