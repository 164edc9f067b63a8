"""GPU sources: the interface, the non-overlapping poll loop, and ``--gpus`` selection.

Every source is an async iterator of ``GpuSample`` / ``GpuUnavailable`` events
(``samples()``, also reachable as ``events()`` for the session) with ``close()``.

Polling sources never overlap polls: the next poll is scheduled when the last
one has finished — 8-GPU machines are exactly where NVML calls get slow, and
overlapping polls there pile up until the monitor itself freezes. Blocking polls
(NVML) run in one dedicated worker thread, so initialisation, polls and
shutdown happen in order on the same thread and never on the event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tui.core.events import GpuSample, GpuUnavailable

GpuEvent = GpuSample | GpuUnavailable

#: What a remote nvidia-smi stream needs: argv in, the command's output lines out
#: (an async iterator that ends when the command exits and raises when it fails),
#: e.g. ``functools.partial(tui.sources.ssh.stream_lines, target)``.
CommandLines = Callable[[Sequence[str]], AsyncGenerator[str, None]]



class GpuSource:
    """Base of all GPU sources: ``samples()`` until ``close()``."""

    host: str = "localhost"
    #: What the samples come from, in a word (kept with an attempt in the history, said in the report).
    kind: str = "?"

    def samples(self) -> AsyncIterator[GpuEvent]:
        raise NotImplementedError

    def events(self) -> AsyncIterator[GpuEvent]:
        """The session's name for :meth:`samples`."""
        return self.samples()

    async def close(self) -> None:
        raise NotImplementedError


class PolledGpuSource(GpuSource):
    """A source that asks ``poll()`` for one event every ``interval`` seconds.

    Subclasses implement ``poll()`` (and may implement ``open()`` / ``shutdown()``,
    called once before the first and after the last poll). With ``blocking=True``
    all three run in one worker thread of their own; otherwise on the loop (only
    for polls that take microseconds, like the simulated source).
    A repeated ``GpuUnavailable`` with the same reason is reported once.
    """

    def __init__(self, host: str = "localhost", interval: float = 1.0, *, blocking: bool = True) -> None:
        if interval <= 0:
            raise ValueError("the GPU poll interval must be positive")
        self.host = host
        self.interval = interval
        self._blocking = blocking
        self._closed = asyncio.Event()
        self.polls = 0  # how many polls finished (for views and tests)

    def open(self) -> None:
        """Prepare before the first poll (blocking allowed when ``blocking``)."""

    def poll(self) -> GpuEvent:
        raise NotImplementedError

    def shutdown(self) -> None:
        """Release what ``open`` took, after the last poll."""

    async def samples(self) -> AsyncIterator[GpuEvent]:
        executor = ThreadPoolExecutor(1, thread_name_prefix="gpu-poll") if self._blocking else None
        loop = asyncio.get_running_loop()

        async def call(fn: Callable[[], Any]) -> Any:
            if executor is None:
                return fn()
            return await loop.run_in_executor(executor, fn)

        last_unavailable: str | None = None
        try:
            await call(self.open)
            while not self._closed.is_set():
                started = time.monotonic()
                event = await call(self.poll)
                self.polls += 1
                elapsed = time.monotonic() - started
                if isinstance(event, GpuUnavailable):
                    if event.reason != last_unavailable:
                        yield event
                    last_unavailable = event.reason
                else:
                    last_unavailable = None
                    yield event
                # Scheduled now that the poll is done: a slow poll gets a full interval of rest.
                delay = self.interval - elapsed if elapsed < self.interval else self.interval
                try:
                    async with asyncio.timeout(delay):
                        await self._closed.wait()
                except TimeoutError:
                    pass
        finally:
            if executor is not None:
                # Queued behind any poll still running in the thread: never concurrent with it.
                executor.submit(self.shutdown)
                executor.shutdown(wait=False)
            else:
                self.shutdown()

    async def close(self) -> None:
        self._closed.set()


class NvmlSource(PolledGpuSource):
    """Local GPUs through NVML (``tui.sources.nvml``), in a worker thread."""

    kind = "NVML"

    def __init__(self, host: str = "localhost", interval: float = 1.0, *, lib: Any = None) -> None:
        super().__init__(host, interval, blocking=True)
        from tui.sources.nvml import Nvml

        self._nvml = Nvml(lib)
        self._reason: str | None = None

    def open(self) -> None:
        self._try_open()

    def _try_open(self) -> bool:
        from tui.sources.nvml import NvmlUnavailable

        try:
            self._nvml.open()
        except NvmlUnavailable as exc:
            self._reason = str(exc)
            return False
        self._reason = None
        return True

    def poll(self) -> GpuEvent:
        from tui.sources.nvml import NvmlUnavailable

        if self._reason is not None and not self._try_open():  # e.g. the driver came back
            return GpuUnavailable(self.host, self._reason)
        try:
            gpus = self._nvml.snapshot()
        except NvmlUnavailable as exc:
            # NVML broke under us (driver reloaded, upgraded): start over with a fresh
            # nvmlInit at the next poll rather than asking a dead handle forever.
            self._nvml.close()
            self._reason = str(exc)
            return GpuUnavailable(self.host, self._reason)
        return GpuSample(self.host, time.time(), gpus)

    def shutdown(self) -> None:
        self._nvml.close()
