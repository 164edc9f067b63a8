"""What a session keeps for the views: the bounded scrollback, GPU history, what changed."""

from __future__ import annotations

import bisect
import math
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from tui.core.events import GpuSample

# Style classes of scrollback entries; the log view maps each to a theme style.
NORMAL, ERROR, WARNING, PHASE, PROGRESS, MARK = "normal", "error", "warning", "phase", "progress", "mark"
NOTABLE = frozenset((ERROR, PHASE, MARK))  # what the "errors and phases only" filter keeps
STYLES = (NORMAL, ERROR, WARNING, PHASE, PROGRESS, MARK)
CODES = {style: code for code, style in enumerate(STYLES)}
_MARK_CODE = CODES[MARK]


@dataclass(slots=True)
class LogEntry:
    """One line of the scrollback. ``number`` is the line's number in its file (grep -n)."""

    seq: int  # position in the whole stream, monotonic across log restarts
    number: int
    text: str
    style: str = NORMAL
    node: str = ""  # several nodes: the node whose log it is (the merged view's node column)


class Scrollback:
    """The last ``capacity`` log lines, counting those it dropped to stay bounded.

    Entries are addressed by ``seq``; ``first_seq`` moves forward as old lines go.
    The still-open line a progress bar keeps rewriting is ``progress`` (not an entry).
    Stored as parallel lists of ints, strs and style codes (no object per line), so
    100k kept lines cost the garbage collector nothing; ``LogEntry`` views are made
    on request. Beside them, each line's own time (``times``: what the log merged across
    nodes is ordered by), read by ``time_of`` once, when first asked for.
    """

    def __init__(self, capacity: int = 100_000, time_of: Callable[[str], float | None] | None = None) -> None:
        self.capacity = max(10, capacity)
        self._numbers: list[int] = []
        self._texts: list[str] = []
        self._styles = bytearray()
        self._times = array("d")  # the own times of the first len(_times) kept lines (NaN: none printed)
        self._time_of = time_of
        self.dropped = 0
        self.progress: LogEntry | None = None
        self.notable: list[int] = []  # seqs of error/phase/marker entries, ascending
        self._generation = 0  # seq of the first entry of the current file

    # ---------------------------------------------------------------- reading

    def __len__(self) -> int:
        return len(self._texts)

    @property
    def first_seq(self) -> int:
        return self.dropped

    @property
    def end_seq(self) -> int:
        """One past the newest entry's seq: the total ever appended."""
        return self.dropped + len(self._texts)

    def _entry(self, index: int) -> LogEntry:
        return LogEntry(self.dropped + index, self._numbers[index], self._texts[index], STYLES[self._styles[index]])

    def get(self, seq: int) -> LogEntry | None:
        index = seq - self.dropped
        if 0 <= index < len(self._texts):
            return self._entry(index)
        return None

    def entries(self, start: int = 0, stop: int | None = None) -> list[LogEntry]:
        """Entries with ``start <= seq < stop`` that are still kept."""
        lo = max(0, start - self.dropped)
        hi = len(self._texts) if stop is None else min(len(self._texts), max(lo, stop - self.dropped))
        return [self._entry(i) for i in range(lo, hi)]

    def times(self, start: int = 0) -> Iterator[tuple[int, float]]:
        """(seq, time) of the entries from ``start`` on, NaN where a line printed no time (or no
        ``time_of`` reads them): the lines not read yet are read now, once."""
        times, texts = self._times, self._texts
        if len(times) < len(texts):
            time_of = self._time_of
            for index in range(len(times), len(texts)):
                time = time_of(texts[index]) if time_of is not None else None
                times.append(math.nan if time is None else time)
        lo = max(0, start - self.dropped)
        return zip(range(self.dropped + lo, self.end_seq), times[lo:])

    def widest(self, start: int) -> int:
        """Length of the longest text from ``start`` on (for the view's horizontal extent)."""
        lo = max(0, start - self.dropped)
        return max(map(len, self._texts[lo:]), default=0)

    def find_line(self, number: int) -> LogEntry | None:
        """The entry of line ``number`` of the current file, if still kept."""
        lo = max(0, self._generation - self.dropped)
        index = bisect.bisect_left(self._numbers, number, lo=lo)
        while index < len(self._numbers) and self._numbers[index] == number:
            if self._styles[index] != _MARK_CODE:
                return self._entry(index)
            index += 1
        return None

    def notable_seqs(self) -> list[int]:
        start = bisect.bisect_left(self.notable, self.dropped)
        return self.notable[start:]

    def anchor(self, seq: int) -> object:
        """What finds the line ``seq`` again later (``seq_of``): here its seq, which never moves."""
        return seq

    def seq_of(self, anchor: object) -> int | None:
        """The seq of the line ``anchor`` names, None once it is no longer kept."""
        return anchor if isinstance(anchor, int) and self.dropped <= anchor < self.end_seq else None

    # ---------------------------------------------------------------- writing

    def append(self, number: int, text: str, style: str = NORMAL) -> None:
        self._numbers.append(number)
        self._texts.append(text)
        self._styles.append(CODES[style])
        if style in NOTABLE:
            self.notable.append(self.end_seq - 1)
        if len(self._texts) > self.capacity + self.capacity // 8:
            self._trim()

    def mark(self, text: str) -> None:
        """A line of Watchtower's own (a gap, a restart) between log lines."""
        last = self._numbers[-1] if self._numbers and self.end_seq > self._generation else 0
        self.append(last, text, MARK)

    def restyle(self, entry: LogEntry, style: str) -> None:
        index = entry.seq - self.dropped
        if not 0 <= index < len(self._texts):
            return
        current = STYLES[self._styles[index]]
        if current == style or current == ERROR:
            return  # an error stays an error
        if style in NOTABLE and current not in NOTABLE:
            bisect.insort(self.notable, entry.seq)
        self._styles[index] = CODES[style]
        entry.style = style

    def new_file(self) -> None:
        """The log restarted at line 1: line numbers from here on belong to the new file."""
        self._generation = self.end_seq

    def _trim(self) -> None:
        excess = len(self._texts) - self.capacity
        del self._numbers[:excess]
        del self._texts[:excess]
        del self._styles[:excess]
        del self._times[:excess]  # (those not read yet stay unread: the array is shorter still)
        self.dropped += excess
        cut = bisect.bisect_left(self.notable, self.dropped)
        if cut > len(self.notable) // 2:
            del self.notable[:cut]


