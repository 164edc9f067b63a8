"""One follower: the tail algorithm and its inotify wake-ups, for local and remote logs alike.

Standard library only and Python 3.6 syntax: :class:`tui.sources.local.LocalTailer` runs it
here, and the remote tail agent (``tui.sources.tail_agent``) ships this very source to the
host it watches. The byte-exact guarantee lives here and nowhere else:

- The file is read with ``pread`` at an explicit offset — never ``mmap``, which dies with
  SIGBUS when the file is truncated under it — in chunks of at most ``CHUNK`` bytes.
- Identity of the file is its inode plus what was already read: before a chunk is trusted,
  the ``CHECK`` bytes just before the read offset are read again and compared with the ones
  delivered (a ``copytruncate`` racing a busy writer is caught this way, not only by size).
- A truncation is a gap, not a new file: when the file still begins with the bytes first
  delivered, reading goes on where it was cut (``TRUNCATED`` with the lines kept before that
  point); when it was rewritten from its start, reading starts again at 0. Bytes truncated
  away before they were read are a ``GAP``. (Bytes appended between a cut to a smaller size
  and the next look are taken for kept ones: the tailer cannot tell them apart.)
- A path that names another file (rotation, re-creation) is drained first, then the new file
  is read from its start. When the old file is still held open for writing (logrotate's
  ``create`` before the server reopens its log, a plain ``mv`` of a log still written), the
  old file is followed beside the new one until its writers are gone (``MOVED``); while both
  are read, each delivers whole lines only, so their lines never interleave mid-line.
- A FIFO is opened once and kept (closing it would make its writer's next write fail with
  EPIPE); other non-regular files are refused, their type checked with ``fstat`` after an
  ``O_NONBLOCK`` open, which cannot block on a FIFO or a device.

Guarantee: every byte appended is delivered exactly once and in order, except where a
``GAP`` says how many bytes were lost and where. One loss cannot be seen by anyone: bytes
appended and truncated away between two looks at the file (the tailer never learnt they
existed); ``copytruncate`` has the same window.

The agent ships this one file's source, so it stands alone: a split would only send two
halves of one algorithm.

A step reports what it did as tuples whose first item names them (``OPENED``, ``DATA``, …,
documented below); the local tailer turns them into ``tui.core.events``, the agent into
frames.
"""

import os
import stat
import struct
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # never run: the agent's Python 3.6 sees annotations only as strings
    import ctypes
    from collections.abc import Callable
    from typing import Final, Literal

    Opened = tuple[Literal["opened"], int, int, int, bytes, bytes]
    Data = tuple[Literal["data"], int, bytes, str | None]
    Gap = tuple[Literal["gap"], int, int, str, str | None]
    Restart = tuple[Literal["restart"], str]
    Truncated = tuple[Literal["truncated"], int, int]
    Wait = tuple[Literal["wait"], str]
    Moved = tuple[Literal["moved"], str | None, tuple[int, ...], bool]
    Step = Opened | Data | Gap | Restart | Truncated | Wait | Moved
    #: (dev, ino) -> pids holding that file open for writing; None: cannot be known.
    Holders = Callable[[int, int], list[int] | None]

#: Largest single read, and so the largest chunk.
CHUNK = 256 * 1024
#: Bytes re-read before the offset to confirm the file is still the one being read.
CHECK = 64
#: How often a replaced file asks /proc whether it is still held open for writing: soon
#: after inotify saw a writer close it, else every HOLDERS_QUIET s (HOLDERS_EVERY s where
#: inotify cannot watch it).
HOLDERS_EVERY, HOLDERS_QUIET = 1.0, 30.0
#: preadv flag: fail with EAGAIN instead of waiting for the disk (Linux >= 4.14).
NOWAIT: "int | None" = getattr(os, "RWF_NOWAIT", None)

# What a step reports: (OPENED, dev, ino, offset, recent, head) now reading this file of the path
# (its identity, for a resume); (DATA, offset, data, origin) bytes of a file at offset, origin
# None for the file at the path, else the path an older file was moved to; (GAP, offset,
# nbytes, reason, origin); (RESTART, reason) a new file at the path, read from its start
# ("rotated", "recreated"); (TRUNCATED, size, lines) the file was cut to size bytes holding
# ``lines`` newlines, reading goes on there; (WAIT, reason) no readable file at the path,
# reported once per reason; (MOVED, moved_to, pids, done) the old file, now at moved_to
# (None: deleted), is still written by pids and followed, until done.
OPENED: "Final" = "opened"
DATA: "Final" = "data"
GAP: "Final" = "gap"
RESTART: "Final" = "restart"
TRUNCATED: "Final" = "truncated"
WAIT: "Final" = "wait"
MOVED: "Final" = "moved"


