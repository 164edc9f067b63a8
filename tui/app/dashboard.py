"""The dashboard app for a session, with its theme (``tui.wiring`` builds the session)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tui.session import WatchSession


def build_app(
    session: WatchSession,
    *,
    theme: str | None = None,
    gpus_enabled: bool = True,
    panels: Iterable[Any] = (),
    output_dir: str | os.PathLike[str] = ".",
    autostart: bool = True,
    timeout: float | None = None,
):
    """The app for ``session`` with the chosen theme (UsageError for an unknown one)."""
    from tui.app import themes
    from tui.app.app import WatchtowerApp

    palettes = themes.discover()
    palette = themes.resolve(theme, palettes)
    return WatchtowerApp(
        session,
        palettes,
        palette.name,
        gpus_enabled=gpus_enabled,
        panels=panels,
        output_dir=output_dir,
        autostart=autostart,
        timeout=timeout,
    )
