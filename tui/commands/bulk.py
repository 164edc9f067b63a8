"""Reading a whole log into a Scanner on both cores: a forked helper searches it from the end.

Counting newlines and searching for the prefilter words are most of a big scan's time, and
both are stateless, while the tracker must see the lines in order. So while the parent feeds
the log from its start, a child process walks it from its last whole line backwards, in windows
of whole lines, and tells the parent, per window, how many lines it holds and whether any holds
a word. Where the two meet the parent stops, and steps over the child's word-free windows
without reading them; it feeds the rest (a window with a word, one inside a line longer than
a window, one where the tracker needs every line or, until ready, every rank tag, or where a
line is still open) exactly as a one-process read would. Meeting wherever they
meet shares the work whatever each gets of the machine: a helper kept off a busy core leaves
the parent reading on, instead of waiting for a fixed half. The child is only an optimisation:
if it dies or the file changes under it, the parent reads on by itself, so the result is always
the same.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import stat
import struct
import sys
from collections.abc import Iterator
from typing import BinaryIO

from tui.core.lines import newlines
from tui.core.scan import Prefilter, Scanner

#: Bytes read at a time: small enough that the word search and the newline count that follow
#: the read find the block still in the core's cache (1 MiB: 25 % faster than 8 MiB here).
BLOCK = 1 << 20
WINDOW = 1 << 20  # bytes each side takes at a time (the same reason; a window with a word is read again)
SPLIT_MIN = 32 << 20  # below this a second process costs more than it saves

#: One window's report: start offset, end offset, newlines in it, 1 when the parent must read it.
_REPORT = struct.Struct("=qqqq")


@contextlib.contextmanager
def searching(log: BinaryIO, words: Prefilter, split_min: int = SPLIT_MIN, window: int = WINDOW) -> Iterator[Helper | None]:
    """The helper that searches ``log`` from its end, started now and ended on the way out; None
    where it would not pay or may not run: a pipe, a file under ``split_min`` bytes, a process
    with threads. Started before the tracker is built (what `scan` does), it searches while the
    parent is still importing and setting up."""
    info = os.fstat(log.fileno())
    if not stat.S_ISREG(info.st_mode) or info.st_size < split_min or not _can_fork():
        yield None
        return
    helper = Helper(log.fileno(), info.st_size, words, window)
    try:
        yield helper
    finally:
        helper.close()


def read_into(scanner: Scanner, log: BinaryIO, helper: Helper | None) -> None:
    """Feed every byte of ``log`` (from its start to wherever it ends now) to ``scanner``, taking
    ``helper``'s word-free windows (``searching``) where it has searched ahead."""
    fd = log.fileno()
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a pipe or FIFO: read in order, as it comes
        while block := log.read(BLOCK):
            scanner.feed(block)
        return
    pos = 0
    if helper is not None:
        pos = _meet(scanner, fd, helper)
        helper.close()
        for start, end, lines, read in helper.windows(pos):
            tracker = scanner.tracker
            if read or scanner.pending or tracker.needs_every_line or tracker.needs_rank_tags:
                got = _feed(scanner, fd, start, end)
                pos = got
                if got != end:
                    break
            else:
                scanner.skip(lines, end - start)
                pos = end
    _feed(scanner, fd, pos, None)


def _meet(scanner: Scanner, fd: int, helper: Helper) -> int:
    """Feed the log from its start, a window's bytes at a time, up to the first place at or after
    the offset reached where the helper's windows begin (or to the end: a helper that reports
    nothing); the offset reached."""
    step = helper.window
    buf = bytearray(step)
    view = memoryview(buf)
    pos = 0
    while True:
        limit = helper.bound(pos)
        if limit == pos:
            return pos
        got = os.preadv(fd, [view if limit is None else view[: min(step, limit - pos)]], pos)
        if not got:
            return pos
        scanner.feed(buf if got == len(buf) else bytes(view[:got]))
        pos += got


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


