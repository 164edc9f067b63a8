"""Weight-load progress and time left, from bytes, on the first attempt: pure, no I/O.

How much there is to load comes from the checkpoint the server was given
(:func:`checkpoint_size`: the safetensors index's ``metadata.total_size``, else the sum
of the shard files — read by ``tui.sources.checkpoint``), split over the GPUs that
hold one copy (÷ TP × PP). How much has been loaded comes from every signal there is,
best first (:class:`LoadEstimator`):

``read``  the server's processes' I/O counters (``/proc/PID/io``): the most of
          ``Σ read_bytes`` (what came off the disk; a loader that ``mmap``s shards
          shows only here, and only when it faults from disk) and the largest one
          process's ``rchar`` (what one process ``read()``; ranks that each read the
          whole checkpoint are not counted eight times);
``gpu``   GPU memory grown since the phase began, summed over the GPUs, against the
          checkpoint (a simulated GPU source's made-up memory counts only where no real
          signal moved — never over the loader's own bar — and gives no rate nor time left:
          its bytes alone, labelled *simulated*);
``log``   the loader's own progress bar (``Loading safetensors checkpoint shards: 43%``).

Before all of them, while a Hugging Face download runs inside the load: ``download``, the
repo's weight bytes in the local cache folder growing (``tui.sources.download``) — the
server's reads start over when it ends (a socket's bytes count in ``rchar`` too).

The first signal that has moved is used (the loader's bar first while the total is unknown). Time left is a *range* from the rate of the
recent past against the rate of the whole phase, and "cannot tell yet" until a few
seconds of samples agree: an estimate, honestly worded.

Once the load is over, :meth:`LoadEstimator.reading` says what its processes read (``LoadReads``)
and :func:`page_cache` whether the checkpoint came off the disk (cold) or from the page cache
(warm) — a second load of the same files is much faster, and the two must not be set side by
side as if equal. Cold: the disk reads (``read_bytes``) reached half the checkpoint. Warm: one
process ``read()`` half the checkpoint while the disk gave a tenth of that at most, on a
filesystem whose misses show as disk reads (a local block device: data in hints.toml's
``[storage]``; a network or FUSE filesystem's reads never do). Anything else — a loader that
``mmap``s its shards and found them cached (neither counter moves), counters not watched from
the load's start — is "cannot tell".
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tui.core.wording import clock

if TYPE_CHECKING:  # (an annotation only: `scan` does without the source events' classes)
    from tui.core.events import GpuSample

#: Files that hold weights (the folder's other files are config and tokenizer).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
#: Samples kept per signal (one a second: a few minutes of rate history; memory stays bounded).
KEEP = 256
#: The rate is "stable" once samples span this many seconds and the recent rate agrees with
#: the whole phase's within RATE_SPREAD (fraction).
STABLE_AFTER_S = 1.5
RATE_SPREAD = 0.35
#: A signal counts once it moved this much (bytes) since the phase began.
MOVED_BYTES = 16 << 20
#: The recent past the current rate is read over (seconds).
RECENT_S = 10.0
#: The load is "moving" while its signal changed within this many seconds.
MOVING_S = 5.0
#: A time left is counted from the last reading; at most this much of that reading's age is taken off.
AGE_LIMIT_S = 2.0
#: Cold: the disk gave at least this share of the checkpoint during the load. Warm: a process
#: read() this share of it, and the disk gave at most WARM_DISK_SHARE of what it read.
COLD_SHARE = 0.5
WARM_DISK_SHARE = 0.1
#: The device's busy time counts once its samples cover this share of the load's time.
BUSY_SEEN = 0.5


def checkpoint_size(index_text: str | None, files: Iterable[tuple[str, int]]) -> int | None:
    """Bytes of weights: ``metadata.total_size`` of the index file's text, else the sum of the
    weight files' sizes (``(name, bytes)``; safetensors alone when the folder has both kinds:
    a converted checkpoint keeps its ``.bin`` files beside, and a loader reads one kind). None: none."""
    if index_text:
        try:
            total = json.loads(index_text).get("metadata", {}).get("total_size")
        except (ValueError, AttributeError, RecursionError):  # not JSON, not an object, nested past Python's stack
            total = None
        if isinstance(total, (int, float)) and not isinstance(total, bool) and total > 0:
            return int(total)
    sizes: dict[str, int] = {}
    for name, size in files:
        suffix = next((s for s in WEIGHT_SUFFIXES if name.endswith(s)), None)
        if suffix is not None and size > 0:
            sizes[suffix] = sizes.get(suffix, 0) + size
    if not sizes:
        return None
    return sizes.get(".safetensors") or sum(sizes.values())


def split_of(tp: int | str | None, pp: int | str | None = None) -> int:
    """Over how many GPUs one copy of the weights is split: TP × PP (EP shares the TP GPUs)."""

    def number(value: int | str | None) -> int:
        try:
            return max(1, int(value)) if value is not None else 1
        except ValueError:
            return 1

    return number(tp) * number(pp)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What there is to load: ``total`` bytes of the target (and ``draft``) weights, ``split``
    over the GPUs of one copy. ``model`` names it as the server was given it."""

    model: str
    total: int
    split: int = 1
    draft: int = 0  # the draft model's bytes (speculative decoding), loaded by its own phase
    filesystem: str | None = None  # the type of the filesystem it lies on (ext4, nfs4, …), where known
    storage: str | None = None  # "block" or "network": what that filesystem is (hints.toml [storage])
    device: str | None = None  # the block device it lies on (``major:minor``), where it has one

    @property
    def per_gpu(self) -> int:
        return self.total // max(1, self.split)


