"""Where a checkpoint lies and how busy its storage is: the mount and ``/proc/diskstats``.

The checkpoint folder's mount (``/proc/self/mountinfo``: the longest mount point above it) gives
its filesystem type (ext4, nfs4, …: whether its reads show as disk reads) and, for a filesystem
on a block device, the device's ``major:minor``. While the weights load, :class:`DiskSource`
reads that device's line of ``/proc/diskstats`` once a second: its io_ticks, the milliseconds
it had I/O in flight — near all of the load's time, the load waited on the storage. A filesystem
with no block device (NFS, tmpfs: major 0) has no line, and nothing is watched. Linux only;
elsewhere nothing is said.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator

from tui.core.events import DiskBusy
from tui.sources.base import pause

PROC = "/proc"
#: Seconds between two reads of /proc/diskstats.
INTERVAL_S = 1.0


def _unescape(field: str) -> str:
    r"""A mountinfo path: spaces, tabs, newlines and backslashes come as ``\040`` and the like."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _proc_text(name: str, limit: int) -> str | None:
    """The start of ``/proc/NAME`` (``limit`` bytes at most); None when it cannot be read."""
    try:
        with open(f"{PROC}/{name}", encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None


def mount_of(path: str, mountinfo: str | None = None) -> tuple[str, str | None] | None:
    """(filesystem type, ``major:minor`` of its block device or None) of the mount ``path`` lies
    on; None when it cannot be told. ``mountinfo``: the table's text (read from /proc when None)."""
    if mountinfo is None and (mountinfo := _proc_text("self/mountinfo", 4 << 20)) is None:
        return None
    target = os.path.realpath(path)
    best: tuple[int, str, str] | None = None
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or not rest:
            continue
        point = _unescape(fields[4])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= best[0]):  # a later mount over the same point hides it
            best = (len(point), rest[0], fields[2])
    if best is None:
        return None
    _, fstype, device = best
    return fstype, None if device.startswith("0:") else device


def busy_ms(device: str, diskstats: str | None = None) -> int | None:
    """Milliseconds the block device ``major:minor`` has had I/O in flight since boot (io_ticks);
    None when it has no line. ``diskstats``: the table's text (read from /proc when None)."""
    if diskstats is None and (diskstats := _proc_text("diskstats", 1 << 20)) is None:
        return None
    major, _, minor = device.partition(":")
    for line in diskstats.splitlines():
        fields = line.split()
        if len(fields) >= 13 and fields[0] == major and fields[1] == minor and fields[12].isdigit():
            return int(fields[12])
    return None


class DiskSource:
    """``DiskBusy`` of ``device`` once a second until closed (nothing when it has no line)."""

    def __init__(self, device: str, interval: float = INTERVAL_S) -> None:
        self.device, self.interval = device, interval
        self._closed = asyncio.Event()

    async def events(self) -> AsyncIterator[DiskBusy]:
        while not self._closed.is_set():
            busy = busy_ms(self.device)
            if busy is None:
                return
            yield DiskBusy(self.device, busy, time.time())
            await pause(self._closed, self.interval)

    async def close(self) -> None:
        self._closed.set()
