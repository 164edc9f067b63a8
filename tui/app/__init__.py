"""The Textual dashboard. ``run_dashboard(args)`` is what `watchtower watch` (without
--plain), `replay`, `demo` and `run` open; the app itself is ``tui.app.app.WatchtowerApp``."""

from __future__ import annotations

from tui.app.dashboard import build_app, run_dashboard

__all__ = ["build_app", "run_dashboard"]
