"""The end of a watch, decided beside its verdict and pushed.

A watch that prints (``--plain``, ``--json``) ends with its verdict once that verdict is final
enough (``tui.core.ending``: held a moment, for a root cause or a gone server's last words to
follow), when its input has played out, or at ``--timeout``. :class:`WatchEnding` follows the
judging stage's pushes and the clock, closes the input (an unterminated last line counts; the
nodes' last updates are told) and pushes one :class:`WatchOver` with the verdict judged after
that: the presenter renders it and stops, deciding nothing itself.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from typing import TYPE_CHECKING, Any

from tui.core.ending import QUIET_S, Ending, Hold, Why, log_hold
from tui.core.state import STARTING
from tui.core.verdict import Verdict
from tui.session.judging import Judging, VerdictChanged

if TYPE_CHECKING:
    from tui.session import WatchSession


@dataclass(frozen=True, slots=True)
class WatchOver:
    """The watch is over: ``why`` (``tui.core.ending.Why``), and the verdict it ends with (judged
    after its input was closed), with its hints. Pushed once, after every event it weighed."""

    change: VerdictChanged
    why: Why


class WatchEnding:
    """Ends a watch once ``hold`` (a verdict -> its :class:`~tui.core.ending.Hold`) has held, its
    input played out, or ``timeout`` seconds passed; ``subscribe``, then ``start`` in the loop once
    the watch's sources run.

    ``quiet_for``: how long the log has been quiet (one log's hold waits for that);
    ``close``: the input's end, before the last verdict (a log's ``finish``, the nodes' ``flush``);
    ``played_out``: set when nothing more will be written (a replay): over once the log is quiet;
    ``sources``: awaited: over when it returns (every source of the log ended);
    ``pushes``: where the verdicts it weighs are pushed, if not to ``judging``'s subscribers.
    """

    def __init__(
        self, judging: Judging, hold: Callable[[Verdict], Hold | None], *, timeout: float | None = None,
        quiet_for: Callable[[], float] = lambda: math.inf, close: Callable[[], None] = lambda: None,
        played_out: asyncio.Event | None = None, sources: Callable[[], Awaitable[None]] | None = None,
        began: float | None = None, pushes: Callable[[Callable[[Any], None]], None] | None = None,
        backlog: Callable[[], int] = lambda: 0,
    ) -> None:
        self.judging = judging
        #: Where its verdicts are pushed (the judging stage's own, or a launch's, which pushes an
        #: attempt's only): what is held is the last one pushed there.
        self.pushes = pushes or judging.subscribe
        self.last: VerdictChanged | None = None
        self._started = False
        self.hold = hold
        self.quiet_for = quiet_for
        self.close = close
        self.played_out = played_out
        self.sources = sources
        #: Bytes of what the log held when the watch began, not read yet: no verdict is final before
        #: they are (a ready line at the top of a log that ends in a crash); a hold begins once read.
        self.backlog = backlog
        began = time.monotonic() if began is None else began
        self.ending = Ending(None if timeout is None else began + timeout)
        self.over: WatchOver | None = None
        self._closing = False
        self._subscribers: list[Callable[[WatchOver], None]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._waiter: asyncio.Task[None] | None = None
        self._ended = False  # every source ended
        # Heard from now, weighed once started: a verdict pushed between the watch's making and its
        # start (a launch whose server failed at once) is the one held, not missed.
        self.pushes(self._pushed)

    @classmethod
    def of_log(cls, session: WatchSession, *, timeout: float | None = None, played_out: asyncio.Event | None = None,
               began: float | None = None) -> WatchEnding:
        """One log's end: the log's own ready, stop or failure held until the log is quiet (or
        GRACE_S), the processes' end held for their last words; every source ended; the
        unterminated last line counts."""

        def quiet_for() -> float:
            last = session.times.last_output_at
            return math.inf if last is None else session.clock() - last

        return cls(session.judging, lambda verdict: log_hold(verdict, session.state.outcome != STARTING), timeout=timeout,
                   quiet_for=quiet_for, close=session.finish, played_out=played_out, sources=session.wait, began=began,
                   backlog=session.rest.backlog_left)

    def subscribe(self, callback: Callable[[WatchOver], None]) -> None:
        self._subscribers.append(callback)

    def start(self) -> None:
        """Weigh the verdict's pushes and follow the clock (inside the running loop, its sources started)."""
        self._started = True
        if self.sources is not None:
            self._waiter = asyncio.create_task(self._sources_end(self.sources))
        self.weigh()

    def stop(self) -> None:
        for pending in (self._timer, self._waiter):
            if pending is not None:
                pending.cancel()
        self._timer = self._waiter = None

    async def _sources_end(self, sources: Callable[[], Awaitable[None]]) -> None:
        await sources()
        self._ended = True
        self.weigh()

    def _pushed(self, change: Any) -> None:
        if isinstance(change, VerdictChanged):  # (a launch pushes its other events there too)
            self.last = change
            if self._started:
                self.weigh()

    def _tick(self) -> None:
        """The clock alone may end it: the verdict decided now (a change is pushed, and weighed), then weighed."""
        self._timer = None
        self.judging.evaluate()
        self.weigh()

    def weigh(self) -> None:
        """Is it over now? If so, close the input and push :class:`WatchOver`; else ask again when
        the clock alone may end it."""
        if self.over is not None or self._closing:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        now = time.monotonic()
        quiet = self.quiet_for()
        last = self.last  # (none before its first push: nothing to hold yet)
        backlogged = self.backlog() > 0
        hold = None if last is None or backlogged else self.hold(last.verdict)
        why: Why | None = "ended" if self._ended else self.ending.weigh(now, hold, quiet)
        played_out = self.played_out is not None and self.played_out.is_set()
        if why is None and played_out and quiet >= QUIET_S:
            why = "ended"
        if why is None:
            due = self.ending.due(now, quiet)
            if self.played_out is not None:  # looked at as the log goes quiet (its setting pushes nothing)
                due = min(math.inf if due is None else due, QUIET_S - quiet if quiet < QUIET_S else QUIET_S)
            if backlogged:  # looked at again as the backlog is read (reading it pushes no new verdict)
                due = min(math.inf if due is None else due, QUIET_S)
            if due is not None:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:  # asked after the loop ended (SIGTERM or SIGHUP ended the watch, its
                    return  # verdict so far said): the clock ends nothing any more
                self._timer = loop.call_later(due, self._tick)
            return
        self._closing = True
        self.close()
        self.over = over = WatchOver(self.judging.evaluate(), why)
        self.stop()
        for callback in list(self._subscribers):
            callback(over)
