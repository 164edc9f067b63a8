"""tui.core.slurm: reading scontrol's lines, host lists, batch scripts; wording job states."""

from __future__ import annotations

import pytest

from tests.support import updates_of
from tui.core.events import SlurmJobState
from tui.core.slurm import expand_nodes, job_words, output_path, parse_job, task_outputs

LINE = (
    "JobId=1234 JobName=dsv3 v2 UserId=root(0) GroupId=root(0) Priority=4294901759 JobState=PENDING "
    "Reason=Resources Dependency=(null) ExitCode=0:0 NodeList= NumNodes=2-2 NumTasks=2 "
    "Partition=gpu StdOut=/logs/job-1234.out WorkDir=/work"
)


def test_a_job_line_is_read_field_by_field_values_with_spaces_too():
    job = parse_job(LINE)
    assert (job.job_id, job.state, job.reason, job.tasks, job.partition) == ("1234", "PENDING", "Resources", 2, "gpu")
    assert job.name == "dsv3 v2"
    assert job.nodes == ()
    assert job.stdout == "/logs/job-1234.out"
    assert parse_job("slurm_load_jobs error: Invalid job id specified") is None


@pytest.mark.parametrize(
    "spec, names",
    [
        ("n[1-2]", ("n1", "n2")),
        ("n[1-3,5],gpu[08-10]", ("n1", "n2", "n3", "n5", "gpu08", "gpu09", "gpu10")),
        ("node7", ("node7",)),
        ("a1,b2", ("a1", "b2")),
        ("", ()),
        ("(null)", ()),
    ],
)
def test_host_lists_expand(spec, names):
    assert expand_nodes(spec) == names


@pytest.mark.parametrize(
    "job, words",
    [
        (SlurmJobState("7", "PENDING", reason="Resources", ahead=3), "job 7 PENDING (queued: Resources, 3 jobs ahead)"),
        (SlurmJobState("7", "PENDING", reason="Priority", ahead=1), "job 7 PENDING (queued: Priority, 1 job ahead)"),
        (SlurmJobState("7", "RUNNING", nodes=("n1", "n2")), "job 7 RUNNING on n1,n2"),
        (SlurmJobState("7", "FAILED", exit_code="0:9"), "job 7 FAILED exit 0:9"),
        (SlurmJobState("7", "TIMEOUT", exit_code="0:0"), "job 7 TIMEOUT"),
        (SlurmJobState("7", "OUT_OF_MEMORY", exit_code="0:125"), "job 7 OUT_OF_MEMORY exit 0:125"),
        (SlurmJobState("7", "NODE_FAIL", exit_code="0:0"), "job 7 NODE_FAIL"),
    ],
)
def test_job_words(job, words):
    assert job_words(job) == words


def test_cancelled_names_who_when_known():
    job = SlurmJobState("1234", "CANCELLED", exit_code="0:15")
    assert job_words(job, by="root") == "job 1234 CANCELLED by root"
    assert job_words(job) == "job 1234 CANCELLED"


def test_the_per_task_output_pattern_of_a_batch_script():
    script = "#!/bin/bash\n#SBATCH -N 2\nexport A=1\nsrun -l -o logs/%x-%j-%t.out python -m sglang.launch_server\n"
    assert task_outputs(script) == "logs/%x-%j-%t.out"
    assert task_outputs("srun --output=/l/%N.log cmd") == "/l/%N.log"
    assert task_outputs("srun -o /l/one.log cmd") is None  # one file for all tasks: not per task
    assert task_outputs("# srun -o %t.log\necho") is None


def test_a_task_output_path():
    job = SlurmJobState("42", "RUNNING", nodes=("n1", "n2"), name="dsv3")
    assert output_path("logs/%x-%j-%t.out", job, 1, workdir="/w") == "/w/logs/dsv3-42-1.out"
    assert output_path("/l/%N-%2t.log", job, 0) == "/l/n1-00.log"


def test_a_request_read_back_from_its_batch_script_asks_the_same():
    from tui.core.slurm import SlurmRequest, batch_script

    asked = SlurmRequest(nodes=2, partition="gpu", gpus_per_node=8, time="1:00:00", account="llm")
    script = batch_script(["python", "-m", "sglang.launch_server"], asked, name="dsv3-v2",
                          task_output="/l/dsv3-v2-%j-%t.log", batch_output="/l/dsv3-v2-%j.out", cwd="/w")
    assert SlurmRequest.from_script(script) == asked
    assert SlurmRequest.from_script("#!/bin/bash\nsrun true\n") == SlurmRequest()


