"""The panels the dashboard adds when one startup spans several nodes (or is a Slurm job).

**Barrier**: for each milestone, who has not reached it, laggard first (``tui.core.cluster``).
**Nodes**: one compact row per node (its own verdict, a mini bar per GPU, memory totals, how
long its log has been quiet); the selected node (``o``) is marked — the timeline, the rank
grid, the GPU panel and the processes above show that node. Both render a
:class:`~tui.cluster.ClusterSession`; they parse nothing and judge nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from tui.app.themes import Palette
from tui.core.cluster import BarrierRow, NodeStatus, barrier
from tui.core.lines import clean
from tui.core.wording import clock, quote
from tui.present.wording import GIB, sparkline

if TYPE_CHECKING:
    from tui.cluster import ClusterSession

BARS = " ▁▂▃▄▅▆▇█"
#: A node's own verdict kind → the theme style of its row's word.
KIND_STYLES = {"ready": "done", "failed": "failed", "dead": "failed", "stalled?": "failed", "stopped": "dim"}


def barrier_text(rows: list[BarrierRow], width: int, palette: Palette, per_row: int = 3) -> Text:
    """One line per milestone: ✓ when everyone is past it, else who is not, laggard first."""
    lines = [Text(" Barrier", palette.style("title"), end="")]
    done = [row for row in rows if row.done]
    if done:  # the milestones everyone passed: one line, so the log keeps its rows
        line = Text(no_wrap=True, end="")
        line.append(f" ✓ {', '.join(row.words.removesuffix(' done') for row in done)}", palette.style("done"))
        line.append(f"  {done[0].reached}/{done[0].total}", palette.style("normal"))
        line.truncate(width)
        lines.append(line)
    said: tuple[str, ...] = ()
    for row in rows:
        if row.done:
            continue
        line = Text(no_wrap=True, end="")
        mark, style = ("✓", "done") if row.done else ("…", "running")
        line.append(f" {mark} {row.words:<17}", palette.style(style))
        line.append(f"{row.reached:>3}/{row.total:<3}", palette.style("normal"))
        labels = tuple(lag.label for lag in row.missing)
        if labels == said:  # the same ranks as the row above: not the same words again
            line.append(" the same", palette.style("dim"))
            lines.append(line)
            continue
        said = labels
        if row.missing:
            lag = row.missing[0]
            quiet = f" quiet {clock(lag.quiet_for)}" if lag.quiet_for is not None else ""
            at = f" line {lag.last_line}" if lag.last_line else ""
            if lag.out:  # it will not get there: not waited for
                line.append(f" {lag.label} {lag.out}", palette.style("failed"))
            else:
                line.append(f" waiting: {lag.label}", palette.style("behind"))
            line.append(f"{at}{quiet}", palette.style("dim"))
            if lag.suspect:
                line.append(f"  suspect: {lag.suspect}", palette.style("failed"))
            if lag.last_text:  # (at 80 columns its front matter goes first: the reason is at its end)
                line.append(f"  {quote(clean(lag.last_text), width - line.cell_len - 2)}", palette.style("normal"))
            others = [m.label for m in row.missing[1:per_row]]
            more = len(row.missing) - 1 - len(others)
            if others or more > 0:
                line.append(" · also " + ", ".join(others) + (f" +{more}" if more > 0 else ""), palette.style("dim"))
        line.truncate(width)
        lines.append(line)
    return _rows(lines)


def _rows(lines: list[Text]) -> Text:
    """Lines that never wrap: a panel drawn before its width is known cuts them instead."""
    text = Text("\n", end="").join(lines)
    text.no_wrap, text.overflow = True, "crop"
    return text


def node_rows(cluster: ClusterSession, statuses: list[NodeStatus], width: int, palette: Palette,
              selected: str | None) -> Text:
    """One compact row per node: its own verdict, a mini bar per GPU, memory totals, quiet time."""
    lines = [Text(" Nodes", palette.style("title"), end="")]
    for status in statuses:
        name = status.name
        node = cluster.nodes[name]
        verdict = status.verdict
        row = Text(no_wrap=True, end="")
        row.append(f" {'▸' if name == selected else ' '}{name:<12.12}", palette.style("title"))
        kind = verdict.kind if verdict is not None else "starting"
        row.append(f" {kind:<8}", palette.style(KIND_STYLES.get(kind, "running")))
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
        if status.waiting:
            row.append(f"  waiting: {clean(status.waiting)}", palette.style("dim"))
        elif verdict is not None and kind in ("dead", "stalled?", "loading", "failed", "ready"):
            row.append(f"  {clean(verdict.detail)}", palette.style("dim"))
        row.truncate(width)
        lines.append(row)
    return _rows(lines)


class ClusterPanel(Static):
    """A panel drawn from the cluster session; redrawn only when its text changed."""

    DEFAULT_CSS = """
    ClusterPanel { height: auto; max-height: 10; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, cluster: ClusterSession, **kwargs) -> None:
        super().__init__(**kwargs)
        self.cluster = cluster
        self._shown: Text | None = None

    def text(self, statuses: list[NodeStatus], width: int, palette: Palette) -> Text:
        raise NotImplementedError

    def sync(self, statuses: list[NodeStatus]) -> None:
        """Draw from ``statuses`` (the nodes as the cluster judged them once for every panel)."""
        text = self.text(statuses, self.size.width or 100, self.app.palette)  # type: ignore[attr-defined]
        if text != self._shown:
            # a quiet time ticking changes the words, not the rows: a repaint of this panel, not a
            # relayout of the screen (which repaints every panel, once a second at rest: issue 35)
            same_rows = self._shown is not None and len(self._shown.split()) == len(text.split())
            self._shown = text
            self.update(text, layout=not same_rows)


class BarrierPanel(ClusterPanel):
    """Who is not there yet, per milestone; while a Slurm job waits for its nodes, the queue."""

    def text(self, statuses: list[NodeStatus], width: int, palette: Palette) -> Text:
        if self.cluster.nodes:
            return barrier_text(barrier(statuses), width, palette)
        queue = Text(" Barrier", palette.style("title"), end="")
        queue.append(f"\n … {clean(self.cluster.job_words() or 'no nodes yet')}", palette.style("running"))
        return queue


class NodeRows(ClusterPanel):
    """One row per node; the selected one marked."""

    selected: str | None = None

    def text(self, statuses: list[NodeStatus], width: int, palette: Palette) -> Text:
        return node_rows(self.cluster, statuses, width, palette, self.selected)
