"""Many startups in one log, for ``StartupTracker``: a startup marker after the current startup
got somewhere means the server was started again into the same log; the earlier startup is
summarised into ``state.earlier`` and the next one begins with a fresh state.
"""

from __future__ import annotations

from tui.core.profiles import Profile, any_of
from tui.core.state import INTERRUPTED, STARTING, AttemptSummary, StartupState

#: Earlier startups of the same log kept in ``state.earlier`` (a crash-looping service makes thousands).
MAX_ATTEMPTS = 1000


class Attempts:
    """Tells where a new startup of ``profile``'s server begins (its ``markers.startup`` lines)."""

    def __init__(self, profile: Profile) -> None:
        self._startup = any_of(list(profile.startup))

    def may_begin(self, msg: str) -> bool:
        """Is the line ``msg`` a startup marker (the text alone: whether it begins a new startup is
        ``begins_anew``'s)?"""
        return self._startup is not None and self._startup.search(msg) is not None

    def begins_anew(self, msg: str, state: StartupState) -> bool:
        """Does the line ``msg`` start the server again, the startup of ``state`` having got somewhere
        (ready, failed, stopped, or past its arguments)?"""
        if not self.may_begin(msg):  # (asked first: most lines are none)
            return False
        return state.outcome != STARTING or any(p.name != "server_args" for p in state.phases)

    @staticmethod
    def next(old: StartupState, number: int) -> StartupState:
        """The state of the startup that begins at line ``number``, ``old`` summarised in its
        ``earlier`` (a ready line of the earlier startup can never count for this one)."""
        summary = old.summary(old.outcome if old.outcome != STARTING else INTERRUPTED, end_line=number - 1)
        earlier: list[AttemptSummary] = [*old.earlier[-(MAX_ATTEMPTS - 1) :], summary]
        return StartupState(
            server=old.server,
            lines=old.lines,
            last_line=old.last_line,
            last_text=old.last_text,
            start_line=number,
            attempt=old.attempt + 1,
            earlier=earlier,
            stall_after=old.stall_after,
        )
