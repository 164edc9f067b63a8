"""The server behind a watched log: its process tree (pid, rank, command), and what ended.

Shown once writer discovery has named the processes (``tui.core.writers``); a process
that ended stays listed, with its exit status when it can be known.
"""

from __future__ import annotations

from rich.text import Text

from tui.app.panel import OccasionalPanel
from tui.present.wording import process_rows


class ProcessTree(OccasionalPanel):
    """The process tree above the log, once the writers of the log are known."""

    DEFAULT_CSS = """
    ProcessTree { max-height: 12; }
    """

    def wanted(self) -> bool:
        return self.session.writers.known or bool(self.session.writers.gone)

    def render(self) -> Text:
        palette = self.app.palette  # type: ignore[attr-defined]
        writers = self.session.writers
        text = Text(end="", no_wrap=True, overflow="ellipsis")
        how = "writing the log" if writers.via == "fd" else "behind the pipe that writes the log"
        text.append(f" Server processes ({how})", palette.style("title"))
        for line, style in process_rows(writers):
            text.append(f"\n {line}", palette.style(style))
        return text
