"""When a verdict is final enough to end a watch (``watch --plain``, ``run --plain``).

A verdict that looks final is held a moment before it ends a watch: what follows it may change
it — a failure's root cause often comes after the first error, a new startup in the same log
can follow a ready line, a dead server's last words are still on their way, another node's
error may explain this one's. How long depends on who decided (:class:`Hold`); ``--timeout``
ends an undecided watch. :class:`Ending` keeps the clock; the judging side
(``tui.session.ending``) asks it after each verdict it pushes and when it says to ask again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from tui.core.verdict import DEAD, FAILED, READY, STOPPED, Verdict

#: One log: after the first fatal error or a ready line, keep reading this long (the root cause
#: may follow an error; a new startup in the same log may follow a ready line) ...
GRACE_S = 2.0
#: ... or until the log has been quiet this long; the processes behind a log that are gone: their
#: last words are awaited this long.
QUIET_S = 0.5
#: Several nodes: after the first failure, this long for the root cause to follow before the verdict.
FAIL_SETTLE_S = 0.5

#: Why a watch ended: its verdict held (``decided``; ``processes``: one log's, decided by the
#: processes behind it, not by the log), its input played out (``ended``), or ``--timeout``.
Why = Literal["decided", "processes", "ended", "timeout"]


@dataclass(frozen=True, slots=True)
class Hold:
    """How long a final-looking verdict is held before it ends the watch: at least ``least``
    seconds; then until the log has been quiet ``quiet`` seconds (None: not waited for), or
    ``most`` seconds in all."""

    least: float = 0.0
    most: float = 0.0
    quiet: float | None = None
    why: Why = "decided"


#: Final as it comes (a launch judges its own process's end and last words; several nodes' ready).
AT_ONCE = Hold()
#: One log that decided by itself (ready, stopped, failed): a root cause or a new startup may follow.
LOG_DECIDED = Hold(0.0, GRACE_S, QUIET_S)
#: One log whose processes are gone (dead, or failed without the log saying so): their last words.
PROCESSES_GONE = Hold(QUIET_S, QUIET_S, why="processes")
#: Several nodes, one failed or dead: the root cause may follow, on another node too.
NODES_FAILED = Hold(FAIL_SETTLE_S, FAIL_SETTLE_S)


def log_hold(verdict: Verdict, log_decided: bool) -> Hold | None:
    """One log's hold: ``log_decided`` when the log itself said ready, stopped or failed (its
    verdict may still wait for ``--health``'s 200 or ``--smoke``'s answer: not final then)."""
    if not verdict.final:
        return None
    return LOG_DECIDED if log_decided else PROCESSES_GONE


def nodes_hold(verdict: Verdict) -> Hold | None:
    """Several nodes' hold: ready or stopped at once, a failure after the root cause's moment."""
    if verdict.kind in (READY, STOPPED):
        return AT_ONCE
    if verdict.kind in (FAILED, DEAD):
        return NODES_FAILED
    return None


def launch_hold(verdict: Verdict) -> Hold | None:
    """A launch's: its own judging already waits for a gone process's last words."""
    return AT_ONCE if verdict.final else None


class Ending:
    """The clock of a watch's end: the hold under way (since when), and the deadline."""

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline  # --timeout's, on the same clock as ``now``
        self.hold: Hold | None = None
        self.since = 0.0  # when the hold began

    def weigh(self, now: float, hold: Hold | None, quiet_for: float = math.inf) -> Why | None:
        """Why the watch is over now (None: not yet), given the verdict's hold now and how long
        the log has been quiet. A hold begins when it first differs from the last one."""
        if hold != self.hold:
            self.hold, self.since = hold, now
        if hold is not None:
            held = now - self.since
            if held >= hold.least and (held >= hold.most or hold.quiet is not None and quiet_for >= hold.quiet):
                return hold.why
        if self.deadline is not None and now >= self.deadline:
            return "timeout"
        return None

    def due(self, now: float, quiet_for: float = math.inf) -> float | None:
        """Seconds until :meth:`weigh` may answer otherwise with time alone (None: only a new
        verdict can end it)."""
        moments = [] if self.deadline is None else [self.deadline]
        hold = self.hold
        if hold is not None:
            moments.append(self.since + max(hold.least, hold.most))
            if hold.quiet is not None:
                moments.append(max(self.since + hold.least, now + hold.quiet - quiet_for))
        return None if not moments else max(0.0, min(moments) - now)
