"""Helpers for the dashboard tests: sessions fed by hand with a fixed clock, and the app on them."""

from __future__ import annotations

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
