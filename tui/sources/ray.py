"""One log, several nodes: vLLM served over Ray writes every node's lines into the head's log.

Ray streams each actor's output to the driver, each line led by the actor and, for an actor on
another node, that node's address: ``(RayWorkerWrapper pid=1234, ip=10.0.0.2) INFO …``
(``tui.core.cluster.ray_node``). :class:`RaySplit` reads the log once — the head node's feed
pumps it — and hands each other node's lines to a feed of that node's own, so that each node
has its own tracker, barrier row and verdict. A node appears with its first line
(``on_node``, where the cluster adds it).

What the log says is not trusted to size the watch: at most :data:`MAX_NODES` nodes come from
its prefixes (a log naming thousands — spoofed, or pasted — would cost a session each and a share
of every verdict); past them a line is the head's, said once. Only a line's start is a prefix:
the rest of a line cut for its length is its start's, whatever it holds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from tui.core.cluster import ray_node
from tui.core.events import LogChunk, LogLimited, LogRestart, LogTruncated
from tui.sources.base import EventSource

#: A line longer than this without its newline goes to the head as it is (bounded memory).
MAX_PENDING = 1 << 20

#: The most worker nodes a log's prefixes may add: above the largest Ray clusters vLLM is served on
#: (each node has 8 GPUs or so), far below what would make each line cost more than a few nodes' work.
MAX_NODES = 64


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
        self._refused: str | None = None  # the first node past MAX_NODES, once there was one
        self._refusal_said = False
        self._cut: tuple[str | None] | None = None  # a line cut for its length goes on: (its start's node,)

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
                    pending, self._head_offset, self._cut = b"", 0, None
                    for feed in self.feeds.values():
                        feed.put(event)
                yield event
                continue
            *lines, pending = (pending + event.data).split(b"\n")
            out: dict[str | None, list[bytes]] = {}
            for line in lines:
                out.setdefault(self._node_of(line), []).append(line + b"\n")
            if len(pending) > MAX_PENDING:  # no newline yet: passed on as it is, the rest to follow it
                node = self._node_of(pending)
                out.setdefault(node, []).append(pending)
                self._cut, pending = (node,), b""
            for node, own in out.items():
                if node is not None:
                    self.feeds[node].put(LogChunk(node, 0, b"".join(own), event.at))
            if self._refused is not None and not self._refusal_said:
                self._refusal_said = True
                yield LogLimited("head", f"the log names more than {MAX_NODES} nodes in Ray's prefixes: "
                                         f"{self._refused} and any after it are read as the head's lines")
            if (head := out.get(None)) is not None:
                yield self._head_chunk(b"".join(head), event.at)

    def _node_of(self, line: bytes) -> str | None:
        """The node a line goes to (None: the head): its prefix's, a node added with its first line;
        the node of the line's start for the rest of a line cut for its length."""
        if self._cut is not None:
            (node,), self._cut = self._cut, None
            return node
        node = ray_node(line)
        if node is None or node in self.feeds:
            return node
        if len(self.feeds) >= MAX_NODES:
            self._refused = self._refused or node
            return None
        self.feeds[node] = NodeFeed(node)
        self.on_node(node)
        return node

    def _head_chunk(self, data: bytes, at: float) -> LogChunk:
        chunk = LogChunk("head", self._head_offset, data, at or time.time())
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
