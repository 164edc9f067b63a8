"""The Textual dashboard: ``build_app(session)`` (``tui.app.dashboard``) is what `watch`,
`replay`, `demo` open (``tui.wiring`` builds the session); the app itself is
``tui.app.app.WatchtowerApp``, the launcher's ``tui.app.launcher.LaunchApp``."""

from __future__ import annotations

from tui.app.dashboard import build_app

__all__ = ["build_app"]
