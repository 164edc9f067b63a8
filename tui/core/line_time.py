"""Each log line's own time, read once (the log merged across nodes is ordered by it): where the
log's profile says a line's time is, its headers' ``ts`` group, read in its ``timestamp`` format, as
the tracker reads the lines it is fed (it skips most of them).

Cheap enough for a flood of 100k lines/s: a line with the timestamp a recent line had at the same
place costs a ``startswith`` (the same second), or one and its seconds read by hand (the same
minute); a line without the format's colons near its start (a traceback's) is passed over; only the
rest is matched against the headers, and parsed (``Timestamps``). Until the server is known the
built-in profiles' headers are tried, and the first that reads a time is kept; a log none of them
reads in its first ``LOOK_LINES`` lines is read as having no times.
"""

from __future__ import annotations

from tui.core.carriers import label_end
from tui.core.profiles import Profile, builtin_profiles
from tui.core.timestamps import Timestamps

#: A header's time begins within this many characters of the line's start (past a carrier's label: ``srun -l``'s, docker compose's).
WINDOW = 128
#: Timestamps remembered with where they stood: one per prefix width (vLLM's process tags differ).
RECENT = 4
#: A timestamp read, as remembered: where it stood, its text and value — to the minute for a format
#: that ends in the seconds (True: a line's seconds are read by hand), else whole.
_Seen = tuple[int, str, float, bool]
#: What may follow a timestamp's seconds in a line that has another (a fraction, a longer number).
_GOES_ON = frozenset(".,0123456789")
#: Lines of a log whose server is not known yet that are looked through for a time a built-in
#: profile reads, before the log is read as having none.
LOOK_LINES = 1000
#: JSON log lines' time field (``tui.core.tracker.json_record`` reads the same).
_JSON_TIME = '"asctime"'


class _HeaderTime:
    """One profile's way to a line's time: its headers up to the last with a ``ts`` group (an
    earlier header that matches says the line has none, as it does to the tracker), its format."""

    def __init__(self, profile: Profile, fmt: str) -> None:
        last = max(i for i, header in enumerate(profile.headers) if "ts" in header.groupindex)
        #: (header, the number of its ts group: 0 for none; RE2's matches take no group names)
        self.headers = [(header, header.groupindex.get("ts", 0)) for header in profile.headers[: last + 1]]
        self.clock = Timestamps(fmt)
        #: the clock's colons: a line without one near its start has no time of this format
        self.mark = ":" if ":" in fmt else ""
        self.to_the_second = fmt.endswith("%S")

    @classmethod
    def of(cls, profile: Profile) -> _HeaderTime | None:
        if profile.timestamp is None or not any("ts" in header.groupindex for header in profile.headers):
            return None
        return cls(profile, profile.timestamp)

    def read(self, text: str, skip: int, at: float | None) -> tuple[float, _Seen] | None:
        """The line's time, and as it is remembered (``_Seen``); None: the line has none."""
        if self.mark and text.find(self.mark, skip, skip + WINDOW) < 0:
            return None
        line = text[skip:] if skip else text
        for header, group in self.headers:
            match = header.match(line)
            if match is None:
                continue
            ts = match.group(group) if group else None
            value = None if ts is None else self.clock.parse(ts, at)
            if ts is None or value is None:
                return None
            start = skip + match.start(group)
            if self.to_the_second and ts[-2:].isdigit() and ts[-3:-2] not in _GOES_ON:  # (no fraction)
                return value, (start, ts[:-2], value - int(ts[-2:]), True)
            return value, (start, ts, value, False)
        return None

    def json_time(self, text: str, at: float | None) -> float | None:
        """A JSON record's ``asctime`` (logging's format, or the profile's), found without parsing the record."""
        key = text.find(_JSON_TIME)
        if key < 0:
            return None
        start = text.find('"', key + len(_JSON_TIME)) + 1
        end = text.find('"', start)
        if start == 0 or end < 0:
            return None
        return self.clock.parse(text[start:end], at)


#: ``LineTimes`` before its first line: no profile's readers made yet.
_NOT_YET = object()


class LineTimes:
    """The times of one log's lines, read one line at a time as it comes (``time_of``). The
    profile is whichever the tracker reads the log as now (None: not known yet)."""

    def __init__(self) -> None:
        self._builtin: list[_HeaderTime] | None = None
        self._profile: Profile | None | object = _NOT_YET  # readers made at the first line asked about (most logs: never)

    def _use(self, profile: Profile | None) -> None:
        self._profile = profile
        self._recent: list[_Seen] = []
        if profile is not None:
            reader = _HeaderTime.of(profile)
            self._readers = [reader] if reader is not None else []
            self._looking = 0  # the profile is the log's: no looking among others
            return
        if self._builtin is None:
            self._builtin = [reader for p in builtin_profiles() if (reader := _HeaderTime.of(p)) is not None]
        self._readers = list(self._builtin)
        self._looking = LOOK_LINES

    def time_of(self, text: str, profile: Profile | None, at: float | None) -> float | None:
        """Line ``text``'s own time (seconds since the epoch), or None when it printed none; ``at``:
        when it arrived (a format without a year takes the year of arrival)."""
        if profile is not self._profile:
            self._use(profile)
        for start, prefix, value, by_minute in self._recent:
            if not text.startswith(prefix, start):
                continue
            if not by_minute:
                return value
            at_seconds = start + len(prefix)  # the same minute: its seconds, read here
            seconds = text[at_seconds : at_seconds + 2]
            if seconds.isdigit() and text[at_seconds + 2 : at_seconds + 3] not in _GOES_ON:
                return value + int(seconds)
        readers = self._readers
        if not readers:
            return None
        skip = label_end(text)
        if text[skip : skip + 1] == "{":
            return readers[0].json_time(text, at)
        for reader in readers:
            found = reader.read(text, skip, at)
            if found is not None:
                self._remember(reader, found[1])
                return found[0]
        if self._looking:
            self._looking -= 1
            if not self._looking:
                self._readers = []  # no server's timestamps in its first lines: a log without any
        return None

    def _remember(self, reader: _HeaderTime, seen: _Seen) -> None:
        """A time read: remembered where it stood; until the server is known, its format is the log's."""
        if self._looking:
            self._readers, self._looking = [reader], 0
        start = seen[0]
        self._recent = [seen, *(entry for entry in self._recent if entry[0] != start)][:RECENT]