class Helper:
    """The forked child searching the log backwards, and what its reports said so far."""

    def __init__(self, fd: int, size: int, words: Prefilter, window: int) -> None:
        self.window = window
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: search, report, and leave without running any cleanup
            status = 1
            try:
                os.close(read_end)
                _search(fd, size, words, window, write_end)
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        os.set_blocking(read_end, False)  # the parent looks between its own blocks, never waits
        self._pipe: int | None = read_end
        self._unread = b""
        self._windows: dict[int, tuple[int, int, int]] = {}  # start: (end, lines, read)
        self._bounds: list[int] = []  # the windows' starts and the last one's end, ascending

    def bound(self, pos: int) -> int | None:
        """The first window start (or the end of the last window) at or after ``pos``; None if none
        is known yet. The windows reported are contiguous, from the lowest start up."""
        self._take_reports()
        i = bisect.bisect_left(self._bounds, pos)
        return self._bounds[i] if i < len(self._bounds) else None

    def windows(self, pos: int) -> list[tuple[int, int, int, int]]:
        """The reported windows from ``pos`` on, in order: (start, end, lines, read)."""
        out = []
        while pos in self._windows:
            end, lines, read = self._windows[pos]
            out.append((pos, end, lines, read))
            pos = end
        return out

    def _take_reports(self) -> None:
        if self._pipe is None:
            return
        try:
            data = os.read(self._pipe, 1 << 16)
        except BlockingIOError:
            return
        if not data:  # the child is done (or gone)
            self._close_pipe()
            return
        data = self._unread + data
        whole = len(data) - len(data) % _REPORT.size
        self._unread = data[whole:]
        for start, end, lines, read in _REPORT.iter_unpack(data[:whole]):
            if not self._bounds:
                self._bounds.append(end)
            self._windows[start] = (end, lines, read)
            bisect.insort(self._bounds, start)

    def _close_pipe(self) -> None:
        if self._pipe is not None:
            os.close(self._pipe)
            self._pipe = None

    def close(self) -> None:
        """End the child (once the parent has met it, or on the way out: ``searching``); the
        windows it reported stay."""
        if self.pid == 0:  # (closed already)
            return
        self._close_pipe()  # a child still writing gets EPIPE and exits
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        self.pid = 0


def _search(fd: int, size: int, words: Prefilter, window: int, out: int) -> None:
    """The child's work: from the last whole line of the first ``size`` bytes back to the start,
    one report per window of whole lines (a window with no line start in it grows back to one,
    and is the parent's to read)."""
    buf = bytearray(window)
    end = _line_start(fd, size, buf)
    while end > 0:
        start = max(0, end - window)
        got = _read(fd, buf, start, end)
        # where the first line that starts in the window starts (its last byte ends the line before `end`)
        cut = buf.find(b"\n", 0, got - 1) + 1 if start else 0
        if start and not cut:  # the window is inside one line, longer than the window
            report = (_line_start(fd, start, buf), end, 0, 1)
        else:
            hit = len(words.positions(buf, cut, got)) > 0
            report = (start + cut, end, newlines(buf, cut, got), int(hit))
        os.write(out, _REPORT.pack(*report))
        end = report[0]


def _line_start(fd: int, pos: int, buf: bytearray) -> int:
    """The offset just after the last newline before ``pos`` (0: none), read back with ``buf``."""
    while pos > 0:
        start = max(0, pos - len(buf))
        got = _read(fd, buf, start, pos)
        nl = buf.rfind(b"\n", 0, got)
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0


def _read(fd: int, buf: bytearray, start: int, end: int) -> int:
    """Read ``[start, end)`` into the start of ``buf``; OSError if the file no longer holds it."""
    got = os.preadv(fd, [memoryview(buf)[: end - start]], start)
    if got != end - start:
        raise OSError("the log changed under the helper")
    return got
