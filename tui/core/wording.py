"""How times, counts and the log file's own notices read in every front end (plain watcher, scan,
dashboard, history): one place."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, assert_never

from tui.core.carriers import label_end
from tui.core.slurm import stepd_gist
from tui.core.state import PHASE_TITLES, QUEUED, Phase

if TYPE_CHECKING:
    from tui.core.events import ConnectionState, LogGap, LogLimited, LogMoved, LogRestart, LogTruncated


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


def log_notice(event: LogGap | LogLimited | LogRestart | LogTruncated | LogMoved) -> str:
    """What happened to the log file itself (a gap, a new file, a truncation, a move) or to its
    reading (a limit applied), worded once:
    the scrollback marks it with these words, the plain output prints them."""
    from tui.core.events import LogGap, LogLimited, LogMoved, LogRestart, LogTruncated  # (here: `scan` does without them)

    match event:
        case LogGap() if event.files:
            return f"{plural(event.files, 'log file')} could not be read ({event.reason})"
        case LogGap():
            return f"{event.nbytes} bytes at offset {event.offset} could not be read ({event.reason})"
        case LogLimited():
            return event.text
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


#: A quoted log line's front matter, dropped before its words when the room is short: a log
#: header's source, time, rank and level ("[2026-… TP2] ", "(EngineCore pid=1) INFO 08-14 10:00:00
#: [x.py:1] "), and a program's own name and level ("srun: error: ").
_FRONT = re.compile(
    r"^(?:\([^)]{0,60}\) |\[[^\]]{0,80}\] |\d{4}-\d\d-\d\d[ T][\d:.,]+\S* |\d\d-\d\d \d\d:\d\d:\d\d\S* "
    r"|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b:? +|[\w.-]+: (?:error|warning|fatal): )+"
)


def quote(text: str, room: int) -> str:
    """What a log line said, in ``room`` characters: whole where it fits; else its front matter goes
    first (a carrier's label, the log header, a program's name and level; slurmstepd's words to
    their gist, ``stepd_gist``), then its end is cut ("…")."""
    text = text.strip()
    if len(text) <= room:
        return text
    text = text[label_end(text):]
    gist = stepd_gist(text)
    if gist is not None:  # whose words they are, where that fits too
        text = f"{gist} (slurmstepd)" if len(gist) + 13 <= room else gist
    else:
        text = _FRONT.sub("", text, count=1) or text
    if len(text) > room:
        text = text[: max(0, room - 1)] + "…" if room > 0 else ""
    return text
