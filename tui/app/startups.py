"""The startups of one log, when it holds more than one (``>>`` redirection, restarts).

The timeline and rank grid show the current startup only; this panel keeps each
earlier one in a line — outcome, first error, how long it took — so a crash of the
second startup is never read against the first one's ready line. Hidden while the
log holds a single startup.
"""

from __future__ import annotations

from rich.text import Text

from tui.app.panel import OccasionalPanel
from tui.core.state import FAILED, INTERRUPTED, READY, STOPPED
from tui.present.wording import STARTUPS_SHOWN, summary_line

STYLES: dict[str, str] = {READY: "done", FAILED: "failed", STOPPED: "dim", INTERRUPTED: "failed"}


class StartupsPanel(OccasionalPanel):
    """One line per startup in the log, the current one last; shown once there are two."""

    DEFAULT_CSS = """
    StartupsPanel { max-height: 7; }
    """

    SHOWN = STARTUPS_SHOWN

    def wanted(self) -> bool:
        return self.session.state.attempt > 1

    def lines(self) -> list[tuple[str, str]]:
        """(text, style) per row."""
        state = self.session.state
        rows = []
        hidden = state.attempt - 1 - min(len(state.earlier), self.SHOWN)
        if hidden > 0:
            rows.append((f"{hidden} earlier startup(s) not shown", "dim"))
        for attempt in state.earlier[-self.SHOWN :]:
            rows.append((summary_line(attempt), STYLES.get(attempt.outcome, "running")))
        current = state.summary()
        rows.append((summary_line(current, current=True), STYLES.get(current.outcome, "running")))
        return rows

    def render(self) -> Text:
        palette = self.app.palette  # type: ignore[attr-defined]
        text = Text(end="")
        text.append(f" Startups in this log ({self.session.state.attempt})", palette.style("title"))
        for line, style in self.lines():
            text.append(f"\n {line}", palette.style(style))
        return text
