"""The app's own messages: how the watched nodes tell the dashboard that something changed.

A session's flush (at most ``max_rate`` a second per node) becomes one :class:`NodesChanged`
posted to the app; what changed is gathered in a :class:`Changes` until the app takes it, so a
message still queued when the next arrives is replaced by it (``can_replace``), never lost.
"""

from __future__ import annotations

from textual.message import Message

from tui.session.models import Topic


class Changes:
    """What changed since the app last looked: the topics of each node (None: the Slurm job's)."""

    def __init__(self) -> None:
        self._topics: dict[str | None, set[Topic]] = {}

    def add(self, node: str | None, topics: frozenset[Topic]) -> None:
        self._topics.setdefault(node, set()).update(topics)

    def take(self) -> dict[str | None, set[Topic]]:
        taken, self._topics = self._topics, {}
        return taken


class NodesChanged(Message):
    """Something changed in the watched nodes; the app reads what from its ``Changes``."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, NodesChanged)  # the changes are gathered, not carried: one draw for all
