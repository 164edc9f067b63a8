"""The fast path for big logs: feed a tracker only the lines that can matter.

A serving log grows by millions of lines ("Decode batch …", access lines) that no
phase or error marker can match. ``Prefilter`` searches whole blocks for the
profiles' prefilter words at once: with Hyperscan's literal matcher where its wheel
is installed (on a 300 MB log 0.12 s), else with one linear-time RE2 regex (0.6 s;
Python's ``re`` takes 3.8 s and ``bytes.find`` per word 4.3 s; see bench/scan.py).
``LineFeeder`` is the one rule both readers follow, line by line: a line with a word is
fed to the tracker, one without is only counted (``skip``); while the tracker needs every
line (server not yet detected, a traceback block open) it gets every line. The live
session feeds it each line it shows; ``Scanner`` (``watchtower scan``) also steps over
whole runs of word-free lines without building them, counting their newlines.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import re
from array import array
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from tui.core.lines import Line, LineAssembler, Progress, make_line, newlines, plain_rows

try:  # google-re2: linear time and much faster on literal alternations
    import re2 as _re2
except ImportError:  # pragma: no cover - depends on the platform's wheels
    _re2 = None

try:  # Hyperscan: SIMD multi-literal matching, several times faster than RE2 here
    import hyperscan as _hs
except ImportError:  # pragma: no cover - depends on the platform's wheels
    _hs = None  # type: ignore[assignment]


#: The most bytes of lines ``Scanner`` builds at once (a few thousand ``Line`` objects at most).
PIECE = 1 << 16

# ANSI escape sequences in raw bytes (CSI, OSC, other two-byte ones), as tui.core.lines strips them
# from text: a line is looked at for its words once they are gone. Read over a block of lines, an OSC
# or DCS string never ended runs to the end of its line, as there, not over the newlines after it
# (line k must stay line k: the bar after a bare "\x1b]" line was lost, the fuzz test found).
_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\|(?=\n)|$)|\x1b[PX^_][^\x1b\n]*(?:\x1b\\|(?=\n)|$)|\x1b[@-Z\\-_]")


class Tracker(Protocol):
    """What a feeder needs of a tracker (``StartupTracker``, or a stand-in that watches its events)."""

    @property
    def needs_every_line(self) -> bool: ...

    def feed(self, item: Line | Progress, at: float | None = None) -> list[Any]: ...

    def feed_rows(self, number: int, offset: int, rows: list[str], at: float | None = None) -> list[Any]: ...

    @property
    def needs_rank_tags(self) -> bool: ...

    def pass_over(self, number: int, text: str | None = None) -> None: ...

    def skip(self, line: Line) -> None: ...

    def finish(self) -> list[Any]: ...


class Prefilter:
    """Finds the marker words (literals, case-sensitive) in a block of bytes, or in one line's
    text (a line assembled across two blocks, which no block search saw whole)."""

    def __init__(self, words: tuple[str, ...], hyperscan: bool = True, store: DatabaseStore | None = None) -> None:
        self._store = store  # where compiled databases are kept between runs (the command's; None: compiled each time)
        # longest first, and the same order every run: the stored database's key hashes it (ordered by
        # length alone, words of one length came in the set's order, another each run: no database was
        # ever found, and each scan stored one more)
        self._ordered = sorted(set(words), key=lambda word: (-len(word), word))
        self._encoded = [w.encode() for w in self._ordered]
        self._engine: Any = _re2 if _re2 is not None else re
        self._in_text = self._engine.compile("|".join(re.escape(w) for w in self._ordered)).search
        self._hs_words: Any = None  # a hyperscan.Database of the words (it takes memoryviews too)
        if _hs is not None and hyperscan and self._encoded:
            try:
                self._hs_words = _literals(self._encoded, store)
            except Exception:  # an engine that refuses the words: the regex does it all
                self._hs_words = None

    # The engines below are built on first need (a start-up cost of every scan): most logs need none.
    # They find ESC too: an escape sequence inside a word ("Load \x1b[1mweight") hides it from a byte
    # search, so a line holding one left after _coloured is handed on as if it held a word.

    @functools.cached_property
    def _hs_esc(self) -> Any:
        """The words or ESC on Hyperscan (None where it is not used)."""
        if self._hs_words is None:
            return None
        try:
            return _literals([*self._encoded, b"\x1b"], self._store)
        except Exception:
            return None

    @functools.cached_property
    def _regex_esc(self) -> Any:
        """The words or ESC on a regex engine."""
        return self._engine.compile(b"|".join([*(re.escape(w) for w in self._encoded), rb"\x1b"]))

    @functools.cached_property
    def _regex_words(self) -> Any:
        """The words alone on a regex engine."""
        return self._engine.compile(b"|".join(re.escape(w) for w in self._encoded))

    def in_line(self, line: Line) -> bool:
        return any(self._in_text(segment) is not None for segment in line.segments)

    def in_text(self, text: str) -> bool:
        return self._in_text(text) is not None

    def positions(self, data: bytes | bytearray, start: int = 0, end: int | None = None) -> array[int]:
        """Ascending offsets into ``data``, one inside each line of ``data[start:end]`` that holds
        a word (a line cut at ``end`` counts as ending there)."""
        end = len(data) if end is None else end
        if data.find(b"\x1b", start, end) < 0:  # (a memchr: far faster than ESC among the words)
            return self._words(data, start, end)
        coloured = self._coloured(data, start, end)
        if coloured is not None:
            return coloured
        hs = self._hs_esc
        return self._positions(data, start, end, hs, None if hs is not None else self._regex_esc)

    def _words(self, data: bytes | bytearray, start: int, end: int) -> array[int]:
        """``positions`` of a block without ESC."""
        if not self._encoded:
            return array("q")
        hs = self._hs_words
        return self._positions(data, start, end, hs, None if hs is not None else self._regex_words)

    def _coloured(self, data: bytes | bytearray, start: int, end: int) -> array[int] | None:
        """``positions`` of a block with escape sequences (a log coloured on every line): the words
        are searched with the sequences taken out (newlines stay, so line k is line k), and only
        the lines that hold one are handed on, not every coloured line. None if a stray ESC is
        left (then every line with one is looked at, as before)."""
        plain = _ANSI.sub(b"", data[start:end])
        if b"\x1b" in plain or not self._encoded:
            return None
        out = array("q")
        raw = start  # the start of line ``line`` in ``data``
        seen = 0  # where the newlines of ``plain`` were counted up to
        for hit in self._words(plain, 0, len(plain)):
            for _ in range(plain.count(b"\n", seen, hit)):
                raw = data.index(b"\n", raw, end) + 1
            seen = hit
            out.append(raw)
        return out

    def _positions(self, data: bytes | bytearray, start: int, end: int, hs: Any, regex: Any) -> array[int]:
        out = array("q")
        if hs is not None:
            view = data if start == 0 and end == len(data) else memoryview(data)[start:end]
            line_end = -1  # the end of the line of the last hit: more hits in it add nothing

            def hit(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
                nonlocal line_end
                at = start + to - 1
                if at > line_end:
                    out.append(at)
                    nl = data.find(b"\n", at, end)
                    line_end = end if nl < 0 else nl

            hs.scan(view, match_event_handler=hit)
            return out
        search = regex.search
        pos = start
        while pos < end:
            match = search(data, pos, end)
            if match is None:
                break
            out.append(match.start())
            nl = data.find(b"\n", match.start(), end)
            pos = end if nl < 0 else nl + 1
        return out


class DatabaseStore(Protocol):
    """Serialised Hyperscan databases kept between runs, by key (``tui.sources.hs_cache``)."""

    def load(self, key: str) -> bytes | None: ...

    def save(self, key: str, data: bytes) -> None: ...

    def __hash__(self) -> int: ...  # (``prefilter`` keeps one per word set and store)


def _literals(words: list[bytes], store: DatabaseStore | None) -> Any:
    """A Hyperscan database matching any of ``words`` literally: loaded from ``store`` (the core does
    no I/O: the store is the command's) where it holds one for exactly these words (the key hashes
    them, the flags and Hyperscan's release), else compiled (and kept there). A stored one that
    does not load is compiled again."""
    key = hashlib.sha256(repr((getattr(_hs, "__version__", ""), "block", "literal", words)).encode()).hexdigest()
    if store is not None and (data := store.load(key)) is not None:
        try:
            db = _hs.loadb(data, _hs.HS_MODE_BLOCK)
            db.scratch = _hs.Scratch(db)  # (a compile allocates one; a load does not)
            return db
        except Exception:  # truncated, corrupt, or from another build: compile it
            pass
    db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
    db.compile(expressions=words, ids=list(range(len(words))), elements=len(words), literal=True)
    if store is not None:
        store.save(key, _hs.dumpb(db))
    return db


@functools.cache
def prefilter(words: tuple[str, ...], store: DatabaseStore | None = None) -> Prefilter:
    """One compiled prefilter per word set (and store): the live session builds one per log restart."""
    return Prefilter(words, store=store)


class LineFeeder:
    """Hands a tracker the lines that can change its state, and only counts the others (its
    ``skip``): the lines without any of ``words``, unless the tracker needs every line."""

    def __init__(self, words: Prefilter) -> None:
        self.words = words

    def feed(self, tracker: Tracker, item: Line | Progress, at: float | None = None, found: bool | None = None) -> list[Any]:
        """One line (a ``\\r`` update is always fed): ``found`` says whether a search of the block it
        came in found a word in it; None (a line no block search saw whole): its text is searched."""
        if found is not True and isinstance(item, Line) and not tracker.needs_every_line:  # (found: fed anyway)
            if not (self.words.in_line(item) if found is None else found):
                tracker.skip(item)
                return []
        return tracker.feed(item, at)

    def lines(
        self,
        tracker: Tracker,
        items: Sequence[Line | Progress],
        at: float | None,
        hits: Sequence[int] | None = None,
        base: int = 0,
    ) -> Iterator[tuple[Line | Progress, list[Any]]]:
        """``items`` in order, each fed (or skipped) before it is handed back with its events.
        ``hits``: ascending stream offsets of the words found in the block the items were
        assembled from, which starts at offset ``base`` (a line that began before it is searched)."""
        skip, feed, in_line = tracker.skip, tracker.feed, self.words.in_line
        count = len(items)
        every = tracker.needs_every_line  # (only feeding a line changes it)
        hit, last_hit = 0, len(hits) if hits is not None else 0  # the first hit not before this line
        for index, item in enumerate(items):
            if not isinstance(item, Line) or every:  # a \r update, or every line counts now
                yield item, feed(item, at)
                every = tracker.needs_every_line
                continue
            if hits is not None and item.offset >= base:
                while hit < last_hit and hits[hit] < item.offset:
                    hit += 1
                following = items[index + 1].offset if hit < last_hit and index + 1 < count else None
                found = hit < last_hit and (following is None or hits[hit] < following)
            else:
                found = in_line(item)
            if found:
                yield item, feed(item, at)
                every = tracker.needs_every_line
            else:
                skip(item)
                yield item, []


class Scanner:
    """Feed blocks of a log in order; the tracker sees every line that can change its state."""

    def __init__(self, tracker: Tracker, words: list[str], store: DatabaseStore | None = None) -> None:
        self.tracker = tracker
        self._prefilter = prefilter(tuple(words), store)  # (the one `searching` is given, where the store is the same)
        self._feeder = LineFeeder(self._prefilter)
        self._lines = LineAssembler(progress=False)

    @property
    def lines(self) -> int:
        """Lines read so far (``\\n``-terminated; the open last line is not counted)."""
        return self._lines.number

    @property
    def pending(self) -> bool:
        """A line is open: the next bytes continue it (``skip`` needs none open)."""
        return self._lines.pending

    def skip(self, lines: int, nbytes: int) -> None:
        """``lines`` whole lines (``nbytes`` bytes) known to hold no word: counted, never read.

        For a helper that searched them already (``tui.commands.bulk``); only while the tracker
        needs neither every line nor their rank tags, and no line is open.
        """
        self._lines.skip(lines, nbytes)
        self.tracker.pass_over(self._lines.number)

    def feed(self, block: bytes | bytearray, at: float | None = None) -> None:
        """The next block of the log (a buffer the caller may fill again once this returns)."""
        pos = 0
        size = len(block)
        if self._lines.pending:  # finish the line left open by the previous block
            nl = block.find(b"\n")
            end = size if nl < 0 else nl + 1
            self._take(block[:end], at)
            pos = end
        last_nl = block.rfind(b"\n", pos)
        if last_nl >= 0:
            self._whole_lines(block, pos, last_nl + 1, at)
            pos = last_nl + 1
        if pos < size:  # an open last line: keep it for the next block
            self._take(block[pos:], at)

    def finish(self) -> None:
        for line in self._lines.flush():
            self._feeder.feed(self.tracker, line)
        self.tracker.finish()

    def _whole_lines(self, block: bytes | bytearray, pos: int, end: int, at: float | None) -> None:
        """Lines ``block[pos:end]``, each ending in ``\\n``."""
        hits = self._prefilter.positions(block, pos, end)
        i, found = 0, len(hits)
        while pos < end:
            if self.tracker.needs_every_line:
                nl = block.index(b"\n", pos)
                self._take(block[pos : nl + 1], at, found=True)
                pos = nl + 1
                continue
            i = bisect.bisect_left(hits, pos, i)
            if i == found:
                self._skip(block, pos, end)
                return
            hit = hits[i]
            start = max(pos, block.rfind(b"\n", pos, hit) + 1)
            if start > pos:
                self._skip(block, pos, start)
            nl = block.index(b"\n", hit)
            # the lines right after it that hold a word too go with it, in one piece (a dense
            # startup log is mostly such runs): fed all the same, one assembler call for them all
            i += 1
            while i < found and hits[i] < end:
                following = block.index(b"\n", nl + 1)
                if hits[i] > following:
                    break
                nl = following
                i += 1
            self._take(block[start : nl + 1], at, found=True)
            pos = nl + 1

    def _skip(self, block: bytes | bytearray, start: int, end: int) -> None:
        """Whole lines ``block[start:end]`` without a word: counted, never built, except the
        last one with something in it (what the log said last, as a tracker fed them all keeps).
        Until ready they are built (and not matched): their rank tags count."""
        if self.tracker.needs_rank_tags:
            self._take(block[start:end], None, found=False)
            return
        self._lines.skip(newlines(block, start, end), end - start)
        number, stop = self._lines.number, end - 1  # block[stop] is the region's last \n
        while stop > start:
            begin = block.rfind(b"\n", start, stop) + 1 or start
            raw = bytes(block[begin:stop])
            text = make_line(number, begin, raw[:-1] if raw.endswith(b"\r") else raw).text
            if text and not text.isspace():
                self.tracker.pass_over(number, text)
                break
            number, stop = number - 1, begin - 1
        self.tracker.pass_over(self._lines.number)

    def _take(self, data: bytes | bytearray, at: float | None, found: bool | None = None) -> None:
        """The lines ``data`` completes; ``found``: whether the block search found a word in each
        (None: a line no block search saw whole, its text is searched). Taken ``PIECE`` bytes at
        a time, cut after a newline: a block of short lines, built before ready for their rank
        tags, would otherwise be a million ``Line`` objects at once (a megabyte of empty lines:
        190 MB)."""
        start = 0
        while len(data) - start > PIECE:
            cut = data.rfind(b"\n", start, start + PIECE) + 1
            if cut <= start:  # a line longer than a piece: taken whole
                cut = data.find(b"\n", start + PIECE) + 1 or len(data)
            self._take_piece(data[start:cut], at, found)
            start = cut
        self._take_piece(data[start:] if start else data, at, found)

    def _take_piece(self, data: bytes | bytearray, at: float | None, found: bool | None) -> None:
        if found is True:  # every one is fed (``LineFeeder.feed`` would, one call more a line)
            rows = plain_rows(bytes(data))
            if rows is not None:  # each the one text its Line would hold: handed over as text
                number, offset = self._lines.number + 1, self._lines.offset
                self._lines.skip(len(rows), len(data))
                self.tracker.feed_rows(number, offset, rows, at)
                return
        items = self._lines.feed(bytes(data))
        if found is True:
            feed = self.tracker.feed
            for item in items:
                feed(item, at)
            return
        for item in items:
            self._feeder.feed(self.tracker, item, at, found)
