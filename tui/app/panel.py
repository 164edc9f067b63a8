"""Panels above the log that show only while they have something to say."""

from __future__ import annotations

from textual.widgets import Static

from tui.session import WatchSession


class OccasionalPanel(Static):
    """Hidden until ``wanted()``; ``sync()`` after each change of what it shows."""

    DEFAULT_CSS = """
    OccasionalPanel { height: auto; display: none; }
    OccasionalPanel.-open { display: block; }
    """

    def __init__(self, session: WatchSession, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session

    def wanted(self) -> bool:
        raise NotImplementedError

    def on_mount(self) -> None:
        self.sync()

    def sync(self) -> None:
        wanted = self.wanted()
        if wanted or self.has_class("-open"):
            self.set_class(wanted, "-open")
            self.refresh(layout=True)
