"""The server behind a watched log: its process tree (pid, rank, command), and what ended.

Shown once writer discovery has named the processes (``tui.core.writers``); a process
that ended stays listed, with its exit status when it can be known.
"""

from __future__ import annotations

from rich.text import Text

from tui.app.fmt import rank_key
from tui.app.panel import OccasionalPanel
from tui.core.lines import clean
from tui.core.verdict import ProcessStatus
from tui.core.writers import WriterState

#: Processes listed (a TP16 server has 20-odd); the rest are counted.
SHOWN = 8


def process_rows(writers: WriterState, shown: int = SHOWN) -> list[tuple[str, str]]:
    """(text, style) per line: the main process first, then the ranks in order, then the ended ones."""
    alive = sorted(
        writers.processes,
        key=lambda p: (p.role != "main", p.rank is None, rank_key(p.rank or ""), p.pid),
    )
    rows = []
    for process in alive[:shown]:
        rank = process.rank or process.role
        rows.append((f"● {process.pid:>7}  {rank:<10} {clean(process.command or process.title)}", "done"))
    if len(alive) > shown:
        rows.append((f"  … {len(alive) - shown} more process(es)", "dim"))
    for gone in writers.gone[-3:]:
        process = gone.process
        how = ProcessStatus(False, gone.returncode, gone.signal, exit_known=gone.exit_known).exit_text
        rank = process.rank or process.role
        rows.append((f"✗ {process.pid:>7}  {rank:<10} gone, {how}: {clean(process.command or process.title)}", "failed"))
    return rows


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
