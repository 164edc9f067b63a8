"""Remote half of the SSH log tailer: follows one file, writes framed messages on stdout.

Sent to the remote host as the program text of ``python3 -c`` (``tui.sources.remote_tail``),
so it stays standard-library only and runs on any Python 3.6+. Nothing it reads is executed:
the path is a plain argument, the file's bytes are only copied to stdout.

The rules are those of ``tui.sources.local.LocalTailer``, step for step: reads with
``os.pread`` at an explicit offset; before data is trusted, the bytes just before the
offset are compared with the ones delivered (a ``copytruncate`` racing a busy writer is
caught this way, not only by size); a replaced path is drained, then the new file is
read from its start; a removed path keeps the old file followed until a new one appears.

Usage: tail_agent.py PATH MODE DEV INO OFFSET RECENTHEX POLL_MS
  MODE ``begin``: the file from byte 0; ``end``: from its current end (only a file that
  exists when the agent starts: one that appears later is new, and read whole); ``resume``: continue the file DEV/INO at OFFSET after a dropped connection,
  RECENTHEX being the last bytes delivered before OFFSET.

Frames: the line ``WATCHTOWER-TAIL 1`` (anything a login script printed before it is
skipped by the reader), then ASCII header lines, ``D`` followed by n raw bytes:
  I dev ino offset recenthex   now reading this file from offset (identity for a resume)
  D offset n                   n bytes of the file at offset
  G offset n reason            n bytes at offset were truncated away before they were read
  R reason                     the file was replaced (rotated, truncated, recreated)
  W reason                     waiting: no readable file at the path (reported once per reason)
The agent exits when its stdin reaches end of file: the SSH channel went away. It sleeps on
inotify where it can (Linux), else polls: 5 ms after a change, backing off to POLL_MS.
"""

import errno
import os
import select
import struct
import sys

MAGIC = b"WATCHTOWER-TAIL 1\n"
CHUNK = 256 * 1024
CHECK = 64  # bytes re-read before the offset to confirm the file is still the same
POLL_MIN = 0.005
SAFETY_POLL = 0.5  # with inotify: look anyway this often (NFS written from another host)
DIR_MASK = 0x004 | 0x040 | 0x080 | 0x100 | 0x200 | 0x400 | 0x800  # attrib, moves, create, delete, self
FILE_MASK = 0x002 | 0x004 | 0x008 | 0x400 | 0x800  # modify, attrib, close_write, delete/move self
IN_IGNORED = 0x8000


def send(header, data=b""):
    view = memoryview(header.encode("utf-8", "replace") + b"\n" + data)
    while view:
        try:
            written = os.write(1, view)
        except BrokenPipeError:
            sys.exit(0)
        view = view[written:]


def one_line(text):
    return " ".join(str(text).split())


def find_inode(directory, dev, ino):
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


