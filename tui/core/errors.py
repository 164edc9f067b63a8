"""The one exception every layer may raise for an expected failure the user can fix."""

from __future__ import annotations


class UsageError(Exception):
    """A bad argument or an expected failure (missing file, unreadable log): one line, exit 2."""
