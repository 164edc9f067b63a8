"""A simulated 8-GPU box (H200-like) for the demo and the tests: deterministic, no GPU needed.

Memory follows the shape a real SGLang startup draws, phase by phase:

    idle           nothing but the driver
    server_args    the CUDA context appears (~0.5 GiB)
    weight_load    rises with the loading fraction to the model's shard (~64 GiB)
    memory_pool    jumps at once to the static fraction of the card (KV cache pool)
    cuda_graph     rises a little (graph buffers) with the capture fraction
    draft_init     a little more (the draft model)
    ready          flat; utilisation near zero
    failed/stopped the process is gone: memory back to zero

Two ways to drive it: ``set_phase(phase, fraction)`` (or :meth:`SimGpuSource.feed`
with the tracker's events), or a time script ``[(seconds, phase), ...]`` read
against the clock. Utilisation, temperature and power are plausible functions of
the phase plus noise that depends only on ``seed``, the GPU and the clock.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from tui.core.events import (
    ErrorFound,
    GpuInfo,
    GpuProcess,
    GpuSample,
    PhaseEnded,
    PhaseProgress,
    PhaseStarted,
    Ready,
    Stopped,
)
from tui.sources.gpu import GpuEvent, PolledGpuSource

GIB = 1 << 30
MIB = 1 << 20
H200_TOTAL = 143_771 * MIB  # what nvidia-smi reports for a 141 GB H200
H200_POWER_LIMIT = 700.0

#: A compressed startup for the demo: seconds from the start, phase.
DEMO_SCRIPT: tuple[tuple[float, str], ...] = (
    (0.0, "idle"),
    (2.0, "server_args"),
    (4.0, "weight_load"),
    (34.0, "memory_pool"),
    (38.0, "cuda_graph"),
    (50.0, "draft_init"),
    (56.0, "ready"),
)

# phase -> (utilisation % low, high)
_UTILISATION = {
    "idle": (0, 0),
    "server_args": (0, 2),
    "weight_load": (3, 15),
    "memory_pool": (10, 40),
    "cuda_graph": (55, 95),
    "draft_init": (20, 60),
    "ready": (0, 3),
    "failed": (0, 0),
    "stopped": (0, 0),
}
PHASES = tuple(_UTILISATION)


class SimGpuSource(PolledGpuSource):
    """``count`` simulated GPUs; see the module docstring."""

    kind = "simulated"

    def __init__(
        self,
        count: int = 8,
        *,
        host: str = "localhost",
        interval: float = 1.0,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
        script: Sequence[tuple[float, str]] | None = None,
        name: str = "NVIDIA H200",
        memory_total: int = H200_TOTAL,
        model_bytes: int = 547 * 10**9,
        pool_fraction: float = 0.88,
        pid_base: int = 4100,
    ) -> None:
        super().__init__(host, interval, blocking=False)
        self.count = count
        self.seed = seed
        self.clock = clock
        self.name = name
        self.memory_total = memory_total
        self.pool_fraction = pool_fraction
        self.pid_base = pid_base
        self._shard = model_bytes // max(count, 1)
        self._script = tuple(script) if script is not None else None
        for _, phase in self._script or ():
            _check(phase)
        self._t0 = clock()
        self._phase = "idle"
        self._fraction = 0.0

    # ------------------------------------------------------------ driving it

    def set_phase(self, phase: str, fraction: float | None = None) -> None:
        """Jump to ``phase`` (``fraction`` 0..1 of it done; kept if None and the phase is unchanged).

        Driving it by hand turns the time script off.
        """
        _check(phase)
        self._script = None
        if fraction is None:
            fraction = self._fraction if phase == self._phase else 0.0
        self._phase, self._fraction = phase, min(max(float(fraction), 0.0), 1.0)

    def feed(self, event: object) -> None:
        """Follow the tracker's phase events (and Ready / ErrorFound / Stopped)."""
        if isinstance(event, PhaseStarted) and event.phase in _UTILISATION:
            self.set_phase(event.phase, 0.0)
        elif isinstance(event, PhaseProgress) and event.phase in _UTILISATION and event.fraction is not None:
            self.set_phase(event.phase, event.fraction)
        elif isinstance(event, PhaseEnded) and event.phase == self._phase:
            self.set_phase(event.phase, 1.0)
        elif isinstance(event, Ready):
            self.set_phase("ready", 1.0)
        elif isinstance(event, ErrorFound):
            self.set_phase("failed")
        elif isinstance(event, Stopped):
            self.set_phase("stopped")

    @property
    def phase(self) -> tuple[str, float]:
        """The current (phase, fraction)."""
        return self._at(self.clock())

    def _at(self, now: float) -> tuple[str, float]:
        if self._script is None:
            return self._phase, self._fraction
        elapsed = now - self._t0
        phase, fraction = self._script[0][1], 0.0
        for i, (start, name) in enumerate(self._script):
            if elapsed < start:
                break
            end = self._script[i + 1][0] if i + 1 < len(self._script) else None
            phase = name
            fraction = 1.0 if end is None or end <= start else min((elapsed - start) / (end - start), 1.0)
        return phase, fraction

    # ------------------------------------------------------------ the model

    def memory_used(self, index: int, phase: str, fraction: float) -> int:
        """Bytes in use on GPU ``index`` at ``fraction`` of ``phase``."""
        order = PHASES
        if phase in ("idle", "failed", "stopped"):
            return 0
        skew = 1.0 + 0.004 * ((index * 7 + self.seed) % 5)  # ranks differ a little, stably
        context = int(0.55 * GIB * skew)
        used = context
        reached = order.index(phase)
        if reached >= order.index("weight_load"):
            share = fraction if phase == "weight_load" else 1.0
            used += int(self._shard * skew * share)
        if reached >= order.index("memory_pool"):
            used = max(used, int(self.memory_total * self.pool_fraction))
        if reached >= order.index("cuda_graph"):
            share = fraction if phase == "cuda_graph" else 1.0
            used += int(2.2 * GIB * skew * share)
        if reached >= order.index("draft_init"):
            share = fraction if phase == "draft_init" else 1.0
            used += int(1.4 * GIB * skew * share)
        return min(used, self.memory_total)

    def snapshot(self, now: float | None = None) -> GpuSample:
        """The sample at clock time ``now`` (default: the clock): same inputs, same sample."""
        now = self.clock() if now is None else now
        phase, fraction = self._at(now)
        tick = int((now - self._t0) / self.interval)
        gpus = []
        for index in range(self.count):
            rng = random.Random(f"{self.seed}:{index}:{tick}")
            low, high = _UTILISATION[phase]
            util = round(low + (high - low) * rng.random())
            used = self.memory_used(index, phase, fraction)
            power = min(H200_POWER_LIMIT, 75.0 + 6.2 * util + 20 * rng.random() + (40.0 if used else 0.0))
            procs = (GpuProcess(self.pid_base + index, max(used - 300 * MIB, 0), "sglang::scheduler"),) if used else ()
            gpus.append(
                GpuInfo(
                    index=index,
                    name=self.name,
                    uuid=f"GPU-{self.seed:08x}-0000-4000-8000-{index:012x}",
                    memory_used=used,
                    memory_total=self.memory_total,
                    utilization=util,
                    temperature=round(31 + 0.38 * util + 2 * rng.random()),
                    power_w=round(power, 1),
                    power_limit_w=H200_POWER_LIMIT,
                    processes=procs,
                )
            )
        return GpuSample(self.host, time.time(), tuple(gpus), simulated=True)

    def poll(self) -> GpuEvent:
        return self.snapshot()


def _check(phase: str) -> None:
    if phase not in _UTILISATION:
        raise ValueError(f"unknown simulated phase {phase!r}; expected one of {', '.join(PHASES)}")
