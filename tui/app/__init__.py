"""The Textual dashboard: ``tui.app.dashboard.build_app`` is what `watch`, `replay`, `demo` and the
several-node front ends open (``tui.wiring`` builds the session); the app itself is
``tui.app.app.WatchtowerApp``, the launcher's ``tui.app.launcher.LaunchApp``."""
