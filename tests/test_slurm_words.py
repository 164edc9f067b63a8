"""Slurm's own words in a task's output or the batch output (``slurmstepd: error: …``, ``srun: error:
…``) read for what they mean: a task killed, exited non-zero, out of memory, out of time, on a failed
node, or never launched is an error; a cancel (scancel), a preemption or a requeue is the job's end
from outside, never the server's failure; Slurm's routine chatter is neither. The wordings are
Slurm's, from 17.11 to 24.x (``common.toml`` names the sources)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_classifier import run
from tui.commands.scan import scan_with_hints
from tui.core.lines import LineAssembler
from tui.core.state import FAILED
from tui.core.tracker import StartupTracker

AT = "2026-09-10T13:00:05"
SG = "[2026-09-10 13:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=2)\n" \
     "[2026-09-10 13:00:01 TP0] Load weight begin. avail mem=78.00 GB\n"


@pytest.mark.parametrize(
    ("text", "kind", "secondary"),
    [
        # srun's word on a task (src/srun: "NODE: task(s) N: WHAT"), one task or a range
        ("srun: error: n2: task 1: Killed", "killed", True),
        ("srun: error: n2: task 1: Exited with exit code 1", "task_exited", True),
        ("srun: error: gpu-a17: tasks 0-3,5: Exited with exit code 139", "task_exited", True),
        ("srun: error: n2: task 1: Terminated", "terminated", True),
        ("srun: error: n2: task 1: Segmentation fault (core dumped)", "segfault", False),
        ("srun: error: Node failure on n2", "slurm_node_fail", False),
        ("srun: error: Task launch for StepId=12.0 failed on node n2: Invalid node name specified", "slurm_launch", False),
        ("srun: error: Unable to create step for job 12: More processors requested than permitted", "slurm_launch", False),
        # slurmstepd's, with and without the node in its name
        ("slurmstepd: error: Detected 1 oom_kill event in StepId=12.0. Some of the step tasks have been OOM Killed.", "host_oom", False),
        ("slurmstepd-n2: error: Detected 2 oom_kill events in StepId=12.batch. Some of the step tasks have been OOM Killed.", "host_oom", False),
        ("slurmstepd: error: Detected 1 oom-kill event(s) in step 12.0 cgroup. Some of your processes may have been killed by the cgroup out-of-memory handler.", "host_oom", False),
        ("slurmstepd: error: Job 12 exceeded memory limit (4100000 > 4096000), being killed", "host_oom", False),
        (f"slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT {AT} DUE TO TIME LIMIT ***", "slurm_time_limit", False),
        (f"slurmstepd: error: *** STEP 12.0 CANCELLED AT {AT} DUE TO TIME LIMIT ***", "slurm_time_limit", False),
        (f"slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT {AT} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***", "slurm_node_fail", False),
        (f"slurmstepd: error: *** JOB 12 CANCELLED AT {AT} DUE TO NODE FAILURE ***", "slurm_node_fail", False),
        ("slurmstepd: error: execve(): python3: No such file or directory", "slurm_launch", False),
        (f"slurmstepd: error: *** JOB 12 STEPD TERMINATED ON n1 AT {AT} DUE TO JOB NOT ENDING WITH SIGNALS ***", "slurm_unkillable", True),
    ],
)
def test_slurms_failure_words_are_errors(text, kind, secondary):
    errors, _ = run([text])
    assert [(e.kind, e.fatal, e.secondary) for e in errors] == [(kind, True, secondary)]


@pytest.mark.parametrize(
    "text",
    [
        f"slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT {AT} ***",  # scancel, 17.11 to 22.05
        f"slurmstepd-n1: error: *** JOB 12 ON n1 CANCELLED AT {AT} ***",
        f"slurmstepd: error: *** JOB 12 CANCELLED AT {AT} ***",  # before 17.11
        f"slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT {AT} DUE to SIGNAL Terminated ***",  # 23.x and later
        f"slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT {AT} DUE TO PREEMPTION ***",
        f"slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT {AT} DUE TO JOB REQUEUE ***",
    ],
)
def test_a_cancel_from_outside_is_a_fact_not_a_failure(text):
    errors, _ = run([text])
    assert [(e.kind, e.fatal) for e in errors] == [("slurm_cancelled", False)]


@pytest.mark.parametrize(
    "text",
    [
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        "srun: forcing job termination",
        "srun: launch/slurm: _step_signal: Terminating StepId=12.0",
        "srun: Job 12 step creation temporarily disabled, retrying (Requested nodes are busy)",
        "srun: Step created for StepId=12.0",
        "srun: error: mpi/pmix_v4: init: (null) [0]: mpi_pmix.c:139: pmi/pmix: can not load PMIx library",
        "slurmstepd: error: Exceeded step memory limit at some point.",  # before 21.08: a peak, nothing killed
        "slurmstepd: error: StepId=12.0 hit memory limit at least once during execution. This may or may not result in some failure.",
        "srun: Received task exit notification for 1 task of StepId=12.0 (status=0x0000).",
    ],
)
def test_slurms_routine_words_are_not_errors(text):
    errors, warnings = run([text])
    assert [e for e in errors if e.fatal] == [] and warnings == []


def test_slurms_words_after_srun_l_labels_and_glued_to_a_bar_are_read():
    """``srun -l`` puts the task number before each line; slurmstepd writes its word right after a
    loading bar still open: each is read as its own line, and its meaning found."""
    tracker = StartupTracker()
    assembler = LineAssembler(progress=False)
    text = (SG + " 1: srun: error: n2: task 1: Exited with exit code 1\n"
            "Loading safetensors checkpoint shards:  10% Completed | 3/30\r"
            "slurmstepd-n2: error: Detected 1 oom_kill event in StepId=7.0. Some of the step tasks have been OOM Killed.\n")
    for item in assembler.feed(text.encode()) + assembler.flush():
        tracker.feed(item, 1_700_000_000.0)
    tracker.finish()
    state = tracker.state
    assert state.outcome == FAILED
    assert [(e.kind, e.line) for e in state.errors] == [("task_exited", 3), ("host_oom", 4)]
    assert state.first_error is not None and state.first_error.kind == "host_oom"  # the cause, not srun's word after


def test_a_cancelled_job_gets_no_give_it_longer_hint_and_a_time_limit_gets_its_own(tmp_path: Path):
    log = tmp_path / "job.log"
    log.write_text(SG + "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
                   f"slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT {AT} ***\n"
                   "srun: error: n1: task 0: Terminated\n")
    state, hints = scan_with_hints(str(log))
    assert any(e.kind == "slurm_cancelled" for e in state.errors), state.errors
    assert "terminated-from-outside" not in [h.id for h in hints], hints
    log.write_text(SG + f"slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT {AT} DUE TO TIME LIMIT ***\n"
                   "srun: error: n1: task 0: Terminated\n")
    state, hints = scan_with_hints(str(log))
    assert state.outcome == FAILED and state.first_error is not None and state.first_error.kind == "slurm_time_limit"
    assert [h.id for h in hints][:1] == ["slurm-time-limit"], hints


@pytest.mark.parametrize(
    ("text", "room", "said"),
    [
        (f"slurmstepd-n1: error: *** STEP 12.0 ON n1 CANCELLED AT {AT} ***", 19, "CANCELLED"),
        (f"slurmstepd-n1: error: *** STEP 12.0 ON n1 CANCELLED AT {AT} ***", 30, "CANCELLED (slurmstepd)"),
        (f"slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT {AT} DUE TO TIME LIMIT ***", 30, "CANCELLED DUE TO TIME LIMIT"),
        (" 1: slurmstepd: error: Detected 1 oom_kill event in StepId=12.0. Some of the step tasks have been OOM Killed.",
         30, "Detected 1 oom_kill event in …"),
        ("[2026-09-10 13:00:00 TP2] Scheduler hit an exception: Traceback (most recent call last):", 30,
         "Scheduler hit an exception: T…"),
        ("srun: error: n2: task 1: Exited with exit code 1", 30, "n2: task 1: Exited with exit …"),
        ("a short line", 30, "a short line"),  # whole where it fits, front matter and all
        ("[2026-09-10 13:00:00] ok", 30, "[2026-09-10 13:00:00] ok"),
    ],
)
def test_a_quote_in_little_room_drops_its_front_matter_before_its_words(text, room, said):
    from tui.core.wording import quote

    assert quote(text, room) == said
    assert len(quote(text, room)) <= room