def gb(n: float) -> str:
    """``212`` / ``3.4`` / ``0.21`` GB: as many digits as the figure needs."""
    value = n / 1e9
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def range_words(left: tuple[float, float]) -> str:
    """``~6:25 left`` where the range is narrow, else ``5:10–7:40 left``."""
    low, high = left
    if high - low <= max(15.0, 0.25 * high):
        return f"~{clock((low + high) / 2)} left"
    return f"{clock(low)}–{clock(high)} left"


@dataclass(frozen=True, slots=True)
class LoadEstimate:
    """The weight load now. ``left`` is a (low, high) range of seconds, None while the rate
    is not stable ("cannot tell yet") or the total is unknown."""

    signal: str  # "download", "read", "gpu", "log"
    loaded: int | None  # bytes (None: the log's bar gives a fraction only and no total is known)
    total: int | None
    rate: float | None  # bytes per second
    left: tuple[float, float] | None
    simulated: bool = False  # from a simulated GPU source: never shown as a real reading
    fraction: float | None = None
    moving: bool = False  # it grew within MOVING_S: the load goes on, whatever the log says

    @property
    def stable(self) -> bool:
        return self.left is not None

    def left_words(self) -> str:
        if self.simulated:
            return "no rate"  # (made-up bytes: the source says SIMULATED)
        if self.left is None:
            return "time left: cannot tell yet" if self.total else "total unknown"
        return range_words(self.left)

    def short(self) -> str:
        """``212/547 GB · 0.87 GB/s · ~6:25 left`` (``simulated`` when it is): for a bar's label."""
        words = self.words()
        cut = words.rfind(" (from ")
        return words[:cut] + (" · simulated" if self.simulated else "") if cut >= 0 else words

    def words(self) -> str:
        """``212/547 GB · 0.87 GB/s · ~6:25 left (from the server's reads)`` (the phase's title is
        the caller's)."""
        parts = []
        what = "downloading " if self.signal == "download" else ""
        if self.loaded is not None and self.total:
            parts.append(f"{what}{gb(min(self.loaded, self.total))}/{gb(self.total)} GB")
        elif self.loaded is not None:
            parts.append(f"{what}{gb(self.loaded)} GB")
        elif self.fraction is not None:
            parts.append(f"{self.fraction * 100:.0f}%")
        if self.rate is not None and self.loaded is not None:
            parts.append(f"{self.rate / 1e9:.2f} GB/s")
        parts.append(self.left_words())
        source = {"download": "the Hugging Face cache growing", "read": "the server's reads", "gpu": "GPU memory",
                  "log": "the loader's bar"}[self.signal]
        parts.append(f"(from {'SIMULATED ' if self.simulated else ''}{source})")
        return " · ".join(parts[:-1]) + " " + parts[-1]

    def to_json(self) -> dict[str, object]:
        return {
            "signal": self.signal, "loaded_bytes": self.loaded, "total_bytes": self.total,
            "bytes_per_s": None if self.rate is None else round(self.rate),
            "left_s": None if self.left is None else [round(self.left[0], 1), round(self.left[1], 1)],
            "simulated": self.simulated,
        }


