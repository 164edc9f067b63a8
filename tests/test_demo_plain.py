"""`watchtower demo --plain`: the bundled recordings through the real replayer, tailer and plain watcher."""

from __future__ import annotations


import os
import subprocess

import pytest

from tests.support import REPO, run_cli


@pytest.mark.parametrize(
    "scenario, status, needle",
    [("ready", 0, "READY (line"), ("crash-context", 1, "ValueError"), ("oom", 1, "out of memory")],
)
def test_demo_plain_reaches_its_verdict(scenario, status, needle):
    proc = run_cli("demo", "--plain", "--speed", "40", "--scenario", scenario, timeout=120)
    assert proc.returncode == status, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert needle in proc.stdout
    assert "Traceback (most recent call last)" not in proc.stderr


def test_the_real_demo_without_the_real_servers_says_the_setup_command_in_one_line(tmp_path):
    """scripts/real_servers/demo (a real llama.cpp start to watch) where the real servers are not
    installed: one line naming what is missing and the setup command, exit 2, nothing launched."""
    proc = subprocess.run([str(REPO / "scripts" / "real_servers" / "demo"), "--plain"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "WATCHTOWER_REAL_SERVERS": str(tmp_path / "none")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert "not installed" in line and str(tmp_path / "none") in line and "scripts/real_servers/setup" in line, line
