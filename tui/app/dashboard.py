"""The dashboard app for a session, with its theme (``tui.wiring`` builds the session)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tui.session import SessionInfo, WatchSession


def build_app(
    session: WatchSession | None,
    *,
    theme: str | None = None,
    gpus_enabled: bool = True,
    panels: Iterable[Any] = (),
    output_dir: str | os.PathLike[str] = ".",
    autostart: bool = True,
    nodes: Any = None,
):
    """The app for ``session`` with the chosen theme (UsageError for an unknown one); with
    ``nodes`` (a ClusterSession) the one startup across them, ``session`` its first node's."""
    from tui.app import themes
    from tui.app.app import WatchtowerApp

    palettes = themes.discover()
    palette = themes.resolve(theme, palettes)
    if session is None:  # several nodes: the first one's panels, or (a job still queued) none yet
        session = next(iter(nodes.nodes.values()), None) if nodes is not None else None
        session = session or WatchSession(info=SessionInfo(title="waiting for the job's nodes"))
    return WatchtowerApp(
        session,
        palettes,
        palette.name,
        gpus_enabled=gpus_enabled,
        panels=panels,
        output_dir=output_dir,
        autostart=autostart,
        nodes=nodes,
    )
