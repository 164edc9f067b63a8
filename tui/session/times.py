"""A node's startup in time: when its output came, how long it has been quiet, and what time it
is in the log's own clock.

Two clocks meet here. The watcher's (``clock``: the arrival of bytes — right for "quiet for
40 s") and the log's (its timestamps — right for "weight load took 4:51" in a log read after the
fact, or behind a reconnect's backlog). :class:`StartupTimes` keeps the offset between them as of
the last timestamped line, so a silence measured by arrival is drawn on the log's time axis, and
"now" in log time moves on between lines. It is the one owner of these figures for a node; the
session tells it what came and when the startup was decided.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tui.core.state import StartupState, origin
from tui.session.models import Silence

#: Stretches without log output at least this long (seconds, by arrival) are recorded for the timeline.
SILENCE_SECONDS = 5.0
#: The silences kept (the oldest go first): the timeline draws the recent ones.
SILENCES_KEPT = 256


class StartupTimes:
    """When the startup's output came and went quiet, by arrival; its elapsed time in log time."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.started_at: float | None = None  # arrival of the first log bytes
        self.finished_at: float | None = None  # when the verdict became ready/failed, or the process went
        self.last_output_at: float | None = None
        self.silences: list[Silence] = []
        self._last_ts: float | None = None
        self._ts_offset = 0.0  # log time minus arrival time, as of the last timestamped line
        self._elapsed_high: tuple[tuple[Any, ...], float] = ((), 0.0)  # (startup, the most startup_elapsed said)

    def output(self, now: float) -> None:
        """Log lines arrived at ``now``: a long stretch before them is a silence."""
        if self.started_at is None:
            self.started_at = now
        last = self.last_output_at
        if last is not None and now - last >= SILENCE_SECONDS:
            self.silences.append(Silence(last + self._ts_offset, now + self._ts_offset))
            if len(self.silences) > SILENCES_KEPT:
                del self.silences[0]
        self.last_output_at = now

    def timestamped(self, last_ts: float | None, now: float) -> None:
        """The log's latest timestamp after lines that arrived at ``now``: the offset between the clocks."""
        if last_ts is not None and last_ts != self._last_ts:
            self._last_ts = last_ts
            self._ts_offset = last_ts - now

    def finish(self) -> None:
        """The startup is decided (ready, failed) or its process gone: its time stops here."""
        if self.finished_at is None:
            self.finished_at = self.clock()

    def new_startup(self) -> None:
        """A new startup in the same log: its clock and silences start afresh."""
        self.started_at = self.clock()
        self.finished_at = None
        self.silences.clear()

    def new_file(self) -> None:
        """The log began again (a new file at its path): its time is read afresh from its lines."""
        self._last_ts = None
        self.started_at = self.finished_at = None

    def elapsed(self) -> float | None:
        """Seconds since the first log bytes arrived, frozen at the verdict."""
        if self.started_at is None:
            return None
        end = self.finished_at if self.finished_at is not None else self.clock()
        return max(0.0, end - self.started_at)

    def quiet_for(self) -> float | None:
        """Seconds since the log last grew, while the startup is still undecided."""
        if self.last_output_at is None or self.finished_at is not None:
            return None
        return max(0.0, self.clock() - self.last_output_at)

    def log_now(self, state: StartupState) -> float | None:
        """'Now' in log time: the last timestamp, moved on by the arrival time since; frozen at the
        verdict (when the process died, not at the last line it wrote before a quiet stretch)."""
        last = state.last_ts
        if last is None:
            return last
        now = self.finished_at if self.finished_at is not None else self.clock()
        return max(last, now + self._ts_offset)

    def startup_elapsed(self, state: StartupState, attempt: int) -> float | None:
        """Time since the startup began, in the log's own time (right for a log read after the
        fact too); the watcher's own clock before the log has given a timestamp."""
        start, now = origin(state), self.log_now(state)
        elapsed = max(0.0, now - start) if start is not None and now is not None else self.elapsed()
        if elapsed is None:
            return None
        key = (attempt, state.attempt, start)  # the same startup: its time never goes back (lines that
        if self._elapsed_high[0] == key and elapsed < self._elapsed_high[1]:  # came late, the backlog after
            return self._elapsed_high[1]  # a reconnect, set the log's clock back)
        self._elapsed_high = (key, elapsed)
        return elapsed
