"""`watchtower demo` in a real terminal: a detached tmux session, keys by send-keys, screen by capture-pane."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/setup --test)"),
]

ROOT = Path(__file__).resolve().parent.parent


class Tmux:
    """One private tmux server (its own socket) running one command in one pane."""

    def __init__(self, width: int, height: int, command: str, env: dict[str, str]) -> None:
        self.socket = f"wt-test-{uuid.uuid4().hex[:8]}"
        exports = " ".join(f"{k}={v}" for k, v in env.items())
        # start the app only once the pane has its size (tmux may resize a new pane after starting it)
        wait = f'while [ "$(stty size)" != "{height} {width}" ]; do sleep 0.05; done'
        # COLUMNS and LINES unset: a size the test process's environment carries (pytest's readline exports
        # 80×24) would override the pane's own size in Textual
        shell = f"{wait}; cd {ROOT} && env -u COLUMNS -u LINES {exports} {command}; echo WATCHTOWER-EXITED-$?; sleep 60"
        self.tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), shell)

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True).stdout

    def screen(self, colours: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *(["-e"] if colours else []), "-t", "t")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def wait_for(self, pattern: str, timeout: float = 30.0) -> str:
        """Poll the pane until ``pattern`` shows (the pane is the only observable here)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if re.search(pattern, text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} never appeared; screen:\n{text}")
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def demo(width: int, height: int, *args: str, term: str = "screen-256color", extra_env: dict | None = None) -> Tmux:
    env = {"TERM": term, "COLORTERM": "''", **(extra_env or {})}
    command = f"{sys.executable} -m tui.cli demo {' '.join(args)}"
    return Tmux(width, height, command, env)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_demo_in_tmux_reaches_ready_and_answers_keys(size):
    width, height = size
    pane = demo(width, height, "--speed", "25")
    try:
        text = pane.wait_for(r"STARTING")
        assert "WATCHTOWER" in text and "Phases" in text
        pane.wait_for(r"READY", timeout=40)
        text = pane.wait_for(r"fired up and ready to roll")
        lines = text.splitlines()
        assert len(lines) == height
        assert all(len(line) <= width for line in lines)
        for phase in ("weight load", "memory pool", "CUDA graphs", "draft init", "ready"):
            assert phase in text, phase
        gpu_rows = [line for line in lines if re.search(r"│\s*\d\s+\S*█", line) or re.search(r"\b[0-7] +█+", line)]
        assert len(gpu_rows) == 8, text
        pane.keys("f")
        pane.wait_for(r"filter: errors \+ phases")
        pane.keys("t")
        pane.wait_for(r"Theme: high-contrast")
        pane.keys("q")
        pane.wait_for(r"WATCHTOWER-EXITED-0")
    finally:
        pane.close()


def test_demo_failure_in_16_colours():
    pane = demo(100, 30, "--speed", "25", "--scenario", "crash-context", term="screen")
    try:
        text = pane.wait_for(r"FAILED", timeout=40)
        assert "ValueError" in text and "context_length" in text
        coloured = pane.screen(colours=True)
        assert "38;2;" not in coloured and "38;5;" not in coloured  # only the 16 ANSI colours
        pane.keys("q")
        pane.wait_for(r"WATCHTOWER-EXITED-1")
    finally:
        pane.close()


def sgr_colours(raw: str) -> list[str]:
    """The SGR sequences in ``raw`` terminal output that set a colour (30-49, 90-107, 38/48/58)."""
    found = []
    for params in re.findall(r"\x1b\[([\d;:]*)m", raw):
        numbers = [int(p) for p in re.split(r"[;:]", params) if p]
        if any(30 <= n <= 49 or 90 <= n <= 107 or n == 58 for n in numbers):
            found.append(params)
    return found


