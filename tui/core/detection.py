"""Which server wrote a log, by evidence, for ``StartupTracker``.

Each of the first lines is weighed (``Evidence``: the profiles' ``detect`` and ``identify``
markers) and the likeliest server is named at once; when the evidence names another one the
tracker switches to it and reads the kept lines again. Past the first lines (the profiles'
``max_detect_lines``) only a definitive (``identify``) marker still counts.
"""

from __future__ import annotations

from tui.core.lines import Line
from tui.core.profiles import Evidence, Profile, any_of

#: Text of the lines kept while the server is only guessed, to read them again if a definitive
#: marker names another server (beyond this, a switch keeps what was read so far).
REPLAY_CHARS = 8 << 20


class Detection:
    """The evidence about one log among ``candidates``; ``settled`` from the start when the server
    was named (``--server``). A new object is a detection that has seen nothing."""

    def __init__(self, candidates: list[Profile], settled: bool = False) -> None:
        #: a definitive marker (or ``--server``) named the server: nothing more to weigh
        self.settled = settled
        #: past the first lines without a definitive marker: only one can still settle it
        self.gave_up = False
        #: the kept lines are being read again (after a switch): they are weighed already
        self.replaying = False
        self._evidence = Evidence(candidates)
        self._any_identify = any_of([p for c in candidates for p in c.identify])
        self._max_lines = min(p.max_detect_lines for p in candidates)
        self._seen = 0
        self._kept: list[tuple[Line, float | None]] | None = []  # lines read while guessing
        self._kept_chars = 0

    @property
    def done(self) -> bool:
        """Nothing but a definitive marker can change the server any more."""
        return self.settled or self.gave_up

    def count(self) -> None:
        """One more line read while detecting (before it is read): past the first lines, give up."""
        self._seen += 1
        if self._seen > self._max_lines:
            self.gave_up = True
            self._kept = None

    def keep(self, item: Line, at: float | None) -> None:
        """A line read while the server is only guessed: kept, to be read again on a switch."""
        if self._kept is None or self.settled:
            return
        self._kept_chars += sum(map(len, item.segments))
        if self._kept_chars > REPLAY_CHARS:
            self._kept = None
        else:
            self._kept.append((item, at))

    def weigh(self, text: str, current: Profile | None) -> Profile | None:
        """Weigh this line's evidence: the server to use from now on if it is not ``current``."""
        if self.gave_up and (self._any_identify is None or self._any_identify.search(text) is None):
            return None  # past the first lines: only a definitive marker still counts
        if self._evidence.weigh(text):
            self.settled = True
        best = self._evidence.best
        switch = best if best is not None and best is not current else None
        if self.settled and switch is None:
            self._kept = None  # nothing to read again: the kept lines were read under this server
        return switch

    def kept_any(self) -> bool:
        """Lines were read (and kept) before this one while the server was only guessed."""
        return bool(self._kept)

    def kept(self) -> list[tuple[Line, float | None]]:
        """The lines read so far while guessing, to read again under another server, or under the
        first one named for what they say of the run (once the server is settled, for the last time)."""
        kept = self._kept or []
        if self.settled:
            self._kept = None
        return kept
