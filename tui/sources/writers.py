"""The server behind a log: its writers and their process tree, as typed events.

:class:`WriterSource` runs :class:`tui.sources.procscan.Discovery` for a local log on the
event loop — inotify's open/close of the log wakes it, the known pids are looked at every
half second, a full /proc scan runs in a worker thread only when the writer set is unknown
or has changed — and emits ``WritersFound``, ``WriterGone`` and ``NoWriter``. The remote
tail agent runs the same Discovery on its host and sends the same tuples as frames;
:func:`to_events` turns either into events, naming each process's role and rank.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tui.core.events import NoWriter, NoWriterReason, ReadCounters, ServerProcess, WriterGone, WritersFound
from tui.core.secrets import mask_argv
from tui.sources import procscan
from tui.sources.base import pause
from tui.sources.follow import Inotify

WriterEvent = WritersFound | WriterGone | NoWriter | ReadCounters

#: Seconds between two readings of the processes' I/O counters (the weight load's bytes read).
IO_INTERVAL = 0.5
#: Once the main process has ended with processes of its tree left, they are looked at this often for
#: this long: its ranks end with it (it kills them, or one signal took them all), and a watch that ends
#: soon after (a failed log's hold: half a second of quiet) must name none as still running that ended.
SETTLE_POLL, SETTLE_S = 0.05, 1.0

_RANK_TOKEN = re.compile(r"(?<![A-Za-z])(DP|PP|TP|EP)_?(\d+)")
_RANK_ORDER = ("DP", "PP", "TP", "EP")
_RANK_ARG = re.compile(r"(?:^|\s)(?:rank=|--rank[= ]|local_rank=)(\d+)")


def role_and_rank(title: str, argv: Sequence[str]) -> tuple[str, str | None]:
    """The role a process's title claims, and its rank: ``("rank", "DP0 TP3")`` for
    ``sglang::scheduler_DP0_TP3``, ``("engine", None)`` for ``VLLM::EngineCore``, ``("rank", "TP1")``
    for ``VLLM::Worker_TP1``; ``("child", None)`` for a title no profile names (``[processes]``)."""
    name = argv[0] if argv else ""  # setproctitle() rewrites it: "sglang::scheduler_TP3"
    role = next((role for role, patterns in _titles().items()
                 if any(p.search(title) or p.search(name) for p in patterns)), "child")
    if role == "child":
        return "child", None
    if role != "rank":
        return role, None
    text = f"{title} {name}"
    tokens = dict((kind, index) for kind, index in _RANK_TOKEN.findall(text))
    rank = " ".join(f"{kind}{tokens[kind]}" for kind in _RANK_ORDER if kind in tokens) or None
    if rank is None and (found := _RANK_ARG.search(" ".join(argv))):
        rank = f"rank{found.group(1)}"
    return "rank", rank  # a scheduler or worker without rank tokens: the only rank


@functools.cache
def _titles() -> dict[str, tuple[re.Pattern[str], ...]]:
    from tui.core.profiles import process_titles

    return process_titles()


def is_fork_of(info: dict[str, Any], parent: dict[str, Any] | None) -> bool:
    """Whether ``info`` is its parent forked and not executed since: the same title and command
    line (a fork keeps both until it executes another program or sets its own title; a rank
    started by its parent, by exec or by a fork that then set its title, has its own)."""
    return parent is not None and info.get("title") == parent.get("title") and info.get("argv") == parent.get("argv")


def server_process(info: dict[str, Any], main: int | None, parent: ServerProcess | None = None,
                   parent_info: dict[str, Any] | None = None) -> ServerProcess:
    """One ``procscan.process`` dict (local or from the agent) as a ServerProcess. Its title
    claims a role; the claim holds only for a process that executed as one: a fork of its parent
    that has not executed yet (``parent_info``), or a descendant of a rank (``parent``), is a
    helper (``child``) whatever its title."""
    argv = [str(a) for a in info.get("argv") or ()]
    title = str(info.get("title") or "")
    role, rank = role_and_rank(title, argv)
    if info.get("pid") == main:
        role = "main"
    elif role != "child" and (is_fork_of(info, parent_info) or (parent is not None and parent.role == "rank")):
        role, rank = "child", None
    return ServerProcess(
        pid=int(info["pid"]),
        ppid=int(info.get("ppid") or 0),
        title=title,
        command=" ".join(mask_argv(argv)) or f"[{title}]",
        started=float(info["started"]) if info.get("started") is not None else None,
        role=role,
        rank=rank,
        writes_log=bool(info.get("writes")),
    )


class Converter:
    """Discovery's tuples into events, for one log (remembers the main pid)."""

    def __init__(self, source: str, host: str) -> None:
        self.source, self.host = source, host
        self.main: int | None = None
        self.known: dict[int, dict[str, Any]] = {}  # the processes last reported, by pid
        self.processes: dict[int, ServerProcess] = {}  # ... as events named them (their roles)

    def events(self, items: Sequence[Sequence[Any]], at: float | None = None) -> list[WriterEvent]:
        at = time.time() if at is None else at
        out: list[WriterEvent] = []
        for item in items:
            kind = item[0]
            if kind == "found":
                procs = list(item[2])
                self.main = int(item[3]) if item[3] is not None else None
                self.known = {int(p["pid"]): p for p in procs}
                named: dict[int, ServerProcess] = {}
                for p in procs:  # parents first: a process's role weighs its parent's
                    ppid = int(p.get("ppid") or 0)
                    named[int(p["pid"])] = server_process(p, self.main, named.get(ppid), self.known.get(ppid))
                self.processes = named
                tree = tuple(named.values())
                out.append(WritersFound(self.source, self.host, tree, at, via=str(item[1])))
            elif kind == "gone":
                info, status, main, remaining = item[1], item[2], bool(item[3]), int(item[4])
                pid = int(info["pid"])
                info = {**self.known.pop(pid, {}), **info}
                if main and self.main is None:  # the writer found dead, never seen alive (a zombie)
                    self.main = pid
                ended = self.processes.pop(pid, None)
                if ended is None:  # not in the last tree (a reconnecting agent's report)
                    ended = server_process(info, self.main)
                code, sig = _decode_status(status)
                out.append(
                    WriterGone(
                        self.source, self.host, ended, main, remaining, at,
                        exit_known=status is not None, returncode=code, signal=sig,
                    )
                )
            elif kind == "none":
                try:
                    reason = NoWriterReason(str(item[1]))
                except ValueError:
                    reason = NoWriterReason.NOBODY
                out.append(NoWriter(self.source, self.host, reason, str(item[2]), at))
        return out


