"""Helpers for the dashboard tests: sessions fed by hand with a fixed clock, and waiting on them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tui.app.dashboard import build_app
from tui.commands.demo import demo_title
from tui.wiring import static_session
from tui.core.events import LogChunk
from tui.session import SessionInfo, WatchSession

DATA = Path(__file__).resolve().parent.parent / "tui" / "data"
CLOCK = 1_000_000.0


def fixed_session(data: bytes = b"", *, title: str = "test", scrollback: int = 100_000) -> WatchSession:
    """A session with no live sources and a stopped clock: what it shows depends only on ``data``."""
    session = WatchSession(
        info=SessionInfo(host="gpu-node-07", log_path="/var/log/sglang.log", title=title),
        clock=lambda: CLOCK,
        scrollback=scrollback,
    )
    if data:
        feed(session, data)
    return session


def feed(session: WatchSession, data: bytes) -> None:
    session.handle(LogChunk("test", 0, data, CLOCK))
    session.flush()


def demo_session(scenario: str, *, upto: float | None = None) -> WatchSession:
    """A bundled demo recording played instantly (up to ``upto`` seconds) on a stopped clock."""
    return static_session(DATA / f"demo-{scenario}.wtrec", upto=upto, title=demo_title(scenario))


def make_app(session: WatchSession, theme: str | None = None, tmp_path: Path | None = None):
    return build_app(session, theme=theme, autostart=False, output_dir=tmp_path or ".")


async def until(condition, session: WatchSession, timeout: float = 10.0) -> None:
    """Wait for ``condition()`` to hold, woken by the session's change notifications."""
    changed = asyncio.Event()
    session.subscribe(lambda _update: changed.set())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise AssertionError("condition not reached in time")
        changed.clear()
        try:
            await asyncio.wait_for(changed.wait(), min(remaining, 1.0))
        except TimeoutError:
            pass


def screen_text(app) -> str:
    """What the terminal shows, as plain text lines (from the real compositor)."""
    strips = app.screen._compositor.render_strips()  # noqa: SLF001
    return "\n".join(strip.text.rstrip() for strip in strips)
