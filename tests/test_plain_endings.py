"""Issue 20, item 9: `run --plain --health URL` says READY only once the URL answers; Ctrl-C on
`watch --plain` ends with the verdict so far (and exits 130)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.test_check import free_port
from tests.support import run_cli

ROOT = Path(__file__).resolve().parent.parent
SIM = str(ROOT / "tests" / "server_sim.py")


def test_ready_waits_for_the_health_url(tmp_path):
    port = free_port()  # nothing will ever answer there
    out = run_cli("run", "--plain", "--no-check", "--name", "health", "--gpus", "none", "--log-dir",
                  str(tmp_path / "logs"), "--health", f"http://127.0.0.1:{port}/health", "--timeout", "6", "--",
                  sys.executable, SIM, "--outcome", "ready", "--step", "0.01",
                  env={"WATCHTOWER_DATA_DIR": str(tmp_path / "data")}, timeout=60)
    assert out.returncode == 3, out.stdout + out.stderr  # timed out: the URL never answered
    lines = out.stdout.splitlines()
    assert not any(line.lstrip().startswith("READY") for line in lines), out.stdout
    assert any("ready marker (line" in line and f"waiting for http://127.0.0.1:{port}/health" in line for line in lines)
    assert lines[-2].startswith("timed out after 6 s: STARTING: ready marker seen; waiting for")


def test_ctrl_c_on_watch_plain_prints_the_verdict_so_far(tmp_path):
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, SIM, "--outcome", "hang", "--tp", "2", "--step", "0.01"],
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        watch = subprocess.Popen([sys.executable, "-m", "tui.cli", "watch", "--plain", str(log), "--gpus", "none"],
                                 stdout=subprocess.PIPE, text=True, cwd=ROOT)
        seen = []
        deadline = time.monotonic() + 30
        while not any("weight load started" in line for line in seen):
            assert time.monotonic() < deadline, "".join(seen)
            seen.append(watch.stdout.readline())
        watch.send_signal(signal.SIGINT)
        rest, _ = watch.communicate(timeout=30)
        assert watch.returncode == 130
        last = rest.splitlines()[-1]
        assert "interrupted (Ctrl-C); the verdict so far: STARTING: weight load" in last, rest
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
