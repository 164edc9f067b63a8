"""Helpers for the tailer tests: a background reader that works for local and remote tailers."""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import aclosing

from tui.core.events import (
    ConnectionState,
    LogChunk,
    LogRestart,
    LogTruncated,
    LogWaiting,
    NoWriter,
    ReadCounters,
    WriterGone,
    WritersFound,
)


class Reader:
    """Consume a tailer's events (local or remote) in a background task (as the app does),
    failing (not hanging) when none comes. Log events are returned by ``next``;
    ConnectionState events are kept in ``states``, writer discovery's in ``writers``.
    Chunks of the followed file must be contiguous."""

    def __init__(self, tailer, offset: int | None = 0) -> None:
        self.tailer = tailer
        self.offset = offset
        self.states: list[ConnectionState] = []
        self.writers: list = []
        self.renamed: list[LogWaiting] = []
        self._queue: asyncio.Queue = asyncio.Queue()
        self._pump = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        async with aclosing(self.tailer.events()) as events:
            async for event in events:
                await self._queue.put(event)

    async def _pull(self, timeout: float):
        event = await asyncio.wait_for(self._queue.get(), timeout)
        while isinstance(event, (WritersFound, WriterGone, NoWriter, ReadCounters)):
            self.writers.append(event)
            event = await asyncio.wait_for(self._queue.get(), timeout)
        if isinstance(event, ConnectionState):
            self.states.append(event)
        elif isinstance(event, LogChunk) and event.source == self.tailer.source:
            assert self.offset is None or event.offset == self.offset, (event.offset, self.offset)
            self.offset = event.offset + len(event.data)
        elif isinstance(event, LogRestart):
            self.offset = 0
        elif isinstance(event, LogTruncated):
            self.offset = event.size
        return event

    async def attached(self) -> None:
        await asyncio.wait_for(self.tailer.attached.wait(), 10)

    async def next(self, timeout: float = 10.0):
        """The next log event (LogChunk, LogGap, LogRestart, LogWaiting), except the racy
        "removed or renamed" LogWaiting seen when a rename is noticed before the new file
        exists (kept in ``renamed``)."""
        while True:
            event = await self._pull(timeout)
            if isinstance(event, LogWaiting) and "removed or renamed" in event.reason:
                self.renamed.append(event)
            elif not isinstance(event, ConnectionState):
                return event

    async def state(self, wanted: str, timeout: float = 10.0) -> ConnectionState:
        """Pull until a ConnectionState ``wanted`` arrives (log events in between must be none)."""
        while True:
            event = await self._pull(timeout)
            if isinstance(event, ConnectionState) and event.state == wanted:
                return event
            assert isinstance(event, ConnectionState), f"unexpected {event} while waiting for {wanted}"

    async def data(self, nbytes: int) -> bytes:
        return await data_of(self, nbytes)

    async def close(self) -> None:
        await self.tailer.close()
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._pump


async def data_of(reader, nbytes: int) -> bytes:
    """Exactly ``nbytes`` of LogChunk data from ``reader.next()`` (any other event fails the test)."""
    out = b""
    while len(out) < nbytes:
        event = await reader.next()
        assert isinstance(event, LogChunk), event
        out += event.data
    assert len(out) == nbytes, out
    return out
