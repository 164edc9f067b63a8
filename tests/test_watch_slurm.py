"""`watchtower watch --slurm JOBID --plain` against the real test cluster: a two-node job whose
tasks print SGLang startups (tests/server_sim.py), one per node, each into its own file."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.test_metrics import samples, value
from tests.test_watch_plain import expect, finish
from tests.support import screen_text, start_cli, until

REPO = Path(__file__).parent.parent
SIM = REPO / "tests" / "server_sim.py"

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("slurm_env")]


def job_script(tmp_path: Path, *, node2: str = "ready", per_task: bool = True) -> Path:
    """A batch script: one srun task per node, each running the simulator with its global ranks."""
    outcome = f'$([ "$SLURM_NODEID" = 1 ] && echo {node2} || echo ready)'
    # node 1 is a worker, as SGLang's node_rank 1: its log ends after its CUDA graphs, no ready line
    sim = (f"{sys.executable} {SIM} --tp 2 --node-rank $SLURM_NODEID --outcome {outcome} "
           "--load-seconds 0.5")
    output = f"-o {tmp_path}/wt-%j-%t.out " if per_task else ""
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nsrun {output}bash -c '{sim}'\n")
    return script


def submit(slurm, script: Path, *args: str) -> str:
    return slurm.run("sbatch", "--parsable", "-N", "2", "-o", f"{script.parent}/batch-%j.out", *args,
                     str(script)).stdout.strip()


async def watch(job: str, *extra: str) -> asyncio.subprocess.Process:
    return await start_cli("watch", "--slurm", job, "--plain", "--gpus", "none", "--slurm-interval", "0.2",
                           "--timeout", "90", *extra, env={"NO_COLOR": "1"})


async def test_a_two_node_job_is_followed_on_both_nodes_to_ready(slurm_env, tmp_path):
    job = submit(slurm_env, job_script(tmp_path))
    proc = await watch(job)
    seen: list[str] = []
    await expect(proc, f"job {job} RUNNING on n1,n2", seen)
    await expect(proc, "barrier: weight load done on all 4 ranks of 2 nodes", seen)
    line = await expect(proc, "READY: n1 serving, n2 worker past CUDA graphs", seen)
    code, out, err = await finish(proc)
    assert code == 0, err
    text = "".join(seen)
    assert "[n1] server: sglang" in text and "[n2] server: sglang" in text
    assert "[n2] weight load done" in text and "slowest TP" in text
    assert "[n1] ready" in text and "[n2] ready" not in text  # only the serving node says it
    assert line.rstrip().endswith("READY: n1 serving, n2 worker past CUDA graphs")


async def test_one_nodes_task_killed_fails_the_attempt_and_names_the_node(slurm_env, tmp_path):
    job = submit(slurm_env, job_script(tmp_path, node2="sigkill"))
    proc = await watch(job, "--metrics-textfile", str(tmp_path / "job.prom"))
    seen: list[str] = []
    line = await expect(proc, "DEAD on", seen)
    code, out, err = await finish(proc)
    assert code == 1, err
    # the job runs on (srun without --kill-on-bad-exit): srun's own words in the batch output tell
    assert "DEAD on n2: task 1: Killed (srun)" in line
    assert "[n2] DEAD: task 1: Killed (srun)" in out
    assert "[n1] STARTING: " in out or "[n1] READY: " in out
    barrier = "".join(seen) + out
    assert "weight load done: 2/4 ranks; not yet: n2 TP2" in barrier
    metrics = samples((tmp_path / "job.prom").read_text())  # the last write: the job's tasks as nodes
    assert value(metrics, "watchtower_verdict", slurm_job=job, watchtower_verdict="dead") == 1.0
    assert value(metrics, "watchtower_node_verdict", slurm_job=job, node="n2", watchtower_node_verdict="dead") == 1.0
    assert value(metrics, "watchtower_node_verdict", slurm_job=job, node="n1", watchtower_node_verdict="dead") == 0.0


async def test_scancel_from_outside_is_a_cancelled_verdict(slurm_env, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nsrun -o {tmp_path}/wt-%j-%t.out sleep 60\n")
    job = submit(slurm_env, script)
    proc = await watch(job)
    await expect(proc, f"job {job} RUNNING")
    slurm_env.run("scancel", job)
    await expect(proc, f"job {job} CANCELLED")  # (not the barrier's quote of slurmstepd's "… CANCELLED AT …")
    code, _, err = await finish(proc)
    assert code == 1, err


async def test_a_job_pending_on_resources_is_the_queued_phase_then_starts(slurm_env, tmp_path):
    blocker = slurm_env.run("sbatch", "--parsable", "-N", "2", "-o", "/dev/null", "--wrap", "sleep 60").stdout.strip()
    job = submit(slurm_env, job_script(tmp_path))
    proc = await watch(job)
    await expect(proc, f"job {job} PENDING (queued: ")
    slurm_env.run("scancel", blocker)
    await expect(proc, f"job {job} RUNNING on n1,n2")
    await expect(proc, "READY: n1 serving, n2 worker past CUDA graphs")
    code, _, err = await finish(proc)
    assert code == 0, err


async def test_a_job_that_completes_before_ready_is_a_failure_in_words(slurm_env, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nsrun -o {tmp_path}/wt-%j-%t.out echo not a server\n")
    job = submit(slurm_env, script)
    proc = await watch(job)
    line = await expect(proc, f"job {job} COMPLETED, before")
    code, _, err = await finish(proc)
    assert code == 1, err
    assert line.rstrip().endswith(f"job {job} COMPLETED, before the server was ready")


async def test_the_dashboard_shows_a_pending_job_as_phase_zero(slurm_env, tmp_path):
    from tests.test_app_cluster import text_of
    from tui.app.dashboard import build_app
    from tui.core.options import ClusterOptions, GpuOptions
    from tui.wiring import make_cluster

    blocker = slurm_env.run("sbatch", "--parsable", "-N", "2", "-o", "/dev/null", "--wrap", "sleep 60").stdout.strip()
    job = submit(slurm_env, job_script(tmp_path))
    session = make_cluster(ClusterOptions(slurm_job=job, slurm_interval=0.2, gpus=GpuOptions(kind="none")))
    app = build_app(None, nodes=session)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(lambda: f"job {job} PENDING (queued: " in text_of(app, "#barrier"), timeout=60, pilot=pilot)
        await until(lambda: "queued: " in screen_text(app).splitlines()[1], timeout=30, pilot=pilot)  # the verdict's row
        slurm_env.run("scancel", blocker)
        await until(lambda: app.verdict().text == "READY: n1 serving, n2 worker past CUDA graphs", timeout=90, pilot=pilot)
        await until(lambda: "n1 serving, n2 worker past CUDA graphs" in screen_text(app), timeout=30, pilot=pilot)
        assert "n1" in text_of(app, "#nodes") and "n2" in text_of(app, "#nodes")
        # a node's panels replace the queued job's on its first update: the first node's, or the one
        # a verdict named meanwhile (under load, n2's capture bar still counting while n1 is ready)
        await until(lambda: app.session in session.nodes.values(), timeout=30, pilot=pilot)
        assert app.session is session.nodes[app.selected]


async def test_a_job_id_slurm_does_not_know_is_a_usage_error_said_once(slurm_env):
    proc = await watch("4242424")
    code, out, err = await finish(proc)
    text = out + err
    assert code == 2, text
    assert text.count("4242424") == 1 and "Slurm does not know this job" in text, text
    assert "Invalid job id" in text and "Traceback" not in text
