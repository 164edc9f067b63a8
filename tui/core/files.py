"""Reading a user's files (profiles, hints, themes, cluster files, env files, recordings), and
every file a log or a command names (a model's index, a job's output file), safely.

One helper for every such file: it opens without blocking (a FIFO cannot hang the open),
takes regular files only (``/dev/zero``, a FIFO, a socket or a directory are refused before a
byte is read) and at most ``limit`` bytes (a file that big is not a configuration file), so
no path a user passes can freeze Watchtower or exhaust its memory. Errors are ``OSError``
(``strerror`` is the reason in a few words: callers prefix the path as they always have) and,
for text that is not UTF-8, ``UnicodeDecodeError``: a drop-in for ``Path.read_text``.
"""

from __future__ import annotations

import errno
import os
import stat

CONFIG_LIMIT = 4 << 20  # 4 MiB: a profile, theme, hints, cluster or env file is a few KiB
RECORDING_LIMIT = 1 << 30  # a .wtrec file, compressed


class NotARegularFile(OSError):
    """Refused before reading: not a regular file, or larger than the limit."""


def _open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """``(fd, its stat)`` of the regular file ``path``, opened without blocking; anything else refused."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(errno.EINVAL, f"not a regular file ({_kind(info.st_mode)})", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_bytes(path: str | os.PathLike[str], limit: int = CONFIG_LIMIT) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (else ``NotARegularFile``)."""
    fd, info = _open_regular(path)
    try:
        if info.st_size > limit:
            raise NotARegularFile(errno.EFBIG, f"too large ({_size(info.st_size)}; at most {_size(limit)})", os.fspath(path))
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # it grew while being read
            raise NotARegularFile(errno.EFBIG, f"too large (over {_size(limit)})", os.fspath(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_tail(path: str | os.PathLike[str], size: int) -> bytes:
    """The last ``size`` bytes (at most) of the regular file ``path``, of any length (a job's
    output file): opened and refused as :func:`read_bytes` does."""
    fd, info = _open_regular(path)
    try:
        return os.pread(fd, size, max(0, info.st_size - size))
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], limit: int = CONFIG_LIMIT) -> str:
    """:func:`read_bytes` as UTF-8 text (``UnicodeDecodeError`` where it is not)."""
    return read_bytes(path, limit).decode("utf-8")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"
