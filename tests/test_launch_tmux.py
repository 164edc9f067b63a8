"""Notifications in a real tmux: the bell flags the window and the title shows the verdict."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tui.history import History
from tui.launch.proctable import is_alive

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/setup --test)"),
]

ROOT = Path(__file__).resolve().parent.parent
SIM = str(ROOT / "tests" / "server_sim.py")


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("outcome, mark, word", [("ready", "✓", "ready"), ("sigkill", "✗", "dead")])
def test_bell_and_window_title_on_the_verdict(tmp_path, outcome, mark, word):
    socket = f"wt-launch-{uuid.uuid4().hex[:8]}"
    command = (
        f"cd {ROOT} && tmux wait-for go && WATCHTOWER_DATA_DIR={tmp_path / 'data'} {sys.executable} -m tui.cli run "
        f"--plain --name sim --gpus none --log-dir {tmp_path / 'logs'} -- {sys.executable} {SIM} --outcome {outcome}"
        f" --step 0.01; tmux wait-for -S done; sleep 60"
    )
    try:
        tmux(socket, "new-session", "-d", "-s", "t", "-x", "100", "-y", "20")  # window 0: where the user is
        tmux(socket, "set-option", "-g", "allow-rename", "on")
        tmux(socket, "set-option", "-g", "bell-action", "any")
        tmux(socket, "new-window", "-d", "-t", "t:1", command)  # the watcher runs in a background window
        tmux(socket, "wait-for", "-S", "go")
        done = subprocess.run(["tmux", "-L", socket, "wait-for", "done"], timeout=60)
        assert done.returncode == 0
        info = tmux(socket, "display-message", "-p", "-t", "t:1", "#{window_name}|#{window_bell_flag}|#{pane_title}")
        name, bell, title = info.rstrip("\n").split("|")
        assert name == f"{mark} sim v1 {word}" and title == f"{mark} sim v1 {word}"
        assert bell == "1"
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
        for row in History(tmp_path / "data" / "history.sqlite3").attempts("sim"):
            if row.pid and is_alive(row.pid):  # a ready server is left running by design: stop it
                os.killpg(row.pid, signal.SIGKILL)


def test_the_dashboard_rings_and_retitles_too(tmp_path):
    socket = f"wt-launch-{uuid.uuid4().hex[:8]}"
    command = (
        f"cd {ROOT} && tmux wait-for go && TERM=screen-256color WATCHTOWER_DATA_DIR={tmp_path / 'data'} "
        f"{sys.executable} -m tui.cli run --name sim --gpus none --log-dir {tmp_path / 'logs'} -- {sys.executable} "
        f"{SIM} --outcome sigkill --step 0.01; tmux wait-for -S done; sleep 60"
    )
    try:
        tmux(socket, "new-session", "-d", "-s", "t", "-x", "120", "-y", "40")
        tmux(socket, "set-option", "-g", "allow-rename", "on")
        tmux(socket, "set-option", "-g", "bell-action", "any")
        tmux(socket, "new-window", "-d", "-t", "t:1", command)
        tmux(socket, "wait-for", "-S", "go")
        deadline = time.monotonic() + 30
        while True:  # tmux's window state can only be looked at
            info = tmux(socket, "display-message", "-p", "-t", "t:1", "#{window_name}|#{window_bell_flag}")
            if info.startswith("✗ sim v1 dead"):
                break
            assert time.monotonic() < deadline, f"window never retitled: {info!r}"
            time.sleep(0.1)
        assert info.rstrip("\n").split("|") == ["✗ sim v1 dead", "1"]
        tmux(socket, "send-keys", "-t", "t:1", "q")  # nothing is left running: q quits at once
        done = subprocess.Popen(["tmux", "-L", socket, "wait-for", "done"])
        deadline, answered = time.monotonic() + 30, False
        while done.poll() is None:
            assert time.monotonic() < deadline, "q never quit"
            # (under load a rank of the killed server may still be on its way out as q comes: the
            # dashboard then asks about it, rightly; what this test is about is the bell and the title)
            if not answered and "leave them running" in tmux(socket, "capture-pane", "-p", "-t", "t:1"):
                tmux(socket, "send-keys", "-t", "t:1", "l")
                answered = True
            time.sleep(0.1)
        assert done.returncode == 0
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def test_a_confirmed_stop_is_carried_through_when_the_terminal_hangs_up(tmp_path):
    """Issue 20, item 2: x, y, then the tmux session is killed (as an SSH drop does): the server,
    which ignores SIGINT and SIGTERM, still gets its SIGKILL, and the history says how it ended."""
    from tui.launch.keeper import HUNG_UP

    socket = f"wt-launch-{uuid.uuid4().hex[:8]}"
    pid_file = tmp_path / "pids"
    db = tmp_path / "data" / "history.sqlite3"
    command = (
        f"cd {ROOT} && TERM=screen-256color WATCHTOWER_DATA_DIR={tmp_path / 'data'} {sys.executable} -m tui.cli run "
        f"--name sim --gpus none --stop-grace 1.5,1.5 --log-dir {tmp_path / 'logs'} -- {sys.executable} {SIM} "
        f"--outcome hang --stubborn --tp 2 --step 0.01 --pid-file {pid_file}; sleep 60"
    )

    def screen() -> str:
        return tmux(socket, "capture-pane", "-p", "-t", "t")

    def wait(predicate, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"{what}; screen:\n{screen() if what.startswith('screen') else ''}"
            time.sleep(0.1)

    try:
        tmux(socket, "new-session", "-d", "-s", "t", "-x", "120", "-y", "35", command)
        wait(lambda: pid_file.exists() and len(pid_file.read_text().split()) == 3, "the server never started")
        pids = [int(p) for p in pid_file.read_text().split()]
        wait(lambda: "Stop server" in screen(), "screen: the dashboard never drew")
        tmux(socket, "send-keys", "-t", "t", "x")
        wait(lambda: "Stop v1" in screen(), "screen: x did not ask")
        tmux(socket, "send-keys", "-t", "t", "y")
        wait(lambda: "SIGINT sent" in screen(), "screen: the stop never began")
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)  # the terminal hangs up
        wait(lambda: not any(is_alive(p) for p in pids), "the server survived the hang-up", timeout=20)
        row = None

        def recorded() -> bool:
            nonlocal row
            row = History(db).attempts("sim")[0]
            return row.outcome == "stopped"

        wait(recorded, "the history never recorded the stop", timeout=10)
        assert row.exit_text.startswith("stopped (SIGKILL after the grace period)") and HUNG_UP in row.exit_text
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def test_quitting_the_dashboard_of_a_running_server_says_how_to_stop_it_and_follow_it(tmp_path):
    """One host as several: a server left running on quit is named as Watchtower goes, with the
    command that stops its group and the one that follows it again."""
    socket = f"wt-launch-{uuid.uuid4().hex[:8]}"
    command = (
        f"cd {ROOT} && tmux wait-for go && TERM=screen-256color WATCHTOWER_DATA_DIR={tmp_path / 'data'} "
        f"{sys.executable} -m tui.cli run --name sim --gpus none --log-dir {tmp_path / 'logs'} -- {sys.executable} "
        f"{SIM} --outcome ready --step 0.01; tmux wait-for -S done; sleep 60"
    )
    try:
        tmux(socket, "new-session", "-d", "-s", "t", "-x", "120", "-y", "35")
        tmux(socket, "set-option", "-g", "allow-rename", "on")
        tmux(socket, "new-window", "-d", "-t", "t:1", command)
        tmux(socket, "wait-for", "-S", "go")
        deadline = time.monotonic() + 30
        while not tmux(socket, "display-message", "-p", "-t", "t:1", "#{window_name}").startswith("✓ sim v1 ready"):
            assert time.monotonic() < deadline, "never ready"
            time.sleep(0.1)
        tmux(socket, "send-keys", "-t", "t:1", "q")  # the server would be left running: it asks
        deadline = time.monotonic() + 10
        while "leave it running" not in tmux(socket, "capture-pane", "-p", "-t", "t:1"):
            assert time.monotonic() < deadline, tmux(socket, "capture-pane", "-p", "-t", "t:1")
            time.sleep(0.1)
        tmux(socket, "send-keys", "-t", "t:1", "l")  # leave it running
        assert subprocess.run(["tmux", "-L", socket, "wait-for", "done"], timeout=30).returncode == 0
        (row,) = History(tmp_path / "data" / "history.sqlite3").attempts("sim")
        assert row.pid and is_alive(row.pid)
        screen = tmux(socket, "capture-pane", "-p", "-J", "-t", "t:1")  # (-J: a wrapped line joined)
        (said,) = [line for line in screen.splitlines() if "left running" in line]
        assert re.fullmatch(rf"watchtower: left running: v1 \(pid \d+; kill -INT -- -{row.pid} stops it, or "
                            r"`watchtower attach sim` then x\)", said.strip()), said
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
        for row in History(tmp_path / "data" / "history.sqlite3").attempts("sim"):
            if row.pid and is_alive(row.pid):  # left running on purpose: stop it
                os.killpg(row.pid, signal.SIGKILL)
