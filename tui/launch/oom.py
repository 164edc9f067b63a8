"""Evidence that the kernel's OOM killer sent a SIGKILL: the kernel log and the cgroup's count.

A process killed by SIGKILL that Watchtower did not send was *possibly* killed by the OOM
killer. What this machine records says more: the kernel log's OOM lines ("Memory cgroup out
of memory: Killed process 1234 (python3)") read from ``/dev/kmsg`` (root, or
``kernel.dmesg_restrict=0``), and the ``oom_kill`` count of the attempt's memory cgroup
(``memory.events`` in cgroup v2, ``memory.oom_control`` in v1) against its count when the
attempt started. Only what happened since the attempt started counts. Local processes only;
stdlib only (it runs as the attempt ends).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

_CGROUP_ROOT = "/sys/fs/cgroup"
# "oom-kill:constraint=CONSTRAINT_MEMCG,…,task_memcg=/a/b,task=python3,pid=1234,uid=0"
_OOM_KILL = re.compile(r"oom-kill:.*?task_memcg=(?P<memcg>[^,]*),task=(?P<task>[^,]*),pid=(?P<pid>\d+)")
# "Out of memory: Killed process 1234 (python3) …", "Memory cgroup out of memory: Killed process …"
_KILLED = re.compile(r"[Oo]ut of memory: Killed process (?P<pid>\d+) \((?P<task>[^)]*)\)")
#: Bytes of the kernel ring buffer read at most.
KMSG_LIMIT = 4 << 20


@dataclass(frozen=True, slots=True)
class MemoryWatch:
    """What an attempt's memory cgroup looked like when it started."""

    since: float  # time.monotonic() at the start (the kernel log's clock)
    cgroup: str | None = None  # its memory cgroup, as the kernel names it ("/a/b")
    count_file: str | None = None  # the file holding the cgroup's oom_kill count
    count: int = 0


def watch_memory(pid: int) -> MemoryWatch:
    """Note ``pid``'s memory cgroup and its OOM-kill count now (call it as the attempt starts)."""
    since = time.monotonic()
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return MemoryWatch(since)
    for line in lines:
        _id, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        relative = path.lstrip("/")
        if controllers == "":  # cgroup v2: "0::/path"
            candidates = [os.path.join(_CGROUP_ROOT, relative, "memory.events"),
                          os.path.join(_CGROUP_ROOT, "unified", relative, "memory.events")]
        elif "memory" in controllers.split(","):
            candidates = [os.path.join(_CGROUP_ROOT, "memory", relative, "memory.oom_control")]
        else:
            continue
        for candidate in candidates:
            count = _oom_kill_count(candidate)
            if count is not None:
                return MemoryWatch(since, path or "/", candidate, count)
    return MemoryWatch(since)


def _oom_kill_count(path: str) -> int | None:
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                name, _, value = line.partition(" ")
                if name == "oom_kill" and value.strip().isdigit():
                    return int(value)
    except OSError:
        return None
    return None


def kernel_oom_kills(since: float) -> list[tuple[int, str, str | None]]:
    """(pid, the kernel's line, the victim's memory cgroup) of each OOM kill the kernel log
    holds from ``since`` (monotonic seconds) on; empty when the log cannot be read."""
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return []
    kills: dict[int, tuple[str, str | None]] = {}
    read = 0
    try:
        while read < KMSG_LIMIT:
            try:
                record = os.read(fd, 8192)  # one record per read
            except BlockingIOError:
                break  # the end of the buffer
            except OSError:  # EPIPE: overwritten while being read; EINVAL: an odd record
                continue
            if not record:
                break
            read += len(record)
            prefix, _, message = record.decode("utf-8", "replace").partition(";")
            fields = prefix.split(",")  # priority, sequence, microseconds since boot, flags
            if len(fields) < 3 or not fields[2].isdigit() or int(fields[2]) / 1e6 < since:
                continue
            message = message.split("\n", 1)[0].strip()
            if (match := _OOM_KILL.search(message)) is not None:
                pid = int(match["pid"])
                kills[pid] = (kills.get(pid, (message, None))[0], match["memcg"])
            elif (match := _KILLED.search(message)) is not None:
                pid = int(match["pid"])
                kills[pid] = (message, kills.get(pid, ("", None))[1])
    finally:
        os.close(fd)
    return [(pid, line, memcg) for pid, (line, memcg) in kills.items()]


def oom_evidence(watch: MemoryWatch, pids: set[int]) -> str | None:
    """What says the OOM killer struck the attempt since it started, in words; None if nothing does.

    A kernel OOM line about one of ``pids`` or about a process in the attempt's cgroup (or one
    below it: a server may move its workers), and the cgroup's oom_kill count having gone up."""
    parts = []
    within = None if watch.cgroup is None else watch.cgroup.rstrip("/") + "/"
    for pid, line, memcg in kernel_oom_kills(watch.since):
        if pid in pids or (memcg is not None and within is not None and (memcg + "/").startswith(within)):
            parts.append(f"kernel log: {line[:160]}")
    parts = parts[-1:]
    if watch.count_file is not None:
        now = _oom_kill_count(watch.count_file)
        if now is not None and now > watch.count:
            parts.append(f"{watch.count_file}: oom_kill {watch.count} → {now}")
    return "; ".join(parts) or None
