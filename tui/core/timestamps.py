"""A log's clock: each line's own time as epoch seconds, for ``StartupTracker``.

strptime runs once per minute of log (the seconds are added by hand, the last second's text is
cached), a log with no year gets the year of arrival (December's log read in January, the year
before), and a line with no time of its own takes the log's latest one, else its arrival time.
A log whose times are counted from the server's own start (llama.cpp's ``0.02.315.582``, format
``ELAPSED``) reads as seconds since that start: durations and the order of lines are right, the
date is not known (nothing reads a log's times as dates).
"""

from __future__ import annotations

import re
import time
from datetime import datetime

#: Minutes of log whose epoch value is cached (a long log starts the cache over).
MAX_MINUTES = 4096
#: Python logging's ``asctime`` (its fraction ``,mmm`` apart): what a JSON record's time field holds
#: whatever the server's own headers print (vLLM's have no year).
ASCTIME = "%Y-%m-%d %H:%M:%S"
#: ``ASCTIME``'s shape in ASCII digits only: read field by field, each out-of-range one the same
#: ValueError strptime raises (a startup-dense log has a new minute every few lines).
_ASCTIME_DIGITS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}")
#: The format of times counted from the server's start as llama.cpp prints them (common/log.cpp):
#: minutes (any number of digits), then seconds, milliseconds and microseconds, dot-separated.
ELAPSED = "elapsed"


class Timestamps:
    """The times of one log whose timestamps have strptime format ``fmt`` (None: the log has
    none, every line takes its arrival time). A new object is a clock with nothing read yet."""

    def __init__(self, fmt: str | None = None) -> None:
        self.fmt = fmt
        #: the latest time the log itself printed
        self.last: float | None = None
        self._base: tuple[str, float] | None = None  # the last timestamp text (to the second) and its value
        self._parsed: tuple[str, float] = ("", 0.0)  # the last whole timestamp text parsed, and its value
        self._year: int | None = None
        self._minutes: dict[str, float] = {}  # "YYYY-MM-DD HH:MM:00" -> epoch seconds

    def time(self, ts_text: str | None, at: float | None) -> float | None:
        """The line's own timestamp (``ts_text``); else the log's latest one; else ``at``, its arrival."""
        if ts_text == self._parsed[0] and ts_text:  # parse's remembered answer, without the call
            self.last = self._parsed[1]
            return self.last
        ts = None
        if ts_text is not None and self.fmt:
            ts = self.parse(ts_text, at)
        if ts is not None:
            self.last = ts
            return ts
        return self.last if self.last is not None else at

    def parse(self, text: str, at: float | None) -> float | None:
        """``text`` (a timestamp in the clock's format, or logging's asctime) as seconds since the
        epoch; None if it is neither."""
        assert self.fmt is not None
        if self.fmt == ELAPSED:
            return elapsed_seconds(text)
        last = self._parsed
        if text == last[0] and text:  # the ranks of a startup print one time after another
            return last[1]
        base, _, fraction = text.replace(",", ".").partition(".")
        cached = self._base
        if cached is not None and cached[0] == base:
            value = cached[1]
        else:
            parsed = self._parse_base(self.fmt, base, at)
            if parsed is None and self.fmt != ASCTIME:
                parsed = self._parse_base(ASCTIME, base, at)
            if parsed is None:
                return None
            self._base = (base, parsed)
            value = parsed
        if fraction.isdigit():
            value += float("0." + fraction)
        self._parsed = (text, value)
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
                if fmt == ASCTIME and _ASCTIME_DIGITS.fullmatch(base):  # strptime's answer, by hand (~1 µs, not 25)
                    value = datetime(int(base[0:4]), int(base[5:7]), int(base[8:10]), int(base[11:13]),
                                     int(base[14:16]), int(base[17:19])).timestamp()
                elif "%Y" in fmt or "%y" in fmt:
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
            if len(self._minutes) > MAX_MINUTES:
                self._minutes.clear()
            self._minutes[base] = value
        return value + seconds


def elapsed_seconds(text: str) -> float | None:
    """``M.SS.mmm.uuu`` (llama.cpp's time since its start: ``12.03.456.789``) as seconds; None if it
    is not that."""
    parts = text.split(".")
    if len(parts) != 4 or not all(part.isdigit() and part.isascii() for part in parts):
        return None
    minutes, seconds, millis, micros = parts
    if len(seconds) != 2 or len(millis) != 3 or len(micros) != 3 or len(minutes) > 9:
        return None
    return int(minutes) * 60 + int(seconds) + int(millis) / 1e3 + int(micros) / 1e6
