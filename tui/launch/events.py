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
class AttemptExited:
    """The attempt's main process exited, or its Slurm job ended, as the runner learnt it: nothing
    of it runs now (the footer stops offering to stop it)."""

    run: AttemptRun


@dataclass(frozen=True, slots=True)
class Note:
    """A one-line message for the operator (a hook's result, what a stop had to kill)."""

    text: str
    #: Where the attempt runs ("v1: submitted as Slurm job 12 (…)"): a dashboard says it in its
    #: launch line, where it stays and covers nothing, rather than in a toast over the log.
    launch_line: bool = False


@dataclass(frozen=True, slots=True)
class AttemptRecorded:
    """An attempt's history row was written (its outcome, times, first error): what lists the
    attempts redraws, the write having landed after the verdict that asked for it."""

    attempt: int


LaunchEvent = AttemptStarted | VerdictChanged | AttemptFinished | AttemptExited | Note | AttemptRecorded
