"""The pump: a session's sources, each read in a task of its own, their events handed on in order.

A :class:`Pump` owns the sources (the log's tailer, the GPUs, writer discovery, ``--health``, a
launch's process events …) and the tasks that read them, and the session's other background
tasks (a checkpoint measured, a smoke test sent): stopping the session stops them all and closes
the sources. A big log chunk is handed on in slices of whole lines with the event loop let
through between them, so a flood never holds a key press back; a source that fails is said
where its events would have gone (``failed``), never taking the view down.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

from tui.core.events import LogChunk, SourceEvent
from tui.sources.base import EventSource

#: Bytes of a log chunk fed between two yields to the event loop (cut at a line's end): about
#: 270 serving-log lines, ~1 ms, so a key press in a flood waits behind little feeding.
SLICE_BYTES = 32 * 1024


def slices(chunk: LogChunk) -> Iterator[LogChunk]:
    """``chunk`` cut after a line's end every SLICE_BYTES or so (a line longer than that whole)."""
    data = chunk.data
    start = 0
    while start < len(data):
        end = data.find(b"\n", min(len(data), start + SLICE_BYTES) - 1) + 1 or len(data)
        yield LogChunk(chunk.source, chunk.offset + start, data[start:end], chunk.at)
        start = end


class Pump:
    """Reads each source into ``handle``; a source that raises is told to ``failed`` (source, words)."""

    def __init__(self, handle: Callable[[SourceEvent], None], failed: Callable[[EventSource, str], None]) -> None:
        self.handle = handle
        self.failed = failed
        self.sources: list[EventSource] = []
        self.tasks: list[asyncio.Task[None]] = []

    @property
    def running(self) -> bool:
        """Started (``start``) and not stopped: new sources and tasks start at once."""
        return bool(self.tasks)

    def add(self, source: EventSource) -> None:
        """A source more; read at once when the pump runs."""
        self.sources.append(source)
        if self.tasks:
            self.tasks.append(asyncio.create_task(self._pump(source)))

    def start(self) -> None:
        """Read every source (inside the running event loop)."""
        self.tasks = [asyncio.create_task(self._pump(source)) for source in self.sources]

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as one of the session's tasks (stopped with it); RuntimeError without a loop."""
        try:
            task = asyncio.get_running_loop().create_task(coro)
        except RuntimeError:
            coro.close()  # never awaited: no warning about it
            raise
        self.tasks.append(task)

    async def wait(self) -> None:
        """Until every source has ended (a replay that has played out, for instance)."""
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)

    async def stop(self) -> None:
        """Cancel every task, then close every source."""
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self.tasks = []
        for source in self.sources:
            try:
                result = source.close()
                if result is not None:
                    await result
            except Exception:
                pass

    async def _pump(self, source: EventSource) -> None:
        try:
            async for event in source.events():
                if isinstance(event, LogChunk) and len(event.data) > SLICE_BYTES:
                    await self._in_slices(event)
                else:
                    self.handle(event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failing source must not take the view down: say so in it
            self.failed(source, f"{type(source).__name__} stopped: {exc or type(exc).__name__}")

    async def _in_slices(self, chunk: LogChunk) -> None:
        """A big chunk handed on a slice of whole lines at a time, the event loop let through
        between slices: assembling, searching and feeding a 256 KiB read in one go would hold a
        key press (and the screen's refresh) back for ~10 ms."""
        first = True
        for piece in slices(chunk):
            if not first:
                await asyncio.sleep(0)
            first = False
            self.handle(piece)
