"""The server behind a watched log: its process tree (pid, rank, command), and what ended.

Shown once writer discovery has named the processes (``tui.core.writers``); a process
that ended stays listed, with its exit status when it can be known.
"""

from __future__ import annotations

from rich.text import Text

from tui.app.panel import OccasionalPanel
from tui.core.verdict import ProcessStatus, log_error
from tui.core.wording import plural
from tui.present.wording import process_rows


#: From this many rows on (the dashboard's -tall breakpoint) the tree lists every process.
TALL = 34


class ProcessTree(OccasionalPanel):
    """The process tree above the log, once the writers of the log are known."""

    DEFAULT_CSS = """
    ProcessTree { max-height: 12; }
    """

    def wanted(self) -> bool:
        return self.session.writers.known or bool(self.session.writers.gone)

    def compact(self) -> bool:
        """Under 34 rows (80×24), or beside several nodes' panels, the tree takes one line, so that
        the log keeps its lines."""
        nodes = getattr(self.app, "nodes", None)
        return self.app.size.height < TALL or (nodes is not None and not nodes.single)

    def on_mount(self) -> None:
        super().on_mount()
        self.watch(self.app, "size", lambda _size: self._relayout(), init=False)

    def _relayout(self) -> None:
        self.refresh(layout=True)

    def render(self) -> Text:
        palette = self.app.palette  # type: ignore[attr-defined]
        writers = self.session.writers
        text = Text(end="", no_wrap=True, overflow="ellipsis")
        how = "writing the log" if writers.via == "fd" else "behind the pipe that writes the log"
        if self.compact():
            text.append(" Server processes: ", palette.style("title"))
            text.append(summary(writers), palette.style("failed" if writers.gone else "done"))
            text.append("  (w lists them)", palette.style("dim"))
            text.truncate(max(20, self.size.width), overflow="ellipsis")  # one row, whatever the width
            return text
        text.append(f" Server processes ({how})", palette.style("title"))
        for line, style in process_rows(writers, failure=log_error(self.session.state)):
            text.append(f"\n {line}", palette.style(style))
        return text


def summary(writers) -> str:
    """``9 running (main pid 4242, 8 ranks) · gone: TP3 pid 4300, SIGKILL``: the tree in one line."""
    alive = writers.processes
    ranks = sum(1 for p in alive if p.rank)
    main = next((p for p in alive if p.pid == writers.main_pid), None)
    inside = [f"main pid {main.pid}"] if main is not None else []
    inside += [plural(ranks, "rank")] if ranks else []
    parts = [f"{len(alive)} running" + (f" ({', '.join(inside)})" if inside else "")]
    if writers.gone:
        last = writers.gone[-1]
        status = ProcessStatus(False, last.returncode, last.signal, exit_known=last.exit_known, pid=last.process.pid)
        who = last.process.rank or last.process.role
        parts.append(f"{len(writers.gone)} gone, last {who} {status.cause}")
    return " · ".join(parts)
