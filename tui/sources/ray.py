"""One log, several nodes: vLLM served over Ray writes every node's lines into the head's log.

Ray streams each actor's output to the driver, each line led by the actor and, for an actor on
another node, that node's address: ``(RayWorkerWrapper pid=1234, ip=10.0.0.2) INFO …``
(``tui.core.cluster.ray_node``). :class:`RaySplit` reads the log once — the head node's feed
pumps it — and hands each other node's lines to a feed of that node's own, so that each node
has its own tracker, barrier row and verdict. A node appears with its first line
(``on_node``, where the cluster adds it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from tui.core.cluster import ray_node
from tui.core.events import LogChunk, LogRestart, LogTruncated
from tui.sources.base import EventSource

#: A line longer than this without its newline goes to the head as it is (bounded memory).
MAX_PENDING = 1 << 20


class NodeFeed:
    """One worker node's lines of the shared log, as a log source of its own."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.offset = 0
        self._queue: asyncio.Queue[Any] = asyncio.Queue()

    def put(self, event: Any) -> None:
        if isinstance(event, LogChunk):
            event = LogChunk(self.node, self.offset, event.data, event.at)
            self.offset += len(event.data)
        elif isinstance(event, (LogRestart, LogTruncated)):
            self.offset = 0
        self._queue.put_nowait(event)

    async def events(self) -> AsyncIterator[Any]:
        while (event := await self._queue.get()) is not None:
            yield event

    def close(self) -> None:
        self._queue.put_nowait(None)


class RaySplit:
    """The head's log, split by the node each line came from. ``head()`` is the feed that reads it
    (give it to the head node's session); ``feed(node)`` each other node's."""

    def __init__(self, log: EventSource, on_node: Callable[[str], None]) -> None:
        self.log = log
        self.on_node = on_node
        self.feeds: dict[str, NodeFeed] = {}
        self._head_offset = 0

    def head(self) -> EventSource:
        return _Head(self)

    def feed(self, node: str) -> NodeFeed:
        return self.feeds[node]

    async def split(self) -> AsyncIterator[Any]:
        """The log's events: the head's lines (and notices) yielded, each other node's handed on."""
        pending = b""
        async for event in self.log.events():
            if not isinstance(event, LogChunk):
                if isinstance(event, (LogRestart, LogTruncated)):
                    pending, self._head_offset = b"", 0
                    for feed in self.feeds.values():
                        feed.put(event)
                yield event
                continue
            lines = (pending + event.data).split(b"\n")
            pending = lines.pop()
            if len(pending) > MAX_PENDING:
                lines.append(pending)  # (no newline: the head's assembler takes it as it comes)
                pending = b""
            head: list[bytes] = []
            by_node: dict[str, list[bytes]] = {}
            for line in lines:
                node = ray_node(line)
                (head if node is None else by_node.setdefault(node, [])).append(line)
            for node, own in by_node.items():
                if node not in self.feeds:
                    self.feeds[node] = NodeFeed(node)
                    self.on_node(node)
                self.feeds[node].put(LogChunk(node, 0, b"\n".join(own) + b"\n", event.at))
            if head:
                yield self._head_chunk(head, event.at)

    def _head_chunk(self, lines: list[bytes], at: float) -> LogChunk:
        chunk = LogChunk("head", self._head_offset, b"\n".join(lines) + b"\n", at or time.time())
        self._head_offset += len(chunk.data)
        return chunk

    async def close(self) -> None:
        for feed in self.feeds.values():
            feed.close()
        result = self.log.close()
        if result is not None:
            await result


class _Head:
    """The head node's feed: reading it reads the whole log."""

    def __init__(self, split: RaySplit) -> None:
        self.split = split

    def events(self) -> AsyncIterator[Any]:
        return self.split.split()

    async def close(self) -> None:
        await self.split.close()
