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

_RANK_TOKEN = re.compile(r"(?<![A-Za-z])(DP|PP|TP|EP)_?(\d+)")
_RANK_ORDER = ("DP", "PP", "TP", "EP")
_RANK_ARG = re.compile(r"(?:^|\s)(?:rank=|--rank[= ]|local_rank=)(\d+)")


def role_and_rank(title: str, argv: Sequence[str]) -> tuple[str, str | None]:
    """``("rank", "DP0 TP3")`` for ``sglang::scheduler_DP0_TP3``, ``("engine", None)`` for
    ``VLLM::EngineCore``, ``("rank", "TP1")`` for ``VLLM::Worker_TP1`` / ``VllmWorker TP1``…"""
    name = argv[0] if argv else ""  # setproctitle() rewrites it: "sglang::scheduler_TP3"
    text = f"{title} {name}"
    lowered = text.lower()
    tokens = dict((kind, index) for kind, index in _RANK_TOKEN.findall(text))
    rank = " ".join(f"{kind}{tokens[kind]}" for kind in _RANK_ORDER if kind in tokens) or None
    if "detokenizer" in lowered:
        return "detokenizer", None
    if "enginecore" in lowered:
        return ("rank" if "TP" in tokens else "engine"), rank if "TP" in tokens else None
    if "scheduler" in lowered or "worker" in lowered or rank is not None:
        if rank is None and (found := _RANK_ARG.search(" ".join(argv))):
            rank = f"rank{found.group(1)}"
        return "rank", rank  # a scheduler or worker without rank tokens: the only rank
    return "child", None


def server_process(info: dict[str, Any], main: int | None) -> ServerProcess:
    """One ``procscan.process`` dict (local or from the agent) as a ServerProcess."""
    argv = [str(a) for a in info.get("argv") or ()]
    title = str(info.get("title") or "")
    role, rank = role_and_rank(title, argv)
    if info.get("pid") == main:
        role = "main"
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

    def events(self, items: Sequence[Sequence[Any]], at: float | None = None) -> list[WriterEvent]:
        at = time.time() if at is None else at
        out: list[WriterEvent] = []
        for item in items:
            kind = item[0]
            if kind == "found":
                procs = list(item[2])
                self.main = int(item[3]) if item[3] is not None else None
                self.known = {int(p["pid"]): p for p in procs}
                tree = tuple(server_process(p, self.main) for p in procs)
                out.append(WritersFound(self.source, self.host, tree, at, via=str(item[1])))
            elif kind == "gone":
                info, status, main, remaining = item[1], item[2], bool(item[3]), int(item[4])
                info = {**self.known.pop(int(info["pid"]), {}), **info}
                if main and self.main is None:  # the writer found dead, never seen alive (a zombie)
                    self.main = int(info["pid"])
                code, sig = _decode_status(status)
                out.append(
                    WriterGone(
                        self.source, self.host, server_process(info, self.main), main, remaining, at,
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
        try:
            while not self._closed:
                now = time.monotonic()
                if discovery.scan_wanted(now):  # a full /proc scan: off the loop
                    items = await asyncio.to_thread(discovery.tick, now)
                else:  # the known pids only: a few small reads
                    items = discovery.tick(now)
                for event in convert.events(items):
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
