"""A server the kernel's OOM killer really kills (a memory cgroup with a small limit) is said to be
killed by the OOM killer, naming the kernel's line; a stop that needed SIGKILL never is."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.support import run_cli
from tui.core.verdict import describe_exit


def memory_cgroup() -> Path | None:
    """This process's cgroup v1 memory directory, when a child can be made in it (root)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            where = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
            if where.is_dir() and os.access(where, os.W_OK):
                return where
    return None


@pytest.fixture
def small_cgroup():
    parent = memory_cgroup()
    if parent is None or os.geteuid() != 0:
        pytest.skip("needs root and a writable cgroup v1 memory controller to make a real OOM kill")
    child = parent / f"wt-test-oom-{uuid.uuid4().hex[:8]}"
    child.mkdir()
    try:
        (child / "memory.limit_in_bytes").write_text(str(64 << 20))
        yield child
    finally:
        for pid in (child / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass
        child.rmdir()


def test_a_real_oom_kill_is_named_with_the_kernels_line(tmp_path, small_cgroup):
    hog = "import time\nx = []\nfor _ in range(200):\n    x.append(bytearray(8 << 20)); time.sleep(0.005)\n"
    server = f"echo $$ > {small_cgroup}/cgroup.procs && echo 'loading weights' && exec {sys.executable} -c '{hog}'"
    done = run_cli("run", "--plain", "--name", "hog", "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--",
                   "sh", "-c", server, env={"WATCHTOWER_DATA_DIR": str(tmp_path / "data")}, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "killed by SIGKILL: the OOM killer (kernel log:" in done.stdout, done.stdout
    assert "out of memory: Killed process" in done.stdout
    assert "possibly" not in done.stdout


def test_the_stop_wording_is_never_the_oom_killer():
    assert describe_exit(None, 9, stopped=True) == "stopped (SIGKILL after the grace period)"
    assert describe_exit(None, 9, stopped=True, oom="kernel log: …") == "stopped (SIGKILL after the grace period)"
    assert describe_exit(None, 2, stopped=True) == "stopped (SIGINT)"
    assert describe_exit(0, None, stopped=True) == "stopped (exited with code 0)"
    assert describe_exit(None, 9) == "killed by SIGKILL"
    assert describe_exit(None, 9, oom="x: oom_kill 0 → 1") == "killed by SIGKILL: the OOM killer (x: oom_kill 0 → 1)"
