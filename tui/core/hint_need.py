"""What a startup needs of the hints, decided without reading them: whether any hint can speak
for it, and whether the user has a hints file of their own.

Split from ``tui.core.hints`` (which reads and applies the knowledge base) so that a `scan` of a
log with nothing to explain never imports it: the hints' module and its file are a tenth of the
fixed cost of such a scan (bench/scan.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from tui.core.startup_profile import restart_evidence
from tui.core.state import ErrorReport, Outcome, StartupState


def to_diagnose(state: StartupState) -> list[ErrorReport]:
    """The errors ``diagnose`` looks for hints for, in its order: the root cause, the other fatal
    errors, then those a signature named but that did not end the startup (before ready)."""
    first = state.first_error
    errors = [first] if first is not None else []
    errors += [e for e in state.errors if e.fatal and e is not first and not e.secondary]
    ready = state.ready_line
    errors += [
        e for e in state.errors
        if not e.fatal and e.category and not e.secondary and (ready is None or e.line < ready)
    ]
    return errors


def quiet(state: StartupState) -> bool:
    """A startup still under way with a last line: what ``for_quiet`` explains."""
    return state.outcome == Outcome.STARTING and bool(state.last_text)


def may_diagnose(state: StartupState) -> bool:
    """Whether ``diagnose`` can find any hint for ``state``: where not, a caller need not read the
    hints at all (a `scan` of a log that became ready and served has no error to explain, and
    parsing the hints file would be a tenth of its time)."""
    return bool(to_diagnose(state)) or may_explain_quiet(state)


def may_explain_quiet(state: StartupState) -> bool:
    """Whether ``restart_advice`` or ``for_quiet`` can say anything of ``state``: where not (a watch's
    first frame, drawn before any line is read), the dashboard need not read the hints yet."""
    return quiet(state) or bool(restart_evidence(state))


def user_path() -> Path:
    """Where a user's own hints live: ``WATCHTOWER_HINTS``, else ``~/.config/watchtower/hints.toml``."""
    override = os.environ.get("WATCHTOWER_HINTS")
    if override:
        return Path(override)
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "watchtower" / "hints.toml"


def has_user_file() -> bool:
    """Whether there is a user's hints file to read, as :func:`knowledge` decides it: a path it
    cannot look at (absent, or in a folder this user may not enter) is none."""
    try:
        user_path().stat()
    except OSError:
        return False
    return True
