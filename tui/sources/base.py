"""What every source is to the session: an async stream of typed events that can be closed.

The log tailers (local, SSH), the GPU sources, a replay and a launch all satisfy
:class:`EventSource`; :class:`StartupFollower` is the extra a source implements to
follow the startup's own events (the simulated GPUs tie their memory curve to the phases).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Protocol, runtime_checkable

from tui.core.events import SourceEvent


async def pause(closed: asyncio.Event, seconds: float) -> None:
    """A poller's wait between two looks: ``seconds``, or less once ``closed`` is set (a close ends it at once)."""
    try:
        async with asyncio.timeout(seconds):
            await closed.wait()
    except TimeoutError:
        pass


@runtime_checkable
class EventSource(Protocol):
    def events(self) -> AsyncIterator[SourceEvent]:
        """Events until the source ends (a finished replay) or is closed."""
        ...

    def close(self) -> Awaitable[None] | None:
        """Stop producing; release files, connections, threads (awaited when it returns one)."""
        ...


@runtime_checkable
class StartupFollower(Protocol):
    def feed(self, event: object) -> None:
        """One tracker event (a phase began, the server is ready …)."""
        ...
