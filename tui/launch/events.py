"""What a launch tells its subscribers (views, the outcome writer, the plain printer): its own
events, and the judging stage's ``VerdictChanged`` for the running attempt."""

from __future__ import annotations

from dataclasses import dataclass

from tui.core.verdict import Verdict
from tui.launch.runner import AttemptRun
from tui.session.judging import VerdictChanged  # pushed by the session's judging stage, passed on


@dataclass(frozen=True, slots=True)
class AttemptStarted:
    run: AttemptRun
    reattached: bool  # started by an earlier Watchtower, followed again


@dataclass(frozen=True, slots=True)
class AttemptFinished:
    """The attempt's first final verdict (ready, failed, dead, stopped): once per attempt."""

    run: AttemptRun
    verdict: Verdict


@dataclass(frozen=True, slots=True)
class Note:
    """A one-line message for the operator (a hook's result, what a stop had to kill)."""

    text: str


LaunchEvent = AttemptStarted | VerdictChanged | AttemptFinished | Note
