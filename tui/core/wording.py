"""How times, counts and the log file's own notices read in every front end (plain watcher, scan,
dashboard, history): one place."""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from tui.core.state import PHASE_TITLES, QUEUED, Phase

if TYPE_CHECKING:
    from tui.core.events import ConnectionState, LogGap, LogMoved, LogRestart, LogTruncated


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


def phase_words(phase: Phase) -> str:
    """A running phase in words: its title, or what a wait for resources waits for (``queued:
    waiting for resources (placement group)``), so that no front end reads it as work."""
    if phase.name == QUEUED:
        return "queued: waiting for resources" + (f" ({phase.detail})" if phase.detail else "")
    return PHASE_TITLES.get(phase.name, phase.name)


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 line``, ``2 lines``, ``1,204 ranks``."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"


def log_notice(event: LogGap | LogRestart | LogTruncated | LogMoved) -> str:
    """What happened to the log file itself (a gap, a new file, a truncation, a move), worded once:
    the scrollback marks it with these words, the plain output prints them."""
    from tui.core.events import LogGap, LogMoved, LogRestart, LogTruncated  # (here: `scan` does without them)

    match event:
        case LogGap() if event.files:
            return f"{plural(event.files, 'log file')} could not be read ({event.reason})"
        case LogGap():
            return f"{event.nbytes} bytes at offset {event.offset} could not be read ({event.reason})"
        case LogRestart():
            return f"the log was {event.reason}: a new attempt starts at line 1"
        case LogTruncated():
            return f"the log was truncated to {event.size} bytes: following on from line {event.lines + 1}"
        case LogMoved() if event.done:
            return f"finished the moved log {event.moved_to}"
        case LogMoved():
            pids = ", ".join(map(str, event.writers)) or "?"
            return f"the log was moved to {event.moved_to} and is still written there (pid {pids}): following it too"
        case _:
            assert_never(event)


def connection_said(conn: ConnectionState) -> str:
    """What a connection's change says after its host: ``connection lost (keepalive timeout)``,
    ``HOST KEY CHANGED for …`` — the host named once (the detail's own ``HOST: `` prefix dropped)
    and the state once: a refusal is its reason (a host key, a login, a name that does not
    resolve), never "connection refused" put before it."""
    detail = conn.detail.removeprefix(f"{conn.host}: ") if conn.detail else ""
    if not detail:
        return "connection refused" if conn.state == "refused" else conn.state
    if conn.state in ("refused", "lost", "retrying"):
        return detail
    return f"{conn.state}: {detail}"
