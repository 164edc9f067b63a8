"""The tracker's events: what ``tui.core.tracker.StartupTracker`` reports as it reads lines.

Kept apart from the source events (``tui.core.events``, which names these too, so that every
event is found in one place) because `watchtower scan` needs only these: building the two dozen
source-event classes was a tenth of its start-up. The plain watcher prints them; the app updates
its views from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.core.state import AttemptSummary, ErrorReport


@dataclass(frozen=True, slots=True)
class ServerDetected:
    server: str  # profile name, e.g. "sglang"
    line: int


@dataclass(frozen=True, slots=True)
class PhaseStarted:
    phase: str
    line: int
    ts: float | None


@dataclass(frozen=True, slots=True)
class PhaseEnded:
    phase: str
    line: int
    ts: float | None
    seconds: float | None
    slowest_rank: str | None
    ranks: int
    #: Where the phase began: carried, since by the time a listener reads the event the state may be
    #: a later startup's (a log read from its start, several startups in a burst).
    start_line: int | None = None


@dataclass(frozen=True, slots=True)
class PhaseProgress:
    phase: str
    line: int
    fraction: float | None
    detail: str
    done: int | None = None  # the bar's count, where it gives one (16 of 36 batch sizes)
    total: int | None = None
    #: an item line's own figures (a torch.compile range: how long it took, whether it came from the cache)
    took: float | None = None
    cached: bool | None = None


@dataclass(frozen=True, slots=True)
class ErrorFound:
    """An error was classified (or its report grew: a later line named its cause)."""

    error: ErrorReport


@dataclass(frozen=True, slots=True)
class WarningFound:
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class LineUnparsed(WarningFound):
    """The tracker failed on this line (a bug, or a user profile's pattern): it was skipped,
    counted in ``StartupState.unparsed``, and following went on. ``text`` says so."""


@dataclass(frozen=True, slots=True)
class Ready:
    line: int
    ts: float | None
    seconds: float | None  # from the first line's timestamp


@dataclass(frozen=True, slots=True)
class Stopped:
    """A ready server shut down (e.g. SIGQUIT after SIGTERM): a stop, not a failed startup."""

    line: int
    text: str


@dataclass(frozen=True, slots=True)
class NewStartup:
    """The log holds a new startup (a ``server_args=`` / vLLM banner line after an earlier one
    was ready, failed or stopped): from ``line`` on, a fresh attempt (``attempt`` 2, 3 … in
    this log). ``previous`` is the earlier one's ``tui.core.state.AttemptSummary``."""

    line: int
    attempt: int
    previous: AttemptSummary


TrackerEvent = (
    ServerDetected | PhaseStarted | PhaseEnded | PhaseProgress | ErrorFound | WarningFound | Ready | Stopped
    | NewStartup
)
