"""Shared by the launch tests: no simulated server outlives its test, even a failed one."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tui.launch.proctable import is_alive, start_time


def kill_attempts(root: Path) -> list[int]:
    """SIGKILL the process group of every attempt whose pid file lies under ``root``."""
    killed = []
    for pid_file in root.rglob("*-v*.pid"):
        words = pid_file.read_text().split()
        if not words or not words[0].isdigit():
            continue
        pid = int(words[0])
        if is_alive(pid) and (len(words) < 2 or str(start_time(pid)) == words[1]):
            try:
                os.killpg(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
    return killed


@pytest.fixture(autouse=True)
def no_leftover_servers(tmp_path):
    yield
    kill_attempts(tmp_path)


async def wait_for_file(path: Path, timeout: float = 10.0) -> str:
    """The pid file the simulator writes once its children run (a watch, not a guess)."""
    from tui.sources.local import PathWatch

    watch = PathWatch(str(path))
    try:
        deadline = time.monotonic() + timeout
        while not path.exists():
            assert time.monotonic() < deadline, f"{path} never appeared"
            await watch.wait(0.1)
        return path.read_text()
    finally:
        watch.close()


@pytest.fixture
def adopts_orphans():
    """This test's process adopts its launched servers' orphans, as the `run` command's does
    (``become_subreaper``), and stops adopting after the test: never for the whole run."""
    import ctypes

    from tui.launch.proctable import become_subreaper

    assert become_subreaper()
    yield
    ctypes.CDLL(None, use_errno=True).prctl(36, 0, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER off