@dataclass(frozen=True, slots=True)
class LoadReads:
    """What the server's processes read during one weight load (``/proc/PID/io``, watched from
    the load's start to its end): ``disk`` bytes off the storage (Σ ``read_bytes``), ``read`` the
    most one process ``read()`` (``rchar``), over ``seconds``; ``total``: the checkpoint's bytes.
    ``busy``: the share of the load's time the checkpoint's block device had I/O in flight
    (``/proc/diskstats`` io_ticks: near 1, the load waited on the storage the whole time)."""

    disk: int
    read: int
    seconds: float
    total: int | None
    filesystem: str | None = None
    storage: str | None = None  # "block", "network" or None (hints.toml [storage])
    busy: float | None = None  # the share of the load's time its device had I/O in flight (None: not watched)
    device: str | None = None  # that block device (``major:minor``)


def page_cache(reads: LoadReads | None) -> str | None:
    """"cold" (the checkpoint came off the storage), "warm" (from the page cache) or None: cannot
    tell (see the module docstring for what each rests on)."""
    if reads is None or not reads.total:
        return None
    if reads.disk >= COLD_SHARE * reads.total:
        return "cold"
    if reads.storage == "block" and reads.read >= COLD_SHARE * reads.total and reads.disk <= WARM_DISK_SHARE * reads.read:
        return "warm"
    return None


def page_cache_words(reads: LoadReads) -> str:
    """``cold: 14.2 of the 15.0 GB came from disk (ext4)``: the verdict and the figures it rests on."""
    verdict = page_cache(reads)
    where = f" ({reads.filesystem})" if reads.filesystem else ""
    total = f"{gb(reads.total)} GB" if reads.total else "? GB"
    if verdict == "cold":
        return f"cold: {gb(reads.disk)} of the {total} checkpoint came off the storage{where}"
    if verdict == "warm":
        return (f"warm: {gb(reads.read)} GB read, {gb(reads.disk)} GB of it off the storage{where}: the checkpoint "
                "was in the page cache")
    if reads.storage == "network":
        why = "a network filesystem's reads never show as disk reads"
    elif reads.storage == "block":
        why = "the loader may map the files (mapped reads the page cache serves count nowhere)"
    else:
        why = "a filesystem not known to show its reads as disk reads"
    return (f"cannot tell: {gb(reads.disk)} GB off the storage, {gb(reads.read)} GB read() of the {total} "
            f"checkpoint{where}; {why}")


@dataclass(frozen=True, slots=True)
class LoadFacts:
    """What was watched of a log's weight loads, for its startup profile: ``download`` (bytes,
    seconds) of a Hugging Face download during the current one, ``reads`` what the current one's
    processes read, ``earlier`` what earlier attempts' did (by attempt number in the log)."""

    download: tuple[int, float] | None = None
    reads: LoadReads | None = None
    earlier: dict[int, LoadReads] = field(default_factory=dict)


class Series:
    """One signal's (time, bytes or fraction) samples since the phase began."""

    __slots__ = ("points", "changed_at")

    def __init__(self) -> None:
        self.points: deque[tuple[float, float]] = deque(maxlen=KEEP)
        self.changed_at: float | None = None  # when the value last grew

    def add(self, at: float, value: float) -> None:
        if self.points and value > self.points[-1][1]:
            self.changed_at = at
        if self.points and at <= self.points[-1][0]:  # read in one go (a burst): the newest value counts
            self.points[-1] = (self.points[-1][0], max(value, self.points[-1][1]))
            return
        self.points.append((at, value))

    @property
    def moved(self) -> float:
        """How far it got since the phase began (the values count from there)."""
        return self.points[-1][1] if self.points else 0.0

    @property
    def grown(self) -> float:
        """How far it got since its first sample (for values that do not count from 0)."""
        return self.points[-1][1] - self.points[0][1] if self.points else 0.0

    def rates(self) -> tuple[float, float] | None:
        """(the whole span's rate, the recent RECENT_S's rate), per second; None: too few."""
        if len(self.points) < 3:
            return None
        (t0, v0), (t1, v1) = self.points[0], self.points[-1]
        if t1 - t0 < STABLE_AFTER_S:
            return None
        window = min(RECENT_S, (t1 - t0) / 2)  # the recent half at most: it must differ from the whole
        recent = next(((t, v) for t, v in self.points if t >= t1 - window and t < t1), self.points[0])
        whole = (v1 - v0) / (t1 - t0)
        now = (v1 - recent[1]) / max(1e-9, t1 - recent[0])
        return whole, now


