"""``--smoke``: the one tiny completion a node's session sends after the ready line.

A :class:`SmokeRequest` owns where the request stands for the current startup (wanted, sent to
which URL, answered): the port it is sent to is the one the log names (``Uvicorn running on …``,
else the server's ``port=`` argument), the host the log's own. It is sent once per startup, once
``--health`` (where given) answered 200; the answer comes back as a ``SmokeAnswered`` event
through the session, like every other source's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Coroutine
from typing import Any

from tui.core.events import HealthStatus, SmokeAnswered
from tui.core.options import SMOKE_TIMEOUT_S
from tui.core.state import StartupState
from tui.core.verdict import SmokeStatus, listening_port


class SmokeRequest:
    """Whether ``--smoke`` is wanted, where it was sent and what it got (``status``, None until sent)."""

    def __init__(self) -> None:
        self.wanted = False
        self.host = "127.0.0.1"
        self.timeout = SMOKE_TIMEOUT_S  # each request's (--smoke-timeout)
        self.status: SmokeStatus | None = None
        self._listening: int | None = None  # the port the log last said the server listens on

    def want(self, host: str | None = None, timeout: float = SMOKE_TIMEOUT_S) -> None:
        """Send it after the ready line, to ``host`` (an SSH ``[user@]host[:port]`` spec, or None for
        this machine), each request within ``timeout`` seconds."""
        self.wanted, self.timeout = True, timeout
        if host:
            self.host = host.rpartition("@")[2].split(":")[0] or self.host

    def heard(self, text: str) -> None:
        """A log line with a URL in it: where the server says it listens, if it says so."""
        self._listening = listening_port((text,)) or self._listening

    def port(self, state: StartupState) -> int | None:
        """The port the log names: where the server says it listens, else its arguments' port."""
        port = self._listening
        if port is None and (said := state.identity.get("port", "")).isdigit():
            port = int(said)
        return port

    def send(self, state: StartupState, health: HealthStatus | None,
             spawn: Callable[[Coroutine[Any, Any, None]], None], deliver: Callable[[SmokeAnswered], None]) -> bool:
        """Send the completion (once per startup; after ``--health`` answered where given): the
        answer goes to ``deliver``, asked in a task ``spawn`` starts. True when where it stands changed."""
        if self.status is not None:
            return False
        if health is not None and not health.ok:
            return False  # asked again when the URL answers 200
        port = self.port(state)
        if port is None:
            self.status = SmokeStatus(None, why_not="the log names no port (no 'Uvicorn running on …', no port= argument)")
            return True
        host = self.host
        self.status = SmokeStatus(f"http://{host}:{port}")
        from tui.sources.smoke import smoke

        async def ask() -> None:
            deliver(await smoke(host, port, self.timeout))

        spawn(ask())
        return True

    def answered(self, event: SmokeAnswered) -> bool:
        """The answer to the request sent this startup (an older one's is let go): True when taken."""
        if self.status is None or self.status.url != event.url or self.status.answer is not None:
            return False
        self.status = dataclasses.replace(self.status, answer=event)
        return True

    def reset(self) -> None:
        """A new startup: it is sent again after its ready line, to the port its log names."""
        self.status, self._listening = None, None

