"""Error blocks: styled as they grow, and read back whole for copying and reports.

An :class:`ErrorBlocks` owns the blocks still growing (an exception's message lines, a chained
traceback: styled as errors in the scrollback as they come) and reading a block's every line
back — from the scrollback, else re-read from the log file by offset (a block longer than the
scrollback keeps, a flood that pushed it out), its head and tail past a limit.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from tui.session.models import ERROR, BlockText, Scrollback

#: Lines of one error block that copying or a report takes (its head and its tail beyond this).
BLOCK_LINES = 2000
#: Bytes read at most when re-reading a block's lines from the log file.
REREAD_BYTES = 64 << 20
#: Error blocks still styled as they grow, and for how many lines after their last one.
GROWING_BLOCKS, GROWING_LINES = 16, 200


class ErrorBlocks:
    """The error blocks of one session's scrollback (reset with its tracker: ``clear``)."""

    def __init__(self, scrollback: Scrollback) -> None:
        self.scrollback = scrollback
        self._growing: list[list[Any]] = []  # [error report, last line styled]

    def clear(self) -> None:
        self._growing = []

    @property
    def growing(self) -> bool:
        return bool(self._growing)

    def grow(self, report: Any, lines: int) -> None:
        """Style a block's lines as errors, and keep styling those it gains (message lines after
        the exception, a chained traceback) while it may still grow (``lines``: read so far)."""
        if not any(item[0] is report for item in self._growing):
            self._growing.append([report, 0])
            del self._growing[:-GROWING_BLOCKS]
        self.style(lines)

    def style(self, lines: int) -> None:
        """The growing blocks' new lines styled; those ``GROWING_LINES`` behind ``lines`` let go."""
        for item in self._growing:
            report, done = item
            for number in report.numbers(after=done):
                entry = self.scrollback.find_line(number)
                if entry is not None:
                    self.scrollback.restyle(entry, ERROR)
                done = number
            item[1] = done
        self._growing = [item for item in self._growing if lines - item[1] <= GROWING_LINES]

    def text(self, error: Any, log_file: str | None, stream_base: int, limit: int = BLOCK_LINES) -> BlockText:
        """Every line of ``error``'s block — from the scrollback, else re-read from ``log_file``
        (whose stream began at byte ``stream_base``) by offset — or, past ``limit`` lines, its
        head and tail and which lines were left out."""
        head: list[int] = []
        tail: deque[int] = deque(maxlen=max(1, limit // 4))
        head_count = max(1, limit - (tail.maxlen or 1))
        size = 0
        first_out: int | None = None
        last_out = 0
        for number in error.numbers():
            size += 1
            if len(head) < head_count:
                head.append(number)
                continue
            if len(tail) == tail.maxlen:
                last_out = tail[0]
                first_out = last_out if first_out is None else first_out
            tail.append(number)
        numbers = head + list(tail)
        texts: dict[int, str] = {}
        for number in numbers:
            entry = self.scrollback.find_line(number)
            if entry is not None:
                texts[number] = entry.text
        missing = {n for n in numbers if n not in texts}
        if missing and error.offset is not None and log_file:
            texts.update(reread(log_file, error.line, stream_base + error.offset, missing))
        lines = [(n, texts[n]) for n in numbers if n in texts]
        while lines and not lines[-1][1].strip() and lines[-1][0] > error.line:
            lines.pop()  # a blank line that closed the block
        left_out = None if first_out is None else (first_out, last_out)
        return BlockText(lines or list(error.block), size, left_out, size - len(numbers), len(numbers) - len(texts))


def reread(path: str, line: int, offset: int, wanted: set[int]) -> dict[int, str]:
    """Lines ``wanted`` of the log file ``path``, counting from ``line`` at byte ``offset``."""
    from tui.core.lines import MAX_LINE_BYTES, make_line

    found: dict[int, str] = {}
    last = max(wanted)
    budget = REREAD_BYTES
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            for number in range(line, last + 1):
                raw = f.readline(MAX_LINE_BYTES + 1)
                budget -= len(raw)
                if not raw or budget < 0:
                    break
                more = raw
                while not more.endswith(b"\n") and more:  # a line over the cap: skip the rest
                    more = f.readline(MAX_LINE_BYTES)
                    budget -= len(more)
                if number in wanted:
                    found[number] = make_line(number, offset, raw.rstrip(b"\n").removesuffix(b"\r")).text
    except OSError:
        pass
    return found
