"""`watch`'s memory of the startups it saw in logs it did not launch, for its stall limits.

Keyed by what the log says (server, model path, TP size): a launch name means nothing to
`watch`. The store is :class:`tui.history.History`'s ``log_startups`` table.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable

from tui.core.secrets import Masker
from tui.core.state import StartupState
from tui.history import History, HistoryError
from tui.history.records import phase_seconds


def log_key(state: StartupState) -> str | None:
    """What a log says its startup is — server, model path, TP size — as a history key; None
    until it has said which server and model (a launch name means nothing to `watch`)."""
    model = state.identity.get("model")
    if not state.server or not model:
        return None
    return Masker().text(f"{state.server} {model} tp={state.identity.get('tp_size', '?')}")


class WatchedStartups:
    """`watch`'s memory of startups, for its stall limits: each phase's longest time in earlier
    startups with the same log key. ``update(state)`` after each batch of tracker events: it
    loads the key's history once the log has named it, and records each startup that ends.
    The database is touched only in a worker thread; if it cannot be opened, nothing is known.
    """

    def __init__(self, history: Callable[[], History] | None = History) -> None:
        self._open = history
        self._history: History | None = None
        self.longest: dict[str, float] = {}  # for the current startup's key
        self._key: str | None = None
        self._said: tuple[str | None, dict[str, str]] | None = None  # what the key was made of
        self._current: str | None = None
        self._recorded: set[tuple[str, int]] = set()  # (key, start line) already stored
        self._tasks: set[asyncio.Task] = set()

    def update(self, state: StartupState) -> None:
        if self._open is None:
            return
        said = (state.server, state.identity)
        if said != self._said:  # (masking the key costs more than comparing what it is made of)
            self._said = (state.server, dict(state.identity))
            self._current = log_key(state)
        key = self._current
        if key is None:
            return
        if key != self._key:
            self._key = key
            self.longest.clear()
            self._spawn(self._load(key))
        if state.outcome in ("ready", "failed") and (key, state.start_line) not in self._recorded:
            self._recorded.add((key, state.start_line))
            self._spawn(self._record(key, state.outcome, phase_seconds(state)))

    async def close(self) -> None:
        """Let pending writes finish."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro) -> None:
        try:
            task = asyncio.get_running_loop().create_task(coro)
        except RuntimeError:  # no loop (a scan-like use): no history
            coro.close()
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _db(self) -> History | None:
        if self._history is None and self._open is not None:
            try:
                self._history = self._open()
            except (OSError, sqlite3.Error, HistoryError):
                self._open = None  # unreadable data dir or database: watch without history
        return self._history

    async def _load(self, key: str) -> None:
        def load() -> dict[str, float]:
            db = self._db()
            return db.log_phase_longest(key) if db is not None else {}

        try:
            longest = await asyncio.to_thread(load)
        except (OSError, sqlite3.Error, HistoryError, ValueError):
            return
        if key == self._key:  # in place: a session's ``expected`` is this very dict
            self.longest.clear()
            self.longest.update(longest)

    async def _record(self, key: str, outcome: str, phases: dict[str, float]) -> None:
        def record() -> None:
            db = self._db()
            if db is not None:
                db.record_log_startup(key, outcome, phases)

        try:
            await asyncio.to_thread(record)
        except (OSError, sqlite3.Error, HistoryError):
            pass
