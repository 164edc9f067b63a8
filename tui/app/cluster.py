"""The cluster dashboard: one startup across several nodes (``watch --host N:/log …``,
``--cluster FILE``, ``--slurm JOBID``; ``run --slurm``).

Header: the attempt's verdict (queued / starting / READY / FAILED on node+rank) and the
Slurm job. The **barrier view**: for each milestone, who has not reached it, laggard first.
One compact GPU row per node (a mini bar per GPU and the node's totals), the selected node
expanded. The log of every node merged by timestamp, a node column in front; ``n`` shows
one node at a time, then all again. Renders a :class:`~tui.cluster.ClusterSession`; parses
nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from itertools import islice
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.containers import Vertical
from textual.widgets import Footer, RichLog, Static

from tui.present.wording import GIB, sparkline
from tui.app.gpus import render_gpus
from tui.app.themes import Palette, discover, resolve
from tui.cluster import ClusterSession, MergedLine
from tui.core.errors import UsageError
from tui.core.cluster import BarrierRow
from tui.core.verdict import DEAD, FAILED, READY, STOPPED
from tui.core.wording import clock
from tui.session import ERROR, NORMAL, PHASE, WARNING

#: Lines the log widget holds; the merged log behind it keeps more.
LOG_LINES = 5000
#: Lines drawn into the log view at once (a refresh, a filter change): drawing costs ~0.2 ms a line,
#: so a flood or a long filtered view is cut to its newest lines, with a note saying so.
DRAW_AT_ONCE = 500
BARS = " ▁▂▃▄▅▆▇█"
Action = Callable[[], "None | Awaitable[None]"]


def barrier_text(rows: list[BarrierRow], width: int, palette: Palette, per_row: int = 3) -> Text:
    """One line per milestone: ✓ when everyone is past it, else who is not, laggard first."""
    lines = [Text(" Barrier", palette.style("title"), end="")]
    for row in rows:
        line = Text(no_wrap=True, end="")
        mark, style = ("✓", "done") if row.done else ("…", "running")
        line.append(f" {mark} {row.words:<17}", palette.style(style))
        line.append(f"{row.reached:>3}/{row.total:<3}", palette.style("normal"))
        if row.missing:
            lag = row.missing[0]
            quiet = f" quiet {clock(lag.quiet_for)}" if lag.quiet_for is not None else ""
            at = f" line {lag.last_line}" if lag.last_line else ""
            line.append(f" waiting: {lag.label}", palette.style("behind"))
            line.append(f"{at}{quiet}", palette.style("dim"))
            if lag.suspect:
                line.append(f"  suspect: {lag.suspect}", palette.style("failed"))
            if lag.last_text:
                line.append(f"  {lag.last_text}", palette.style("normal"))
            others = [m.label for m in row.missing[1:per_row]]
            more = len(row.missing) - 1 - len(others)
            if others or more > 0:
                line.append(" · also " + ", ".join(others) + (f" +{more}" if more > 0 else ""), palette.style("dim"))
        line.truncate(width)
        lines.append(line)
    return Text("\n", end="").join(lines)


def node_rows(session: ClusterSession, width: int, palette: Palette, selected: str | None) -> Text:
    """One compact row per node: state, a mini bar per GPU, memory totals, quiet time."""
    lines = [Text(" Nodes", palette.style("title"), end="")]
    statuses = {s.name: s for s in session.statuses()}
    for name, node in session.nodes.items():
        status = statuses[name]
        row = Text(no_wrap=True, end="")
        row.append(f" {'▸' if name == selected else ' '}{name:<12.12}", palette.style("title"))
        verdict = session.node_verdict(name)
        style = {"ready": "done", "failed": "failed", "dead": "failed", "stalled?": "failed", "stopped": "dim"}.get(
            verdict.kind, "running")
        row.append(f" {verdict.kind:<8}", palette.style(style))
        sample = node.gpus.latest
        if sample is not None and sample.gpus:
            bars = "".join(
                BARS[min(8, int(8 * (g.memory_used or 0) / g.memory_total))] if g.memory_total else "?"
                for g in sample.gpus
            )
            used = sum(g.memory_used or 0 for g in sample.gpus)
            total = sum(g.memory_total or 0 for g in sample.gpus)
            row.append(f" {bars}", palette.style("gauge"))
            row.append(f" {used / GIB:.0f}/{total / GIB:.0f} GiB", palette.style("normal"))
            history = [sum(v) for v in zip(*(list(h) for h in node.gpus.history.values()))] if node.gpus.history else []
            row.append(" " + sparkline(history, float(total) or None, 10), palette.style("spark"))
        elif node.gpus.unavailable:
            row.append(f" GPUs: {node.gpus.unavailable}", palette.style("dim"))
        if status.quiet_for is not None:
            row.append(f"  quiet {clock(status.quiet_for)}", palette.style("dim"))
        if node.connection is not None and node.connection.state != "connected":
            row.append(f"  {node.connection.state}", palette.style("running"))
        if status.waiting:
            row.append(f"  waiting: {status.waiting}", palette.style("dim"))
        elif verdict.kind in ("dead", "stalled?", "loading", "failed"):
            row.append(f"  {verdict.detail}", palette.style("dim"))
        row.truncate(width)
        lines.append(row)
    if selected is not None and selected in session.nodes:
        lines.append(render_gpus(session.nodes[selected], width, palette, enabled=True))
    return Text("\n", end="").join(lines)


class ClusterApp(App):
    """The dashboard of one attempt across nodes."""

    CSS = """
    #header { height: 1; }
    #barrier { height: auto; max-height: 8; border-bottom: solid $panel; }
    #nodes { height: auto; max-height: 20; border-bottom: solid $panel; }
    #log { height: 1fr; }
    """
    BINDINGS = [
        Binding("n", "next_node", "Node"),
        Binding("e", "next_error", "Error"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, session: ClusterSession, *, palette: Palette | None = None,
                 actions: dict[str, tuple[str, Action]] | None = None, title: str = "") -> None:
        super().__init__()
        self.session = session
        self.palette = palette or resolve(None, discover())
        self.title_words = title
        self.node_filter: str | None = None
        self.shown = 0  # merged lines already written to the log widget
        self.actions = actions or {}  # key -> (description, callback): the runner's stop, relaunch
        self.exit_status: int | None = None
        self._pending: set[str] = set()  # what changed since the last redraw: "gpu" or "all"
        self._scheduled = False
        self._shown_text: dict[str, Text] = {}
        for key, (description, _) in self.actions.items():
            self.bind(key, f"run_action('{key}')", description=description)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="header")
            yield Static(id="barrier")
            yield Static(id="nodes")
            yield RichLog(id="log", max_lines=LOG_LINES, wrap=False, markup=False, highlight=False)
        yield Footer()

    def on_mount(self) -> None:
        self.register_theme(self.palette.textual)
        self.theme = self.palette.textual.name
        self.session.subscribe(self._on_update)
        self.session.start()
        self.set_interval(1.0, self.refresh_views)  # quiet times move on while nothing arrives
        self.refresh_views()

    async def on_unmount(self) -> None:
        await self.session.stop()

    # ---------------------------------------------------------------- drawing

    def _on_update(self, node: str | None, update: Any) -> None:
        """Coalesce the nodes' updates into one redraw; a GPU sample redraws the node rows only."""
        self._pending |= {"gpu"} if update.topics <= {"gpu"} else {"all"}
        if not self._scheduled:
            self._scheduled = True
            self.call_later(self._redraw)

    def _redraw(self) -> None:
        pending, self._pending, self._scheduled = self._pending, set(), False
        if "all" in pending:
            self.refresh_views()
        elif self.session.nodes:
            self._update("#nodes", node_rows(self.session, self.size.width or 100, self.palette, self.node_filter))

    def _update(self, selector: str, text: Text) -> None:
        """Give a panel new text, unless it is what it shows already (no re-render for nothing)."""
        if self._shown_text.get(selector) != text:
            self._shown_text[selector] = text
            self.query_one(selector, Static).update(text)

    def refresh_views(self) -> None:
        try:
            self.query_one("#header", Static)
        except NoMatches:  # an update that arrives while the app is closing
            return
        width = self.size.width or 100
        palette = self.palette
        verdict = self.session.verdict()
        style = {READY: "verdict_ready", FAILED: "verdict_failed", DEAD: "verdict_failed", STOPPED: "verdict_stopped"}.get(
            verdict.kind, "verdict_starting")
        header = Text(no_wrap=True, end="")
        header.append(f" {verdict.text} ", palette.style(style))
        job = self.session.job_words()
        if job and job not in verdict.text:
            header.append(f"  {job}", palette.style("dim"))
        if self.title_words:
            header.append(f"  {self.title_words}", palette.style("dim"))
        if self.node_filter is not None:
            header.append(f"  log: {self.node_filter} only (n: next)", palette.style("behind"))
        header.truncate(width)
        self._update("#header", header)
        if self.session.nodes:
            self._update("#barrier", barrier_text(self.session.barrier(), width, palette))
            self._update("#nodes", node_rows(self.session, width, palette, self.node_filter))
        elif self.session.job is not None:  # phase zero: the job waits for its nodes
            queue = Text(" Barrier", palette.style("title"), end="")
            queue.append(f"\n … {self.session.job_words()}", palette.style("running"))
            self._update("#barrier", queue)
        self._append_log()

    def _append_log(self) -> None:
        lines = self.session.merged.lines
        total = self.session.merged.total
        new = min(len(lines), total - self.shown)
        self.shown = total
        if new > 0:
            fresh = list(islice(reversed(lines), new))[::-1]
            self._draw([line for line in fresh if self.node_filter is None or line.node == self.node_filter])

    def _draw(self, lines: list[MergedLine]) -> None:
        log = self.query_one("#log", RichLog)
        if len(lines) > DRAW_AT_ONCE:
            skipped = len(lines) - DRAW_AT_ONCE
            log.write(Text(f"… {skipped} lines not drawn here (every node's own log keeps them)",
                           self.palette.style("mark"), no_wrap=True, end=""))
            lines = lines[-DRAW_AT_ONCE:]
        for line in lines:
            log.write(self._line(line))

    def _line(self, line: MergedLine) -> Text:
        palette = self.palette
        style = {ERROR: "error", WARNING: "warning", PHASE: "phase"}.get(line.style, "normal")
        text = Text(no_wrap=True, end="")
        text.append(f"{line.node:<10.10} ", palette.style("title"))
        text.append(f"{line.number:>6} ", palette.style("line_number"))
        text.append(line.text, palette.style(style if line.style != NORMAL else "normal"))
        return text

    def _rewrite_log(self) -> None:
        self.query_one("#log", RichLog).clear()
        self._draw(self.session.merged.view(self.node_filter))
        self.shown = self.session.merged.total

    # ---------------------------------------------------------------- keys

    def action_next_node(self) -> None:
        """All nodes → the first → the next → … → all nodes again."""
        names = list(self.session.nodes)
        if not names:
            return
        if self.node_filter is None:
            self.node_filter = names[0]
        else:
            index = names.index(self.node_filter) + 1 if self.node_filter in names else len(names)
            self.node_filter = names[index] if index < len(names) else None
        self._rewrite_log()
        self.refresh_views()

    def action_next_error(self) -> None:
        """Show the first failure's node, whichever node it is on."""
        verdict = self.session.verdict()
        if verdict.node is not None and verdict.node != self.node_filter:
            self.node_filter = verdict.node
            self._rewrite_log()
            self.refresh_views()
        errors = [line for line in self.session.merged.view(self.node_filter) if line.style == ERROR]
        if errors:
            self.notify(f"{errors[0].node} line {errors[0].number}: {errors[0].text[:120]}", timeout=5)

    async def action_run_action(self, key: str) -> None:
        """A runner's key (x stop, r relaunch); an action that returns a new session (a relaunch) is shown."""
        try:
            result = self.actions[key][1]()
            if inspect.isawaitable(result):
                result = await result
        except UsageError as exc:
            self.notify(str(exc), severity="error", timeout=6)
            return
        if isinstance(result, ClusterSession) and result is not self.session:
            self.replace_session(result)
        self.refresh_views()

    def replace_session(self, session: ClusterSession) -> None:
        """The next attempt: its session in place of the last one; the log starts afresh."""
        self.session = session
        self.node_filter = None
        self.shown = 0
        self.query_one("#log", RichLog).clear()
        session.subscribe(self._on_update)
        session.start()
