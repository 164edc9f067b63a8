"""How times read in every front end (plain watcher, scan, dashboard, history): one place."""

from __future__ import annotations


def clock(seconds: float | None, unknown: str = "?") -> str:
    """``4:51``, ``1:02:03``; ``unknown`` when there is no figure."""
    if seconds is None:
        return unknown
    seconds = int(round(max(0.0, seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def duration(seconds: float | None, unknown: str = "?") -> str:
    """``12.3 s`` under a minute (short phases need the tenths), else a clock."""
    if seconds is not None and seconds < 60:
        return f"{max(0.0, seconds):.1f} s"
    return clock(seconds, unknown)


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 line``, ``2 lines``, ``1,204 ranks``."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"
