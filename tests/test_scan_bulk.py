"""Reading a log on two cores (tui.commands.bulk) gives exactly what one process reading it in order gives."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_scan_fastpath import WORDS, RecordingTracker, _rows, expected
from tui.commands import bulk
from tui.commands.scan import profile_words, to_json
from tui.core.scan import Prefilter, Scanner, prefilter
from tui.core.tracker import StartupTracker
from tui.commands.bulk import read_into, searching

FIXTURES = sorted(Path(__file__).parent.joinpath("fixtures").glob("*.log"))
NOISE = b"[2026-02-22 23:50:01 TP0] Decode batch, #running-req: 3, #token: 4000, cuda graph: True, #queue-req: 0\n"


@pytest.fixture(autouse=True, scope="module")
def helper_forks():
    """Every read here forks its helper, whatever threads earlier tests left in this process (with
    any, ``_can_fork`` says no, and a read in one process would pass every test here unseen). It
    guards the app, whose threads may hold a lock; the helper's reads, searches and writes to its
    pipe take none that an idle thread left behind by a test can hold."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bulk, "_can_fork", lambda: True)
        yield


def state_of(path: Path, split_min: int, window: int = 4096) -> dict:
    profile, words = profile_words(None)
    tracker = StartupTracker(profile)
    scanner = Scanner(tracker, words)
    with open(path, "rb") as log:
        with searching(log, prefilter(tuple(words)), split_min, window) as helper:
            read_into(scanner, log, helper)
    scanner.finish()
    return to_json(tracker.state)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_two_processes_equal_one_on_every_fixture(path):
    assert state_of(path, split_min=0, window=256) == state_of(path, split_min=1 << 62)


@pytest.mark.parametrize("tail", [b"", b"no newline at the end"])
def test_a_crash_after_serving_noise_and_at_the_split(tmp_path, tail):
    """A traceback whose block straddles the middle (the tracker needs every line there), an
    over-long line no window holds whole, and an unterminated last line."""
    ready = (Path(__file__).parent / "fixtures" / "sglang_eagle3_tp8_ready.log").read_bytes()
    crash = (
        b"[2026-02-23 01:00:00 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        b'  File "/sgl/scheduler.py", line 10, in run\n'
        b"    x = table[key]\n"
        b"KeyError: 'layers.61.mlp'\n"
    )
    after = NOISE * 3000 + b"x" * 20000 + b"\n" + NOISE * 100 + tail
    head = ready + NOISE * 3000
    head += b"z" * (len(after) + 10 - len(head) - 1) + b"\n"  # as long as what follows the crash, and 10
    data = head + crash + after
    assert len(head) < len(data) // 2 < len(head) + len(crash)  # the split falls inside the block
    log = tmp_path / "serving.log"
    log.write_bytes(data)
    two = state_of(log, split_min=0, window=8192)
    assert two == state_of(log, split_min=1 << 62)
    assert two["lines"] == data.count(b"\n") + (1 if tail else 0)
    assert [e["kind"] for e in two["errors"]] == ["KeyError"]


class WaitingForTheHelper(Scanner):
    """A scanner that, handed its first block, waits until the helper has searched the whole log
    back to its start and exited (the helper holds a pipe's write end until then); it counts
    the bytes the parent reads."""

    def __init__(self, tracker, words) -> None:
        super().__init__(tracker, words)
        self.helper_gone, self.held_by_helper = os.pipe()
        self.read = 0

    def feed(self, block, at=None):
        if self.held_by_helper is not None:  # the first block: the helper is forked by now
            os.close(self.held_by_helper)
            self.held_by_helper = None
            assert os.read(self.helper_gone, 1) == b""  # end of file: the helper has exited
            os.close(self.helper_gone)
        self.read += len(block)
        super().feed(block, at)


def scanned_with_the_helper_ahead(tmp_path: Path, data: bytes) -> tuple[WaitingForTheHelper, dict]:
    """``data`` scanned by a parent held at its first block until the helper is done: the scanner and
    the state it reached, checked equal to one process's."""
    log = tmp_path / "serving.log"
    log.write_bytes(data)
    profile, words = profile_words(None)
    tracker = StartupTracker(profile)
    scanner = WaitingForTheHelper(tracker, words)
    with open(log, "rb") as f:
        with searching(f, prefilter(tuple(words)), 0, 8192) as helper:
            read_into(scanner, f, helper)
    scanner.finish()
    two = to_json(tracker.state)
    assert two == state_of(log, split_min=1 << 62)
    return scanner, two


