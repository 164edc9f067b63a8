"""scripts/setup (which scripts/demo runs first): no pip install when nothing changed."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "scripts" / "setup"), *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_a_second_setup_skips_pip_and_says_nothing():
    first = setup("--test")  # installs only if pyproject.toml changed since the last install
    assert first.returncode == 0, first.stderr
    stamp = ROOT / ".venv" / ".watchtower-setup"
    assert stamp.is_file()
    log = ROOT / ".venv" / "pip.log"
    before = log.stat().st_mtime_ns if log.exists() else None
    for args in (("--test",), ()):  # the demo's plain setup is satisfied by the test install too
        again = setup(*args)
        assert again.returncode == 0, again.stderr
        assert again.stdout == again.stderr == ""
    assert (log.stat().st_mtime_ns if log.exists() else None) == before  # pip did not run
