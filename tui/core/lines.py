"""Line assembly: arbitrary byte chunks in, numbered and sanitised lines out.

Line numbers count ``\\n`` only, exactly as ``grep -n`` does, so every number
Watchtower prints can be checked with grep or sed. A bare ``\\r`` (tqdm bars)
does not start a line: it splits the line into *segments*, each of which is
matched for markers, and while a line is still open each finished segment is
reported as a ``Progress`` update of that line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.core.quicktest import bytes_search
from tui.core.secrets import SECRET_HINT, mask_secrets

#: Longest line kept for display and matching; longer lines are cut (and still
#: counted as one line) before any regular expression sees them.
MAX_LINE_BYTES = 1 << 20

# CSI (colours, cursor moves), OSC (titles, hyperlinks; ends in BEL or ST, or runs
# to the end of the line), and the remaining two-byte escapes.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|$)"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\|$)"
    r"|\x1b[@-Z\\-_]"
)
# Control characters that must never reach a terminal raw (tab is kept), and the format
# characters that move text about: line / paragraph separators and bidi overrides / isolates
# (U+202E turns "gpj.exe" into "exe.jpg" on screen).
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f\x80-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode "control pictures": NUL -> U+2400
    if code == 0x7F:
        return "\u2421"
    if code <= 0x9F:
        return "\ufffd"
    return f"<U+{code:04X}>"


def clean(text: str) -> str:
    """ANSI sequences removed, other control characters (and bidi overrides, U+2028/2029) made
    visible: safe to print. Every string Watchtower sends to a terminal goes through this."""
    text = _ANSI.sub("", text)
    return _CONTROL.sub(_visible, text) if _CONTROL.search(text) else text


#: The bytes that need no cleaning (printable ASCII and tab), with the ``\r`` and ``\n`` that split lines.
_PLAIN_BYTES = bytes((0x09, 0x0A, 0x0D, *range(0x20, 0x7F)))


def _plain(data: bytes) -> bool:
    """Whether ``data`` holds only bytes that need no cleaning: a flood's serving lines, where
    a check of the whole chunk (~0.04 µs a line) spares each line ``clean``'s two searches."""
    return data.isascii() and not data.translate(None, _PLAIN_BYTES)


def plain_rows(data: bytes) -> list[str] | None:
    """The lines of ``data`` (whole lines, each ending in ``\\n``) as the one segment each that
    ``LineAssembler`` would give it (secrets masked), where every line is that simple: ASCII with
    nothing to clean, no ``\\r``, none over ``MAX_LINE_BYTES``, no secret whose mask is longer or
    shorter than it (each text is as long as its line: where the next line starts follows from it).
    An empty line has no segment. None where any needs more. The scanner hands a run of marker
    lines over as these texts: a startup-dense log is nearly all such runs, and a ``Line`` a row
    costs more than its matching."""
    if b"\r" in data or not _plain(data):
        return None
    rows = data.decode("ascii").split("\n")
    rows.pop()  # (the nothing after the last newline)
    if len(data) > MAX_LINE_BYTES and max(map(len, rows)) > MAX_LINE_BYTES:
        return None
    hint, row, at = _secret_at(data, 0), 0, 0  # (``at``: where row ``row`` starts)
    while hint >= 0:  # the lines a secret may be in (a hint never spans a newline)
        row += data.count(b"\n", at, hint)
        at = data.index(b"\n", hint) + 1
        masked = mask_secrets(rows[row])
        if len(masked) != len(rows[row]):
            return None
        rows[row] = masked
        row += 1
        hint = _secret_at(data, at)
    return rows


#: ``newlines`` counts byte by byte below this span, and in a span whose first ``_SAMPLE`` bytes hold
#: lines shorter than ``_SHORT`` bytes on average.
_SAMPLE = 4096
_SHORT = 40


def newlines(data: bytes | bytearray, start: int = 0, end: int | None = None) -> int:
    """The newlines in ``data[start:end]``, counted the faster way for the text at hand.

    ``count`` tests every byte (3-4 GB/s here); ``replace`` deleting them finds each with a
    vectorised ``memchr`` and copies what lies between: about twice as fast on lines of a log's
    usual length, many times slower on very short lines, and only without copying a slice out
    first (a fresh buffer's page faults cost more than the search saves). So: ``replace`` over
    all of ``data`` less the newlines outside the span, where the span is most of ``data`` and
    its first bytes hold lines of a usual length; else ``count``. The newlines of a 300 MB log
    are half of a ``scan``'s work (bench/scan.py)."""
    size = len(data)
    end = size if end is None else end
    if (end - start) * 4 < size * 3 or end - start < _SAMPLE * 4:
        return data.count(b"\n", start, end)
    if data.count(b"\n", start, start + _SAMPLE) * _SHORT > _SAMPLE:
        return data.count(b"\n", start, end)
    outside = data.count(b"\n", 0, start) + data.count(b"\n", end, size)
    return size - len(data.replace(b"\n", b"")) - outside


