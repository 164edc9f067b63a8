"""Many startups in one log, for ``StartupTracker``: a startup marker after the current startup
got somewhere means the server was started again into the same log; the earlier startup is
summarised into ``state.earlier`` and everything derived from its lines starts over.
A mixin: the tracker owns the state, the classifier and the tables cleared here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.core.classifier import Classifier
from tui.core.events import NewStartup, TrackerEvent
from tui.core.state import INTERRUPTED, STARTING, ErrorReport, StartupState

#: Earlier startups of the same log kept in ``state.earlier`` (a crash-looping service makes thousands).
MAX_ATTEMPTS = 1000


class Attempts:
    """Tells a new startup in the same log and keeps the earlier ones' summaries (a mixin of
    ``StartupTracker``, which sets these attributes)."""

    state: StartupState
    classifier: Classifier
    _implicit: dict[tuple[str, str], tuple[int, float | None]]
    _tentative: set[str]
    _placeholders: dict[str, str]
    _error_ids: set[int]
    _tagged: set[str]
    _causes: list[ErrorReport]
    _ready_parts: set[str]

    if TYPE_CHECKING:

        def finish(self) -> list[TrackerEvent]: ...

    def _ended(self) -> bool:
        """The current startup got somewhere (ready, failed, stopped, or past its arguments):
        a startup marker now means the server was started again, into the same log."""
        state = self.state
        return state.outcome != STARTING or any(p.name != "server_args" for p in state.phases)

    def _new_startup(self, number: int, events: list[TrackerEvent]) -> None:
        """Line ``number`` begins a new startup: the earlier one is summarised, all else restarts
        (a ready line of the earlier startup can never count for this one)."""
        events.extend(self.finish())
        old = self.state
        summary = old.summary(old.outcome if old.outcome != STARTING else INTERRUPTED, end_line=number - 1)
        earlier = [*old.earlier[-(MAX_ATTEMPTS - 1) :], summary]
        self.state = StartupState(
            server=old.server,
            lines=old.lines,
            last_line=old.last_line,
            last_text=old.last_text,
            start_line=number,
            attempt=old.attempt + 1,
            earlier=earlier,
            stall_after=old.stall_after,
        )
        self._implicit.clear()
        self._tentative.clear()
        self._placeholders.clear()
        self._error_ids.clear()
        self._tagged.clear()
        self._causes.clear()
        self._ready_parts.clear()
        self.classifier.reset()
        events.append(NewStartup(number, self.state.attempt, summary))
