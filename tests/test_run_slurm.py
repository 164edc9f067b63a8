"""`watchtower run --slurm`: batch script written, submitted, followed; x = scancel verified gone;
relaunch = a new job (vN+1); the history records the job ids. Against the real test cluster."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.test_cluster_core import wait_outcome
from tests.test_metrics import samples, value
from tests.support import run_cli, screen_text, until
from tui.app.launch_modals import ConfirmScreen
from tui.cluster import default_session
from tui.core.slurm import SlurmRequest
from tui.history import History
from tui.launch.controller import Launch
from tui.launch.spec import LaunchSpec
from tui.launch.slurm import SlurmRunner

REPO = Path(__file__).parent.parent
SIM = [sys.executable, str(REPO / "tests" / "server_sim.py"), "--tp", "2", "--node-rank", "{node_rank}",
       "--load-seconds", "0.3"]

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("slurm_env")]


def test_run_slurm_plain_submits_a_two_node_job_and_follows_it_to_ready(slurm_env, tmp_path):
    env = dict(os.environ, WATCHTOWER_DATA_DIR=str(tmp_path / "data"), NO_COLOR="1", PYTHONUNBUFFERED="1")
    result = run_cli("run", "--slurm", "--nodes", "2", "--plain", "--name", "sim", "--log-dir",
                     str(tmp_path / "logs"), "--gpus", "none", "--timeout", "90",
                     "--metrics-textfile", str(tmp_path / "sim.prom"), "--env",
                     "HF_TOKEN=hf_secretvalue123", "--", *SIM, env=env, timeout=150)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    job = out.split("submitted as Slurm job ")[1].split()[0]
    assert f"job {job} RUNNING on n1,n2" in out
    assert "[n2] server: sglang" in out and "READY: n1 serving, n2 worker past CUDA graphs" in out
    assert f"left running: job {job} (scancel {job} stops it, or `watchtower attach " in out
    script = (tmp_path / "logs" / "sim-v1.sbatch").read_text()
    assert "#SBATCH --nodes=2" in script and "srun --kill-on-bad-exit=1" in script
    assert '--node-rank "$SLURM_NODEID"' in script
    assert "hf_secretvalue123" not in script  # the environment goes through sbatch, not into the file
    logs = sorted(p.name for p in (tmp_path / "logs").glob(f"sim-v1-{job}-*.log"))
    assert logs == [f"sim-v1-{job}-0.log", f"sim-v1-{job}-1.log"]
    assert "TP3" in (tmp_path / "logs" / f"sim-v1-{job}-1.log").read_text()  # node rank 1 → TP2, TP3
    listed = run_cli("history", "sim", env=env, timeout=60).stdout  # the task logs named, not a "%t" pattern
    assert f"sim-v1-{job}-{{0,1}}.log" in listed and "%t" not in listed, listed
    history = run_cli("history", "sim", "--json", env=env, timeout=60)
    rows = json.loads(history.stdout)
    rows = rows if isinstance(rows, list) else rows.get("attempts", rows)
    assert rows[0]["host"] == "slurm" and str(rows[0]["pid"]) == job and rows[0]["outcome"] == "ready"
    assert rows[0]["task_logs"] == [str(tmp_path / "logs" / f"sim-v1-{job}-{task}.log") for task in (0, 1)]
    metrics = samples((tmp_path / "sim.prom").read_text())  # the textfile's last write: each task a node
    assert value(metrics, "watchtower_verdict", launch="sim", watchtower_verdict="ready") == 1.0
    assert value(metrics, "watchtower_attempt", launch="sim") == 1.0
    for node in ("n1", "n2"):
        assert value(metrics, "watchtower_phase_seconds", launch="sim", node=node, phase="weight_load") is not None
    assert value(metrics, "watchtower_node_verdict", launch="sim", node="n1", watchtower_node_verdict="ready") == 1.0


async def test_stop_cancels_verified_and_relaunch_submits_a_new_job(slurm_env, tmp_path):
    history = History(tmp_path / "history.db")
    launch = slurm_launch(tmp_path, "sim", history)
    first = await launch.start()
    session = launch.nodes
    session.start()
    try:
        assert (await wait_outcome(session, {"ready", "failed"})).kind == "ready"
        await launch.relaunch(command=[*SIM, "--step", "0.01"])
        new = launch.nodes
        assert launch.run.pid != first.pid and launch.run.attempt == 2
        assert await launch.runner.state(first) in ("CANCELLED", "GONE")  # verified gone before v2
        new.start()
        assert (await wait_outcome(new, {"ready", "failed"})).kind == "ready"
        assert await launch.stop()
        verdict = await wait_outcome(new, {"stopped", "failed"})
        assert launch.run.stopped_by_user and not await launch.runner.alive(launch.run)
        assert f"job {launch.run.pid} CANCELLED by Watchtower (stop)" in verdict.text
        await launch.settle()
    finally:
        await session.stop()
        await launch.close()
    rows = history.attempts("sim")
    assert [(r.attempt, r.pid) for r in rows] == [(1, first.pid), (2, launch.run.pid)]
    assert rows[0].outcome == "ready" and rows[1].outcome == "ready"  # ready stays ready after a stop
    assert rows[1].exit_text == f"job {launch.run.pid} CANCELLED by Watchtower (stop)" and rows[1].ended_at
    assert rows[1].command[-2:] == ["--step", "0.01"]


def slurm_launch(tmp_path: Path, name: str, history: History | None = None) -> Launch:
    """A launch whose attempts are 2-node Slurm jobs of the simulator, polled every 0.2 s."""
    return Launch(LaunchSpec(name, list(SIM), log_dir=tmp_path / "logs"), history=history,
                  runner=lambda emit: SlurmRunner(SlurmRequest(nodes=2), emit, interval=0.2),
                  make_node=partial(default_session))


async def test_a_refused_submission_is_one_line(slurm_env, tmp_path):
    from tui.core.errors import UsageError

    runner = SlurmRunner(SlurmRequest(nodes=1, partition="nosuch"))
    with pytest.raises(UsageError) as caught:
        await runner.start(1, ["true"], {}, tmp_path / "logs" / "sim-v1.log", tmp_path / "logs" / "sim-v1.pid")
    assert str(caught.value).startswith("sbatch refused sim-v1: ") and "\n" not in str(caught.value)
    assert "partition" in str(caught.value)


async def test_the_dashboards_r_resubmits_and_x_cancels(slurm_env, tmp_path):
    from tui.wiring.launch import launch_app

    launch = slurm_launch(tmp_path, "sim", History(tmp_path / "history.db"))
    app = launch_app(launch)
    ready = "READY: n1 serving, n2 worker past CUDA graphs"
    async with app.run_test(size=(140, 40)) as pilot:
        await until(lambda: app.verdict().text == ready, timeout=90, pilot=pilot)
        first, session = launch.run.pid, app.nodes
        await pilot.press("r")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)  # v1 runs: stop it first?
        await pilot.press("y")
        await until(lambda: app.nodes is not session, timeout=90, pilot=pilot)
        assert launch.run.pid != first and app.nodes is launch.nodes
        await until(lambda: app.verdict().text == ready, timeout=90, pilot=pilot)
        await until(lambda: "attempt v2" in screen_text(app), pilot=pilot)  # the header says which attempt
        await pilot.press("x")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)  # asks first, as on one host
        assert f"Cancel v2 (Slurm job {launch.run.pid})?" in screen_text(app) and "SIGKILL" not in screen_text(app)
        await pilot.press("y")
        await until(lambda: "CANCELLED by Watchtower" in app.verdict().text, timeout=90, pilot=pilot)
        assert not await launch.runner.alive(launch.run)
        await pilot.press("k")  # GPU holders across nodes: cannot tell from here, and no all-clear
        said = await until(lambda: [n.message for n in app._notifications if "GPU memory" in n.message],  # noqa: SLF001
                           pilot=pilot)
        assert "runs on several nodes" in said[-1] and "No process of an earlier attempt" not in said[-1]
        await pilot.press("a")  # the attempts panel: v1 ready, v2 the current one
        await until(lambda: app.attempts_panel.lines()[0].startswith("v1 ✓"), pilot=pilot)
        assert app.attempts_panel.lines()[1].startswith("v2 ✓") and "← current" in app.attempts_panel.lines()[1]


def cli(tmp_path: Path, *args: str, timeout: float = 150) -> subprocess.CompletedProcess:
    env = dict(os.environ, WATCHTOWER_DATA_DIR=str(tmp_path / "data"), NO_COLOR="1", PYTHONUNBUFFERED="1")
    return run_cli(*args, env=env, timeout=timeout)


def test_attach_follows_the_job_id_in_the_history_to_its_verdict(slurm_env, tmp_path):
    slow = [*SIM, "--load-seconds", "6"]
    first = cli(tmp_path, "run", "--slurm", "--nodes", "2", "--plain", "--name", "sim", "--no-check",
                "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--timeout", "2", "--", *slow)
    assert first.returncode == 3, first.stdout + first.stderr  # Watchtower gave up; the job goes on
    job = first.stdout.split("submitted as Slurm job ")[1].split()[0]
    try:
        again = cli(tmp_path, "attach", "sim", "--plain", "--gpus", "none", "--timeout", "90")
        assert again.returncode == 0, again.stdout + again.stderr
        assert f"v1: following Slurm job {job} again" in again.stdout
        assert "READY: n1 serving, n2 worker past CUDA graphs" in again.stdout and "submitted as" not in again.stdout
        rows = History(tmp_path / "data" / "history.sqlite3").attempts("sim")
        assert [(r.attempt, str(r.pid), r.outcome) for r in rows] == [(1, job, "ready")]
    finally:
        subprocess.run(["scancel", job], capture_output=True, timeout=30)
    from types import SimpleNamespace

    assert asyncio.run(SlurmRunner(SlurmRequest()).wait(SimpleNamespace(pid=job), 30))  # out of the queue
    gone = cli(tmp_path, "attach", "sim", "--plain", "--gpus", "none", "--timeout", "5")
    assert gone.returncode == 2, gone.stdout + gone.stderr
    assert "v1 of sim is not running any more" in gone.stderr


def test_run_slurm_checks_the_command_on_the_submitting_host_and_refuses_on_a_fail(slurm_env, tmp_path):
    command = [sys.executable, "-m", "sglang.launch_server", "--model-path", str(tmp_path / "no-such-model"), "--tp", "2"]
    result = cli(tmp_path, "run", "--slurm", "--nodes", "2", "--plain", "--name", "chk",
                 "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--", *command)
    assert result.returncode == 2, result.stdout + result.stderr
    checks = [line for line in result.stdout.splitlines() if line.startswith("check: ")]
    assert any("✗ model:" in line or "✗ versions" in line for line in checks), checks
    assert not any(word in line for line in checks for word in ("✓ port", "GPUs:", "/dev/shm:", "leftover servers:"))
    assert sum("not checked from here" in line for line in checks) == 1  # the nodes' own checks, said once
    assert "--no-check to submit anyway" in result.stderr
    assert not list((tmp_path / "logs").glob("chk-v1-*.log")) and "submitted as" not in result.stdout


def test_run_slurm_says_once_why_it_checked_nothing_when_the_probe_cannot_run_here(slurm_env, tmp_path):
    command = [str(tmp_path / "elsewhere" / "python"), "-m", "sglang.launch_server", "--model-path", "/m"]
    result = cli(tmp_path, "run", "--slurm", "--nodes", "1", "--plain", "--name", "far", "--timeout", "1",
                 "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--", *command)
    skipped = [line for line in result.stdout.splitlines() if line.startswith("check: skipped")]
    assert len(skipped) == 1 and "not checked before it starts" in skipped[0], result.stdout + result.stderr
    job = result.stdout.split("submitted as Slurm job ")[1].split()[0]  # submitted all the same
    subprocess.run(["scancel", job], capture_output=True, timeout=30)


@pytest.mark.tmux
def test_the_run_slurm_dashboard_draws_in_a_real_terminal_and_x_cancels_the_job(slurm_env, tmp_path):
    """The CLI's dashboard, not an app built in the test's loop: it draws within seconds, reaches
    READY, `x` cancels the job (gone from squeue) and `q` leaves nothing behind."""
    import shutil
    import time
    import uuid

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/setup --test)")
    socket = f"wt-slurm-{uuid.uuid4().hex[:8]}"
    words = " ".join(f"'{w}'" for w in SIM)
    command = (f"cd {REPO} && SLURM_CONF={slurm_env.conf} WATCHTOWER_DATA_DIR={tmp_path / 'data'} TERM=screen-256color "
               f"{sys.executable} -m tui.cli run --slurm --nodes 2 --name sim --no-check --log-dir {tmp_path / 'logs'} "
               f"--gpus none -- {words}; echo EXIT=$?; sleep 60")

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", socket, *args], check=True, capture_output=True, text=True).stdout

    def screen_until(needle: str, seconds: float) -> str:
        deadline = time.monotonic() + seconds
        while True:  # a terminal's screen can only be looked at
            text = tmux("capture-pane", "-p", "-t", "t")
            if needle in text:
                return text
            assert time.monotonic() < deadline, f"never saw {needle!r}:\n{text}"
            time.sleep(0.2)

    try:
        tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "35", command)
        screen_until("Barrier", 20)  # drawn (before the fix: a blank screen, the job's poller dead)
        screen_until("READY  n1 serving, n2 worker past CUDA graphs", 90)
        job = History(tmp_path / "data" / "history.sqlite3").attempts("sim")[0].pid
        tmux("send-keys", "-t", "t", "x")
        screen_until("Cancel v1 (Slurm job", 20)  # asks first, as a launch on one host does
        tmux("send-keys", "-t", "t", "y")
        screen_until("CANCELLED by Watchtower", 60)
        queue = subprocess.run(["squeue", "-h", "-j", str(job)], capture_output=True, text=True,
                               env=dict(os.environ, SLURM_CONF=str(slurm_env.conf)))
        assert str(job) not in queue.stdout
        tmux("send-keys", "-t", "t", "q")
        text = screen_until("EXIT=", 20)
        assert "EXIT=0" in text and "Task was destroyed" not in text and "left running" not in text
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


async def test_a_job_cancelled_while_queued_is_stopped_in_the_history_at_once(slurm_env, tmp_path):
    blocker = slurm_env.run("sbatch", "--parsable", "-N", "2", "-o", "/dev/null", "--wrap", "sleep 60").stdout.strip()
    history = History(tmp_path / "history.db")
    launch = slurm_launch(tmp_path, "queued", history)
    try:
        await launch.start()  # never started following: Watchtower quits right after x
        assert await launch.stop()
    finally:
        await launch.close()
        slurm_env.run("scancel", blocker)
    (row,) = history.attempts("queued")
    assert row.outcome == "stopped" and row.ended_at is not None  # not "starting" for ever
    assert row.exit_text == f"job {row.pid} CANCELLED by Watchtower (stop)"


async def test_a_job_that_ended_before_it_was_first_seen_running_still_shows_its_nodes_and_cause(slurm_env, tmp_path):
    """A server that fails within a poll: the job is FAILED when first seen, never RUNNING. Its
    tasks' logs are still its nodes, read to their end: the cause, not only the job's state."""
    launch = slurm_launch(tmp_path, "fast")
    launch.spec.command = [*SIM, "--outcome", "raise"]
    run = await launch.start()
    try:
        async with asyncio.timeout(60):
            while await launch.runner.alive(run):  # ended before anyone followed it
                await asyncio.sleep(0.2)
        session = launch.nodes
        session.start()
        verdict = await wait_outcome(session, {"failed", "dead"})
        assert set(session.nodes) == {"n1", "n2"}
        assert verdict.kind == "failed" and "ValueError: User-specified context_length (200000)" in verdict.text
    finally:
        await launch.close()


async def test_ctrl_c_on_run_slurm_plain_says_the_job_keeps_running_and_how_to_cancel_it(slurm_env, tmp_path):
    """Issue 31 item 2: Ctrl-C while the job loads exits 130 naming the job left running and `scancel`."""
    from tests.support import start_cli

    sim = [word if word != "0.3" else "60" for word in SIM]  # loading for a minute: still starting at the Ctrl-C
    proc = await start_cli("run", "--slurm", "--nodes", "2", "--plain", "--name", "sim", "--log-dir",
                           str(tmp_path / "logs"), "--gpus", "none", "--timeout", "120", "--", *sim,
                           env={"WATCHTOWER_DATA_DIR": str(tmp_path / "data"), "NO_COLOR": "1"})
    assert proc.stdout is not None
    seen: list[str] = []
    while not any("weight load started" in line for line in seen):
        raw = await asyncio.wait_for(proc.stdout.readline(), 90)
        assert raw, "".join(seen)
        seen.append(raw.decode())
    proc.send_signal(signal.SIGINT)
    rest, err = await asyncio.wait_for(proc.communicate(), 60)
    out = "".join(seen) + rest.decode()
    assert proc.returncode == 130, out + err.decode()
    job = out.split("submitted as Slurm job ")[1].split()[0]
    assert f"interrupted (Ctrl-C): v1 keeps running: job {job} (scancel {job} stops it" in out, out


def failing_node_2_launch(tmp_path: Path) -> Launch:
    """`run --slurm` over two nodes whose node rank 1 raises during its startup while node rank 0 is held
    in its weight load, its loading bar open (at 4/8, where ``--outcome hang`` stops printing).

    Node rank 1 raises only once node rank 0's log shows it held there: slurmstepd writes its
    "CANCELLED" line into node rank 0's log at the moment srun ends the step, so where that line
    lands among node rank 0's own lines is a race against how far node rank 0 has got (under load it
    was still at "Init parallel begin", or printed on after Slurm's line, which was then not its last).
    """
    logs = tmp_path / "logs"
    node = tmp_path / "node.sh"
    node.write_text(f'#!/bin/sh\nif [ "$1" = 1 ]; then outcome=raise\n'
                    f'  until grep -qs "4/8" {logs}/*-"$SLURM_JOB_ID"-0.log; do sleep 0.05; done\n'
                    'else outcome=hang; fi\n'
                    f'exec {sys.executable} {REPO}/tests/server_sim.py --tp 2 --node-rank "$1" --outcome $outcome'
                    ' --load-seconds 2\n')
    node.chmod(0o755)
    return Launch(LaunchSpec("fail", [str(node), "{node_rank}"], log_dir=logs),
                  runner=lambda emit: SlurmRunner(SlurmRequest(nodes=2), emit, interval=0.2),
                  make_node=partial(default_session))


async def test_the_dashboard_of_a_failed_job_stops_its_clock_names_the_job_and_runs_nothing(slurm_env, tmp_path):
    """`run --slurm`, two nodes, node 2 fails as it starts: srun (--kill-on-bad-exit) ends node 1's
    task and the job FAILS. The header names the job and its nodes (not "localhost": the log is read
    here, the task ran on its node); its elapsed time stops at the verdict; no node's process is
    said to run on; and the ``slurmstepd: error: … CANCELLED`` Slurm wrote after node 1's loading
    bar is a line of its own (it was joined to the bar's text)."""
    from tui.core.slurm import ENDED
    from tui.wiring.launch import launch_app

    launch = failing_node_2_launch(tmp_path)
    app = launch_app(launch)
    said: list[str] = []  # each node's verdict at each of the attempt's once srun said its task ended, then each node's at the end

    def heard(_change) -> None:
        nodes = app.nodes
        said.extend(f"{name}: {nodes.node_verdict(name).text}" for name in nodes.task_deaths)

    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: app.nodes.nodes, timeout=90, pilot=pilot)
        app.nodes.judging.subscribe(heard)
        await until(lambda: app.nodes.job is not None and app.nodes.job.state in ENDED, timeout=90, pilot=pilot)
        await until(lambda: app.verdict().final and app.verdict().node == "n2", timeout=30, pilot=pilot)
        session = app.nodes
        header = screen_text(app).splitlines()[0]
        assert f"Slurm job {launch.run.pid} (n1,n2)" in header and "localhost" not in header, header
        at_verdict = session.startup_elapsed()
        for each in (session, *session.nodes.values()):  # a minute later: the attempt's clock stopped
            each.clock = partial(lambda base: base() + 60, each.clock)
        assert session.startup_elapsed() == at_verdict
        said.extend(f"{name}: {session.node_verdict(name).text}" for name in session.nodes)  # and each node's last
        assert said and not [words for words in said if "still running" in words], said
        n1 = session.nodes["n1"].scrollback.entries()
        stepd = [entry for entry in n1 if "slurmstepd" in entry.text]
        assert len(stepd) == 1 and stepd[0].text.startswith("slurmstepd") and "CANCELLED" in stepd[0].text, stepd