def _missing_directory(path: str) -> "str | None":
    """The highest directory on the log's path that does not exist (None: its directory exists)."""
    missing = None
    folder = os.path.dirname(path)
    while folder and not os.path.isdir(folder):
        missing = folder
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return missing


def _file_type(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def where(fd: int) -> "str | None":
    """The path an open file now has (after a rename), or None once it was deleted."""
    try:
        link = os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        return None
    return None if link.endswith(" (deleted)") or not link.startswith("/") else link


def delivered_ends(head: bytes, recent: bytes, offset: int, data: bytes) -> "tuple[bytes, bytes]":
    """The first and the last ``CHECK`` bytes delivered of a file, ``head`` and ``recent`` before,
    once ``data`` read at ``offset`` is too: what tells the same file from one truncated (the
    follower's, and a remote tailer's copy of them for a resume)."""
    if offset < CHECK:
        head = (head + data[: CHECK - offset])[:CHECK]
    return head, (recent + data[-CHECK:])[-CHECK:]


class _File:
    """One open file being read, and what was delivered from it."""

    def __init__(self, fd: int, st: os.stat_result, offset: int, recent: bytes, head: bytes) -> None:
        self.fd = fd
        self.ident = (st.st_dev, st.st_ino)
        self.fifo = stat.S_ISFIFO(st.st_mode)
        self.offset = offset  # next byte to deliver
        self.seen = offset  # largest size observed: bytes known to exist
        self.recent = recent  # the last CHECK bytes delivered
        self.head = head  # the first CHECK bytes of the file as delivered (truncation kept them?)
        self.origin: "str | None" = None  # set once the path names another file: where this one is now
        self.holders: "tuple[int, ...]" = ()  # pids writing it, as last asked
        self.asked = -1e9  # when they were last asked (monotonic)
        self.closes = 0  # closes after writing that inotify reported
        self.closes_seen = 0  # ... as of the last ask
        self.watch = -1  # inotify watch descriptor

    def deliver(self, data: bytes) -> "Data":
        """A DATA tuple for ``data`` (not empty) read at the offset."""
        event: "Data" = (DATA, self.offset, data, self.origin)
        self.head, self.recent = delivered_ends(self.head, self.recent, self.offset, data)
        self.offset += len(data)
        self.seen = max(self.seen, self.offset)
        return event

    def still_same(self) -> bool:
        if not self.recent:
            return True
        return os.pread(self.fd, len(self.recent), self.offset - len(self.recent)) == self.recent


def _whole_lines(data: bytes) -> bytes:
    """``data`` cut after its last newline (a full chunk is kept whole: a line that long)."""
    if len(data) < CHUNK:
        return data[: data.rfind(b"\n") + 1]
    return data


class Follower:
    """The tail algorithm for one path (see the module docstring). Synchronous: the caller
    runs :meth:`step` when a wake-up or a timeout says so, and forwards what it returns.

    ``holders(dev, ino)`` names the pids holding a file open for writing (a list; None when
    that cannot be known): it decides whether a replaced file is still worth following.
    ``on_open(fd)`` and ``on_close(fd)`` let the wake-ups watch the files being read.
    """

    def __init__(
        self,
        path: str,
        from_end: bool = False,
        chunk: int = CHUNK,
        holders: "Holders | None" = None,
        on_open: "Callable[[_File], None] | None" = None,
        on_close: "Callable[[_File], None] | None" = None,
    ) -> None:
        self.path = path
        self.chunk = chunk
        self.holders = holders
        self.on_open: "Callable[[_File], None]" = on_open or (lambda f: None)
        self.on_close: "Callable[[_File], None]" = on_close or (lambda f: None)
        self.skip: "tuple[tuple[int, int], int] | None" = None  # (ident, size) of a file whose content is skipped
        if from_end:
            try:
                st = os.stat(path)
                self.skip = ((st.st_dev, st.st_ino), st.st_size)
            except OSError:
                pass  # not there yet: whatever appears is new
        self.cur: "_File | None" = None  # the file at the path
        self.old: "list[_File]" = []  # files moved away from the path that are still written
        self.replaced: "str | None" = None  # the path names another file: drain once more, then switch
        # The path's next file, opened the moment it was seen: held, it is read whole even if
        # the path is re-created again before its turn (fd, stat).
        self.pending: "tuple[int, os.stat_result] | None" = None
        #: Files that arrived at the path after the first and were taken: a new file read (a
        #: RESTART), or the followed one renamed back. Set against the creations inotify saw,
        #: the difference is the files that came and went unseen (LocalTailer reports them).
        self.arrivals = 0
        self.restart: "str | None" = None  # reason to report when the next file opens
        self.waiting: "str | None" = None  # last WAIT reason (reported once)
        self.nowait = NOWAIT is not None  # page-cache reads without blocking (read_cached)
        self._buf: "bytearray | None" = None

    # ------------------------------------------------------------ what callers see

    @property
    def offset(self) -> int:
        return self.cur.offset if self.cur is not None else 0

    def position(self) -> "tuple[int, int, int, bytes] | None":
        """``(dev, ino, offset, recent)`` of the file at the path, or None: enough to resume."""
        f = self.cur
        if f is None or f.fifo:
            return None
        return f.ident[0], f.ident[1], f.offset, f.recent

    def close(self) -> None:
        for f in [self.cur, *self.old]:
            if f is not None:
                self._close(f)
        self.cur, self.old = None, []
        if self.pending is not None:
            os.close(self.pending[0])
            self.pending = None

    def resume(self, dev: int, ino: int, offset: int, recent: bytes, head: bytes) -> "list[Step]":
        """Pick up the file followed before (a dropped connection): at the path, or found
        again in its directory if it was rotated meanwhile. ``recent`` and ``head``: the last and
        the first bytes delivered before, not read again here: a file truncated and written
        again meanwhile begins with other bytes now, and is re-read from its start."""
        fd = -1
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (dev, ino):
                os.close(fd)
                fd = -1
        except OSError:
            if fd >= 0:
                os.close(fd)
            fd = -1
        if fd < 0:
            fd = _find_inode(os.path.dirname(self.path) or ".", dev, ino)
        self.skip = None
        if fd < 0:
            self.restart = "recreated"  # gone; what it held past offset went with it
            return []
        return self._adopt(fd, os.fstat(fd), offset, recent, head)  # step() checks the bytes are the same

    def step(self) -> "tuple[list[Step], bool]":
        """Do the next piece of work: ``(events, more)``, more meaning more is ready now."""
        events: "list[Step]" = []
        more = False
        for f in list(self.old):
            more = self._step_old(f, events) or more
        if self.cur is None:
            more = self._open(events) or more
        else:
            more = self._read(self.cur, events) or more
        return events, more

    def read_cached(self) -> "list[Data] | None":
        """The next chunk of the path's file straight from the page cache (``preadv`` with
        ``RWF_NOWAIT``), or None when that cannot be done without blocking (not cached, a
        filesystem without it such as tmpfs or NFS, end of file, anything unusual): then
        :meth:`step` must run, off the event loop. Fresh appends are in the page cache, so
        this is what makes a new line arrive in a fraction of a millisecond.
        """
        f = self.cur
        if f is None or f.fifo or self.old or self.replaced is not None or NOWAIT is None or not self.nowait:
            return None
        if self._buf is None:
            self._buf = bytearray(self.chunk)
        try:
            n = os.preadv(f.fd, [self._buf], f.offset, NOWAIT)
            if n <= 0:
                return None
            # fstat of an open file on a filesystem with RWF_NOWAIT (local ones, not NFS)
            # is answered from memory; the size is what a gap will count if truncated.
            size = os.fstat(f.fd).st_size
            data = bytes(memoryview(self._buf)[:n])
            if f.recent:  # the same identity check as step()'s, after the read
                check = bytearray(len(f.recent))
                got = os.preadv(f.fd, [check], f.offset - len(f.recent), NOWAIT)
                if got != len(check) or check != f.recent:
                    return None
        except BlockingIOError:
            return None
        except OSError as exc:
            if exc.errno in (95, 22, 38):  # EOPNOTSUPP, EINVAL, ENOSYS: not on this filesystem
                self.nowait = False
            return None
        f.seen = max(f.seen, size)
        return [f.deliver(data)]

    # ------------------------------------------------------------ the file at the path

    def _wait(self, reason: str, events: "list[Step]") -> bool:
        if reason != self.waiting:
            self.waiting = reason
            events.append((WAIT, reason))
        return False

    def _open(self, events: "list[Step]") -> bool:
        path = self.path
        if self.pending is not None:  # the file seen at the path when the last one was replaced
            fd, st = self.pending
            self.pending = None
        else:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            except FileNotFoundError:
                missing = _missing_directory(path)
                if missing is not None:  # (the server may make it as it starts: waited for, said as it is)
                    return self._wait("%s: its directory %s does not exist, waiting for it to appear" % (path, missing),
                                      events)
                return self._wait("%s: no such file yet, waiting for it to appear" % path, events)
            except PermissionError:
                return self._wait("%s: permission denied, retrying" % path, events)
            except OSError as exc:
                why = " ".join(str(exc.strerror or exc).split())
                return self._wait("%s: cannot open (%s), retrying" % (path, why), events)
            st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            os.close(fd)
            return self._wait("%s: is %s, waiting for a log file" % (path, _file_type(st.st_mode)), events)
        start = 0
        skip, self.skip = self.skip, None
        if skip is not None and skip[0] == (st.st_dev, st.st_ino) and skip[1] <= st.st_size:
            start = skip[1]
        recent = os.pread(fd, min(CHECK, start), start - min(CHECK, start)) if start and stat.S_ISREG(st.st_mode) else b""
        head = os.pread(fd, min(CHECK, start), 0) if start and stat.S_ISREG(st.st_mode) else b""
        if self.restart:
            events.append((RESTART, self.restart))
            self.restart = None
            self.arrivals += 1
        events.extend(self._adopt(fd, st, start, recent, head))
        return True

    def _adopt(self, fd: int, st: os.stat_result, offset: int, recent: bytes, head: bytes) -> "list[Step]":
        f = _File(fd, st, offset, recent, head)
        self.cur = f
        self.waiting = None
        self.on_open(f)
        return [(OPENED, st.st_dev, st.st_ino, offset, recent, head)]

    def _read(self, f: _File, events: "list[Step]") -> bool:
        if f.fifo:
            return self._read_fifo(f, events)
        size = os.fstat(f.fd).st_size
        data = os.pread(f.fd, self.chunk, f.offset) if size > f.offset else b""
        # Trust the data only if the bytes before it are still the ones delivered:
        # checked *after* the read, so a truncation before or during it is seen.
        if size < f.offset or not f.still_same():
            self._truncated(f, events)
            return True
        if data:
            f.seen = max(f.seen, size)
            if self.old:
                data = _whole_lines(data)
            if data:
                events.append(f.deliver(data))
                return True
        # At the end of this file: does the path still name it?
        if self.replaced is None:
            return self._check_path(f, events)
        self.restart, self.replaced = self.replaced, None
        if f.origin is not None:  # it was reported moved: it is finished now
            events.append((MOVED, f.origin, (), True))
        self._close(f)
        self.cur = None
        return True

    def _read_fifo(self, f: _File, events: "list[Step]") -> bool:
        try:
            data = os.read(f.fd, self.chunk)
        except (BlockingIOError, InterruptedError):
            return False
        if not data:  # no writer at the moment: keep it open for the next one
            return False
        events.append(f.deliver(data))
        return True

    def _check_path(self, f: _File, events: "list[Step]") -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            # Keep reading the old file (a writer may still hold it) until a new one appears.
            # A writer that still has it makes it the file being written: say where it went.
            moved_to = where(f.fd)
            if f.origin is None and moved_to is not None and self._holders(f):
                f.origin = moved_to
                events.append((MOVED, moved_to, f.holders, False))
                return False
            if f.origin is None:
                return self._wait("%s: removed or renamed, waiting for a new file" % self.path, events)
            return False
        except OSError:
            return False
        if (st.st_dev, st.st_ino) == f.ident:
            if f.origin is not None:  # renamed back: the path's file again
                events.append((MOVED, f.origin, (), True))
                f.origin = None
                self.arrivals += 1
            return False
        pids = self._holders(f, force=True)
        if pids:  # still written: follow it beside the new file until its writers are gone
            origin = where(f.fd) or f.origin
            if origin is None or origin != f.origin:
                events.append((MOVED, origin, tuple(pids), False))
            f.origin = origin or self.path + " (deleted)"
            self.old.append(f)
            self.cur = None
            self.restart = "recreated" if os.fstat(f.fd).st_nlink == 0 else "rotated"
            return True
        self.replaced = "recreated" if os.fstat(f.fd).st_nlink == 0 else "rotated"
        self._hold_next()
        return True  # drain once more: bytes written just before the rename

    def _hold_next(self) -> None:
        """Open the path's new file now, before the old one is drained: a log re-created again
        meanwhile cannot take it away unread (it is read whole once its turn comes)."""
        if self.pending is not None:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return  # gone again already: the next look at the path finds what there is
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return
        self.pending = (fd, st)

    def _truncated(self, f: _File, events: "list[Step]") -> None:
        size = os.fstat(f.fd).st_size
        lost = f.seen - f.offset
        if lost > 0:
            events.append((GAP, f.offset, lost, "truncated before it was read", f.origin))
        # Cut to a smaller size: the file still begins with the bytes first delivered (all
        # CHECK of them: a shorter match proves little, and a file cut that short is re-read
        # whole). Bytes appended after the cut and before this look are taken for kept ones.
        head = f.head
        kept = size if len(head) == CHECK and CHECK <= size <= f.offset and os.pread(f.fd, CHECK, 0) == head else 0
        events.append((TRUNCATED, kept, _count_lines(f.fd, kept)))
        f.offset = f.seen = kept
        f.recent = os.pread(f.fd, min(CHECK, kept), kept - min(CHECK, kept)) if kept else b""
        if not kept:
            f.head = b""

    # ------------------------------------------------------------ old files still written

    def _step_old(self, f: _File, events: "list[Step]") -> bool:
        size = os.fstat(f.fd).st_size
        data = os.pread(f.fd, self.chunk, f.offset) if size > f.offset else b""
        if size < f.offset or not f.still_same():
            self._finish_old(f, events, "truncated")  # nobody can tell what it holds now
            return True
        data = _whole_lines(data)
        if data:
            events.append(f.deliver(data))
            return True
        if self._holders(f):
            return False
        rest = os.pread(f.fd, self.chunk, f.offset)  # written before the last writer closed it
        if rest:
            events.append(f.deliver(rest))
            return True
        self._finish_old(f, events, "")
        return True

    def _finish_old(self, f: _File, events: "list[Step]", why: str) -> None:
        events.append((MOVED, f.origin, (), True))
        self.old.remove(f)
        self._close(f)

    def _holders(self, f: _File, force: bool = False) -> "tuple[int, ...] | None":
        """Pids holding ``f`` open for writing (asked at most every HOLDERS_EVERY s)."""
        if self.holders is None:
            return None
        now = time.monotonic()
        every = HOLDERS_QUIET if f.watch >= 0 else HOLDERS_EVERY
        if force or f.closes != f.closes_seen or now - f.asked >= every:
            f.asked, f.closes_seen = now, f.closes
            pids = self.holders(*f.ident)
            f.holders = tuple(pids or ())
        return f.holders

    def _close(self, f: _File) -> None:
        self.on_close(f)
        if f.fd >= 0:
            os.close(f.fd)
            f.fd = -1


def _count_lines(fd: int, size: int) -> int:
    """Newlines in the first ``size`` bytes of the file (read in chunks: memory stays bounded)."""
    count, pos = 0, 0
    while pos < size:
        data = os.pread(fd, min(CHUNK * 4, size - pos), pos)
        if not data:
            break
        count += data.count(b"\n")
        pos += len(data)
    return count


def _find_inode(directory: str, dev: int, ino: int) -> int:
    """Open the file with this identity in ``directory`` (rotation renames it there), or -1."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return -1
    for entry in entries:
        try:
            if entry.inode() != ino or not entry.is_file(follow_symlinks=False):
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) == (dev, ino):
            return fd
        os.close(fd)
    return -1


# ---------------------------------------------------------------- wake-ups

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, IN_OPEN = 0x002, 0x004, 0x008, 0x020
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x040, 0x080, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_IGNORED, IN_Q_OVERFLOW = 0x400, 0x800, 0x8000, 0x4000
IN_ISDIR = 0x40000000  # the event's subject is a directory
DIR_MASK = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF
FILE_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)


def _libc() -> "ctypes.CDLL | None":
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        return libc
    except (ImportError, OSError, AttributeError):
        return None


_LIBC: "ctypes.CDLL | None" = None


class Inotify:
    """Linux inotify through libc: three calls, no library. ``fd`` is -1 where it cannot be
    had (not Linux, the instance limit reached); then every call is a no-op and the caller's
    timeout turns waiting into a poll. Why not a library: reading this descriptor from a
    select or an event loop costs nothing at all while the log is quiet."""

    def __init__(self, use: bool = True) -> None:
        global _LIBC
        self.fd = -1
        if use:
            _LIBC = _LIBC or _libc()
            if _LIBC is not None:
                self.fd = _LIBC.inotify_init1(os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))

    def add(self, path: "str | bytes", mask: int) -> int:
        """A watch on ``path`` (bytes or str; a /proc/self/fd link watches that open file), or -1."""
        if self.fd < 0 or _LIBC is None:  # fd >= 0 only once libc was had
            return -1
        wd: int = _LIBC.inotify_add_watch(self.fd, os.fsencode(path), mask)
        return wd

    def remove(self, wd: int) -> None:
        if self.fd >= 0 and wd >= 0 and _LIBC is not None:
            _LIBC.inotify_rm_watch(self.fd, wd)

    def read(self) -> "list[tuple[int, int, bytes]]":
        """Every pending ``(wd, mask, name)``."""
        out = []
        while self.fd >= 0:
            try:
                buf = os.read(self.fd, 64 * 1024)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            if not buf:
                break
            pos = 0
            while pos + _HEADER.size <= len(buf):
                wd, mask, _cookie, length = _HEADER.unpack_from(buf, pos)
                name = buf[pos + _HEADER.size : pos + _HEADER.size + length].rstrip(b"\0")
                pos += _HEADER.size + length
                out.append((wd, mask, name))
        return out

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Wakeups:
    """Which changes to a log path matter: the path's directory (the file appearing, renamed,
    deleted, its permissions changing) and the inodes being read (appends, also through a
    symlink into another directory, also once renamed). Spurious wake-ups are allowed;
    missed ones are not (where inotify cannot see, the caller polls)."""

    def __init__(self, path: str, use_inotify: bool = True) -> None:
        self.inotify = Inotify(use_inotify)
        self.dir = os.path.dirname(path) or "."
        self.name = os.fsencode(os.path.basename(path))
        self.dir_wd = -1
        self.files: "dict[int, list[_File]]" = {}  # wd -> the followed files on that inode
        #: Something other than appends to a followed file may have happened (the path was
        #: renamed, deleted, created, chmod-ed; events lost; a timeout): look at the path
        #: again. Appends alone leave it False.
        self.path_changed = True
        #: Files created at the path (IN_CREATE, IN_MOVED_TO of its name) since the watch began;
        #: None once the kernel's queue overflowed (events lost: creations cannot be counted).
        self.created: "int | None" = 0
        self.watch_dir()

    @property
    def fd(self) -> int:
        return self.inotify.fd

    @property
    def active(self) -> bool:
        """True while inotify watches the directory (else callers must poll)."""
        return self.dir_wd >= 0

    def watch_dir(self) -> None:
        if self.dir_wd < 0:
            self.dir_wd = self.inotify.add(self.dir, DIR_MASK)

    def watch_file(self, f: _File) -> None:
        """Follow the inode of an open ``_File`` (call right after opening it)."""
        wd = self.inotify.add("/proc/self/fd/%d" % f.fd, FILE_MASK)
        f.watch = wd
        if wd >= 0:
            self.files.setdefault(wd, []).append(f)

    def unwatch_file(self, f: _File) -> None:
        wd, f.watch = f.watch, -1
        if f in self.files.get(wd, ()):
            self.files[wd].remove(f)
            if not self.files[wd]:
                del self.files[wd]
                if wd != self.dir_wd:
                    self.inotify.remove(wd)

    def drain(self) -> bool:
        """Read the pending events: True when one concerns the path or a followed file."""
        relevant = False
        for wd, mask, name in self.inotify.read():
            if mask & IN_Q_OVERFLOW:
                self.created = None
            elif (wd == self.dir_wd and name == self.name and mask & (IN_CREATE | IN_MOVED_TO) and not mask & IN_ISDIR
                  and self.created is not None):  # (a directory made at the path is no log file lost)
                self.created += 1
            if mask & IN_IGNORED:  # the watched directory or file is gone
                if wd == self.dir_wd:
                    self.dir_wd = -1
                for f in self.files.pop(wd, ()):
                    f.watch = -1  # no more events from it: ask /proc at the faster pace
            elif wd == self.dir_wd and name and name != self.name:
                continue  # another file in the same directory
            elif mask & IN_CLOSE_WRITE:
                for f in self.files.get(wd, ()):
                    f.closes += 1  # a writer let go: worth asking who still writes it
            relevant = True
            if wd not in self.files or mask & ~(IN_MODIFY | IN_CLOSE_WRITE):
                self.path_changed = True
        return relevant

    def close(self) -> None:
        self.inotify.close()
        self.dir_wd = -1
        self.files = {}
