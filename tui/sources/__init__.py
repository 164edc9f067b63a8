"""Asyncio producers of typed events (``tui.core.events``): log tailers, GPU pollers, processes."""

from __future__ import annotations

from typing import Any


def log_tailer(path: str, *, host: str | None = None, from_end: bool = False) -> Any:
    """The tailer for a log: local, or over SSH when ``host`` is ``[user@]host[:port]``.

    Both yield the same events (LogChunk, LogGap, LogRestart, LogWaiting; the remote one
    ConnectionState too). A malformed ``host`` raises UsageError.
    """
    if host:
        from tui.sources.remote_tail import RemoteTailer

        return RemoteTailer(host, path, from_end=from_end)
    from tui.sources.local import LocalTailer

    return LocalTailer(path, from_end=from_end)