class LoadEstimator:
    """Feed it the signals as they come (``reads``, ``gpus``, ``bar``) once ``start`` said the
    phase began; ``estimate(now)`` words where the load stands. See the module docstring."""

    def __init__(self, checkpoint: Checkpoint | None = None) -> None:
        self.checkpoint = checkpoint
        self.started: float | None = None
        self.ended: float | None = None
        self._base_io: dict[int, tuple[int, int]] = {}  # pid -> counters when the phase began
        self._io_last: dict[int, tuple[int, int]] = {}  # pid -> latest counters (ended ones kept)
        self._gpu_base: dict[tuple[int, bool], int] = {}  # (GPU, the server's own?) -> bytes at the start
        self._series = {"download": Series(), "read": Series(), "gpu": Series(), "log": Series(), "disk": Series(),
                        "busy": Series()}
        self._read_one = 0  # the most one process read() since the load began
        self._watched = False  # counters were read before the load began (a base to count from)
        self._simulated = False
        self._downloading = False
        self._download_span: list[tuple[float, int]] = []  # (time, bytes) where it began, where it last grew
        self._cached_last = 0  # the repo's weight bytes in the cache, as last seen
        self._cached_before = 0  # ... when this load began

    def start(self, at: float) -> None:
        """The weight load began (its log line, by arrival time): counters from here on count."""
        self.started, self.ended = at, None
        self._base_io = dict(self._io_last)
        self._watched = bool(self._base_io)
        self._read_one = 0
        self._gpu_base = {}
        self._download_span = []
        self._cached_before = self._cached_last
        for series in self._series.values():
            series.points.clear()
        if self._watched:
            self._series["disk"].add(at, 0.0)  # the counters' base: the load's reads count from here

    def end(self, at: float) -> None:
        self.ended = at

    @property
    def running(self) -> bool:
        return self.started is not None and self.ended is None

    def reads(self, at: float, counters: Iterable[tuple[int, int, int]]) -> None:
        """``(pid, rchar, read_bytes)`` of the server's processes (cumulative, as /proc says)."""
        for pid, rchar, read_bytes in counters:
            self._io_last[pid] = (rchar, read_bytes)
        if not self.running:
            return
        disk = 0
        one = 0
        for pid, (rchar, read_bytes) in self._io_last.items():
            base = self._base_io.get(pid, (0, 0))  # a process born during the load: all of it counts
            disk += max(0, read_bytes - base[1])
            one = max(one, rchar - base[0])
        self._series["read"].add(at, float(max(disk, one)))
        self._series["disk"].add(at, float(disk))
        self._read_one = one

    def gpus(self, sample: GpuSample, at: float, pids: Collection[int] | None = None) -> None:
        """GPU memory now: growth since the phase began, summed over the GPUs — the server's own
        processes' memory where ``pids`` are known and the GPUs list them (another job's growth on
        the same GPUs is not this load), else each GPU's memory in use."""
        if not self.running:
            return
        grown = 0
        for gpu in sample.gpus:
            used = gpu.memory_used
            key = (gpu.index, False)
            if pids:
                own = [p.used_bytes for p in gpu.processes if p.pid in pids and p.used_bytes is not None]
                if own:
                    used, key = sum(own), (gpu.index, True)
            if used is None:
                continue
            base = self._gpu_base.setdefault(key, 0 if key[1] else used)  # a process's memory counts from 0
            grown += max(0, used - base)
        self._simulated = sample.simulated
        self._series["gpu"].add(at, float(grown))

    def download(self, at: float, on_disk: int, downloading: bool) -> None:
        """The repo's weight bytes in the Hugging Face cache (``downloading`` while some are incomplete).
        When the download ends, the reads and GPU memory count afresh: what came before was the
        network (a socket's bytes are in ``rchar`` too), not the load."""
        ended = self._downloading and not downloading
        self._downloading = downloading
        self._cached_last = on_disk
        if self.started is None:
            return
        span = self._download_span  # a last look just after the load's end still counts for it
        if not span:  # counted from the load's start and what the cache held then
            span.append((self.started, min(self._cached_before, on_disk)))
        if on_disk > span[-1][1]:
            span[1:] = [(at, on_disk)]
        if not self.running:
            return
        self._series["download"].add(at, float(on_disk))
        if ended:
            self._base_io = dict(self._io_last)
            self._gpu_base = {}
            self._read_one = 0
            for name in ("read", "gpu", "disk"):
                self._series[name].points.clear()
            self._series["disk"].add(at, 0.0)

    def downloaded(self) -> tuple[int, float] | None:
        """(bytes, seconds) a Hugging Face download took during this load (None: none seen)."""
        span = self._download_span
        if len(span) < 2 or span[1][1] - span[0][1] < MOVED_BYTES:
            return None
        return span[1][1] - span[0][1], span[1][0] - span[0][0]

    def reading(self) -> LoadReads | None:
        """What the ended load's processes read (None: no load ended, or its counters were not
        watched from its start — a process's reads before it would count as the load's)."""
        disk = self._series["disk"]
        if self.started is None or self.ended is None or not self._watched or len(disk.points) < 2:
            return None
        checkpoint = self.checkpoint
        busy = self._series["busy"]
        share = None
        if len(busy.points) >= 3 and busy.points[-1][0] - busy.points[0][0] >= BUSY_SEEN * (self.ended - self.started):
            (t0, b0), (t1, b1) = busy.points[0], busy.points[-1]
            share = min(1.0, (b1 - b0) / 1000 / (t1 - t0))
        return LoadReads(
            int(disk.points[-1][1]), self._read_one, self.ended - self.started,
            checkpoint.total if checkpoint is not None else None,
            checkpoint.filesystem if checkpoint is not None else None,
            checkpoint.storage if checkpoint is not None else None, share,
            checkpoint.device if checkpoint is not None else None,
        )

    def disk_busy(self, at: float, busy_ms: int) -> None:
        """The checkpoint's block device: milliseconds it has had I/O in flight (cumulative)."""
        if self.running:
            self._series["busy"].add(at, float(busy_ms))

    def bar(self, at: float, fraction: float) -> None:
        """The loader's own progress bar: ``fraction`` 0..1 done."""
        if self.running:
            self._series["log"].add(at, float(fraction))

    def estimate(self, now: float | None = None) -> LoadEstimate | None:
        """Where the load stands, from the best signal that moved; None before any did. ``now``
        (the clock the samples were stamped with): whether it still moves (``moving``)."""
        if self.started is None:
            return None
        total = self.checkpoint.total if self.checkpoint is not None else None
        download = self._series["download"]
        if self._downloading and download.grown >= MOVED_BYTES:
            return self._estimate("download", download, int(download.points[-1][1]), total, 1.0, None, now)
        # without a total, bytes give a rate but no progress: the loader's own bar says more then
        order: tuple[str, ...] = ("read", "gpu", "log") if total else ("log", "read", "gpu")
        if self._simulated:  # made-up GPU memory: after every real signal, the loader's bar too
            order = (*(signal for signal in order if signal != "gpu"), "gpu")
        for signal in order:
            series = self._series[signal]
            if signal == "log":
                if not series.points:
                    continue
                fraction = series.points[-1][1]
                scale = float(total) if total else None
                loaded = None if scale is None else int(fraction * scale)
                return self._estimate(signal, series, loaded, total, scale or 1.0, fraction, now)
            if series.moved < MOVED_BYTES:
                continue
            loaded = int(series.points[-1][1])
            return self._estimate(signal, series, loaded, total, 1.0, None, now)
        return None

    def _estimate(
        self, signal: str, series: Series, loaded: int | None, total: int | None, scale: float, fraction: float | None,
        now: float | None,
    ) -> LoadEstimate:
        if signal == "log":
            remaining: float | None = (1.0 - series.points[-1][1]) * scale
        else:
            remaining = max(0.0, float(total) - float(loaded or 0)) if total else None
        rate, left, moving = time_left(series, remaining, scale, now)
        simulated = signal == "gpu" and self._simulated
        if signal == "log" and loaded is None or simulated:
            rate = None  # (made-up bytes feed no rate, and no time left)
        if simulated:
            left = None
        if fraction is None and total and loaded is not None:
            fraction = min(1.0, loaded / total)
        return LoadEstimate(signal, loaded, total, rate, left, simulated, fraction, moving)


def time_left(
    series: Series, remaining: float | None, scale: float = 1.0, now: float | None = None,
) -> tuple[float | None, tuple[float, float] | None, bool]:
    """(the recent rate, the time-left range, whether it still moves) of a series that counts up
    towards ``remaining`` more (in the series' units × ``scale``). The range runs from the rate of
    the whole span to the recent one's; None ("cannot tell yet") until the two agree within
    RATE_SPREAD; counted from ``now``, not from the last reading, while it moves."""
    rates = series.rates()
    rate = left = None
    if rates is not None:
        whole, recent = (r * scale for r in rates)
        if whole > 0 and recent > 0:
            rate = recent
            agree = abs(recent - whole) <= RATE_SPREAD * max(whole, recent)
            if agree and remaining is not None:
                fast, slow = max(whole, recent), min(whole, recent)
                left = (remaining / fast, remaining / slow)
    changed = series.changed_at
    moving = changed is not None and (now is None or now - changed <= MOVING_S)
    if left is not None and moving and now is not None:  # counted from the last reading: to now
        age = min(AGE_LIMIT_S, max(0.0, now - series.points[-1][0]))
        left = (max(0.0, left[0] - age), max(0.0, left[1] - age))
    return rate, left, moving