@dataclass(slots=True)
class BlockText:
    """An error block's lines as copied or reported: all of them, or its head and tail."""

    lines: list[tuple[int, str]]
    size: int  # lines in the whole block
    left_out: tuple[int, int] | None = None  # first and last line number not taken (the limit)
    left_out_count: int = 0
    unavailable: int = 0  # lines of the block neither in the scrollback nor re-readable

    def numbered(self) -> list[tuple[int | None, str]]:
        """The lines, with a line of Watchtower's own (number None) where some were left out."""
        out: list[tuple[int | None, str]] = []
        gap = self.left_out
        for number, text in self.lines:
            if gap is not None and number > gap[0]:
                out.append((None, f"… {self.left_out_count} lines left out (lines {gap[0]}–{gap[1]}) …"))
                gap = None
            out.append((number, text))
        return out

    def text(self) -> str:
        return "".join(f"{text}\n" for _, text in self.numbered())

    def note(self) -> str:
        """What is missing, in words ("" when nothing is)."""
        parts = []
        if self.left_out_count:
            first, last = self.left_out or (0, 0)
            parts.append(f"{self.left_out_count} of {self.size} lines left out (lines {first}–{last})")
        if self.unavailable:
            parts.append(f"{self.unavailable} lines no longer kept")
        return "; ".join(parts)


class GpuBoard:
    """A node's GPU samples, its one owner: the recent samples the verdict reads (memory rates,
    utilisation), stamped with the session's clock on arrival (a replay's clock runs at its own
    speed); the latest for the panel; a short memory history per GPU for the sparklines; and
    whether a GPU source feeds it at all (a node with ``gpus = none`` will never have a sample)."""

    def __init__(self, kind: str | None = None, history: int = 120) -> None:
        #: Where the samples come from, in a word (NVML, nvidia-smi, simulated), or None: no GPU source.
        self.kind = kind
        self.history_len = history
        self.samples: deque[GpuSample] = deque(maxlen=64)
        self.latest: GpuSample | None = None
        self.unavailable: str | None = None
        self.history: dict[int, deque[float]] = {}  # GPU index -> memory used (bytes)

    @property
    def watched(self) -> bool:
        return self.kind is not None

    def update(self, sample: GpuSample, at: float) -> None:
        """A sample that arrived at ``at`` (the session's clock)."""
        self.samples.append(replace(sample, at=at))
        self.latest = sample
        self.unavailable = None
        for gpu in sample.gpus:
            ring = self.history.get(gpu.index)
            if ring is None:
                ring = self.history[gpu.index] = deque(maxlen=self.history_len)
            ring.append(float(gpu.memory_used) if gpu.memory_used is not None else float("nan"))

    def lost(self, reason: str) -> None:
        self.unavailable = reason

    def readable(self) -> Sequence[GpuSample]:
        """The samples the verdict may read: none while the source is lost (old ones say nothing of now)."""
        return () if self.unavailable else self.samples


#: What an update can be about (the views redraw what shows it): typed, so that a misspelt topic
#: is a type error, not a panel that never redraws.
Topic = Literal["log", "state", "gpu", "connection", "process", "job"]


@dataclass(frozen=True, slots=True)
class Update:
    """What changed since the last notification, by topic, for views to redraw: no data (what
    happened, event by event, is heard losslessly: ``WatchSession.hear``, ``ClusterSession.hear``)."""

    topics: frozenset[Topic]

    @property
    def samples_only(self) -> bool:
        """A GPU sample alone: nothing a node's phases, barrier or process hang on (a node set
        judges it on its next tick, not on each node's own second)."""
        return self.topics == {"gpu"}


@dataclass(slots=True)
class Silence:
    """A stretch with no log output, in log time (the tracker's timestamps) for the timeline."""

    start_ts: float
    end_ts: float


@dataclass(slots=True)
class SessionInfo:
    """What the header shows about where the log comes from."""

    server: str | None = None  # forced profile name, else the detected one
    host: str = "localhost"
    log_path: str = ""
    attempt: int = 1
    title: str = ""  # e.g. "demo: crash-context" or "replay: v2.wtrec"
    command: str = ""  # the launched command (masked), for the launcher
    preflight: Any = None  # the launch's last preflight report (tui.preflight.Report): phase zero
    refused: bool = False  # that report refused the launch (a ✗): nothing runs
