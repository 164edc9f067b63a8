"""`watchtower run --plain`, `history` and `attach` as a user runs them: real processes, exit codes."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.support import run_cli
from tui.launch.proctable import is_alive

SIM = str(Path(__file__).with_name("server_sim.py"))
TOKEN = "hf_CliSecretToken5555555555"


@pytest.fixture
def env(tmp_path):
    return {**os.environ, "WATCHTOWER_DATA_DIR": str(tmp_path / "data")}


def watchtower(env, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return run_cli(*args, env=env, timeout=timeout)


def run_sim(env, tmp_path, *sim_args: str, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return watchtower(
        env, "run", "--plain", "--name", "sim", "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
        "--env", f"HF_TOKEN={TOKEN}", *extra, "--", sys.executable, SIM, "--step", "0.01", "--echo-env", "HF_TOKEN",
        *sim_args,
    )


def test_run_plain_fail_then_ready_then_history_and_attach(tmp_path, env):
    failed = run_sim(env, tmp_path, "--outcome", "raise")
    assert failed.returncode == 1, failed.stderr
    assert "v1 started" in failed.stdout and "FAILED: ValueError: User-specified context_length" in failed.stdout
    ready = run_sim(env, tmp_path, "--outcome", "raise", extra=("--env", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"))
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert "v2 started" in ready.stdout and "READY" in ready.stdout and "keeps running" in ready.stdout
    for out in (failed, ready):
        assert TOKEN not in out.stdout + out.stderr and "HF_TOKEN=****" in out.stdout

    table = watchtower(env, "history", "sim")
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert any(line.strip().startswith("v1 ✗ ValueError") for line in lines)
    assert any(line.strip().startswith("v2 ✓ ready") for line in lines)
    assert "+SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in table.stdout
    rows = json.loads(watchtower(env, "history", "--json").stdout)
    assert [r["attempt"] for r in rows] == [1, 2] and rows[1]["env"]["HF_TOKEN"] == "****"
    pid = rows[1]["pid"]
    try:
        assert is_alive(pid)  # ready: the server was left running on purpose
        again = watchtower(env, "attach", "sim", "--plain")
        server = int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0])  # the wrapper's child
        assert again.returncode == 0 and f"v2 reattached to the running: pid {server}" in again.stdout  # not {pid}
        assert "READY" in again.stdout
        # the OOM killer takes the server while nobody watches
        wrapper = os.pidfd_open(pid)
        os.kill(server, signal.SIGKILL)
        select.select([wrapper], [], [], 10)  # readable once the wrapper has written the status and gone
        os.close(wrapper)
    finally:
        if is_alive(pid):
            os.killpg(pid, signal.SIGKILL)
    gone = watchtower(env, "attach", "sim", "--plain")  # attach never launches anything
    assert gone.returncode == 2 and "v2 of sim is not running any more" in gone.stderr
    rows = json.loads(watchtower(env, "history", "--json").stdout)
    assert [r["attempt"] for r in rows] == [1, 2]
    # its end is in the history now: the startup succeeded, the server was killed later
    assert rows[1]["outcome"] == "ready" and rows[1]["exit"] == "killed by SIGKILL, while unwatched"
    assert TOKEN not in (tmp_path / "data" / "history.sqlite3").read_text(errors="replace")


def test_run_plain_silent_death_and_timeout_exit_codes(tmp_path, env):
    dead = run_sim(env, tmp_path, "--outcome", "sigkill")
    assert dead.returncode == 1
    assert re.search(r"DEAD: SIGKILL · pid \d+; log said last: 'Loading safetensors", dead.stdout)  # the cause first
    assert "OOM" not in dead.stdout  # a SIGKILL alone is no evidence of the OOM killer
    hung = watchtower(
        env, "run", "--plain", "--timeout", "1", "--name", "hang", "--log-dir", str(tmp_path / "logs"), "--gpus",
        "none", "--", sys.executable, SIM, "--outcome", "hang",
    )
    assert hung.returncode == 3 and "timed out after 1 s" in hung.stdout
    pid = json.loads(watchtower(env, "history", "hang", "--json").stdout)[0]["pid"]
    assert is_alive(pid)
    os.killpg(pid, signal.SIGINT)


def test_dead_and_the_start_note_name_the_servers_own_pid_not_the_wrappers(tmp_path, env):
    """The server runs under Watchtower's exit-status wrapper (`python -c`): the pid said is the
    server's (what an operator would `kill` or look up), never the wrapper's."""
    pids = tmp_path / "sim.pids"
    dead = run_sim(env, tmp_path, "--outcome", "sigkill", "--pid-file", str(pids))
    server = int(pids.read_text().split()[0])  # the simulated server's own pid, as it wrote it
    assert dead.returncode == 1
    assert f"DEAD: SIGKILL · pid {server};" in dead.stdout, dead.stdout
    assert f"v1 started: pid {server}, log" in dead.stdout, dead.stdout


def test_usage_errors_are_one_line(tmp_path, env):
    for args, words in (
        (("run", "--plain"), "no server command"),
        (("run", "--plain", "--env", "1BAD=x", "--", "true"), "expected NAME=VALUE"),
        (("run", "--plain", "--name", "a/b", "--", "true"), "invalid --name"),
        (("run", "--plain", "--stop-grace", "x", "--", "true"), "--stop-grace"),
        (("run", "--plain", "--log-dir", str(tmp_path), "--", "no-such-binary-xyz"), "command not found"),
        (("attach", "nothing"), "no launch named 'nothing'"),
        (("run", "--plain", "--slurm", "--smoke", "--", "true"), "--smoke with --slurm"),  # (not sent to this machine)
        (("watch", "--plain", "--slurm", "7", "--smoke"), "--smoke with --slurm"),
    ):
        result = watchtower(env, *args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("command", ["attach", "run", "watch", "record", "scan", "replay", "demo", "history"])
def test_every_option_of_every_command_is_described_in_help(command):
    from tui.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # noqa: SLF001
    undescribed = [a.option_strings or [a.dest] for a in sub._actions if not a.help and a.dest != "help"]  # noqa: SLF001
    assert undescribed == []
    shown = run_cli(command, "--help")
    assert shown.returncode == 0
    for option in ("--on-ready", "--on-fail", "--stall-limit", "--timeout") if command == "attach" else ():
        line = next(line for line in shown.stdout.splitlines() if line.strip().startswith(option))
        assert len(line.split(maxsplit=2)) == 3, line  # the option, its metavar, and words


@pytest.mark.parametrize("how", ["--plain", "--json"])
def test_sigterm_to_run_plain_leaves_the_server_running_and_says_how_to_attach(tmp_path, env, how):
    """`timeout` or a job scheduler sends SIGTERM: handled like Ctrl-C, not a silent death (and
    ``--json``'s last object says the exit status the process ends with)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "run", how, "--name", "term", "--log-dir", str(tmp_path / "logs"),
         "--gpus", "none", "--", sys.executable, SIM, "--outcome", "hang"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        seen = ""
        while "v1 started" not in seen:
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, seen
            line = proc.stdout.readline()
            assert line, seen + proc.stderr.read()
            seen += line
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, out + err
    assert "keeps running" in out and "watchtower attach term" in out and "Traceback" not in err
    if how == "--json":
        assert json.loads(out.splitlines()[-1])["exit"] == 143, out
    (row,) = json.loads(watchtower(env, "history", "term", "--json").stdout)
    assert row["outcome"] == "starting" and is_alive(row["pid"])  # still running: attach can follow it
    again = watchtower(env, "attach", "term", "--plain", "--gpus", "none", "--timeout", "1")
    server = int(Path(f"/proc/{row['pid']}/task/{row['pid']}/children").read_text().split()[0])  # under the wrapper
    assert again.returncode == 3 and f"v1 reattached to the running: pid {server}" in again.stdout
    os.killpg(row["pid"], signal.SIGKILL)


def test_left_running_record_and_the_hook_name_the_servers_own_pid(tmp_path, env):
    """What a script acts on — `left_running`'s pid, the hook's WATCHTOWER_PID — is the server's
    pid, never Watchtower's exit-status wrapper's."""
    pids, hooked = tmp_path / "sim.pids", tmp_path / "hook.txt"
    ready = watchtower(env, "run", "--json", "--name", "sim", "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
                       "--on-ready", f"echo $WATCHTOWER_PID > {hooked}", "--",
                       sys.executable, SIM, "--step", "0.01", "--pid-file", str(pids))
    wrapper = int((tmp_path / "logs" / "sim-v1.pid").read_text().split()[0])
    try:
        assert ready.returncode == 0, ready.stdout + ready.stderr
        server = int(pids.read_text().split()[0])
        (left,) = [r for r in map(json.loads, ready.stdout.splitlines()) if r["event"] == "left_running"]
        assert left["pid"] == server != wrapper
        assert hooked.read_text().strip() == str(server)
    finally:
        os.killpg(wrapper, signal.SIGKILL)


def test_history_and_the_report_say_which_gpu_source_each_attempt_had(tmp_path, env):
    """Issue 34 item 10: a simulated attempt is not mistaken later for one measured on real GPUs."""
    from tui.present.report import build_report
    from tui.session import WatchSession
    from tui.sources.sim import SimGpuSource

    common = ("run", "--plain", "--name", "g", "--log-dir", str(tmp_path / "logs"), "--timeout", "30")
    sim = (sys.executable, SIM, "--step", "0.01", "--outcome", "raise")
    assert watchtower(env, *common, "--gpus", "sim", "--", *sim).returncode == 1
    assert watchtower(env, *common, "--gpus", "none", "--", *sim).returncode == 1
    shown = watchtower(env, "history", "g").stdout
    first, second = shown.split("  v2 ")
    assert "GPUs:    simulated" in first and "GPUs:    none" in second, shown
    assert [r["gpu_source"] for r in json.loads(watchtower(env, "history", "g", "--json").stdout)] == ["simulated", "none"]
    assert "GPUs      simulated" in build_report(WatchSession(gpu=SimGpuSource(2)))
    assert "GPUs      none" in build_report(WatchSession())


@pytest.mark.parametrize("output", ["--plain", "--json"])
def test_run_ending_dead_names_the_ranks_its_main_process_left_running(tmp_path, env, output):
    """Issue 34 item 5 for `run --plain`/`--json`: the server's main process killed, its ranks (in
    the attempt's process group) keep running; its last lines name them and the kill that stops
    them, as `watch --plain` does ('survivors')."""
    pids = tmp_path / "sim.pids"
    dead = watchtower(env, "run", output, "--name", "sim", "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--",
                      sys.executable, SIM, "--step", "0.01", "--outcome", "sigkill", "--orphans", "--pid-file", str(pids))
    ranks = [int(p) for p in pids.read_text().split()[1:]]
    try:
        assert dead.returncode == 1, dead.stdout + dead.stderr
        assert ranks and all(is_alive(pid) for pid in ranks)
        lines = dead.stdout.splitlines()
        if output == "--json":
            records = [json.loads(line) for line in lines]
            left = records[-2]
            assert left["event"] == "survivors" and records[-1]["event"] == "exit", records[-2:]
            assert [(p["pid"], p["rank"]) for p in left["processes"]] == [(ranks[0], "TP0"), (ranks[1], "TP1")]
            assert left["stop"] == f"kill {ranks[0]} {ranks[1]}" and left["host"] == "localhost"
        else:
            assert lines[-2].startswith("DEAD: SIGKILL") and "still run" in lines[-1], lines[-2:]
            assert f"pid {ranks[0]} [TP0] (sglang::scheduler_TP0 -c" in lines[-1]
            assert lines[-1].endswith(f"; stop them: kill {ranks[0]} {ranks[1]}")
    finally:
        for pid in ranks:
            if is_alive(pid):
                os.kill(pid, signal.SIGKILL)


#: llama.cpp failing to make a context far larger than the machine: its allocator's refusal first, the
#: context's own words (what the right hint reads) a moment later, then it exits at once
LAST_WORDS = r'''
import sys, time
say = lambda line: (sys.stdout.write(line + "\n"), sys.stdout.flush())
say("0.00.003.822 I srv    load_model: loading model '/models/q.gguf'")
say("0.03.916.578 E ggml_aligned_malloc: insufficient memory (attempted to allocate 2197265.62 MB)")
time.sleep(0.3)
for line in ["0.03.917.821 E ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 2304000000000",
             "0.04.020.786 E llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache",
             "0.04.020.852 E cmn  common_init_: failed to create context with model '/models/q.gguf'",
             "0.04.021.140 E srv          init: exiting due to model loading error"]:
    say(line)
sys.exit(1)
'''


def test_a_failed_launch_ends_only_once_its_last_lines_are_judged(tmp_path, env):
    """The failure's first words arrive while the server still runs, the words that name the cause
    just before it exits: the process is reaped at once, and the end waits for the log to be read to
    its last line and judged — the hint those lines call for is said (CI's real llama.cpp tier lost it
    under load, the end said before them)."""
    result = watchtower(env, "run", "--plain", "--no-check", "--gpus", "none", "--name", "words", "--log-dir",
                        str(tmp_path / "logs"), "--", sys.executable, "-c", LAST_WORDS)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the KV cache and compute buffers for this context do not fit" in result.stdout, result.stdout
