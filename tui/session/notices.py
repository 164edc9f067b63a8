"""Who hears a node's session, and when.

Two kinds of listener, two policies, one owner:

- **Subscribers** (the dashboard's views) are told *that* something changed — an
  :class:`~tui.session.models.Update` of topics, no data — at most ``max_rate`` times a second,
  however fast the log grows; they pull what they draw from the session then. The throttle is
  here so that a flood of 100k lines a second costs the views fifteen frames, not 100k.
- **Hearers** (the ``--plain`` presenters, a node set gathering several nodes into one queue) are
  told each event as it happens, in order, unthrottled and lossless: the tracker's events, source
  notices, warnings' notes and, when they ask, every log line (``SessionEvent``).

Before the subscribers are told, ``before_views`` runs (the judging stage decides the verdict the
views will render), so a view never draws a state older than the verdict beside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tui.core.events import SourceEvent, TrackerEvent
from tui.core.lines import Line
from tui.session.judging import NoteFound
from tui.session.models import Topic, Update

#: What ``listen()`` queues, in order: source notices, tracker events, warnings' notes (the
#: judging stage's) and, when asked for, the log's lines. Presenters dispatch on it with ``match``.
SessionEvent = SourceEvent | TrackerEvent | NoteFound | Line
Hearer = Callable[[SessionEvent], None]  # told each event ``listen`` would queue (``hear``)
Subscriber = Callable[[Update], None]


class Notices:
    """The subscribers and hearers of one session, the topics changed since they were last told,
    and the timer that tells them."""

    def __init__(self, max_rate: float, before_views: Callable[[], None]) -> None:
        self._min_interval = 1.0 / max_rate
        self._before_views = before_views
        self._subscribers: list[Subscriber] = []
        self.hearers: list[Hearer] = []  # each told every event, in order
        self.line_hearers: list[Hearer] = []  # those told each log line too
        self._topics: set[Topic] = set()
        self._flush_handle: asyncio.TimerHandle | None = None
        self._last_flush = 0.0

    def subscribe(self, callback: Subscriber) -> None:
        self._subscribers.append(callback)

    def hear(self, put: Hearer, *, lines: bool = False) -> None:
        """``put`` is told each event as it happens (with ``lines``, each log :class:`Line` too)."""
        self.hearers.append(put)
        if lines:
            self.line_hearers.append(put)

    def listen(self, *, lines: bool = False) -> asyncio.Queue[SessionEvent]:
        """A queue of what ``hear`` is told, from now on, none dropped."""
        queue: asyncio.Queue[SessionEvent] = asyncio.Queue()
        self.hear(queue.put_nowait, lines=lines)
        return queue

    def tell(self, event: SessionEvent) -> None:
        """Each hearer is told ``event`` now."""
        for put in self.hearers:
            put(event)

    def mark(self, *topics: Topic) -> None:
        """``topics`` changed: told with the next change (inside a batch that ends in one)."""
        self._topics.update(topics)

    def changed(self, *topics: Topic) -> None:
        """``topics`` changed: the subscribers are told on the next flush (at once outside a loop)."""
        self._topics.update(topics)
        if self._flush_handle is not None or not self._subscribers:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        delay = max(0.0, self._last_flush + self._min_interval - loop.time())
        self._flush_handle = loop.call_later(delay, self.flush)

    def flush(self) -> None:
        """Tell the subscribers what changed since last time (the timer calls this). A GPU sample
        alone (once a second) holds no later change back: the log's first line waited 57 ms behind
        the first sample, read as it was (issue 35); the throttle is for the log's flood."""
        self._flush_handle = None
        if not self._topics:
            return
        update = Update(frozenset(self._topics))
        if not update.samples_only:
            try:
                self._last_flush = asyncio.get_running_loop().time()
            except RuntimeError:
                pass
        self._topics = set()
        self._before_views()
        for callback in list(self._subscribers):
            callback(update)

    def close(self) -> None:
        """No more telling: the pending flush is dropped (the session has stopped)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