def _decode_status(status: int | None) -> tuple[int | None, int | None]:
    if status is None:
        return None, None
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    return os.WEXITSTATUS(status), None


class WriterSource:
    """Async producer of the writer events of one local log path (see the module docstring)."""

    def __init__(
        self, path: str | os.PathLike[str], *, source: str | None = None, use_inotify: bool = True,
        io_interval: float = IO_INTERVAL,
    ) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.io_interval = io_interval
        self.source = source if source is not None else os.fspath(path)
        self._use_inotify = use_inotify
        self._closed = False
        self._wake = asyncio.Event()

    async def events(self) -> AsyncIterator[WriterEvent]:
        loop = asyncio.get_running_loop()
        inotify = Inotify(self._use_inotify)
        discovery = procscan.Discovery(self.path, inotify if inotify.fd >= 0 else None)
        convert = Converter(self.source, "localhost")

        def readable() -> None:
            discovery.wakeup()
            if discovery.due:
                self._wake.set()

        if inotify.fd >= 0:
            loop.add_reader(inotify.fd, readable)
        next_io = 0.0
        settle_until = 0.0  # (until then, the known pids are looked at every SETTLE_POLL seconds)
        try:
            while not self._closed:
                now = time.monotonic()
                if discovery.scan_wanted(now):  # a full /proc scan: off the loop
                    items = await asyncio.to_thread(discovery.tick, now)
                else:  # the known pids only: a few small reads
                    items = discovery.tick(now)
                for event in convert.events(items):
                    if isinstance(event, WriterGone) and event.main and event.remaining:
                        settle_until = time.monotonic() + SETTLE_S
                    yield event
                if convert.known and time.monotonic() >= next_io:  # a few small reads: on the loop
                    next_io = time.monotonic() + self.io_interval
                    counters = procscan.io_counters(list(convert.known))
                    if counters:
                        yield ReadCounters(self.source, "localhost", time.time(), tuple(counters))
                self._wake.clear()
                wait = discovery.timeout(time.monotonic())
                if convert.known:
                    wait = min(wait, next_io - time.monotonic())
                    if time.monotonic() < settle_until:
                        wait = min(wait, SETTLE_POLL)
                try:
                    async with asyncio.timeout(max(0.05, wait)):
                        await self._wake.wait()
                except TimeoutError:
                    pass
        finally:
            if inotify.fd >= 0:
                try:
                    loop.remove_reader(inotify.fd)
                except (RuntimeError, ValueError):
                    pass
            inotify.close()

    async def close(self) -> None:
        """Stop: ``events()`` ends promptly."""
        self._closed = True
        self._wake.set()


#: Processes of a launched server's tree whose I/O counters are read at most (bounded work).
TREE_LIMIT = 256


def tree_pids(root: int, limit: int = TREE_LIMIT) -> list[int]:
    """``root`` and its descendants (breadth first, at most ``limit``); [] once root is gone."""
    if not os.path.exists(f"{procscan.PROC}/{root}"):
        return []
    out: list[int] = []
    queue = [root]
    while queue and len(out) < limit:
        pid = queue.pop(0)
        out.append(pid)
        queue.extend(procscan.children(pid))
    return out


class ProcessTreeIO:
    """The I/O counters of a server Watchtower launched here (its pid and descendants), as
    ``ReadCounters`` every ``interval`` seconds (read in a worker thread) until the pid is gone."""

    def __init__(self, pid: int, *, source: str = "launch", interval: float = IO_INTERVAL) -> None:
        self.pid, self.source, self.interval = pid, source, interval
        self._closed = asyncio.Event()

    async def events(self) -> AsyncIterator[ReadCounters]:
        while not self._closed.is_set():
            counters = await asyncio.to_thread(lambda: procscan.io_counters(tree_pids(self.pid)))
            if not counters and not os.path.exists(f"{procscan.PROC}/{self.pid}"):
                return  # the server is gone: nothing more to read
            if counters:
                yield ReadCounters(self.source, "localhost", time.time(), tuple(counters))
            await pause(self._closed, self.interval)

    async def close(self) -> None:
        self._closed.set()