@pytest.mark.parametrize("theme", ["dark", "light", "high-contrast"])
def test_no_color_sends_no_colour_at_all_and_still_reads(theme, tmp_path):
    """Read what the app writes to the terminal (tmux pipe-pane), not tmux's redraw of it."""
    pane = demo(100, 30, "--speed", "25", "--scenario", "oom", "--theme", theme, extra_env={"NO_COLOR": "1"})
    raw_file = tmp_path / "raw.out"
    try:
        pane.tmux("pipe-pane", "-t", "t", f"cat > {raw_file}")
        text = pane.wait_for(r"FAILED", timeout=40)
        assert "✖ FAILED" in text and "CUDA out of memory" in text  # told by glyph and word, not colour
        pane.keys("e")
        pane.wait_for(r"paused")
        pane.tmux("pipe-pane", "-t", "t")  # stop: the file now holds everything written meanwhile
        raw = raw_file.read_text(errors="replace")
        assert "FAILED" in raw and sgr_colours(raw) == []
        sgr = set(re.findall(r"\x1b\[([\d;:]*)m", raw))
        assert {"1", "7"} <= {n for params in sgr for n in params.split(";")}  # bold and reverse carry it
    finally:
        pane.close()


@pytest.mark.skipif(shutil.which("screen") is None, reason="GNU screen is not installed")
def test_demo_in_gnu_screen(tmp_path):
    """The same app inside GNU screen (TERM=screen), read back with screen's hardcopy."""
    name = f"wt-test-{uuid.uuid4().hex[:8]}"
    copy = tmp_path / "screen.txt"
    command = f"cd {ROOT} && env TERM=screen {sys.executable} -m tui.cli demo --speed 30 --scenario crash-attr; sleep 60"
    subprocess.run(["screen", "-U", "-dmS", name, "bash", "-c", command], check=True)
    try:
        deadline = time.monotonic() + 40
        text = ""
        while "FAILED" not in text:
            if time.monotonic() > deadline:
                raise AssertionError(f"no verdict in screen:\n{text}")
            time.sleep(0.2)
            subprocess.run(["screen", "-S", name, "-X", "hardcopy", str(copy)], check=True)
            text = copy.read_text(errors="replace") if copy.exists() else ""
        lines = text.splitlines()
        assert "WATCHTOWER" in lines[0] and "AttributeError" in lines[1]
        assert any("Phases" in line and "GPUs" in line for line in lines)
        assert any("weight load" in line for line in lines)
        assert sum(1 for line in lines if re.search(r"\b[0-7] .*1/140G", line)) == 8
    finally:
        subprocess.run(["screen", "-S", name, "-X", "quit"], capture_output=True)


def test_copy_inside_tmux_reaches_the_tmux_buffer_and_says_so():
    """tmux's default set-clipboard (external) drops an application's OSC 52: the copy goes
    into a tmux buffer too, and the notification says where, and how to paste it."""
    pane = demo(120, 30, "--speed", "30", "--scenario", "crash-attr")
    try:
        pane.wait_for(r"FAILED", timeout=40)
        assert pane.tmux("show-options", "-gv", "set-clipboard").strip() == "external"
        pane.keys("e")
        pane.keys("y")
        text = pane.wait_for(r"Copied \d+ lines")  # (the notification wraps at its own width: read it unwrapped)
        said = " ".join(re.findall(r"▌ (.*?)\s*$", text, re.M))
        assert "to the tmux buffer: paste with prefix ]" in said and "w writes a file" in said, text
        copied = pane.tmux("show-buffer")
        assert copied.splitlines()[0].endswith("Traceback (most recent call last):")
        assert copied.rstrip().splitlines()[-1].startswith("AttributeError:")
    finally:
        pane.close()


def test_help_at_80x24_scrolls_and_leaves_the_dashboard_visible_behind_it():
    pane = demo(80, 24, "--speed", "30", "--scenario", "crash-attr")
    try:
        pane.wait_for(r"FAILED", timeout=40)
        footer = pane.screen().splitlines()[-1]
        assert "? " in footer and "Help" in footer and "Quit" in footer
        pane.keys("?")
        text = pane.wait_for(r"Watchtower keys")
        assert "WATCHTOWER" in text.splitlines()[0]  # the modal does not blank the screen behind it
        assert "escape" not in text  # the end of the help is below: it scrolls
        pane.keys("End")
        text = pane.wait_for(r"escape\s+close this help")
        assert "ctrl+p" in text
        pane.keys("Escape")
        deadline = time.monotonic() + 10
        while "Watchtower keys" in pane.screen():  # (a q right after Escape would read as Alt+q)
            assert time.monotonic() < deadline, pane.screen()
            time.sleep(0.1)
        pane.keys("q")
        pane.wait_for(r"WATCHTOWER-EXITED-1")
    finally:
        pane.close()
