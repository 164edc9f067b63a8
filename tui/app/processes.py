"""The server behind a watched log: its process tree (pid, rank, command), and what ended.

Shown once writer discovery has named the processes (``tui.core.writers``); a process
that ended stays listed, with its exit status when it can be known. The helpers (compilers,
probes: processes whose end is no failure) take one line; ``H`` lists them.
"""

from __future__ import annotations

from rich.text import Text

from tui.app.panel import OccasionalPanel
from tui.app.keys import shown_key
from tui.core.verdict import ProcessStatus, log_error
from tui.core.writers import WriterState
from tui.core.wording import plural
from tui.present.wording import process_rows


#: From this many rows on (the dashboard's -tall breakpoint) the tree lists its processes.
TALL = 34
#: Rows of processes the tree shows under its title (the rest: "+N more"; ``H`` or the report lists them).
PANEL_ROWS = 5


class ProcessTree(OccasionalPanel):
    """The process tree above the log, once the writers of the log are known."""

    DEFAULT_CSS = """
    ProcessTree { max-height: 14; }
    """

    #: ``H``: each helper listed, not just counted
    show_helpers = False

    def wanted(self) -> bool:
        return self.session.process.writers.known or bool(self.session.process.writers.gone)

    def compact(self) -> bool:
        """Under 34 rows (80×24), or beside several nodes' panels, the tree takes one line, so that
        the log keeps its lines."""
        nodes = getattr(self.app, "nodes", None)
        return self.app.size.height < TALL or (nodes is not None and not nodes.single)

    #: what was last drawn: unchanged, nothing to redraw; the same number of lines, no relayout
    _drawn: tuple[bool, str] | None = None

    def sync(self) -> None:
        """Redraw on a change of the process tree, cheaply: helpers come and go by the dozen while a
        server compiles, and a relayout of the screen for each would cost a watched start CPU
        (issue 37); only a change in the panel's height relayouts."""
        wanted = self.wanted()
        text = self.render().plain if wanted else ""
        drawn = (wanted, text)
        if drawn == self._drawn:
            return
        before, self._drawn = self._drawn, drawn
        if before is not None and before[0] == wanted and before[1].count("\n") == text.count("\n"):
            self.refresh()
            return
        super().sync()

    def on_mount(self) -> None:
        super().on_mount()
        self.watch(self.app, "size", lambda _size: self._relayout(), init=False)

    def _relayout(self) -> None:
        self._drawn = None
        self.refresh(layout=True)

    def render(self) -> Text:
        palette = self.app.palette  # type: ignore[attr-defined]
        writers = self.session.process.writers
        text = Text(end="", no_wrap=True, overflow="ellipsis")
        how = {"fd": "writing the log", "file": "behind the tail -f that writes the log"}.get(
            writers.via, "behind the pipe that writes the log")
        if self.compact():
            text.append(" Server processes: ", palette.style("title"))
            text.append(summary(writers), palette.style("failed" if writers.gone else "done"))
            text.append(f"  ({shown_key('write_report', getattr(self.app, 'keymap', None))} lists them)", palette.style("dim"))
            text.truncate(max(20, self.size.width), overflow="ellipsis")  # one row, whatever the width
            return text
        text.append(f" Server processes ({how})", palette.style("title"))
        rows = process_rows(writers, failure=log_error(self.session.state), helpers=self.show_helpers)
        if not self.show_helpers and any(line.startswith("· ") for line, _ in rows):
            rows = [(f"{line}  ({shown_key('toggle_helpers', getattr(self.app, 'keymap', None))} lists them)" if line.startswith("· ")
                     else line, style) for line, style in rows]
        if not self.show_helpers:
            rows = capped(rows, shown_key('write_report', getattr(self.app, 'keymap', None)))
        width = max(20, self.size.width - 2)
        for line, style in rows:  # one row each: a long command is cut, never wrapped onto the log's rows
            text.append(f"\n {line if len(line) <= width else line[: width - 1] + '…'}", palette.style(style))
        return text


def capped(rows: list[tuple[str, str]], report_key: str, limit: int = PANEL_ROWS) -> list[tuple[str, str]]:
    """At most ``limit`` rows, so that a big tree (8 ranks outliving their main process) leaves the
    log its lines: the first ones, "+N more", and the last two processes gone (what went wrong)."""
    if len(rows) <= limit:
        return rows
    gone = [row for row in rows if row[1] == "failed"][-2:]
    kept = [row for row in rows if row not in gone][: limit - len(gone) - 1]
    more = len(rows) - len(kept) - len(gone)
    return [*kept, (f"  +{more} more ({report_key} lists them)", "dim"), *gone]


def summary(writers: WriterState) -> str:
    """``9 running (main pid 4242, 8 ranks) · 14 helpers ran · gone: TP3 pid 4300, SIGKILL``: the tree in one line."""
    alive = [p for p in writers.processes if writers.essential(p)]
    ranks = sum(1 for p in alive if p.rank or writers.label(p) not in ("main", "engine", "detokenizer"))
    main = next((p for p in alive if p.pid == writers.main_pid), None)
    inside = [f"main pid {main.pid}"] if main is not None else []
    inside += [plural(ranks, "rank")] if ranks else []
    parts = [f"{len(alive)} running" + (f" ({', '.join(inside)})" if inside else "")]
    helpers = len(writers.processes) - len(alive) + writers.helpers.ended
    if helpers:
        parts.append(f"{plural(helpers, 'helper')} ran")
    if writers.gone:
        last = writers.gone[-1]
        status = ProcessStatus(False, last.returncode, last.signal, exit_known=last.exit_known, pid=last.process.pid)
        parts.append(f"{len(writers.gone)} gone, last {writers.label(last.process)} {status.cause}")
    return " · ".join(parts)