def test_srun_l_task_labels_are_read_past_ranks_and_phase_times_are_right():
    """`srun -l` puts "0: " / "1: " before every line of its tasks (one output for the job): the
    ranks and timestamps behind the label are the server's, as without it."""
    from tui.core.lines import LineAssembler
    from tui.core.profiles import load_profile
    from tui.core.tracker import StartupTracker

    lines = ["0: [2026-02-22 23:38:50] server_args=ServerArgs(model_path='/models/m', tp_size=4, nnodes=2, node_rank=0)",
             "1: [2026-02-22 23:38:50] server_args=ServerArgs(model_path='/models/m', tp_size=4, nnodes=2, node_rank=1)"]
    for second, (task, rank) in enumerate([(0, "TP0"), (1, "TP2"), (0, "TP1"), (1, "TP3")]):
        lines.append(f"{task}: [2026-02-22 23:39:0{second} {rank}] Load weight begin. avail mem=78.12 GB")
    for second, (task, rank) in enumerate([(1, "TP3"), (0, "TP0"), (1, "TP2"), (0, "TP1")]):
        lines.append(f"{task}: [2026-02-22 23:40:1{second} {rank}] Load weight end. elapsed=6.91 s, type=X, avail mem=70.40 GB, mem usage=7.72 GB.")
    lines += ["0: [2026-02-22 23:40:20 TP1] Scheduler hit an exception: Traceback (most recent call last):",
              '0:   File "/sgl/srt/managers/scheduler.py", line 2406, in run_scheduler_process',
              "0: RuntimeError: NCCL error: unhandled system error"]
    tracker = StartupTracker(load_profile("sglang"))
    for item in LineAssembler().feed(("\n".join(lines) + "\n").encode()):
        tracker.feed(item, 0.0)
    tracker.finish()
    state = tracker.state
    load = state.phase("weight_load")
    assert sorted(load.ranks) == ["TP0", "TP1", "TP2", "TP3"]
    assert load.done and load.end_ts - load.start_ts == 73.0  # 23:39:00 → 23:40:13, not 0.0 s
    error = state.first_error
    assert error is not None and error.kind == "RuntimeError" and error.rank == "TP1"


# What `scontrol listpids JOB NODE` printed on the test cluster (Slurm 22.05): (rc, stdout, stderr).
HEADER = "PID      JOBID    STEPID   LOCALID GLOBALID\n"


@pytest.mark.parametrize("answer, has", [
    ((0, HEADER + "13581    5        0        0       1       \n13582    5        0        -       -       \n", ""), True),
    ((1, HEADER, "JobId=5 does not exist on node n2.\n"), False),  # its slurmstepd is gone
    ((0, HEADER + "13554    5        batch    0       0       \n", ""), False),  # only the batch script's step
    ((1, HEADER, "scontrol: error: Domain socket directory /var/spool/slurmd: No such file or directory\n"
                 "JobId=5 does not exist on node n9.\n"), None),  # no slurmd of that node here: cannot tell
    ((127, "", "scontrol: No such file or directory"), None),
])
def test_whether_a_node_still_has_its_task(answer, has):
    from tui.core.slurm import node_has_task

    assert node_has_task(*answer) is has


async def test_a_node_still_starting_when_its_job_ended_is_closed_with_it(tmp_path):
    """The job ended (its tasks with it) while n2 had said nothing final: n2 is not left "starting"
    but closed as its task's end; the attempt's verdict stays the job's own words."""

    from tests.test_cluster_core import node_log
    from tui.cluster import ClusterSession, default_session
    from tui.core.options import NodeSpec
    from tui.core.verdict import DEAD, FAILED, STARTING, Verdict

    logs = {}
    for rank, name in enumerate(("n1", "n2")):
        logs[name] = tmp_path / f"{name}.log"
        logs[name].write_text("\n".join(node_log([f"TP{rank}"], until="load_begin", node_rank=rank)) + "\n")
    session = ClusterSession([NodeSpec(name, str(path)) for name, path in logs.items()], make_session=default_session)
    session.job = SlurmJobState("7", "RUNNING", nodes=("n1", "n2"))
    changed = updates_of(session)
    session.start()
    try:
        while any(node.state.current_phase is None for node in session.nodes.values()):
            changed.clear()
            await changed.wait()
        assert session.node_verdict("n2").kind == STARTING
        session.job = SlurmJobState("7", "FAILED", nodes=("n1", "n2"), exit_code="1:0")
        n2 = session.node_verdict("n2")
        assert n2.kind == DEAD and n2.detail == "its task ended with the job: job 7 FAILED exit 1:0", n2
        assert session.verdict() == Verdict(FAILED, "job 7 FAILED exit 1:0", label="FAILED")  # the job's own word
    finally:
        await session.stop()


def test_the_task_steps_sstat_lists():
    """`sstat -n -P -a -j 6 -o JobID` on the test cluster: the batch step is no task step; a step
    one of whose nodes' part has ended is no longer listed."""
    from tui.core.slurm import answering_steps

    assert answering_steps("6.batch\n6.0\n") == {"6.0"}
    assert answering_steps("6.batch\n") == set()
    assert answering_steps("") == set()
