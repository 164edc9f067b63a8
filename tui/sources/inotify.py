"""Wake-ups for a log path: Linux inotify through libc, or an adaptive poll.

Why not a library: inotify is three libc calls, and reading its file descriptor
from the asyncio loop (``add_reader``) costs nothing at all while the log is
quiet — no thread, no timer tick. Watchers built on a polling worker thread
(watchfiles' Rust loop wakes every ``step`` ms) cost a little even when idle.

A :class:`PathWatch` watches the log's *directory* (the file appearing, being
renamed or deleted, its permissions changing) and the open file's inode
(appends, also through a symlink into another directory). Where inotify is
missing (not Linux, watch limit reached) or cannot see changes (NFS written from
another host), the timeout of :meth:`PathWatch.wait` turns it into a poll.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import errno
import os
import struct

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

_DIR_MASK = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF
_FILE_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)


def _load_libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _load_libc()


class PathWatch:
    """Await changes to one path. Spurious wake-ups are allowed; missed ones are not
    (where inotify cannot be used, the caller's timeout makes it a poll)."""

    def __init__(self, path: str, *, use_inotify: bool = True) -> None:
        self.path = path
        self._dir = os.fsencode(os.path.dirname(path) or ".")
        self._name = os.fsencode(os.path.basename(path))
        self._event = asyncio.Event()
        self._fd = -1
        self._dir_wd = -1
        self._file_wd = -1
        #: Something other than appends to the open file may have happened (the path was
        #: renamed, deleted, created, chmod-ed; events lost; a timeout): the caller should
        #: look at the path again. Appends alone leave it False.
        self.path_changed = True
        self._loop = asyncio.get_running_loop()
        if use_inotify and _LIBC is not None:
            fd = _LIBC.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd >= 0:
                self._fd = fd
                self._loop.add_reader(fd, self._on_readable)
        self._watch_dir()

    @property
    def active(self) -> bool:
        """True while inotify watches the directory (else callers must poll)."""
        return self._dir_wd >= 0

    def _add(self, path: bytes, mask: int) -> int:
        if self._fd < 0:
            return -1
        return _LIBC.inotify_add_watch(self._fd, path, mask)

    def _watch_dir(self) -> None:
        if self._dir_wd < 0:
            self._dir_wd = self._add(self._dir, _DIR_MASK)

    def watch_file(self) -> None:
        """Follow the inode now at the path (call right after opening it)."""
        if self._fd < 0:
            return
        wd = self._add(os.fsencode(self.path), _FILE_MASK)
        if self._file_wd >= 0 and wd != self._file_wd and self._file_wd != self._dir_wd:
            _LIBC.inotify_rm_watch(self._fd, self._file_wd)
        self._file_wd = wd

    def _on_readable(self) -> None:
        relevant = False
        while True:
            try:
                buf = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                break
            if not buf:
                break
            pos = 0
            while pos + _HEADER.size <= len(buf):
                wd, mask, _cookie, length = _HEADER.unpack_from(buf, pos)
                name = buf[pos + _HEADER.size : pos + _HEADER.size + length].rstrip(b"\0")
                pos += _HEADER.size + length
                if mask & IN_IGNORED:  # the watched directory or file is gone
                    if wd == self._dir_wd:
                        self._dir_wd = -1
                    if wd == self._file_wd:
                        self._file_wd = -1
                elif wd == self._dir_wd and name and name != self._name:
                    continue  # another file in the same directory
                relevant = True
                if wd != self._file_wd or mask & ~(IN_MODIFY | IN_CLOSE_WRITE):
                    self.path_changed = True
        if relevant:
            self._event.set()

    def notify(self) -> None:
        """Wake the waiter now (used by ``close``)."""
        self._event.set()

    async def wait(self, timeout: float) -> bool:
        """Until a change (True) or ``timeout`` seconds (False)."""
        if self._dir_wd < 0:
            self._watch_dir()  # the directory may exist by now
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
        if self._fd >= 0:
            try:
                self._loop.remove_reader(self._fd)
            except (RuntimeError, ValueError):  # loop already closed
                pass
            os.close(self._fd)
            self._fd = -1
        self._dir_wd = self._file_wd = -1