@pytest.mark.parametrize(("interval", "watch_poll"), [(0.2, 4.0), (4.0, 0.2)], ids=["node-set-first", "runner-first"])
async def test_a_job_that_failed_is_not_offered_a_stop(slurm_env, tmp_path, interval, watch_poll):
    """Once the job has FAILED nothing of it runs: the footer no longer offers `x Stop server`, from
    the moment either the node set's poll of the job or the runner's own learns of its end (before:
    offered on, the footer drawn once more only when the verdict's kind changed), and x says so."""
    from tui.core.slurm import ENDED
    from tui.wiring.launch import launch_app

    node = tmp_path / "node.sh"  # node rank 1 raises as it starts: srun ends the job
    node.write_text(f'#!/bin/sh\n[ "$1" = 1 ] && outcome=raise || outcome=ready\n'
                    f'exec {sys.executable} {REPO}/tests/server_sim.py --tp 2 --node-rank "$1" --outcome $outcome'
                    ' --load-seconds 5\n')
    node.chmod(0o755)
    launch = Launch(LaunchSpec("fail", [str(node), "{node_rank}"], log_dir=tmp_path / "logs"),
                    runner=lambda emit: SlurmRunner(SlurmRequest(nodes=2), emit, interval=interval,
                                                    watch_poll=watch_poll),
                    make_node=partial(default_session))
    app = launch_app(launch)

    def footer() -> str:
        return screen_text(app).rstrip().splitlines()[-1]

    def ended() -> bool:
        return app.nodes.job is not None and app.nodes.job.state in ENDED

    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: "Stop server" in footer(), timeout=90, pilot=pilot)  # while the job runs
        await until(lambda: ended() or not launch.run.alive, timeout=90, pilot=pilot)  # one of the two knows
        await pilot.pause()
        assert "Stop server" not in footer(), (ended(), launch.run.alive, footer())
        await until(lambda: ended() and not launch.run.alive, timeout=30, pilot=pilot)  # both know
        await pilot.pause()
        assert "Stop server" not in footer(), footer()
        await pilot.press("x")
        said = await until(lambda: [n.message for n in app._notifications if "No running server" in n.message],  # noqa: SLF001
                           pilot=pilot)
        assert said and not isinstance(app.screen, ConfirmScreen)


