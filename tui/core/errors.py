"""The one exception every layer may raise for an expected failure the user can fix."""

from __future__ import annotations


class UsageError(Exception):
    """A bad argument or an expected failure (missing file, unreadable log): one line, exit 2."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (`timeout`, a job scheduler, ``systemctl stop``) or SIGHUP (the terminal or the SSH
    session gone): it ends a watch or a launch as Ctrl-C does (a KeyboardInterrupt, so every Ctrl-C
    ending serves it), with the exit status 128 + the signal that says who ended it (SIGTERM 143,
    SIGHUP 129). Raised by ``tui.wiring.watch.stoppable``."""

    def __init__(self, word: str = "SIGTERM", status: int = 143) -> None:
        super().__init__(word)
        self.word = word
        self.status = status


def interruption(exc: KeyboardInterrupt) -> tuple[str, int]:
    """What ended the run in words, and its exit status: SIGTERM's 143, SIGHUP's 129, or Ctrl-C's 130."""
    return (exc.word, exc.status) if isinstance(exc, Terminated) else ("Ctrl-C", 130)
