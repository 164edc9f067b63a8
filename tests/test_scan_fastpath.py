"""The scanner's fast path hands the tracker exactly the lines that hold a word, numbered as grep -n."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.lines import Line
from tui.core.scan import Prefilter, Scanner


class RecordingTracker:
    """Records what it is fed; needs every line for ``eager`` lines after one containing "Traceback"."""

    def __init__(self, eager: int = 2) -> None:
        self.fed: list[Line] = []
        self._eager = eager
        self._left = 0

    @property
    def needs_every_line(self) -> bool:
        return self._left > 0

    def feed(self, item, at=None):
        if isinstance(item, Line):
            self._left = max(0, self._left - 1)
            self.fed.append(item)
            if "Traceback" in item.text:
                self._left = self._eager
        return []

    def feed_rows(self, number, offset, rows, at=None):
        for row in rows:
            self.feed(Line(number, offset, (row,) if row else ()), at)
            number, offset = number + 1, offset + len(row) + 1
        return []

    needs_rank_tags = False

    def pass_over(self, number, text=None):
        self.counted = number

    def skip(self, line):
        self.counted = line.number

    def finish(self):
        return []


WORDS = ["Traceback", "Load weight", "ready to roll"]


def expected(data: bytes, eager: int = 2) -> list[tuple[int, str]]:
    out, left = [], 0
    rows = data.split(b"\n")
    if rows and rows[-1] == b"":
        rows.pop()
    for number, row in enumerate(rows, 1):
        if left or any(w.encode() in row for w in WORDS):
            left = max(0, left - 1)
            text = row.decode("utf-8", "replace").rstrip("\r").split("\r")[-1]
            out.append((number, text))
            if "Traceback" in text:
                left = eager
    return out


def scan(blocks: list[bytes]) -> tuple[list[tuple[int, str]], int]:
    tracker = RecordingTracker()
    scanner = Scanner(tracker, WORDS)
    for block in blocks:
        scanner.feed(block)
    scanner.finish()
    return [(ln.number, ln.text) for ln in tracker.fed], scanner.lines


_rows = st.lists(
    st.sampled_from(
        [b"Decode batch, #running-req: 3", b"[TP0] Load weight begin.", b"Traceback (most recent call last):",
         b"  File \"x.py\", line 1", b"ValueError: boom", b"", b"bar 10%\rbar 20%", b"fired up and ready to roll!"]
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(rows=_rows, cuts=st.lists(st.integers(min_value=0, max_value=800), max_size=8), end_nl=st.booleans())
def test_fast_path_feeds_exactly_the_candidate_lines(rows, cuts, end_nl):
    data = b"\n".join(rows) + (b"\n" if end_nl and rows else b"")
    bounds = sorted({c for c in cuts if c <= len(data)} | {0, len(data)})
    got, _ = scan([data[a:b] for a, b in zip(bounds, bounds[1:])])
    assert got == expected(data)


def test_line_count_matches_wc_l():
    data = b"x\n" * 1000 + b"Load weight begin.\n" + b"y\n" * 10
    got, count = scan([data[:777], data[777:]])
    assert got == [(1001, "Load weight begin.")]
    assert count == data.count(b"\n")
    tracker = RecordingTracker()
    scanner = Scanner(tracker, WORDS)
    scanner.feed(data)
    assert tracker.counted == data.count(b"\n")  # the skipped lines are counted by the tracker too


def test_a_log_coloured_on_every_line_keeps_the_fast_path():
    """ANSI colour on every line: only the lines that hold a word once the sequences are gone are
    fed (a word split by a sequence is still found), not every coloured line."""
    noise = b"\x1b[32m[2026-03-04 11:00:00 TP0]\x1b[0m Decode batch, #running-req: 3\n"
    data = (
        noise * 500
        + b"\x1b[32m[2026-03-04 11:00:01 TP0]\x1b[0m Load \x1b[1mweight\x1b[0m begin.\n"
        + noise * 300
        + b"\x1b[31mfired up and ready to roll!\x1b[0m\n"
        + noise * 10
    )
    got, count = scan([data[:4097], data[4097:]])
    assert [n for n, _ in got] == [501, 802]
    assert "Load weight begin." in got[0][1] and count == data.count(b"\n")


@settings(max_examples=200, deadline=None)
@given(rows=_rows, colour=st.lists(st.booleans(), max_size=40), cuts=st.lists(st.integers(min_value=0, max_value=1200), max_size=6))
def test_coloured_lines_feed_what_plain_ones_do(rows, colour, cuts):
    """The same lines are fed, with the same numbers, whether or not they are coloured."""
    painted = [b"\x1b[1;36m" + r + b"\x1b[0m" if c and r else r for r, c in zip(rows, colour + [False] * len(rows))]
    data = b"\n".join(painted) + b"\n"
    bounds = sorted({c for c in cuts if c <= len(data)} | {0, len(data)})
    got, _ = scan([data[a:b] for a, b in zip(bounds, bounds[1:])])
    plain, _ = scan([b"\n".join(rows) + b"\n"])
    assert [n for n, _ in got] == [n for n, _ in plain]


@pytest.mark.parametrize("hyperscan", [True, False])
def test_a_block_without_esc_is_searched_for_the_words_and_a_stray_esc_line_is_handed_on(hyperscan):
    words = Prefilter(("Load weight", "fired up"), hyperscan=hyperscan)
    plain = b"Decode batch\nLoad weight begin\nDecode batch\nfired up\n"
    assert [plain.count(b"\n", 0, at) for at in words.positions(plain)] == [1, 3]
    stray = b"Decode batch\nLoad \x1b weight, hidden by a stray ESC\nDecode batch\nfired up\n"
    assert [stray.count(b"\n", 0, at) for at in words.positions(stray)] == [1, 3]


def test_lines_read_for_their_rank_tags_are_built_a_piece_at_a_time(monkeypatch):
    """Before ready every line is built (its rank tag counts): a block of short lines is built a
    ``PIECE`` at a time, never as one list of a line per newline (a megabyte of empty lines was
    a million ``Line`` objects at once, 190 MB), and every line still reaches the tracker."""
    from tui.core import lines as lines_mod
    from tui.core import scan as scan_mod

    largest = 0
    feed = lines_mod.LineAssembler.feed

    def watched(self, data):
        nonlocal largest
        out = feed(self, data)
        largest = max(largest, len(out))
        return out

    monkeypatch.setattr(lines_mod.LineAssembler, "feed", watched)
    tracker = RecordingTracker()
    tracker.needs_rank_tags = True  # (the tracker before ready)
    skipped: list[int] = []
    tracker.skip = lambda line: skipped.append(line.number)
    scanner = Scanner(tracker, WORDS)
    scanner.feed(b"[TP0] Load weight begin.\n" + b"\n" * (1 << 20) + b"[TP0] Load weight end.\n")
    scanner.finish()
    assert [line.number for line in tracker.fed] == [1, (1 << 20) + 2]
    assert skipped == list(range(2, (1 << 20) + 2))
    assert largest <= scan_mod.PIECE
