"""Reading a whole log into a Scanner on both cores: a forked helper searches the second half.

Counting newlines and searching for the prefilter words are most of a big scan's time, and
both are stateless, while the tracker must see the lines in order. So a child process walks
the second half of the file ahead of time, in windows of whole lines, and tells the parent,
per window, how many lines it holds and whether any holds a word. While the parent feeds the
first half itself, the child works; the parent then steps over the child's word-free windows
without reading them, and feeds the rest (a window with a word, one without a newline, one
where the tracker needs every line or a line is still open) exactly as a one-process read
would. The child is only an optimisation: if it dies or the file changes under it, the parent
reads on by itself from where the child's reports stop, so the result is always the same.
"""

from __future__ import annotations

import os
import stat
import struct
import sys
from collections.abc import Iterator
from typing import BinaryIO

from tui.core.scan import Prefilter, Scanner

#: Bytes the parent reads at a time: small enough that the word search and the newline count that
#: follow the read find the block still in the core's cache (1 MiB: 25 % faster than 8 MiB here).
BLOCK = 1 << 20
WINDOW = 1 << 20  # bytes the child searches at a time (the same reason; a window with a word is read again)
SPLIT_MIN = 32 << 20  # below this a second process costs more than it saves

#: One window's report: start offset, end offset, newlines in it, 1 when the parent must read it.
_REPORT = struct.Struct("=qqqq")


def read_into(scanner: Scanner, log: BinaryIO, words: Prefilter, split_min: int = SPLIT_MIN, window: int = WINDOW) -> None:
    """Feed every byte of ``log`` (from its start to wherever it ends now) to ``scanner``."""
    fd = log.fileno()
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # a pipe or FIFO: read in order, as it comes
        while block := log.read(BLOCK):
            scanner.feed(block)
        return
    size = info.st_size
    mid = _middle_line_start(fd, size) if size >= split_min and _can_fork() else None
    pos = 0
    if mid is not None:
        helper = _Helper(fd, mid, size, words, window)
        try:
            pos = _feed(scanner, fd, 0, mid)
            for start, end, lines, read in helper.reports():
                if start != pos:
                    break
                if read or scanner.pending or scanner.tracker.needs_every_line:
                    got = _feed(scanner, fd, start, end)
                    pos = got
                    if got != end:
                        break
                else:
                    scanner.skip(lines, end - start)
                    pos = end
        finally:
            helper.close()
    _feed(scanner, fd, pos, None)


def _feed(scanner: Scanner, fd: int, start: int, end: int | None) -> int:
    """Feed ``[start, end)`` (``end`` None: to the end of the file); the offset reached.

    Read into one buffer, again and again: a fresh block per read costs as much in page faults
    as the copy itself (the scanner keeps no reference to a block once it is fed)."""
    # No bigger than what is left to read (a small log does not pay for zeroing a whole block), none smaller
    # than 64 KiB (a log that grows meanwhile is read on in blocks of that size at least).
    left = (os.fstat(fd).st_size if end is None else end) - start
    buf = bytearray(min(BLOCK, max(left, 1 << 16)) if end is None else max(1, min(BLOCK, left)))
    view = memoryview(buf)
    pos = start
    while end is None or pos < end:
        got = os.preadv(fd, [view if end is None else view[: end - pos]], pos)
        if not got:
            break
        scanner.feed(buf if got == len(buf) else bytes(view[:got]))
        pos += got
    return pos


def _can_fork() -> bool:
    """fork() copies only the calling thread: never from a process that has others."""
    threading = sys.modules.get("threading")
    return hasattr(os, "fork") and (threading is None or threading.active_count() == 1)


def _middle_line_start(fd: int, size: int) -> int | None:
    """The first line start at or after the middle of the file (None: no newline near it)."""
    half = size // 2
    if half == 0:
        return None
    probe = os.pread(fd, 1 << 20, half - 1)
    nl = probe.find(b"\n")
    return None if nl < 0 or half + nl >= size else half + nl


class _Helper:
    """The forked child searching ``[start, end)`` and its pipe of window reports."""

    def __init__(self, fd: int, start: int, end: int, words: Prefilter, window: int) -> None:
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: search, report, and leave without running any cleanup
            status = 1
            try:
                os.close(read_end)
                _search(fd, start, end, words, window, write_end)
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        self._pipe = os.fdopen(read_end, "rb")

    def reports(self) -> Iterator[tuple[int, int, int, int]]:
        while len(data := self._pipe.read(_REPORT.size)) == _REPORT.size:
            yield _REPORT.unpack(data)

    def close(self) -> None:
        self._pipe.close()  # a child still writing gets EPIPE and exits
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


def _search(fd: int, start: int, end: int, words: Prefilter, window: int, out: int) -> None:
    """The child's work: one report per window of whole lines (or of bytes without a newline)."""
    buf = bytearray(window)
    view = memoryview(buf)
    pos = start
    while pos < end:
        got = os.preadv(fd, [view[: min(window, end - pos)]], pos)
        if got <= 0:
            return
        cut = buf.rfind(b"\n", 0, got) + 1
        if cut == 0:  # a line longer than the window: the parent reads it
            report = (pos, pos + got, 0, 1)
        else:
            report = (pos, pos + cut, buf.count(b"\n", 0, cut), 1 if len(words.positions(buf, 0, cut)) else 0)
        os.write(out, _REPORT.pack(*report))
        pos = report[1]
