"""Asyncio producers of typed events (``tui.core.events``): log tailers, GPU pollers, processes."""

from __future__ import annotations

from typing import Any


def log_tailer(path: str, *, host: str | None = None, from_end: bool = False, writers: bool = False) -> Any:
    """The tailer for a log: local, or over SSH when ``host`` is ``[user@]host[:port]``.

    Both yield the same events (LogChunk, LogGap, LogRestart, LogTruncated, LogMoved,
    LogWaiting; the remote one ConnectionState too, and with ``writers`` the remote agent's
    writer discovery: WritersFound, WriterGone, NoWriter). A malformed ``host`` raises
    UsageError.
    """
    if host:
        from tui.sources.remote_tail import RemoteTailer

        return RemoteTailer(host, path, from_end=from_end, writers=writers)
    from tui.sources.local import LocalTailer

    return LocalTailer(path, from_end=from_end)


def writer_source(path: str, *, host: str | None = None) -> Any:
    """The source of the writer events of a log (the server behind it) where it is a
    separate one: a local log's :class:`~tui.sources.writers.WriterSource`; None with
    ``host``, whose tailer (``log_tailer(..., writers=True)``) carries them."""
    if host:
        return None
    from tui.sources.writers import WriterSource

    return WriterSource(path)