def decode(raw: bytes) -> str:
    """Bytes to clean text; invalid UTF-8 becomes U+FFFD."""
    return clean(raw.decode("utf-8", "replace"))


#: Where a chunk may hold a secret (-1: nowhere); lines elsewhere are not looked at for one. (The
#: hint never matches across a newline: one search a hit finds the lines of a chunk that hold one.)
_secret_at = bytes_search(SECRET_HINT)


def _text(raw: bytes, secrets: bool, plain: bool = False) -> str:
    """Log bytes as the text every part of Watchtower sees: clean, and with secrets masked
    (``plain``: the bytes need no cleaning, ``_plain``)."""
    text = raw.decode("ascii") if plain else decode(raw)
    return mask_secrets(text) if secrets else text


@dataclass(frozen=True, slots=True)
class Line:
    """One ``\\n``-terminated line (or the unterminated last one at end of input)."""

    number: int  # 1-based, counting \n only (grep -n)
    offset: int  # byte offset of the line's first byte
    segments: tuple[str, ...]  # the \r-separated pieces, cleaned, empty ones dropped
    truncated: bool = False  # longer than MAX_LINE_BYTES: cut for display and matching

    @property
    def text(self) -> str:
        """What a terminal would end up showing: the last non-empty segment."""
        return self.segments[-1] if self.segments else ""


@dataclass(frozen=True, slots=True)
class Progress:
    """A ``\\r`` rewrote the still-open line ``number``: ``text`` is the finished segment."""

    number: int
    offset: int
    text: str


def make_line(number: int, offset: int, raw: bytes, truncated: bool = False, secrets: bool | None = None,
              plain: bool = False) -> Line:
    """Build a Line from the raw bytes of one line, without its ``\\n`` / ``\\r\\n``.

    This is where log text enters Watchtower, so secrets are masked here (by shape and by
    name, ``tui.core.secrets.mask_secrets``) for every view, report and record alike.
    ``secrets=False``: the caller's search of the whole chunk found nothing that could be one;
    ``plain=True``: its check found nothing to clean (``_plain``).
    """
    if len(raw) > MAX_LINE_BYTES:
        raw, truncated = _cut(raw), True
    if secrets is None:
        secrets = _secret_at(raw, 0) >= 0
    if b"\r" not in raw:
        return Line(number, offset, (_text(raw, secrets, plain),) if raw else (), truncated)
    pieces = raw.split(b"\r")
    if b"slurmstepd" in pieces[-1]:
        pieces[-1:] = _INTERJECTION.split(pieces[-1], maxsplit=1)
    segments = tuple(_text(piece, secrets, plain) for piece in pieces if piece)
    return Line(number, offset, segments, truncated)


#: Slurm's step daemon writes its word (``slurmstepd-n1: error: *** STEP 5.0 ON n1 CANCELLED … ***``)
#: into the task's output right after whatever the task left there, often a loading bar still open
#: (no newline after its last ``\r``): it starts a segment of its own, the line's text, not the bar's.
_INTERJECTION = re.compile(rb"(?<=\S)(?=slurmstepd(?:-[\w.-]+)?: )")


def _cut(raw: bytes) -> bytes:
    """Keep the head of an over-long line and, if it has ``\\r`` segments, its last one.

    A bar line can outgrow the cap with thousands of updates and then swallow a
    timestamped record after its last ``\\r``: that record must still be matched.
    """
    half = MAX_LINE_BYTES // 2
    last_cr = raw.rfind(b"\r")
    if last_cr < 0:
        return raw[:MAX_LINE_BYTES]
    return raw[:half] + b"\r" + raw[last_cr + 1 :][:half]


