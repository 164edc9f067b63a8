"""What a node's startup is allowed, and expected, to take.

:class:`Allowance` is the one owner of a node's limits: ``--stall-limit``'s silence limits and
``--timeout``, given once at construction (``tui.wiring`` builds every mode's sessions); history's
longest time for each phase and what says the time left (``expect``: a watched server's own
history, or a launch's earlier attempts); and when each phase of this attempt began, which the
time left is read against. The verdict reads them through the node's evidence.
"""

from __future__ import annotations

from typing import Protocol

from tui.core.limits import StallLimits
from tui.core.state import StartupState


class Usual(Protocol):
    """What says a launched startup's time left (``tui.history.Expectations``: its earlier attempts)."""

    def eta(self, phase: str | None, phase_elapsed: float | None, attempt_elapsed: float) -> str | None: ...


class Allowance:
    """A node's stall limits, ``--timeout``, history's phase times and the time left."""

    def __init__(self, stall: StallLimits | None = None, timeout: float | None = None) -> None:
        self.stall = stall  # --stall-limit
        #: ``--timeout``: seconds the startup was given; ``timed_out`` once they passed while starting.
        self.timeout = timeout
        self.timed_out = False
        #: The longest each phase took in earlier startups of the same server, model and TP size,
        #: and what says the time left (a launch's history): ``expect``.
        self.expected: dict[str, float] = {}
        self.usual: Usual | None = None
        #: When each phase of this attempt began (the session's clock).
        self.phase_started_at: dict[str, float] = {}

    def expect(self, longest: dict[str, float], usual: Usual | None = None) -> None:
        """History's phase times (the longest each took) and what says the time left, given once per attempt."""
        self.expected, self.usual = longest, usual

    def phase_began(self, phase: str, at: float) -> None:
        self.phase_started_at.setdefault(phase, at)

    def new_attempt(self) -> None:
        self.phase_started_at = {}

    def expected_now(self, state: StartupState) -> float | None:
        """The running phase's longest time in history (None with no phase running or no history of it)."""
        phase = state.current_phase
        return self.expected.get(phase.name) if phase is not None else None

    def time_left(self, state: StartupState, now: float, began: float) -> str | None:
        """``weight load 4:51 of ~10:28 · ready in ~6:40``: the running phase against history, for a
        launched startup begun at ``began``."""
        if self.usual is None:
            return None
        phase = state.current_phase
        started = self.phase_started_at.get(phase.name) if phase is not None else None
        return self.usual.eta(phase.name if phase is not None else None, None if started is None else now - started, now - began)
