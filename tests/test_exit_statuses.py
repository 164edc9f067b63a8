"""Exit statuses as the README promises, and errors that name the real culprit: real processes,
real files whose permissions bind (a user namespace, where root owns nothing)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.test_history_faults import unprivileged
from tests.support import run_cli

REPO = Path(__file__).parent.parent
SIM = str(Path(__file__).with_name("server_sim.py"))


def watchtower(prefix: tuple[str, ...], *args: str, cwd: Path = REPO, env: dict | None = None):
    started = time.monotonic()
    result = run_cli(*args, prefix=prefix, cwd=cwd, env={"PYTHONPATH": str(REPO), **(env or {})})
    return result, time.monotonic() - started


@pytest.mark.parametrize("mode", [("--plain",), ()], ids=["plain", "dashboard"])
def test_watch_on_an_unreadable_log_exits_2_at_once(tmp_path, mode):
    prefix = unprivileged()
    log = tmp_path / "server.log"
    log.write_text("[2026-02-22 23:38:50] server_args=ServerArgs()\n")
    log.chmod(0o000)
    result, took = watchtower(prefix, "watch", str(log), *mode, "--timeout", "30")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == f"watchtower: {log}: permission denied (cannot read the log)\n"
    assert took < 20  # not after the 30 s timeout


def test_a_working_directory_it_cannot_enter_is_named_not_the_command(tmp_path):
    prefix = unprivileged()
    cwd = tmp_path / "work"
    cwd.mkdir()
    script = (
        f"import os, sys; os.chmod({str(cwd)!r}, 0); sys.path.insert(0, {str(REPO)!r}); import tui.cli; "
        f"sys.exit(tui.cli.main(sys.argv[1:]))"
    )
    env = {**os.environ, "WATCHTOWER_DATA_DIR": str(tmp_path / "data")}
    try:
        result = subprocess.run(
            [*prefix, sys.executable, "-c", script, "run", "--plain", "--name", "sim", "--gpus", "none",
             "--log-dir", str(tmp_path / "logs"), "--", "sh", "-c", "echo hi"],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
        )
    finally:
        cwd.chmod(0o755)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"cannot enter the working directory {cwd}: permission denied" in result.stderr, result.stderr
    assert "command not executable: sh" not in result.stderr