class LineAssembler:
    """Feed byte chunks of any size; get back ``Line`` and ``Progress`` items in order.

    Memory is bounded by a few times ``MAX_LINE_BYTES`` whatever the input.
    """

    def __init__(self, progress: bool = True) -> None:
        self._progress = progress
        self.number = 0  # lines completed so far
        self.offset = 0  # bytes consumed so far
        self._buf = bytearray()  # the open line, capped
        self._start = 0  # offset of the open line
        self._overflow = False  # the open line went past the cap: _buf holds its head only
        self._tail: bytearray | None = None  # after overflow: the bytes after the last \r
        self._prev: bytearray | None = None  # ... and between the last two \r (if \r\n ends it)
        self._reported = 0  # bytes of _buf already reported as Progress

    def reset(self) -> None:
        """Start over at line 1 (the log was replaced)."""
        self.__init__(self._progress)  # type: ignore[misc]  # every field back to its start

    def feed(self, data: bytes) -> list[Line | Progress]:
        out: list[Line | Progress] = []
        hint = _secret_at(data, 0)  # one search for the whole chunk, then one a hint
        plain = _plain(data)  # ... and one check for what cleaning would change
        rows = data.split(b"\n")
        rest = rows.pop()  # the bytes after the last \n: they open (or continue) a line
        if rows:
            self._append(rows[0], out, report=False)
            self.offset += len(rows[0]) + 1
            out.append(self._finish())
            number, offset = self.number, self.offset
            at = len(rows[0]) + 1  # where the row starts in ``data``
            for raw in rows[1:]:  # whole lines inside this chunk: no open-line state needed
                number += 1
                size = len(raw)
                if 0 <= hint < at:  # the hint found is in an earlier line: the next one
                    hint = _secret_at(data, at)
                secret = 0 <= hint < at + size
                body = raw[:-1] if raw.endswith(b"\r") else raw
                if plain and body and size <= MAX_LINE_BYTES and b"\r" not in body and not secret:
                    # make_line's answer for a plain line with no secret to mask, without its calls
                    out.append(Line(number, offset, (body.decode("ascii"),)))
                else:
                    out.append(make_line(number, offset, body, secrets=None if secret else False, plain=plain))
                offset += size + 1
                at += size + 1
            self.number, self.offset, self._start = number, offset, offset
        self._append(rest, out)
        self.offset += len(rest)
        return out

    def flush(self) -> list[Line]:
        """The unterminated last line, at end of input (nothing if there is none)."""
        if not self._buf and not self._overflow:
            return []
        return [self._finish(terminated=False)]

    @property
    def pending(self) -> bool:
        return bool(self._buf) or self._overflow

    def skip(self, lines: int, nbytes: int) -> None:
        """Count ``lines`` whole lines (``nbytes`` bytes) as read without building them.

        The fast scanner uses this to step over lines that no marker can match.
        """
        if self.pending:
            raise ValueError("cannot skip while a line is open")
        self.number += lines
        self.offset += nbytes
        self._start = self.offset

    # ------------------------------------------------------------ internals

    def _append(self, piece: bytes, out: list[Line | Progress], report: bool = True) -> None:
        if not piece:
            return
        if self._overflow:
            self._track(piece)
            return
        self._buf += piece
        if len(self._buf) > MAX_LINE_BYTES + 1:  # +1: the \r of a \r\n ending is no content
            self._overflow = True
            self._track(bytes(self._buf))
            del self._buf[MAX_LINE_BYTES:]
        elif report and self._progress and b"\r" in piece:
            self._report_segments(out)

    def _track(self, piece: bytes) -> None:
        """Keep, capped, what an over-long line's cut needs: the segments after its last two \r."""
        half = MAX_LINE_BYTES // 2
        parts = piece.split(b"\r")
        if len(parts) == 1:
            if self._tail is not None:
                self._tail += piece[: half - len(self._tail)]
            return
        if len(parts) > 2:
            self._prev = bytearray(parts[-2][:half])
        elif self._tail is not None:
            self._prev = self._tail + parts[0][: half - len(self._tail)]
        else:
            self._prev = None  # the bytes before this first \r are the head, not a segment
        self._tail = bytearray(parts[-1][:half])

    def _report_segments(self, out: list[Line | Progress]) -> None:
        """Report the newest update of the open line: tqdm writes ``\r<bar>``, so the text after
        the last ``\r`` is usually the newest whole bar; it counts once it is as long as the
        previous one (shorter, it is probably still being written)."""
        pieces = [p for p in bytes(self._buf[self._reported :]).split(b"\r") if p]
        self._reported = self._buf.rfind(b"\r") + 1
        if not pieces:
            return
        newest = pieces[-1]
        if not self._buf.endswith(newest) or len(pieces) == 1 or len(newest) >= len(pieces[-2]):
            piece = newest
        else:
            piece = pieces[-2]
        out.append(Progress(self.number + 1, self._start, _text(piece, _secret_at(piece, 0) >= 0)))

    def _finish(self, terminated: bool = True) -> Line:
        raw = bytes(self._buf)
        if self._overflow:
            last = self._tail
            if terminated and last is not None and not last:
                last = self._prev  # that last \r was the \r of a \r\n ending
            half = MAX_LINE_BYTES // 2
            raw = raw[:MAX_LINE_BYTES] if last is None else raw[:half] + b"\r" + bytes(last)
        elif terminated and raw.endswith(b"\r"):
            raw = raw[:-1]  # \r\n ends a line like \n
        self.number += 1
        line = make_line(self.number, self._start, raw, self._overflow)
        self._buf = bytearray()
        self._tail = self._prev = None
        self._overflow = False
        self._reported = 0
        self._start = self.offset
        return line
