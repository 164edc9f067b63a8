"""Server detection by evidence, for ``StartupTracker``: each of the first lines is weighed
(``Evidence``: the profiles' ``detect`` and ``identify`` markers), the likeliest server is used
at once, and when the evidence names another one the tracker switches profile and reads the
kept lines again. Past the first lines only a definitive (``identify``) marker still counts.
A mixin: the tracker owns the evidence, the kept lines and the line reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.core.events import ServerDetected, TrackerEvent
from tui.core.lines import Line
from tui.core.profiles import Evidence, Profile, QuickTest


class Detection:
    """Weighs the evidence and switches server (a mixin of ``StartupTracker``, which sets
    these attributes)."""

    profile: Profile | None
    _evidence: Evidence
    _any_identify: QuickTest | None
    _gave_up: bool
    _settled: bool
    _announced: bool
    _replay: list[tuple[Line, float | None]] | None
    _replaying: bool

    if TYPE_CHECKING:

        def _fresh(self) -> None: ...

        def _use(self, profile: Profile) -> None: ...

        def _line(self, item: Line, at: float | None, events: list[TrackerEvent]) -> None: ...

    def _detect(self, number: int, text: str, events: list[TrackerEvent]) -> None:
        """Weigh this line's evidence; use the likeliest server, switching if it changed."""
        evidence = self._evidence
        if self._gave_up:  # past the first lines: only a definitive marker still counts
            if self._any_identify is None or self._any_identify.search(text) is None:
                return
        settled = evidence.weigh(text)
        best = evidence.best
        if best is not None and best is not self.profile:
            if self.profile is None:
                self._use(best)
                self._announced = True
                events.append(ServerDetected(best.name, number))
            else:
                self._switch(best, number, events)
        if settled:
            self._settled = True
            self._replay = None

    def _switch(self, profile: Profile, number: int, events: list[TrackerEvent]) -> None:
        """The evidence now names another server: start over with it and read the kept lines
        again (the current line goes on from here)."""
        kept = self._replay or []
        self._fresh()
        self._use(profile)
        self._announced = True
        events.append(ServerDetected(profile.name, number))
        self._replaying = True
        try:
            for line, at in kept:
                self._line(line, at, events)
        finally:
            self._replaying = False
