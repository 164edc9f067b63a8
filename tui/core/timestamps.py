"""The timestamp bookkeeping of ``StartupTracker``: a log line's own time as epoch seconds.

strptime runs once per minute of log (the seconds are added by hand, the last second's text is
cached), a log with no year gets the year of arrival (December's log read in January, the year
before), and a line with no time of its own takes the log's latest one, else its arrival time.
A mixin: the tracker owns the state, the profile and the caches (reset with each fresh state).
"""

from __future__ import annotations

import time
from datetime import datetime

from tui.core.profiles import Profile
from tui.core.state import StartupState


class Timestamps:
    """Parses and caches the timestamps of the tracker's profile (a mixin of ``StartupTracker``,
    which sets these attributes)."""

    state: StartupState
    profile: Profile | None
    _last_ts: float | None
    _ts_base: tuple[str, float] | None
    _year: int | None
    _minutes: dict[str, float]

    def _time(self, ts_text: str | None, at: float | None) -> float | None:
        """The line's own timestamp; else the log's latest one; else arrival time."""
        state = self.state
        ts = None
        if ts_text is not None and self.profile is not None and self.profile.timestamp:
            ts = self._parse_time(self.profile.timestamp, ts_text, at)
        if ts is not None:
            self._last_ts = ts
        else:
            ts = self._last_ts if self._last_ts is not None else at
        if ts is not None:
            if state.first_ts is None:
                state.first_ts = ts
            state.last_ts = ts
        return ts

    def _parse_time(self, fmt: str, text: str, at: float | None) -> float | None:
        """``text`` (a timestamp in strptime format ``fmt``) as seconds since the epoch."""
        base, _, fraction = text.replace(",", ".").partition(".")
        cached = self._ts_base
        if cached is not None and cached[0] == base:
            value = cached[1]
        else:
            parsed = self._parse_base(fmt, base, at)
            if parsed is None:
                return None
            self._ts_base = (base, parsed)
            value = parsed
        if fraction.isdigit():
            value += float("0." + fraction)
        return value

    def _parse_base(self, fmt: str, base: str, at: float | None) -> float | None:
        """Seconds since the epoch; strptime once per minute, the seconds added by hand."""
        seconds = 0
        if fmt.endswith("%S") and base[-2:].isdigit():
            seconds = int(base[-2:])
            base = base[:-2] + "00"
        value = self._minutes.get(base)
        if value is None:
            try:
                if "%Y" in fmt or "%y" in fmt:
                    value = datetime.strptime(base, fmt).timestamp()
                else:  # no year in the log (vLLM): the year of arrival, or of now
                    ref = at if at is not None else time.time()
                    if self._year is None:
                        self._year = time.localtime(ref).tm_year
                    value = datetime.strptime(f"{self._year} {base}", f"%Y {fmt}").timestamp()
                    if value > ref + 2 * 86400:  # December's log read in January
                        value = datetime.strptime(f"{self._year - 1} {base}", f"%Y {fmt}").timestamp()
            except ValueError:
                return None
            if len(self._minutes) > 4096:
                self._minutes.clear()
            self._minutes[base] = value
        return value + seconds
