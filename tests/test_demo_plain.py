"""`watchtower demo --plain`: the bundled recordings through the real replayer, tailer and plain watcher."""

from __future__ import annotations


import pytest

from tests.support import run_cli


@pytest.mark.parametrize(
    "scenario, status, needle",
    [("ready", 0, "READY (line"), ("crash-context", 1, "ValueError"), ("oom", 1, "out of memory")],
)
def test_demo_plain_reaches_its_verdict(scenario, status, needle):
    proc = run_cli("demo", "--plain", "--speed", "40", "--scenario", scenario, timeout=120)
    assert proc.returncode == status, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert needle in proc.stdout
    assert "Traceback (most recent call last)" not in proc.stderr
