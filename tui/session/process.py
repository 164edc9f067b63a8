"""A node's server process, as its two witnesses see it.

- **Writer discovery** (``writers``: ``tui.core.writers``, fed by ``tui.sources.writers`` or the
  remote agent): the processes that hold the log open, named with their ranks and helpers — for a
  server Watchtower did not start, the only witness. A zombie is gone, with its exit status.
- **The runner** that started it (``launched_as``): a launch's process after each start, stop
  and exit; a node set's processes known to run; and its exit event (``exited``).

:class:`ProcessWitnesses` is the one owner of a node's process status: ``status()`` is what the
verdict weighs — discovery's where it knows (it names the process and its ranks), else the
runner's, else None ("cannot tell").
"""

from __future__ import annotations

from tui.core.events import ProcessExited
from tui.core.verdict import ProcessStatus
from tui.core.writers import WriterState


class ProcessWitnesses:
    """Writer discovery's view of the server's processes and its runner's, and which one counts."""

    def __init__(self) -> None:
        self.writers = WriterState()
        #: The process as its runner tells it, and since when (the quiet time counts from it before a line).
        self.launched: ProcessStatus | None = None
        self.launched_since: float | None = None
        #: The runner's word that this attempt's process exited.
        self.exit: ProcessExited | None = None

    def launched_as(self, status: ProcessStatus | None, since: float | None = None) -> None:
        """The server's process as its runner knows it (a launch's, after each start, stop and
        exit; a node set's processes known to run): weighed where writer discovery has none."""
        self.launched = status
        if since is not None:
            self.launched_since = since

    def exited(self, event: ProcessExited) -> None:
        self.exit = event

    def new_attempt(self) -> None:
        """A relaunch: its process has not exited (whatever the last one did)."""
        self.exit = None

    def status(self) -> ProcessStatus | None:
        """As writer discovery sees it, else as its runner told it; None when neither knows."""
        status = self.writers.status()
        return status if status is not None else self.launched

    def began(self) -> float | None:
        """When the runner started it (None for a server it did not start)."""
        return self.launched_since if self.launched is not None else None