async def test_where_the_job_was_submitted_is_said_in_the_launch_line_not_over_the_log(slurm_env, tmp_path):
    """"v1: submitted as Slurm job N (…)" was a toast over the log view's last lines: it is said in
    the launch line, where launch events are said, and stays there; nothing is laid over the log."""
    from tui.wiring.launch import launch_app

    launch = slurm_launch(tmp_path, "sim")
    app = launch_app(launch)
    async with app.run_test(size=(120, 35)) as pilot:
        line = await until(lambda: "submitted as Slurm job" in app.launch_line.render().plain
                           and app.launch_line.render().plain, timeout=60, pilot=pilot)
        job = launch.run.pid
        assert f"v1 Slurm job {job}  submitted as Slurm job {job} (" in line, line
        assert not [n.message for n in app._notifications], app._notifications  # noqa: SLF001
        await until(lambda: app.verdict().final, timeout=90, pilot=pilot)
        assert f"submitted as Slurm job {job}" in app.launch_line.render().plain  # still said
        assert not [n.message for n in app._notifications if "Slurm job" in n.message]  # noqa: SLF001


async def test_at_80x24_the_barrier_row_keeps_the_reason_slurm_gave(slurm_env, tmp_path):
    """Node 2 fails as it starts; srun ends node 1's task and slurmstepd writes "slurmstepd-n1: error:
    *** STEP J.0 ON n1 CANCELLED AT <time> ***" as n1's last line. At 80x24 the barrier row that
    names n1 quotes it by its reason ("CANCELLED"), its front matter dropped (before: cut off after
    "slurmstepd-n1: error: *", the reason lost)."""
    from tui.wiring.launch import launch_app

    launch = failing_node_2_launch(tmp_path)
    app = launch_app(launch)

    def n1_row() -> str:
        rows = [row for row in screen_text(app).splitlines() if " n1 TP0 dead" in row]
        return rows[0] if rows else ""

    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: "slurmstepd" in app.nodes.nodes["n1"].state.last_text if "n1" in app.nodes.nodes else False,
                    timeout=90, pilot=pilot)
        row = await until(n1_row, timeout=30, pilot=pilot)
        assert len(row) <= 80 and "CANCELLED" in row and "slurmstepd-n1: error" not in row, row
