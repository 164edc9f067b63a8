"""Follow a local log file: lossless through truncation, rotation, re-creation and ``mv``.

The tail algorithm is :class:`tui.sources.follow.Follower` (the remote agent runs the
same code); this module runs it on the event loop. Fresh appends are read on the loop when
the kernel promises not to block (``preadv`` with ``RWF_NOWAIT``: the bytes are in the page
cache); everything else — opening, ``stat``, the first read of a cold file, filesystems
without RWF_NOWAIT such as tmpfs and NFS, asking /proc who still writes a replaced file —
runs in a worker thread. Wake-ups come from inotify (:class:`PathWatch`), else a poll.
Each chunk is handed to the consumer before the next is read: a slow consumer slows the
reading, memory stays bounded.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from tui.core.events import LogChunk, LogGap, LogMoved, LogRestart, LogTruncated, LogWaiting
from tui.sources import follow, procscan
from tui.sources.follow import CHUNK, Follower, Wakeups

if TYPE_CHECKING:
    from tui.sources.follow import Step  # a type only: follow.py defines it for the checker

__all__ = ["CHUNK", "LocalTailer", "PathWatch", "file_writers"]

#: With inotify, look anyway this often (NFS written from another host, lost events).
_SAFETY_POLL = 1.0
#: Without inotify: poll fast right after a change, back off to _POLL_MAX while the file
#: is active (changed in the last _ACTIVE_S), and to _POLL_QUIET once it has gone quiet.
_POLL_MIN, _POLL_MAX, _POLL_QUIET, _ACTIVE_S = 0.005, 0.1, 0.5, 30.0

#: Worker threads for the blocking steps of all tailers (created on demand).
_WORKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tailer")

LogEvent = LogChunk | LogGap | LogRestart | LogTruncated | LogWaiting | LogMoved


def file_writers(dev: int, ino: int) -> list[int]:
    """Pids of other processes holding the file ``dev``/``ino`` open for writing."""
    return procscan.holders(dev, ino)[0]


#: Who writes a file, where /proc can tell (else a replaced file is drained once, then left).
_HOLDERS = file_writers if procscan.available() else None


class PathWatch:
    """Await changes to one path (:class:`tui.sources.follow.Wakeups` on the event loop:
    the inotify descriptor is read with ``add_reader``, no thread, no timer while quiet)."""

    def __init__(self, path: str, *, use_inotify: bool = True) -> None:
        self.wakeups = Wakeups(path, use_inotify)
        self._event = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        if self.wakeups.fd >= 0:
            self._loop.add_reader(self.wakeups.fd, self._on_readable)

    @property
    def active(self) -> bool:
        """True while inotify watches the directory (else callers must poll)."""
        return self.wakeups.active

    @property
    def path_changed(self) -> bool:
        return self.wakeups.path_changed

    @path_changed.setter
    def path_changed(self, value: bool) -> None:
        self.wakeups.path_changed = value

    def _on_readable(self) -> None:
        if self.wakeups.drain():
            self._event.set()

    def notify(self) -> None:
        """Wake the waiter now (used by ``close``)."""
        self._event.set()

    async def wait(self, timeout: float) -> bool:
        """Until a change (True) or ``timeout`` seconds (False)."""
        self.wakeups.watch_dir()  # the directory may exist by now
        if not self._event.is_set():
            try:
                async with asyncio.timeout(timeout):
                    await self._event.wait()
            except TimeoutError:
                self.path_changed = True
                return False
        self._event.clear()
        return True

    def close(self) -> None:
        if self.wakeups.fd >= 0:
            try:
                self._loop.remove_reader(self.wakeups.fd)
            except (RuntimeError, ValueError):  # loop already closed
                pass
        self.wakeups.close()


class _Unseen:
    """Files created at the path (inotify counts them) that the follower never took: a log
    re-created faster than it is read. Counted only after a step that looked at the path, so a
    file about to be taken is never counted; an undercount is possible (events lost, a file
    created between the first open and the first count), an overcount is not."""

    def __init__(self, watch: PathWatch, follower: follow.Follower) -> None:
        self._watch = watch
        self._wakeups = watch.wakeups
        self._follower = follower
        self._base: int | None = None  # creations counted when the first file was taken
        self._reported = 0

    def count(self, created: int | None, steps: Sequence[Step], settled: bool) -> int:
        """Newly unseen files, given the creations counted before the step that made ``steps``
        (``settled``: that step reached the end of the file and looked at the path)."""
        if self._base is None:
            if not any(item[0] == follow.OPENED for item in steps):
                return 0
            if self._wakeups.drain():  # the first file's own creation is among what is pending
                self._watch.notify()
            self._base = self._wakeups.created
            return 0
        if not settled or created is None or self._wakeups.created is None:
            return 0  # the kernel dropped events: nothing can be counted any more
        lost = created - self._base - self._follower.arrivals - self._reported
        if lost <= 0:
            return 0
        self._reported += lost
        return lost


class LocalTailer:
    """Async producer of the events of one local log path (see the module docstring).

    ``from_end=True`` skips what the file holds when the tailer is created (attach to a
    huge log of a long-running server); bytes appended after that, and files appearing
    later, are read whole. ``holders`` names the writers of a file (default: from /proc)
    so that a replaced file still being written is followed to its end.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        from_end: bool = False,
        source: str | None = None,
        use_inotify: bool = True,
        chunk_size: int = CHUNK,
        holders: Callable[[int, int], list[int]] | None = _HOLDERS,
    ) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.source = source if source is not None else os.fspath(path)
        self.from_end = from_end  # (else what the file holds is read first: its backlog)
        self._use_inotify = use_inotify
        self._chunk = chunk_size
        self._follower = Follower(self.path, from_end=from_end, chunk=chunk_size, holders=holders)
        self._closed = False
        self._watch: PathWatch | None = None

    @property
    def reread_path(self) -> str:
        """The file whose bytes this tailer delivers: a view may re-read old lines from it by offset."""
        return self.path

    @property
    def offset(self) -> int:
        """Offset in the current file of the next byte to be delivered."""
        return self._follower.offset

    async def events(self) -> AsyncIterator[LogEvent]:
        self._watch = watch = PathWatch(self.path, use_inotify=self._use_inotify)
        follower = self._follower
        follower.on_open, follower.on_close = watch.wakeups.watch_file, watch.wakeups.unwatch_file
        delay = _POLL_MIN
        active = time.monotonic()  # the last time something happened
        step: Future[tuple[list[Step], bool]] | None = None
        unseen = _Unseen(watch, follower)
        try:
            while not self._closed:
                done: Sequence[Step]
                cached = follower.read_cached()
                if cached is not None:
                    done = cached
                    # Only appends since the last full step (inotify says so): no need to
                    # look at the path again in the worker before waiting.
                    only_appends = watch.active and not watch.path_changed
                    more = len(cached[0][2]) == self._chunk or not only_appends
                else:
                    watch.path_changed = False  # this step looks at the path
                    created = watch.wakeups.created  # the files created before it looked
                    step = _WORKERS.submit(follower.step)
                    stepped, more = await asyncio.wrap_future(step)
                    done = stepped
                    # at the end (the path looked at), what the follower did not take came and went
                    lost = unseen.count(created, done, settled=not more)
                    if lost:
                        yield LogGap(self.source, follower.offset, 0, "written to a file at the path that was"
                                     " replaced before it could be opened: its size cannot be known", files=lost)
                for item in done:
                    event = self._event(item)
                    if event is not None:
                        yield event
                if self._closed:
                    break
                if more or done:
                    delay, active = _POLL_MIN, time.monotonic()
                if more:
                    await asyncio.sleep(0)  # let the loop breathe between chunks
                    continue
                if watch.active:
                    await watch.wait(_SAFETY_POLL)
                elif await watch.wait(delay):
                    delay = _POLL_MIN
                else:
                    quiet = time.monotonic() - active > _ACTIVE_S
                    delay = min(delay * 2, _POLL_QUIET if quiet else _POLL_MAX)
        finally:
            watch.close()
            if step is not None and not step.done():
                # Cancelled while a step runs in the worker: close the files after it, never
                # under it (a descriptor number could be reused by then).
                step.add_done_callback(lambda _: follower.close())
            else:
                follower.close()

    def _event(self, item: Step) -> LogEvent | None:
        if item[0] == follow.DATA:
            return LogChunk(item[3] or self.source, item[1], item[2], time.time())
        if item[0] == follow.OPENED:
            return None
        if item[0] == follow.GAP:
            return LogGap(item[4] or self.source, item[1], item[2], item[3])
        if item[0] == follow.RESTART:
            return LogRestart(self.source, item[1])
        if item[0] == follow.TRUNCATED:
            return LogTruncated(self.source, item[1], item[2])
        if item[0] == follow.WAIT:
            return LogWaiting(self.source, item[1])
        return LogMoved(self.source, item[1] or f"{self.path} (deleted)", item[2], item[3])

    async def close(self) -> None:
        """Stop: the ``events()`` iterator ends after its current step."""
        self._closed = True
        if self._watch is not None:
            self._watch.notify()
