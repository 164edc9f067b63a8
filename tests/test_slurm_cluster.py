"""The test Slurm cluster itself: two idle nodes, a two-task job with one output file per task."""

from __future__ import annotations

import time


def wait_state(slurm, job: str, wanted: set[str], timeout: float = 30.0) -> str:
    """Poll the job's state (Slurm has no event to await) until it is one of ``wanted``."""
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        out = slurm.run("scontrol", "show", "job", "-o", job, check=False).stdout
        state = next((f.split("=", 1)[1] for f in out.split() if f.startswith("JobState=")), "")
        if state in wanted:
            return state
        time.sleep(0.1)
    raise AssertionError(f"job {job} is {state or 'gone'}, not {wanted}")


def test_two_idle_nodes(slurm):
    assert slurm.idle_nodes() == 2


def test_two_node_job_writes_one_file_per_task(slurm, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n"
        f"srun -o {tmp_path}/task-%j-%t.out bash -c 'echo node=$SLURMD_NODENAME id=$SLURM_NODEID'\n"
    )
    job = slurm.run("sbatch", "--parsable", "-N", "2", "-o", str(tmp_path / "job-%j.out"), str(script)).stdout.strip()
    assert wait_state(slurm, job, {"COMPLETED", "FAILED", "CANCELLED"}) == "COMPLETED"
    outputs = {p.name: p.read_text().strip() for p in tmp_path.glob(f"task-{job}-*.out")}
    assert outputs == {f"task-{job}-0.out": "node=n1 id=0", f"task-{job}-1.out": "node=n2 id=1"}
