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
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.core.loading import Series, range_words, time_left

#: Items a bar must have counted in this estimator's sight before a time left is given.
MIN_COUNTED = 3


@dataclass(frozen=True, slots=True)
class CountEstimate:
    """The running bar of ``phase``: ``done`` of ``total``, ``rate`` items a second, ``left`` a
    (low, high) range of seconds (None: "cannot tell yet"). ``bar``: the phase's 1st, 2nd … bar."""

    phase: str
    bar: int
    done: int
    total: int
    rate: float | None
    left: tuple[float, float] | None
    moving: bool = False  # it counted within tui.core.loading.MOVING_S

    def left_words(self) -> str:
        return "time left: cannot tell yet" if self.left is None else range_words(self.left) + " in this bar"

    def words(self) -> str:
        """``16/36 · 2.4/s · ~0:08 left in this bar`` (``bar 2: …`` from the second bar on)."""
        return f"{'' if self.bar <= 1 else f'bar {self.bar}: '}{self.done}/{self.total} · {self.pace_words()}"

    def pace_words(self) -> str:
        """``2.4/s · ~0:08 left in this bar``: the rate (once there is one) and the time left."""
        if self.rate is None:
            return self.left_words()
        rate = f"{self.rate:.1f}/s" if self.rate >= 0.1 else f"{60 * self.rate:.1f}/min"
        return f"{rate} · {self.left_words()}"

    def to_json(self) -> dict[str, object]:
        return {
            "phase": self.phase, "bar": self.bar, "done": self.done, "total": self.total,
            "per_s": None if self.rate is None else round(self.rate, 3),
            "left_s": None if self.left is None else [round(self.left[0], 1), round(self.left[1], 1)],
            "scope": "bar",
        }


class CountEstimator:
    """Feed it a phase's bar counts as they arrive; ``estimate(phase, now)`` says where the
    running bar stands. One phase's bars at a time (the phases follow one another)."""

    def __init__(self) -> None:
        self.phase: str | None = None
        self.bar = 0
        self.total = 0
        self.done = 0
        self._series = Series()

    def feed(self, phase: str, at: float, done: int, total: int) -> None:
        if total <= 0:
            return
        if phase != self.phase:
            self.phase, self.bar = phase, 0
        if self.bar == 0 or total != self.total or done < self.done:  # a new bar of this phase
            self.bar += 1
            self.total = total
            self._series = Series()
        self.done = min(done, total)
        self._series.add(at, float(self.done))

    def estimate(self, phase: str, now: float | None = None) -> CountEstimate | None:
        """The running bar of ``phase``; None when none was seen for it."""
        series = self._series
        if phase != self.phase or not series.points:
            return None
        remaining = float(self.total - self.done)
        rate, left, moving = time_left(series, remaining, 1.0, now)
        if self.done >= self.total:
            left = (0.0, 0.0)
        elif self.done - series.points[0][1] < MIN_COUNTED:
            left = None  # too few items in sight to call it a rate
        return CountEstimate(phase, self.bar, self.done, self.total, rate, left, moving)
