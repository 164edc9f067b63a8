"""Following one attempt's own log: masked on the way in, drained to its last byte on the way out.

Each attempt writes ``NAME-vN.log``, so a ready line of an earlier attempt can never
count. Secrets the server echoes (``server_args=…api_key=…``) are masked here, before
any byte reaches the session; and before an exit is passed on, the log's last words
are: a traceback printed just before the exit must reach the tracker first, or a
failure would read as a silent death.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from tui.core.events import LogChunk, LogRestart, SourceEvent
from tui.core.secrets import Masker


class AttemptLog:
    """The tailer of one attempt's log, pumping masked events into ``put``."""

    def __init__(self, tailer: Any, masker: Masker, put: Callable[[SourceEvent], None], *, local: bool) -> None:
        self.tailer = tailer
        self.local = local  # its size can be stat-ed here (the remote agent polls every few ms)
        self._masker = masker
        self._put = put
        self._pumped = 0  # bytes of the log passed on
        masker.new_stream()
        self._task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        masker = self._masker
        async for event in self.tailer.events():
            if isinstance(event, LogChunk):
                end = event.offset + len(event.data)
                if masker:
                    data, held = masker.chunk(event.data)
                    if data:
                        self._put(LogChunk(event.source, event.offset - held, data, event.at))
                else:
                    self._put(event)
                self._pumped = end
                continue
            if isinstance(event, LogRestart):
                self._pumped = 0
            self._put(event)

    async def drain(self, timeout: float) -> None:
        """Until every byte of the log has been passed on (local), or ``timeout`` without progress.

        The bytes already in the file when the process ended are its last words: they are waited
        for however slowly a loaded machine reads them (up to ten times ``timeout`` in all), so a
        server's last line is judged whole rather than cut at whatever the reader had reached.
        Bytes that keep coming after that (a child still writing) restart the wait each time."""
        if not self.local:
            await asyncio.sleep(min(timeout, 0.3))
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        deadline, last_call = now + timeout, now + 10 * timeout
        try:
            written = os.path.getsize(self.tailer.path)
        except OSError:
            return
        pumped = self._pumped
        while loop.time() < (last_call if self._pumped < written else min(deadline, last_call)):
            try:
                if self._pumped >= os.path.getsize(self.tailer.path):
                    return
            except OSError:
                return
            await asyncio.sleep(0.01)
            if self._pumped > pumped:
                pumped, deadline = self._pumped, loop.time() + timeout

    async def close(self) -> None:
        """Let the tailer deliver the last bytes, then stop it."""
        tailer, task = self.tailer, self._task
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 2.0
        if not self.local:
            await asyncio.sleep(0.5)
        while self.local and loop.time() < deadline and not task.done():
            try:
                if tailer.offset >= os.path.getsize(tailer.path):
                    break
            except OSError:
                break
            await asyncio.sleep(0.02)
        await tailer.close()
        try:
            async with asyncio.timeout(2.0):
                await task
        except asyncio.CancelledError:  # the tailer's task was cancelled elsewhere, or this close is
            task.cancel()
            if (current := asyncio.current_task()) is not None and current.cancelling():
                raise  # (this close's own cancel is never swallowed)
        except Exception:  # (the timeout too)
            task.cancel()