@pytest.mark.parametrize("tail", [b"", b"no newline at the end"])
def test_a_helper_ahead_of_the_parent_does_most_of_the_search(tmp_path, tail):
    """The parent, held up at its first block, takes the helper's windows from there on: it reads
    only the windows it must (a word, a traceback's lines, a line longer than a window), and
    ends where it would alone."""
    ready = (Path(__file__).parent / "fixtures" / "sglang_eagle3_tp8_ready.log").read_bytes()
    crash = b"Traceback (most recent call last):\n  File \"/sgl/scheduler.py\", line 10, in run\nKeyError: 'layers.61.mlp'\n"
    data = ready + NOISE * 3000 + b"x" * 20000 + b"\n" + NOISE * 3000 + crash + NOISE * 100 + tail
    scanner, two = scanned_with_the_helper_ahead(tmp_path, data)
    assert [e["kind"] for e in two["errors"]] == ["KeyError"]
    assert scanner.read < len(data) // 4


def test_a_rank_seen_only_in_the_helpers_windows_still_counts_before_ready(tmp_path):
    """Until ready every line's rank tag counts: TP3, which says nothing but word-free lines in
    the middle of the log, holds the weight load open (every tagged rank prints its end) whether
    the parent or the helper came across its lines first."""
    idle = b"[2026-02-22 23:40:01 TP%d] Scheduler is idle, polling the queue\n"
    data = b"[2026-02-22 23:40:00] server_args=ServerArgs(model_path='/m', tp_size=4)\n"
    data += b"".join(b"[2026-02-22 23:40:00 TP%d] Load weight begin. avail mem=78.00 GB\n" % r for r in (0, 1, 2))
    data += idle % 0 * 3000 + idle % 3 * 1000 + idle % 0 * 3000
    data += b"".join(b"[2026-02-22 23:40:09 TP%d] Load weight end. type=X, dtype=torch.bfloat16, avail mem=60.00 GB, mem usage=18.00 GB.\n" % r for r in (0, 1, 2))
    _, two = scanned_with_the_helper_ahead(tmp_path, data)
    assert [(p["name"], p["end_line"]) for p in two["phases"]] == [("server_args", 1), ("weight_load", None)]


class FailingInTheChild(Prefilter):
    """A prefilter that breaks in the helper only: the parent must then read everything itself."""

    def __init__(self, words, parent: int) -> None:
        super().__init__(words)
        self.parent = parent

    def positions(self, data, start=0, end=None):
        if os.getpid() != self.parent:
            raise RuntimeError("helper broken")
        return super().positions(data, start, end)


def test_a_helper_that_dies_loses_nothing(tmp_path):
    data = b"[TP0] Load weight begin.\n" + NOISE * 2000 + b"Traceback (most recent call last):\n" + NOISE * 2000
    log = tmp_path / "x.log"
    log.write_bytes(data)
    tracker = RecordingTracker()
    scanner = Scanner(tracker, WORDS)
    with open(log, "rb") as f:
        with searching(f, FailingInTheChild(tuple(WORDS), os.getpid()), 0, 512) as helper:
            read_into(scanner, f, helper)
    scanner.finish()
    assert [(ln.number, ln.text) for ln in tracker.fed] == expected(data)
    assert scanner.lines == data.count(b"\n")


@settings(max_examples=150, deadline=None)
@given(rows=_rows, repeat=st.integers(min_value=1, max_value=30), window=st.sampled_from([16, 64, 1000]))
def test_two_processes_feed_exactly_the_candidate_lines(rows, repeat, window):
    data = b"\n".join(rows * repeat) + b"\n"
    with tempfile.NamedTemporaryFile() as log:
        log.write(data)
        log.flush()
        tracker = RecordingTracker()
        scanner = Scanner(tracker, WORDS)
        with open(log.name, "rb") as f:
            with searching(f, prefilter(tuple(WORDS)), 0, window) as helper:
                read_into(scanner, f, helper)
        scanner.finish()
    assert [(ln.number, ln.text) for ln in tracker.fed] == expected(data)
    assert scanner.lines == data.count(b"\n")
