"""Follow a local log file: lossless through truncation, rotation and re-creation.

The file is read with ``pread`` at an explicit offset — never ``mmap``, which dies
with SIGBUS when the file is truncated under it — in chunks of at most ``CHUNK``
bytes, handing each to the consumer before reading the next: a slow consumer
slows the reading, memory stays bounded. Fresh appends are read on the loop when
the kernel promises not to block (``preadv`` with ``RWF_NOWAIT``: the bytes are in
the page cache); everything else — opening, ``stat``, the first read of a cold
file, filesystems without RWF_NOWAIT such as tmpfs and NFS — runs in a worker
thread. Wake-ups come from inotify (``tui.sources.inotify``), else a poll.

Identity of the file is its inode plus what was already read: before a chunk is
trusted, the bytes just before the read offset are read again and compared with
the ones delivered. A truncated file that was written past the old offset again
(``copytruncate`` racing a busy writer) is caught this way, not only by its size.

Guarantee: every byte appended is delivered exactly once and in order, except
where a ``LogGap`` says how many bytes were lost and where. One loss cannot be
seen by anyone: bytes appended and truncated away between two looks at the file
(the tailer never learnt they existed); ``copytruncate`` has the same window.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import time
from collections.abc import AsyncIterator
from concurrent.futures import Future, ThreadPoolExecutor

from tui.core.events import LogChunk, LogGap, LogRestart, LogWaiting
from tui.sources.inotify import PathWatch

#: Largest single read, and so the largest LogChunk.
CHUNK = 256 * 1024
#: Bytes re-read before the offset to confirm the file is still the one being read.
_CHECK = 64
#: With inotify, look anyway this often (NFS written from another host, lost events).
_SAFETY_POLL = 1.0
#: Without inotify: poll fast right after a change, back off to _POLL_MAX while the file
#: is active (changed in the last _ACTIVE_S), and to _POLL_QUIET once it has gone quiet.
_POLL_MIN, _POLL_MAX, _POLL_QUIET, _ACTIVE_S = 0.005, 0.1, 0.5, 30.0

#: preadv flag: fail with EAGAIN instead of waiting for the disk (Linux >= 4.14).
_NOWAIT = getattr(os, "RWF_NOWAIT", None)

#: Worker threads for the blocking steps of all tailers (created on demand).
_WORKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tailer")

LogEvent = LogChunk | LogGap | LogRestart | LogWaiting


class LocalTailer:
    """Async producer of the events of one local log path (see module docstring).

    ``from_end=True`` skips what the file holds when the tailer is created (attach to
    a huge log of a long-running server); bytes appended after that, and files
    appearing later, are read whole.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        from_end: bool = False,
        source: str | None = None,
        use_inotify: bool = True,
        chunk_size: int = CHUNK,
    ) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.source = source if source is not None else os.fspath(path)
        self._skip: tuple[tuple[int, int], int] | None = None  # (identity, size) to skip
        if from_end:
            try:
                st = os.stat(self.path)
                self._skip = ((st.st_dev, st.st_ino), st.st_size)
            except OSError:
                pass  # not there yet: whatever appears is new
        self._use_inotify = use_inotify
        self._chunk = chunk_size
        self._closed = False
        self._watch: PathWatch | None = None
        # the open file
        self._fd = -1
        self._ident: tuple[int, int] | None = None  # (st_dev, st_ino)
        self._offset = 0  # next byte to deliver
        self._seen = 0  # largest size observed: bytes known to exist
        self._recent = b""  # the last _CHECK bytes delivered, to re-check identity
        self._replaced: str | None = None  # path now names another file: drain, then switch
        self._restart: str | None = None  # reason to report when the next file opens
        self._waiting: str | None = None  # last LogWaiting reason (reported once)
        self._nowait = _NOWAIT is not None  # page-cache reads on the loop (see _read_cached)
        self._buf: bytearray | None = None

    # ------------------------------------------------------------ public

    @property
    def reread_path(self) -> str:
        """The file whose bytes this tailer delivers: a view may re-read old lines from it by offset."""
        return self.path

    @property
    def offset(self) -> int:
        """Offset in the current file of the next byte to be delivered."""
        return self._offset

    async def events(self) -> AsyncIterator[LogEvent]:
        self._watch = PathWatch(self.path, use_inotify=self._use_inotify)
        delay = _POLL_MIN
        active = time.monotonic()  # the last time something happened
        step: Future | None = None
        try:
            while not self._closed:
                events = self._read_cached()
                if events is not None:
                    # Only appends since the last full step (inotify says so): no need to
                    # look at the path again in the worker before waiting.
                    only_appends = self._watch.active and not self._watch.path_changed
                    more = len(events[0].data) == self._chunk or not only_appends
                else:
                    self._watch.path_changed = False  # this step looks at the path
                    step = _WORKERS.submit(self._step)
                    events, more = await asyncio.wrap_future(step)
                for event in events:
                    yield event
                if self._closed:
                    break
                if more or events:
                    delay, active = _POLL_MIN, time.monotonic()
                if more:
                    await asyncio.sleep(0)  # let the loop breathe between chunks
                    continue
                if self._watch.active:
                    await self._watch.wait(_SAFETY_POLL)
                elif await self._watch.wait(delay):
                    delay = _POLL_MIN
                else:
                    quiet = time.monotonic() - active > _ACTIVE_S
                    delay = min(delay * 2, _POLL_QUIET if quiet else _POLL_MAX)
        finally:
            self._watch.close()
            if step is not None and not step.done():
                # Cancelled while a step runs in the worker: close the file after it, never
                # under it (the descriptor number could be reused by then).
                step.add_done_callback(lambda _: self._close_fd())
            else:
                self._close_fd()

    async def close(self) -> None:
        """Stop: the ``events()`` iterator ends after its current step."""
        self._closed = True
        if self._watch is not None:
            self._watch.notify()

    # ------------------------------------------------------------ the fast path (on the loop)

    def _read_cached(self) -> list[LogEvent] | None:
        """The next chunk straight from the page cache, without a thread hop; None when
        that cannot be done without blocking (not cached, a filesystem without
        RWF_NOWAIT such as tmpfs or NFS, end of file, anything unusual): then the
        worker thread's full step runs. Fresh appends are in the page cache, so this
        is what makes a new line arrive in a fraction of a millisecond.
        """
        if self._fd < 0 or self._replaced is not None or not self._nowait:
            return None
        if self._buf is None:
            self._buf = bytearray(self._chunk)
        try:
            n = os.preadv(self._fd, [self._buf], self._offset, _NOWAIT)
            if n <= 0:
                return None
            # fstat of an open file on a filesystem with RWF_NOWAIT (local ones, not NFS)
            # is answered from memory; the size is what a gap will count if truncated.
            size = os.fstat(self._fd).st_size
            data = bytes(memoryview(self._buf)[:n])
            if self._recent:  # the same identity check as the worker's, after the read
                check = bytearray(len(self._recent))
                got = os.preadv(self._fd, [check], self._offset - len(self._recent), _NOWAIT)
                if got != len(check) or check != self._recent:
                    return None
        except BlockingIOError:
            return None
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                self._nowait = False
            return None
        self._seen = max(self._seen, size)
        return [self._deliver(data)]

    def _deliver(self, data: bytes) -> LogChunk:
        chunk = LogChunk(self.source, self._offset, data, time.time())
        self._offset += len(data)
        self._seen = max(self._seen, self._offset)
        self._recent = (self._recent + data[-_CHECK:])[-_CHECK:]
        return chunk

    # ------------------------------------------------------------ one step (worker thread)

    def _step(self) -> tuple[list[LogEvent], bool]:
        """Do the next piece of work; return its events and whether more is ready now."""
        if self._fd < 0:
            return self._open()
        return self._read()

    def _open(self) -> tuple[list[LogEvent], bool]:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            return self._wait(f"{self.path}: no such file yet, waiting for it to appear")
        except PermissionError:
            return self._wait(f"{self.path}: permission denied, retrying")
        except OSError as exc:
            return self._wait(f"{self.path}: cannot open ({exc.strerror or exc}), retrying")
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            return self._wait(f"{self.path}: is {kind}, waiting for a log file")
        self._fd = fd
        self._ident = (st.st_dev, st.st_ino)
        start = 0
        if self._skip is not None and self._skip[0] == self._ident and self._skip[1] <= st.st_size:
            start = self._skip[1]
        self._skip = None
        self._offset = self._seen = start
        self._recent = os.pread(fd, min(_CHECK, start), start - min(_CHECK, start)) if start else b""
        self._waiting = None
        if self._watch is not None:
            self._watch.watch_file()
        events: list[LogEvent] = []
        if self._restart:
            events.append(LogRestart(self.source, self._restart))
            self._restart = None
        return events, True

    def _wait(self, reason: str) -> tuple[list[LogEvent], bool]:
        if reason == self._waiting:
            return [], False
        self._waiting = reason
        return [LogWaiting(self.source, reason)], False

    def _read(self) -> tuple[list[LogEvent], bool]:
        fd = self._fd
        size = os.fstat(fd).st_size
        data = os.pread(fd, self._chunk, self._offset) if size > self._offset else b""
        # Trust the data only if the bytes before it are still the ones delivered:
        # checked *after* the read, so a truncation before or during it is seen.
        if size < self._offset or not self._still_same(fd):
            return self._truncated(), True
        if data:
            self._seen = max(self._seen, size)
            return [self._deliver(data)], True
        # At the end of this file: does the path still name it?
        if self._replaced is None:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                # Keep reading the old file (a writer may still hold it) until a new one appears.
                return self._wait(f"{self.path}: removed or renamed, waiting for a new file")
            except OSError:
                return [], False
            if (st.st_dev, st.st_ino) == self._ident:
                return [], False
            self._replaced = "recreated" if os.fstat(fd).st_nlink == 0 else "rotated"
            return [], True  # drain once more: bytes written just before the rename
        self._restart, self._replaced = self._replaced, None
        self._close_fd()
        return [], True

    def _still_same(self, fd: int) -> bool:
        if not self._recent:
            return True
        start = self._offset - len(self._recent)
        return os.pread(fd, len(self._recent), start) == self._recent

    def _truncated(self) -> list[LogEvent]:
        events: list[LogEvent] = []
        lost = self._seen - self._offset
        if lost > 0:
            events.append(LogGap(self.source, self._offset, lost, "truncated before it was read"))
        events.append(LogRestart(self.source, "truncated"))
        self._offset = self._seen = 0
        self._recent = b""
        return events

    def _close_fd(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            self._ident = None
        self._offset = self._seen = 0
        self._recent = b""
