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
