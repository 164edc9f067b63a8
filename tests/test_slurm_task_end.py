"""A Slurm task's end (issue 22 item 1; issue 18 item 4), against the real test cluster.

When a task of a job ends, its output file is final: `watch --slurm` reads it to its end — the
tracker judging every line — before it decides between DEAD and FAILED for that node, saying
"reading the rest of the log (N MB)" meanwhile. A task that writes a burst, then its traceback,
then exits is FAILED with its exception, not DEAD with srun's words.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from tests.support import updates_of
from tests.test_watch_plain import expect

REPO = Path(__file__).parent.parent

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("slurm_env")]

# Each task: SGLang's first lines into its output file (stdout), then — once the test creates GO —
# the last task writes MB megabytes of serving noise, its traceback, and exits 1; on two nodes,
# task 0 lives on (the job runs on); on one, the job ends with it.
TASK = r'''
import os, sys, time
go, megabytes = sys.argv[1], int(sys.argv[2])
rank, nnodes = int(os.environ["SLURM_NODEID"]), int(os.environ["SLURM_NNODES"])
last = rank == nnodes - 1
os.write(1, b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=%d, nnodes=%d, "
            b"node_rank=%d, dist_init_addr='n1:5000')\n" % (nnodes, nnodes, rank))
os.write(1, b"[2026-03-14 21:04:20 TP%d] Load weight begin. avail mem=139.26 GB\n" % rank)
while not os.path.exists(go):
    time.sleep(0.05)
if not last:
    time.sleep(3600)
line = b"[2026-03-14 21:05:00 TP%d] 127.0.0.1:51234 - \"GET /metrics HTTP/1.1\" 200 OK, nothing to see here\n"
line %= rank
block = line * ((8 << 20) // len(line))
for _ in range(megabytes // 8):
    os.write(1, block)
os.write(1, (b"[2026-03-14 21:06:00 TP%d] Scheduler hit an exception: Traceback (most recent call last):\n"
             b'  File "/sgl/scheduler.py", line 10, in run_scheduler_process\n'
             b"RuntimeError: the real cause, at the very end of the log\n") % rank)
sys.exit(1)
'''


@pytest.mark.parametrize("nodes", [2, 1], ids=["the job runs on", "the job ends"])
async def test_a_task_that_ends_after_a_burst_is_judged_on_its_whole_log(slurm_env, tmp_path, nodes):
    task = tmp_path / "task.py"
    task.write_text(TASK)
    go = tmp_path / "go"
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nsrun -o {tmp_path}/wt-%j-%t.out {sys.executable} {task} {go} 128\n")
    job = slurm_env.run("sbatch", "--parsable", "-N", str(nodes), "-o", f"{tmp_path}/batch-%j.out", str(script)).stdout.strip()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tui.cli", "watch", "--slurm", job, "--plain", "--gpus", "none",
        "--slurm-interval", "0.2", "--timeout", "240",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
        env=dict(os.environ, PYTHONUNBUFFERED="1", NO_COLOR="1"),
    )
    seen: list[str] = []
    node = f"n{nodes}"  # the last node's task dumps and ends
    await expect(proc, f"[{node}] weight load", seen)
    go.touch()
    out_bytes, err_bytes = await asyncio.wait_for(proc.communicate(), 240)
    code, out, err = proc.returncode, out_bytes.decode(), err_bytes.decode()
    output = "".join(seen) + out
    print(output[-3000:])
    assert code == 1, output + err
    final = [line for line in output.splitlines() if re.search(r"\b(DEAD|FAILED)( on |: )", line)]
    assert final, output
    assert f"FAILED on {node}" in final[0] and "RuntimeError: the real cause, at the very end of the log" in final[0], output
    assert "DEAD" not in final[0]
    assert re.search(rf"\[{node}\] .*reading the rest of the log \(\d[\d.]* [kMG]B\) before judging", output), output


# ---------------------------------------------------------------- issue 18 item 4: a task that dies silently

async def until(session, predicate, timeout: float = 60.0) -> None:
    """Until ``predicate()`` holds, woken by the session's change notifications (else every 0.5 s:
    Slurm's own state changes notify nothing until polled)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    changed = updates_of(session)
    while not predicate():
        assert loop.time() < deadline, f"never: verdict {session.verdict()}"
        changed.clear()
        try:
            await asyncio.wait_for(changed.wait(), 0.5)
        except TimeoutError:
            pass