class Follower:
    def __init__(self, path, from_end, on_open=lambda fd: None):
        self.path = path
        self.on_open = on_open
        self.skip_existing = from_end  # only for a file that is there when we start
        self.fd = -1
        self.ident = None
        self.offset = 0  # next byte to deliver
        self.seen = 0  # largest size observed: bytes known to exist
        self.recent = b""  # the last CHECK bytes delivered
        self.replaced = None  # the path names another file: drain, then switch
        self.restart = None  # reason to report when the next file opens
        self.waiting = None

    def adopt(self, fd, offset, recent):
        st = os.fstat(fd)
        self.fd, self.ident = fd, (st.st_dev, st.st_ino)
        self.offset = self.seen = offset
        self.recent = recent
        self.waiting = None
        self.on_open(fd)
        send("I %d %d %d %s" % (st.st_dev, st.st_ino, offset, recent.hex() or "-"))

    def resume(self, dev, ino, offset, recent):
        """Pick up the file followed before the connection dropped."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (dev, ino):
                os.close(fd)
                fd = -1
        except OSError:
            fd = -1
        if fd < 0:
            fd = find_inode(os.path.dirname(self.path) or ".", dev, ino)
        if fd >= 0:
            self.adopt(fd, offset, recent)  # read() checks it is still the same bytes
        else:
            self.restart = "recreated"  # gone; what it held past offset went with it

    def step(self):
        """Do the next piece of work; True when more is ready now."""
        if self.fd < 0:
            return self.open()
        return self.read()

    def wait(self, reason):
        if reason != self.waiting:
            self.waiting = reason
            send("W " + reason)
        return False

    def open(self):
        path, skip_existing = self.path, self.skip_existing
        self.skip_existing = False
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return self.wait("%s: no such file yet, waiting for it to appear" % path)
        except PermissionError:
            return self.wait("%s: permission denied, retrying" % path)
        except OSError as exc:
            return self.wait("%s: cannot open (%s), retrying" % (path, one_line(exc.strerror or exc)))
        st = os.fstat(fd)
        if st.st_mode & 0o170000 != 0o100000:  # not S_ISREG
            os.close(fd)
            kind = "a directory" if st.st_mode & 0o170000 == 0o040000 else "not a regular file"
            return self.wait("%s: is %s, waiting for a log file" % (path, kind))
        start = st.st_size if skip_existing else 0
        recent = os.pread(fd, min(CHECK, start), start - min(CHECK, start)) if start else b""
        if self.restart:
            send("R " + self.restart)
            self.restart = None
        self.adopt(fd, start, recent)
        return True

    def read(self):
        fd = self.fd
        size = os.fstat(fd).st_size
        data = os.pread(fd, CHUNK, self.offset) if size > self.offset else b""
        # checked after the read, so a truncation before or during it is seen
        if size < self.offset or not self.still_same():
            self.truncated()
            return True
        if data:
            send("D %d %d" % (self.offset, len(data)), data)
            self.offset += len(data)
            self.seen = max(self.seen, size, self.offset)
            self.recent = (self.recent + data[-CHECK:])[-CHECK:]
            return True
        if self.replaced is None:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                # keep reading the old file (a writer may still hold it) until a new one appears
                return self.wait("%s: removed or renamed, waiting for a new file" % self.path)
            except OSError:
                return False
            if (st.st_dev, st.st_ino) == self.ident:
                return False
            self.replaced = "recreated" if os.fstat(fd).st_nlink == 0 else "rotated"
            return True  # drain once more: bytes written just before the rename
        self.restart, self.replaced = self.replaced, None
        os.close(fd)
        self.fd, self.ident = -1, None
        self.offset = self.seen = 0
        self.recent = b""
        return True

    def still_same(self):
        if not self.recent:
            return True
        start = self.offset - len(self.recent)
        return os.pread(self.fd, len(self.recent), start) == self.recent

    def truncated(self):
        lost = self.seen - self.offset
        if lost > 0:
            send("G %d %d truncated before it was read" % (self.offset, lost))
        send("R truncated")
        self.offset = self.seen = 0
        self.recent = b""


class Wakeups:
    """Sleep until the log may have changed: Linux inotify through libc (wakes within a
    millisecond, costs nothing while quiet), else an adaptive poll. Exits the agent once
    stdin is closed (the SSH channel went away)."""

    def __init__(self, path, poll_max):
        self.dir = os.fsencode(os.path.dirname(path) or ".")
        self.name = os.fsencode(os.path.basename(path))
        self.poll_max = poll_max
        self.delay = POLL_MIN
        self.fd = self.dir_wd = self.file_wd = -1
        try:
            import ctypes
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.inotify_init1.argtypes = [ctypes.c_int]
            libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            self.libc = libc
            self.fd = libc.inotify_init1(os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except (ImportError, OSError, AttributeError):
            self.fd = -1
        self.watch_dir()

    def watch_dir(self):
        if self.fd >= 0 and self.dir_wd < 0:
            self.dir_wd = self.libc.inotify_add_watch(self.fd, self.dir, DIR_MASK)

    def watch_file(self, fd):
        """Follow this open file's inode (also once renamed or deleted)."""
        if self.fd >= 0:
            self.file_wd = self.libc.inotify_add_watch(self.fd, b"/proc/self/fd/%d" % fd, FILE_MASK)

    def wait(self, active):
        """After a step: go on at once if it did something, else sleep until a change."""
        if active:
            self.delay = POLL_MIN
            timeout = 0
        elif self.dir_wd >= 0:
            timeout = SAFETY_POLL
        else:
            self.watch_dir()  # the directory may exist by now
            timeout, self.delay = self.delay, min(self.delay * 2, self.poll_max)
        fds = [0] + ([self.fd] if self.fd >= 0 else [])
        ready, _, _ = select.select(fds, [], [], timeout)
        if 0 in ready:
            try:
                data = os.read(0, 4096)
            except OSError as exc:
                data = b"-" if exc.errno in (errno.EAGAIN, errno.EINTR) else b""
            if not data:
                sys.exit(0)
        if self.fd in ready:
            self.drain()

    def drain(self):
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except OSError:
                return
            if not buf:
                return
            pos = 0
            while pos + 16 <= len(buf):
                wd, mask, _cookie, length = struct.unpack_from("iIII", buf, pos)
                pos += 16 + length
                if mask & IN_IGNORED:
                    if wd == self.dir_wd:
                        self.dir_wd = -1
                    if wd == self.file_wd:
                        self.file_wd = -1


def main(argv):
    path, mode, dev, ino, offset, recent, poll_ms = argv
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser(path)
    wakeups = Wakeups(path, max(POLL_MIN, int(poll_ms) / 1000.0))
    send(MAGIC[:-1].decode())
    follower = Follower(path, from_end=mode == "end", on_open=wakeups.watch_file)
    if mode == "resume":
        follower.resume(int(dev), int(ino), int(offset), bytes.fromhex("" if recent == "-" else recent))
    while True:
        wakeups.wait(follower.step())


if __name__ == "__main__":
    main(sys.argv[1:])
