"""Time left of a phase that counts, from the rate so far: pure, no I/O.

Some phases draw a tqdm bar with a count: a graph capture's batch sizes (SGLang's
``Capturing batches (bs=256 avail_mem=21.37 GB):  14%|█▍ | 5/36``, vLLM's ``Capturing CUDA
graphs (decode, FULL): 12/67``), a JIT warm-up's kernels. The time left of the running bar is
the count still to go over the rate so far — a range from the whole bar's rate to the recent
one's (SGLang captures the largest batch sizes first, so the rate climbs), and "cannot tell
yet" until a few seconds and a few items agree (``tui.core.loading.time_left``).

A phase may draw several bars one after another (vLLM's mixed prefill-decode graphs, then the
decode ones; SGLang's prefill graphs, then decode): a new bar starts when the count falls or
its total changes, and the time left is said to be *this bar's* — what comes after it is not
known until its bar appears. Samples are stamped by arrival: a bar read in one go (a log
caught up after the fact) has no rate until it moves again.

Some phases print a line per item done instead, with the item's own time (vLLM's torch.compile:
``Compiling a graph for compile range (1, 2048) takes 41.20 s``, or ``Directly load the compiled
graph(s) … from the cache, took 0.512 s``): their pace is the items' own times, not arrivals, so
a log read after the fact has one too; the time left is "cannot tell yet" until two items of
the same kind (compiled, or loaded from the cache) agree, and the words say which kind it is —
cold (compiling) or warm (from the cache).
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.core.loading import RATE_SPREAD, Series, range_words, time_left
from tui.core.wording import duration

#: Items a bar must have counted in this estimator's sight before a time left is given.
MIN_COUNTED = 3


@dataclass(frozen=True, slots=True)
class CountEstimate:
    """The running bar of ``phase``: ``done`` of ``total``, ``rate`` items a second, ``left`` a
    (low, high) range of seconds (None: "cannot tell yet"). ``bar``: the phase's 1st, 2nd … bar."""

    phase: str
    bar: int
    done: int
    total: int | None  # None: items counted with no total listed
    rate: float | None
    left: tuple[float, float] | None
    moving: bool = False  # it counted within tui.core.loading.MOVING_S
    timed: bool = False  # items that say their own time (torch.compile ranges), not a bar
    cached: int = 0  # of the items done, those loaded from a cache (warm)

    def left_words(self) -> str:
        if self.total is None:
            return "total unknown"
        if self.left is None:
            return "time left: cannot tell yet"
        return range_words(self.left) + ("" if self.timed else " in this bar")

    def words(self) -> str:
        """``16/36 · 2.4/s · ~0:08 left in this bar`` (``bar 2: …`` from the second bar on);
        items: ``2/3 · cold, compiling · 41.0 s each · ~0:41 left``."""
        if self.timed:
            return f"{self.done}{'' if self.total is None else f'/{self.total}'} · {self.pace_words()}"
        return f"{'' if self.bar <= 1 else f'bar {self.bar}: '}{self.done}/{self.total} · {self.pace_words()}"

    def cache_words(self) -> str:
        """Whether the items were made afresh (cold) or loaded from a cache (warm)."""
        if self.cached == 0:
            return "cold, compiling"
        if self.cached >= self.done:
            return "warm, from the cache"
        return f"{self.cached} from the cache, {self.done - self.cached} compiled"

    def pace_words(self) -> str:
        """``2.4/s · ~0:08 left in this bar``: the rate (once there is one) and the time left
        (items: ``cold, compiling · 41.0 s each · ~0:41 left``)."""
        kind = f"{self.cache_words()} · " if self.timed else ""
        if self.rate is None:
            return kind + self.left_words()
        if self.timed:
            rate = f"{duration(1 / self.rate)} each"
        else:
            rate = f"{self.rate:.1f}/s" if self.rate >= 0.1 else f"{60 * self.rate:.1f}/min"
        return f"{kind}{rate} · {self.left_words()}"

    def to_json(self) -> dict[str, object]:
        return {
            "phase": self.phase, "bar": self.bar, "done": self.done, "total": self.total,
            "per_s": None if self.rate is None else round(self.rate, 3),
            "left_s": None if self.left is None else [round(self.left[0], 1), round(self.left[1], 1)],
            "scope": "items" if self.timed else "bar",
            **({"cached": self.cached} if self.timed else {}),
        }


class CountEstimator:
    """Feed it a phase's bar counts as they arrive; ``estimate(phase, now)`` says where the
    running bar stands. One phase's bars at a time (the phases follow one another)."""

    def __init__(self) -> None:
        self.phase: str | None = None
        self.bar = 0
        self.total: int | None = 0
        self.done = 0
        self._series = Series()
        self._items: list[tuple[float, bool]] = []  # (its own seconds, from the cache) of each timed item
        self._item_at: float | None = None  # when the last timed item's line came

    def feed(
        self, phase: str, at: float, done: int, total: int | None, took: float | None = None,
        cached: bool | None = None,
    ) -> None:
        """A bar's count (``total`` > 0), or one item done (``took``: its own seconds; ``total``
        None where none is listed)."""
        if took is None and (total is None or total <= 0):
            return
        if phase != self.phase:
            self.phase, self.bar = phase, 0
        if self.bar == 0 or total != self.total or done < self.done:  # a new bar of this phase
            self.bar += 1
            self.total = total
            self._series = Series()
            self._items = []
        self.done = done if total is None else min(done, total)
        self._series.add(at, float(self.done))
        if took is not None:
            self._items.append((took, bool(cached)))
            self._item_at = at

    def estimate(self, phase: str, now: float | None = None) -> CountEstimate | None:
        """The running bar of ``phase``; None when none was seen for it."""
        series = self._series
        if phase != self.phase or not series.points:
            return None
        if self._items:
            return self._timed(phase, now)
        total = self.total or 0
        remaining = float(total - self.done)
        rate, left, moving = time_left(series, remaining, 1.0, now)
        if self.done >= total:
            left = (0.0, 0.0)
        elif self.done - series.points[0][1] < MIN_COUNTED:
            left = None  # too few items in sight to call it a rate
        return CountEstimate(phase, self.bar, self.done, total, rate, left, moving)

    def _timed(self, phase: str, now: float | None) -> CountEstimate:
        """Items with their own times: the pace of the latest kind (compiled, or from the cache)
        over its items, the range from their mean to the latest one's, once two agree."""
        kind = self._items[-1][1]
        times = [took for took, cached in self._items if cached == kind]
        cached = sum(1 for _, c in self._items if c)
        mean, latest = sum(times) / len(times), times[-1]
        rate = 1 / latest if latest > 0 else None
        left = None
        if self.total is not None and self.done >= self.total:
            left = (0.0, 0.0)
        elif self.total is not None and len(times) >= 2 and latest > 0 and abs(latest - mean) <= RATE_SPREAD * max(latest, mean):
            remaining = self.total - self.done
            since = 0.0 if now is None or self._item_at is None else max(0.0, now - self._item_at)
            low, high = remaining * min(mean, latest) - since, remaining * max(mean, latest) - since
            left = None if high <= 0 else (max(0.0, low), high)  # overdue: the pace no longer says
        return CountEstimate(phase, self.bar, self.done, self.total, rate, left, True, True, cached)