@pytest.mark.parametrize("where", ["on a node", "on a login node"])
async def test_a_task_that_ends_silently_while_its_job_runs_is_dead(slurm_env, tmp_path, monkeypatch, where):
    """n2's task exits 0 mid-startup: srun says nothing (exit 0), the job runs on (n1's task lives),
    and no writer discovery tells (as where the job's processes cannot be seen). Slurm's step state
    does: on a node (its slurmd answers ``scontrol listpids``) n2 is DEAD, named; on a login node
    (no slurmd here: a client config whose spool directory does not exist) sstat says a task of the
    step is gone. Either way the job is not left "starting". When n1's task then ends too (exit 0,
    the job COMPLETED), n1's state is closed, never left "starting"."""
    from functools import partial

    from tui.cluster import ClusterSession, default_session
    from tui.core.options import NodeSpec
    from tui.core.verdict import DEAD, FAILED, STARTING
    from tui.sources.slurm import SlurmJobSource, task_logs

    task = tmp_path / "task.py"
    task.write_text(
        "import os, sys, time\n"
        "rank = int(os.environ['SLURM_NODEID'])\n"
        "os.write(1, b\"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=2, nnodes=2, "
        "node_rank=%d, dist_init_addr='n1:5000')\\n\" % rank)\n"
        "os.write(1, b'[2026-03-14 21:04:20 TP%d] Load weight begin. avail mem=139.26 GB\\n' % rank)\n"
        f"while not os.path.exists({str(tmp_path / 'go')!r}): time.sleep(0.05)\n"
        f"while rank == 0 and not os.path.exists({str(tmp_path / 'stop')!r}): time.sleep(0.05)\n"
    )
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nsrun -o {tmp_path}/wt-%j-%t.out {sys.executable} {task}\n")
    job = slurm_env.run("sbatch", "--parsable", "-N", "2", "-o", f"{tmp_path}/batch-%j.out", str(script)).stdout.strip()
    if where == "on a login node":
        conf = tmp_path / "login.conf"
        conf.write_text(re.sub(r"(?m)^SlurmdSpoolDir=.*$", f"SlurmdSpoolDir={tmp_path}/no-slurmd-here/%n",
                               slurm_env.conf.read_text()))
        monkeypatch.setenv("SLURM_CONF", str(conf))

    async def outputs(state):
        return [NodeSpec(node, path) for node, path in await task_logs(state)]

    session = ClusterSession(make_session=partial(default_session, writers=False),
                             job=SlurmJobSource(job, interval=0.2, task_every=0.3), job_outputs=outputs)
    session.start()
    try:
        await until(session, lambda: len(session.nodes) == 2 and all(n.state.current_phase for n in session.nodes.values()))
        assert session.verdict().kind == STARTING
        await asyncio.sleep(1.0)  # (both tasks seen running by the step poll: a task not started yet looks gone)
        (tmp_path / "go").touch()
        await until(session, lambda: session.verdict().kind == DEAD)
        verdict = session.verdict()
        if where == "on a node":
            assert verdict.node == "n2", verdict
            assert f"Slurm has no process of job {job} left on n2 (scontrol listpids)" in verdict.detail, verdict
        else:
            assert verdict.detail.startswith(f"job {job} RUNNING on n1,n2: a task of step {job}.0 is gone: "
                                             "sstat no longer reaches every node of it (n[1-2])"), verdict
        assert session.node_verdict("n1").kind == STARTING  # the other node runs on
        batch = (tmp_path / f"batch-{job}.out").read_text()
        assert "srun: error" not in batch  # srun said nothing: Slurm's step state told
        (tmp_path / "stop").touch()
        await until(session, lambda: session.job is not None and session.job.state == "COMPLETED")
        n1 = session.node_verdict("n1")  # (seen gone by the step poll, or closed by the job's end)
        assert n1.kind == DEAD, n1
        assert session.verdict().kind in (DEAD, FAILED)  # the attempt is over: never left "starting"
    finally:
        await session.stop()
