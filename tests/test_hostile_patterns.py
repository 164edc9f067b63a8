"""A user's regexes under attack (issue 22, item 4): catastrophic patterns in a profile or a
hints file cannot freeze `scan` or `watch` (they run on RE2), Ctrl-C always works, and what
RE2 cannot run is refused at load with one line naming the pattern.

The real CLI in a subprocess on real files; a freeze is the subprocess's timeout.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import run_cli
from tui.core.linear import LinearError, compile_linear, translate
from tui.core.profiles import ProfileError, all_patterns, builtin_profiles, load_profile
from tui.core.quicktest import EXACT_ASKS, QuickTest

REPO = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"

pytestmark = pytest.mark.timeout(120)

# Exponential under a backtracking engine on a line that almost matches: 2**40 steps.
EVIL_PROFILE = """name = "evil"
detect = ['^EVIL ']
[[signatures]]
kind = "boom"
pattern = '(a+)+$'
[prefilter]
words = ['aaaa']
"""
ALMOST = "a" * 40 + "é"  # one non-ASCII character: the first test used to hand it to `re`


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env={"NO_COLOR": "1", **(env or {})}, timeout=timeout)


def test_a_catastrophic_profile_signature_does_not_freeze_scan(tmp_path):
    profile = tmp_path / "evil.toml"
    profile.write_text(EVIL_PROFILE)
    log = tmp_path / "x.log"
    log.write_text(f"EVIL start\n{ALMOST}\n" + "a" * 40 + "\n")
    started = time.monotonic()
    done = cli("scan", str(log), "--server", str(profile), "--json")
    assert time.monotonic() - started < 25
    assert done.returncode in (1, 3), done.stderr
    assert "Traceback" not in done.stderr
    # the pattern still means what it says: the ASCII line ends in a's, the other one does not
    assert '"kind": "boom"' in done.stdout and '"line": 3' in done.stdout and '"line": 2' not in done.stdout


def test_a_catastrophic_hint_pattern_does_not_freeze_scan(tmp_path):
    hints = tmp_path / "hints.toml"
    hints.write_text("[[hints]]\nid = 'evil'\npattern = '(x+x+)+y'\nwhy = 'never'\n")
    log = tmp_path / "x.log"
    log.write_text("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nRuntimeError: " + "x" * 40 + "\n")
    done = cli("scan", str(log), env={"WATCHTOWER_HINTS": str(hints)})
    assert done.returncode == 1, done.stderr
    assert "RuntimeError" in done.stdout and "never" not in done.stdout


def test_watch_reads_past_a_catastrophic_line_and_ctrl_c_ends_it(tmp_path):
    """Frozen on line 2, `watch` would never report line 3 and never see the Ctrl-C."""
    profile = tmp_path / "evil.toml"
    profile.write_text(EVIL_PROFILE.replace("pattern = '(a+)+$'", "pattern = '(a+)+$'\nfatal = false"))
    log = tmp_path / "x.log"
    log.write_text(f"EVIL start\n{ALMOST * 3}\n" + "a" * 40 + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "watch", str(log), "--plain", "--server", str(profile), "--gpus", "none"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env=dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1"),
    )
    seen: list[str] = []
    try:
        assert proc.stdout is not None and proc.stderr is not None
        deadline = time.monotonic() + 20
        reader = _lines(proc.stdout, deadline)
        for line in reader:
            seen.append(line)
            if "line 3" in line:
                break
        assert any("not fatal: line 3" in line for line in seen), seen
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _lines(stream, deadline: float):
    """The lines of ``stream`` until ``deadline`` (a reader thread: readline cannot time out)."""
    import queue
    import threading

    out: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=lambda: [out.put(line) for line in iter(stream.readline, "")] + [out.put(None)], daemon=True).start()
    while True:
        try:
            line = out.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return
        if line is None:
            return
        yield line


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?<!x)boom", "look-around"),
        ("(?=.*b)boom", "look-around"),
        ("(b)oo\\1", "back-references"),
        ("(?>bo+)m", "atomic"),
        ("bo*+m", "bad repetition operator"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_in_one_line(tmp_path, pattern, why):
    profile = tmp_path / "p.toml"
    profile.write_text(f"name = 'p'\n[[signatures]]\nkind = 'k'\npattern = '{pattern}'\n")
    with pytest.raises(ProfileError) as info:
        load_profile(str(profile))
    message = str(info.value)
    assert "\n" not in message and repr(pattern) in message and why in message and str(profile) in message
    log = tmp_path / "x.log"
    log.write_text("boom\n")
    done = cli("scan", str(log), "--server", str(profile))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert repr(pattern) in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_refused_hint_pattern_is_one_line_and_exit_2(tmp_path):
    hints = tmp_path / "hints.toml"
    hints.write_text("[[hints]]\nid = 'h'\npattern = '(?<=a)b'\nwhy = 'w'\n")
    log = tmp_path / "x.log"
    log.write_text("RuntimeError: b\n")
    done = cli("scan", str(log), env={"WATCHTOWER_HINTS": str(hints)})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "'(?<=a)b'" in done.stderr and "hints.h.pattern" in done.stderr


def test_user_patterns_keep_pythons_meaning_on_unicode_text():
    for pattern, text in [
        (r"\w+", "café über 12 ٣"),
        (r"\d+", "x ٣٤ 12"),
        (r"\s+", "a\u00a0\u2003b\tc"),
        (r"[\w.-]+@\S+", "jöhn.d-e@exämple.org rest"),
        (r"(?P<a>\W+)(?P<b>\D+)", "é!! éé"),
        (r"end\Z", "the end"),
        (r"\u00e9+", "caféé"),
        (r"(?i)CAFÉ", "café"),
    ]:
        linear, python = compile_linear(pattern), re.compile(pattern)
        assert linear.findall(text) == python.findall(text), pattern
        found, expected = linear.search(text), python.search(text)
        assert (found is None) == (expected is None)
        if expected is not None:
            assert found.span() == expected.span() and found.groupdict() == expected.groupdict()


def test_translate_refuses_what_it_cannot_keep():
    for pattern in [r"[\W]", r"(?x) a b", r"(?#c)a"]:
        with pytest.raises((LinearError, re.error)):
            compile_linear(pattern)
    assert translate(r"\bword\b", loose=True) == "word"
    assert translate(r"[\b]") == r"[\x08]"


@pytest.mark.parametrize("profile", builtin_profiles(), ids=lambda p: p.name)
def test_builtin_first_test_runs_on_re2_for_non_ascii_lines(profile):
    """The built-in profiles' first test must not hand a non-ASCII line to Python's `re`."""
    patterns = all_patterns(profile)
    quick = QuickTest(patterns)
    text = "Ça: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB é"
    assert any(p.search(text) for p in patterns)
    for n in range(EXACT_ASKS):  # the first questions are the patterns' own (nothing compiled yet)
        assert quick.search(f"é line {n}") is None
    assert quick._wide is None and quick._narrow is None
    assert quick.search(text) is not None
    assert quick._wide not in (None, False)  # an RE2 program took the non-ASCII line
    assert quick.search("torch.OutOfMemoryError: CUDA out of memory") is not None
    assert quick._narrow not in (None, False)  # and one takes ASCII lines (a bound over RE2's 1000 would lose both)


def test_a_copy_of_a_builtin_profile_keeps_its_vetted_lookarounds(tmp_path):
    text = (REPO / "tui" / "profiles" / "sglang.toml").read_text().replace('name = "sglang"', 'name = "mine"')
    assert "(?!" in text
    path = tmp_path / "mine.toml"
    path.write_text(text)
    assert load_profile(str(path)).name == "mine"


@pytest.mark.parametrize("pattern", ["", "x*", "(?:)|boom"])
def test_a_profile_pattern_that_matches_every_line_is_refused(tmp_path, pattern):
    """``pattern = ''`` made every line of a log an error (issue 33 item 6): a pattern that matches
    the empty line is refused with one line naming it."""
    path = tmp_path / "mine.toml"
    path.write_text(f'name = "mine"\n[[signatures]]\nkind = "boom"\npattern = {pattern!r}\n')
    with pytest.raises(ProfileError) as refused:
        load_profile(str(path))
    assert "matches every line" in str(refused.value) and "\n" not in str(refused.value)
