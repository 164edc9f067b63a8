"""GPU memory between attempts: who holds it, and waiting until the old attempt's is released.

GPU memory is freed a little after the processes die; launching before that ends in an
out-of-memory crash minutes later. Other processes holding memory are listed (and with
``k`` killed) rather than run into.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tui.core.events import GpuSample
from tui.launch import proctable

#: How long a relaunch waits for the old attempt's GPU memory to be released.
GPU_RELEASE_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class GpuHolder:
    """A process holding GPU memory: ``ours`` when it belongs to the running attempt."""

    pid: int
    command: str
    per_gpu: dict[int, int]  # GPU index -> bytes
    ours: bool = False
    stale: bool = False  # left over from an earlier attempt of ours
    device_open: bool | None = None  # has /dev/nvidia* open here (False: maybe another namespace's pid)

    @property
    def text(self) -> str:
        gib = ", ".join(f"GPU{i} {b / 2**30:.1f} GiB" for i, b in sorted(self.per_gpu.items()))
        tag = " (ours)" if self.ours else " (stale, from an earlier attempt)" if self.stale else ""
        doubt = " [no GPU device open here: is this pid from another container?]" if self.device_open is False else ""
        return f"pid {self.pid}{tag}: {self.command or '?'} — {gib or 'memory unknown'}{doubt}"


class GpuBusy(Exception):
    """Processes that are not ours hold GPU memory: launching now would end in an OOM crash."""

    def __init__(self, holders: list[GpuHolder]) -> None:
        super().__init__("GPUs still in use by: " + "; ".join(h.text for h in holders))
        self.holders = holders


class GpuWatch:
    """The recent GPU samples of a launch, for a relaunch: who holds GPU memory, and waiting for
    its release (the verdict reads the session's own buffer, ``GpuBoard.samples``)."""

    def __init__(self, *, local: bool, mask: Callable[[str], str]) -> None:
        self.samples: deque[GpuSample] = deque(maxlen=120)
        self.local = local
        self.pids_real = True  # False for the simulated GPUs: their pids name no process here
        self._mask = mask
        self._event = asyncio.Event()

    def add(self, sample: GpuSample) -> None:
        self.samples.append(sample)
        self._event.set()

    def holders(self, ours: Iterable[int], old_pgids: Iterable[int]) -> list[GpuHolder]:
        """Processes holding GPU memory in the latest sample, ours marked (pid, command, bytes per GPU)."""
        if not self.samples or not self.pids_real:
            return []
        sample = self.samples[-1]
        per_pid: dict[int, dict[int, int]] = {}
        names: dict[int, str] = {}
        for gpu in sample.gpus:
            for proc in gpu.processes:
                per_pid.setdefault(proc.pid, {})[gpu.index] = proc.used_bytes or 0
                if proc.name:
                    names[proc.pid] = proc.name
        ours, old = set(ours), set(old_pgids)
        holders = []
        for pid, per_gpu in sorted(per_pid.items()):
            stale = False
            if self.local and pid not in ours:
                try:
                    stale = os.getpgid(pid) in old
                except OSError:
                    continue  # gone since the sample
            command = self._mask(proctable.command_line(pid) if self.local else names.get(pid, ""))
            device = proctable.holds_gpu_device(pid) if self.local else None
            holders.append(GpuHolder(pid, command or names.get(pid, ""), per_gpu, pid in ours, stale, device))
        return holders

    async def wait_release(self, pids: set[int], after: float, timeout: float, ours_holding: Callable[[], bool]) -> bool:
        """Until a GPU sample taken after ``after`` lists none of ``pids`` (the old attempt's
        processes) and ``ours_holding()`` is false (True); False on timeout. Without a GPU
        source there is nothing to wait for."""
        if not self.samples:
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        def released() -> bool:
            sample = self.samples[-1]
            if sample.at < after:
                return False
            listed = {p.pid for gpu in sample.gpus for p in gpu.processes}
            return not (listed & pids) and not ours_holding()

        while not released():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            self._event.clear()
            try:
                async with asyncio.timeout(remaining):
                    await self._event.wait()
            except asyncio.TimeoutError:
                return False
        return True
