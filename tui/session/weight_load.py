"""The weight load's measurement, and the counting phases' bars, for one node's session.

A :class:`WeightLoad` owns what says a startup's slow phases are moving while the log is quiet:
the checkpoint's size (measured once the log names the model: here in a thread, or on the log's
host by the probe agent), the bytes read so far (the server's ``/proc/PID/io``, its Hugging Face
cache folder growing, its block device busy, GPU memory filling: ``tui.core.loading``) and, for a
phase that draws a counting bar (CUDA graph capture …), its count and rate
(``tui.core.counting``). The session hands it the events; the verdict reads its words
(``words``: "weight load 212/547 GB · 0.87 GB/s · ~6:25 left").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Coroutine
from typing import Any

from tui.core.counting import CountEstimate, CountEstimator
from tui.core.events import CheckpointFound, PhaseEnded, PhaseProgress, PhaseStarted, TrackerEvent
from tui.core.loading import Checkpoint, LoadEstimate, LoadEstimator, LoadFacts, LoadReads, split_of
from tui.core.profiles import ProfileError
from tui.core.state import PHASE_TITLES, STARTING, StartupState
from tui.sources.base import EventSource

Spawn = Callable[[Coroutine[Any, Any, None]], None]  # starts a task the session stops with it


class WeightLoad:
    """One node's weight-load measurement. ``here``: the model folder can be looked at on this
    machine (a local log); ``host``: else the log's host, where the probe agent measures it. It reads
    the startup's state (``state``: which phase runs) and its session's clock when asked for words."""

    def __init__(self, *, here: bool, host: str | None, add_source: Callable[[EventSource], None],
                 state: Callable[[], StartupState], clock: Callable[[], float]) -> None:
        self.state = state
        self.clock = clock
        self.here = here
        self.host = host
        self.add_source = add_source  # a download or disk source joins the session's others
        self.load = LoadEstimator()
        self.checkpoint: CheckpointFound | None = None
        self.counts = CountEstimator()  # the running phase's bar count (graph capture …)
        self._measured: tuple[str, ...] | None = None
        self._download_watched = False  # the model's cache folder is watched (once per session)
        self._disk_watched = False  # the checkpoint's block device is watched (once per session)
        #: attempt number in the log -> what its weight load's processes read (the profile sets them beside)
        self._earlier_reads: dict[int, LoadReads] = {}

    # ---------------------------------------------------------------- events in

    def tracker_event(self, event: TrackerEvent, now: float) -> None:
        """A tracker event: the weight load's start, end and bar; a counting bar's progress."""
        if getattr(event, "phase", None) == "weight_load":
            if isinstance(event, PhaseStarted):
                self.load.start(now)
            elif isinstance(event, PhaseEnded):
                self.load.end(now)
            elif isinstance(event, PhaseProgress) and event.fraction is not None:
                self.load.bar(now, event.fraction)
        if isinstance(event, PhaseProgress) and (event.total or event.took is not None):
            self.counts.feed(event.phase, now, event.done or 0, event.total, event.took, event.cached)

    def found(self, event: CheckpointFound) -> None:
        """The checkpoint measured: its total is what the load's bytes are counted against."""
        before = self.checkpoint
        if before is not None and before.model == event.model and event.filesystem is None:
            event = dataclasses.replace(event, filesystem=before.filesystem, device=before.device)
        self.checkpoint = event
        if event.total:
            self.load.checkpoint = Checkpoint(event.model, event.total, event.split, event.draft, event.filesystem,
                                              _storage_kind(event.filesystem), event.device)
        self._watch_disk(event.device)

    def measure(self, identity: dict[str, str], spawn: Spawn, deliver: Callable[[CheckpointFound], None]) -> None:
        """Measure the checkpoint the log names (once per model, split and draft), in a task: what
        it finds goes to ``deliver`` (the session's ``handle``)."""
        if not (self.here or self.host) or "model" not in identity:
            return
        split = split_of(identity.get("tp_size"), identity.get("pp_size"))
        key = (identity["model"], str(split), identity.get("draft_model", ""))
        if key == self._measured:
            return
        self._measured = key
        from tui.sources.checkpoint import measure_async, measure_remote

        async def measure() -> None:
            try:
                if self.host is not None and not self.here:
                    deliver(await measure_remote(self.host, key[0], split, key[2] or None))
                    return
                deliver(await measure_async(key[0], split, key[2] or None))
            except Exception as exc:  # noqa: BLE001  (a folder that cannot be read: no total, said)
                deliver(CheckpointFound(key[0], None, split, detail=f"{type(exc).__name__}: {exc}"))

        try:
            spawn(measure())
        except RuntimeError:  # no loop (a synchronous replay in a test): nothing to measure with
            self._measured = None
            return
        if self.here:  # the cache folder is here to watch
            self._watch_download(key[0], split)

    def _watch_disk(self, device: str | None) -> None:
        """The checkpoint's block device: how busy it is while the weights load (once per session,
        and only here: a remote host's device is not this machine's)."""
        from tui.sources.diskstats import DiskSource

        if device is None or self._disk_watched or not self.here:
            return
        self._disk_watched = True
        self.add_source(DiskSource(device))

    def _watch_download(self, model: str, split: int) -> None:
        """A repo id: watch its Hugging Face cache folder grow while the server downloads it
        (``tui.sources.download``), once per session."""
        from tui.sources.download import DownloadSource, repo_folder

        folder = repo_folder(model)
        if folder is None or self._download_watched:
            return
        self._download_watched = True
        self.add_source(DownloadSource(model, folder, split))

    # ---------------------------------------------------------------- attempts

    def new_startup(self, previous: int) -> None:
        """A new startup in the same log: the last one's reads are kept for the startup profile."""
        reads = self.load.reading()
        if reads is not None:
            self._earlier_reads[previous] = reads
        self.load = LoadEstimator(self.load.checkpoint)
        self.counts = CountEstimator()

    def new_attempt(self) -> None:
        """A relaunch (a fresh tracker: its attempts are numbered afresh): the checkpoint stays."""
        self.load = LoadEstimator(self.load.checkpoint)
        self._earlier_reads.clear()
        self.counts = CountEstimator()

    def restart(self) -> None:
        """The log started over (a new file): the bars count afresh."""
        self.counts = CountEstimator()

    # ---------------------------------------------------------------- what it says

    def facts(self) -> LoadFacts:
        """What was watched of the weight loads: a download during the current one, what its
        processes read, and what earlier attempts' loads read (for the startup profile)."""
        return LoadFacts(self.load.downloaded(), self.load.reading(), dict(self._earlier_reads))

    def estimate(self) -> LoadEstimate | None:
        """The running weight load's progress (None when it is not running or nothing moved)."""
        state = self.state()
        if not self.load.running or state.outcome != STARTING:
            return None
        phase = state.phase("weight_load")
        if phase is None or phase.done:
            return None
        return self.load.estimate(self.clock())

    def count_estimate(self) -> CountEstimate | None:
        """The running phase's bar count and its time left (a graph capture's batch sizes …); None
        when it draws no counting bar, or it is the weight load (its bytes say more)."""
        state = self.state()
        phase = state.current_phase
        if state.outcome != STARTING or phase is None or phase.name == "weight_load":
            return None
        return self.counts.estimate(phase.name, self.clock())

    def counting_words(self) -> str | None:
        """``CUDA graphs 16/36 · 2.4/s · ~0:08 left in this bar`` while the running phase's bar counts."""
        count = self.count_estimate()
        if count is None or not count.moving:
            return None
        return f"{PHASE_TITLES.get(count.phase, count.phase)} {count.words()}"

    def words(self) -> str | None:
        """``weight load 212/547 GB · 0.87 GB/s · ~6:25 left (from …)`` while its bytes move (else
        a counting phase's words while it counts)."""
        estimate = self.estimate()
        if estimate is None or not estimate.moving:
            return self.counting_words()
        phase = self.state().phase("weight_load")
        detail = f"{phase.detail} · " if estimate.signal == "log" and phase is not None and phase.detail else ""
        return f"weight load {detail}{estimate.words()}"


def _storage_kind(filesystem: str | None) -> str | None:
    """"block" or "network": what the hints file says of the checkpoint's filesystem."""
    from tui.core.hints import knowledge  # (imported once a load is weighed: see WatchSession.quiet_note)

    try:
        return knowledge().storage.kind(filesystem)
    except ProfileError:
        return None  # a hints file that cannot be read: its errors are said where hints are shown

