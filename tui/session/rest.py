"""The rest of a final log: what is still unread once the process writing it is gone.

A server that dies writes its last lines — often the error that explains it — just before it
goes, and the watcher may be behind (a 1.4 GB log read from the start, a burst of 8 tracebacks).
Judging the moment the process is seen gone would judge a log without its ending: "DEAD: exit
code 1" with the cause still on disk. :class:`RestOfLog` measures what is left of a local log
(its size against the bytes taken in) so the verdict waits until it is read — or until reading
made no progress for ``REST_PATIENCE_S`` (a file that cannot be read further is judged on what
was read). A remote log or a pipe has no size to compare: nothing to wait for.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

#: How long the rest of a gone writer's log may go without a byte read before it is judged anyway.
REST_PATIENCE_S = 10.0


def size_words(nbytes: int) -> str:
    """``1.4 GB``, ``380 MB``, ``12 kB``: a log's size as people say it."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}" if nbytes < 10 * scale else f"{nbytes / scale:.0f} {unit}"
    return f"{nbytes} bytes"


class RestOfLog:
    """What is left to read of the local log at ``path``; ``taken``: the file offset read up to.

    Also the log's **backlog**: what the file held when the watch began reading it from its start.
    A watch of a finished log that decided "ready" at line 111 must not end there with 24 MB still
    unread — the log may say the server died an hour later; its ending holds until the backlog is read.
    """

    def __init__(self, path: str | None, taken: Callable[[], int]) -> None:
        self.path = path
        self.taken = taken
        #: Bytes still unread of a log known to be final, as last measured (None: none, or not final).
        self.unread: int | None = None
        self._progress: tuple[int, float] | None = None  # (unread bytes, when last fewer)
        self._backlog: int | None = None  # the file's size when the watch began reading it from its start

    def mark_backlog(self) -> None:
        """The watch begins reading the file from its start: what it holds now is its backlog."""
        if self.path is None:
            return
        try:
            self._backlog = os.stat(self.path).st_size or None
        except OSError:
            self._backlog = None  # (no file yet: nothing to read first)

    def forget_backlog(self) -> None:
        """The file was replaced or truncated: what it held is not there to read any more."""
        self._backlog = None

    def backlog_left(self) -> int:
        """Bytes of the backlog not read yet (0 once read, or where there is none)."""
        if self._backlog is None:
            return 0
        left = max(0, self._backlog - self.taken())
        if not left:
            self._backlog = None
        return left

    def unread_bytes(self) -> int | None:
        """Bytes of the local log file not taken in yet; None where unknown (a remote log, a pipe)."""
        if self.path is None:
            return None
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return None
        return max(0, size - self.taken())

    def left(self) -> int:
        """What is left to read of a log known to be final: 0 once all is read, where unknown, or
        when reading made no progress for REST_PATIENCE_S."""
        unread = self.unread_bytes() or 0
        now = time.monotonic()
        if unread and (self._progress is None or unread < self._progress[0]):
            self._progress = (unread, now)
        elif unread and self._progress is not None and now - self._progress[1] > REST_PATIENCE_S:
            unread = 0  # stuck (a file that cannot be read further): judge on what was read
        self.unread = unread or None
        return unread

    def words(self) -> str | None:
        """For a log known to be final (its Slurm task ended): "reading the rest of the log (1.4 GB)"
        while bytes are left to read, None once read to its end (or when it cannot be read further)."""
        rest = self.left()
        return f"reading the rest of the log ({size_words(rest)})" if rest else None
