"""The phase timeline (a horizontal Gantt in log time) and the per-rank grid."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from tui.core.state import (
    FAILED,
    PHASE_TITLES,
    PHASES,
    Phase,
    StartupState,
    origin,
    shown,
    skipped,
)
from tui.core.wording import clock
from tui.present.wording import rank_key
from tui.session import WatchSession

#: Phases a rank takes part in (the grid's columns); args and ready belong to the main process.
RANK_PHASES = ("dist_init", "weight_load", "compile", "memory_pool", "cuda_graph", "draft_init")
SHORT = {"dist_init": "dist", "weight_load": "weights", "compile": "compile", "memory_pool": "pool", "cuda_graph": "graphs", "draft_init": "draft"}
TINY = {"dist_init": "dist", "weight_load": "load", "compile": "comp", "memory_pool": "pool", "cuda_graph": "graph", "draft_init": "draft"}
CELL, CELL_MIN = 8, 6  # a rank grid cell's width, and the narrowest it gets
LABEL = 15  # glyph + title column
_REVERSE = Style(reverse=True)
DURATION = 7


def render_timeline(session: WatchSession, width: int, palette, height: int | None = None) -> Text:
    state = session.state
    now = session.times.log_now(session.state)
    t0 = origin(state)
    bar_width = max(8, width - LABEL - DURATION - 2)
    span = max(1.0, (now or 0.0) - (t0 or 0.0))

    def col(ts: float) -> int:
        return min(bar_width - 1, max(0, int((ts - t0) / span * (bar_width - 1) + 0.5)))  # type: ignore[operator]

    lines: list[Text] = []
    head = Text(no_wrap=True, end="")
    head.append(" Phases".ljust(LABEL + DURATION + 1), palette.style("title"))
    if t0 is not None:
        axis = [" "] * bar_width
        for frac in (0.0, 0.5, 1.0):
            label = clock(span * frac, "—")
            pos = int(frac * (bar_width - 1))
            pos = min(pos, bar_width - len(label)) if frac > 0 else pos
            if frac == 0.5:
                pos -= len(label) // 2
            axis[pos : pos + len(label)] = label
        head.append("".join(axis)[:bar_width], palette.style("dim"))
    lines.append(head)

    preflight = getattr(session.info, "preflight", None)
    if preflight is not None:  # phase zero: the checks before the launch
        lines.append(_preflight_row(preflight, palette))
    silent = _silent_columns(session, t0, span, bar_width, now) if t0 is not None else set()
    failed_phase = _failed_phase(state)
    for name in shown(state, PHASES):
        phase = state.phase(name)
        row = Text(no_wrap=True, end="")
        title = PHASE_TITLES[name]
        if phase is None and name == "ready" and state.outcome == FAILED:
            row.append(f" ✖ {'failed':<{LABEL - 3}}", palette.style("failed"))
            error = state.first_error
            at = getattr(error, "ts", None) if error is not None else None
            row.append(f"{clock(at - t0, '—') if at is not None and t0 is not None else '':>{DURATION}} ", palette.style("failed"))
            if error is not None and at is not None and t0 is not None:
                where = col(at)
                who = f"{error.kind}" + (f" on {error.rank}" if error.rank else "")
                if where + 2 + len(who) > bar_width and len(who) + 2 > where + 1:
                    who = error.kind if len(error.kind) + 2 <= where + 1 else ""
                if where + 2 + len(who) <= bar_width:  # the words after the mark, else before it
                    row.append(" " * where + "✖ " + who, palette.style("failed"))
                else:
                    row.append(f"{who} ✖".rjust(where + 1), palette.style("failed"))
            lines.append(row)
            continue
        if phase is None:
            if skipped(state, name):
                row.append(f" – {title:<{LABEL - 3}}", palette.style("skipped"))
                row.append(f"{'skipped':>{DURATION}} ", palette.style("skipped"))
            else:
                row.append(f" · {title:<{LABEL - 3}}", palette.style("dim"))
                row.append(f"{'':>{DURATION}} ")
            lines.append(row)
            continue
        if phase is failed_phase:
            glyph, key = "✖", "failed"
        elif phase.done:
            glyph, key = "✓", "done"
        else:
            glyph, key = "▶", "running"
        row.append(f" {glyph} {title:<{LABEL - 3}}", palette.style(key))
        seconds = phase.seconds if phase.done else (None if now is None or phase.start_ts is None else now - phase.start_ts)
        row.append(f"{clock(seconds, '—'):>{DURATION}} ", palette.style("title" if key == "running" else "dim"))
        if t0 is not None and phase.start_ts is not None:
            end_ts = phase.end_ts if phase.end_ts is not None else now
            a, b = col(phase.start_ts), col(end_ts if end_ts is not None else phase.start_ts)
            label = ""
            estimate = session.weight.estimate() if name == "weight_load" and not phase.done else None
            if estimate is not None and estimate.signal == "log":  # the loader's bar, and the time left
                room, percent = b - a + 1, f"{phase.progress or 0:.0%}"
                gauge, left = _gauge(phase.progress or 0.0, 8), estimate.left_words()
                label = next((t for t in (f" {gauge} {percent} {phase.detail} · {left} ", f" {gauge} {percent} · {left} ",
                                          f" {gauge} {percent} ", f" {percent} ", percent) if len(t) <= room), "")
            elif estimate is not None:  # the weight load in bytes: how far, how fast, how long still
                room, said = b - a + 1, estimate.short()
                left = estimate.left_words() + (" · simulated" if estimate.simulated else "")
                gauge = _gauge(estimate.fraction, 8) if estimate.fraction is not None else ""
                tries = (f" {gauge} {said} ", f" {said} ", f" {left} ") + (() if estimate.simulated else (f" {gauge} ",))
                label = next((t for t in tries if t.strip() and len(t) <= room), "")
            elif not phase.done and phase.progress is not None:  # the progress, written on the running bar
                room, percent = b - a + 1, f"{phase.progress:.0%}"
                gauge = _gauge(phase.progress, 8)
                count = session.weight.count_estimate()  # a counting bar's time left (graph capture's batch sizes)
                ours = count is not None and count.phase == name
                left = f"· {count.left_words()} " if count is not None and ours else ""
                detail = phase.detail
                if count is not None and ours and count.timed:  # items that say cold or warm: their words
                    detail, left = count.words(), ""
                label = next((t for t in (f" {gauge} {percent} {detail} {left}", f" {gauge} {percent} {left}",
                                          f" {gauge} {percent} {detail} ", f" {gauge} {percent} ",
                                          f" {percent} ", percent) if len(t) <= room), "")
            cells = Text(" " * a, end="")
            for c in range(a, b + 1):
                if c - a < len(label):
                    cells.append(label[c - a], palette.style(key) + _REVERSE)
                else:
                    cells.append("▒" if c in silent else "█", palette.style("gap" if c in silent else key))
            row.append_text(cells)
        lines.append(row)

    if not silent or t0 is None:
        lines.append(Text("", end=""))  # the row stays: the panel's height does not jump
    else:
        quiet = Text(no_wrap=True, end="")
        quiet.append(f" {'log quiet':<{LABEL - 1}}", palette.style("gap"))
        total = sum(s.end_ts - s.start_ts for s in session.times.silences)
        ongoing = session.times.quiet_for() or 0.0
        quiet.append(f"{clock(total + (ongoing if ongoing >= 5 else 0), '—'):>{DURATION}} ", palette.style("gap"))
        quiet.append("".join("░" if c in silent else " " for c in range(bar_width)), palette.style("gap"))
        lines.append(quiet)
    if height is not None:
        lines = lines[: max(1, height)]
    for line in lines:
        line.truncate(width)
    return Text("\n", end="").join(lines)


def _silent_columns(session: WatchSession, t0: float, span: float, bar_width: int, now: float | None) -> set[int]:
    """Columns that fall inside a log silence, including the one going on now."""
    stretches = [(s.start_ts, s.end_ts) for s in session.times.silences]
    quiet = session.times.quiet_for()
    if quiet is not None and quiet >= 5 and now is not None:
        stretches.append((now - quiet, now))
    per_col = span / max(1, bar_width - 1)
    out: set[int] = set()
    for start, end in stretches:
        first = int((start - t0) / per_col + 0.999)
        last = int((end - t0) / per_col)
        out.update(range(max(0, first), min(bar_width, last + 1)))
    return out


def _preflight_row(report, palette) -> Text:
    """`` ⚠ preflight   0.3s ✓ 12 · ⚠ 2 · ✗ 0 [c]  ⚠ open files: …`` (the first check that is not ✓;
    ``c`` lists them all, never cut)."""
    worst = next((c for c in report.checks if c.status == "fail"), None) or next(
        (c for c in report.checks if c.status == "warn"), None)
    warned = any(c.status == "warn" for c in report.checks)
    glyph, key = ("✖", "failed") if report.failed else ("⚠", "running") if warned else ("✓", "done")
    row = Text(no_wrap=True, end="")
    row.append(f" {glyph} {'preflight':<{LABEL - 3}}", palette.style(key))
    row.append(f"{report.seconds:.1f}s".rjust(DURATION) + " ", palette.style("dim"))
    row.append(report.summary.removeprefix("preflight ").rsplit(" (", 1)[0], palette.style("dim"))
    if worst is not None:  # the key first: the row is cut at the width, the panel never is
        row.append(" [c]", palette.style("title"))
        row.append(f"  {worst.line}", palette.style("failed" if worst.status == "fail" else "running"))
    return row


def _failed_phase(state: StartupState) -> Phase | None:
    if state.outcome != FAILED:
        return None
    flagged = [p for p in state.phases if p.failed]
    if flagged:
        return flagged[-1]
    running = [p for p in state.phases if not p.done]
    return running[-1] if running else None


def render_ranks(session: WatchSession, width: int, palette) -> Text:
    """Ranks × phases: done (seconds), running, waiting behind others, or where a rank died."""
    state = session.state
    ranks = sorted(state.ranks, key=rank_key)
    title = Text(" Ranks", palette.style("title"), no_wrap=True, end="")
    if not ranks:
        return Text("\n", end="").join([title, Text(" no per-rank lines (one rank)", palette.style("dim"), end="")])
    rank_width = max(5, max(len(r) for r in ranks) + 1)
    columns = shown(state, RANK_PHASES)
    # Cells narrow (to 6: ``✓1:23`` and a space) and names shorten so that every phase's column
    # fits beside the GPU panel (80 columns); none is cut off the right edge.
    cell = max(CELL_MIN, min(CELL, (width - 1 - rank_width) // max(1, len(columns))))
    names = SHORT if cell >= CELL else TINY
    header = Text(" " + "rank".ljust(rank_width), palette.style("dim"), no_wrap=True, end="")
    for name in columns:
        header.append(names[name].rjust(cell), palette.style("dim"))
    rows = [title.append("  ✓ done ▶ running · waiting ✖ died", palette.style("dim")), header]
    error = state.first_error
    dead_rank = error.rank if error is not None and state.outcome == FAILED else None
    failed_phase = _failed_phase(state)
    now = session.times.log_now(session.state)
    for rank in ranks:
        row = Text(" " + rank.ljust(rank_width), palette.style("failed" if rank == dead_rank else "normal"), no_wrap=True, end="")
        for name in columns:
            phase = state.phase(name)
            if phase is None:
                key, text = ("skipped", "–") if skipped(state, name) else ("dim", "")
            else:
                part = phase.ranks.get(rank)
                finished_by_others = any(r.end_line is not None for r in phase.ranks.values())
                if part is None:
                    key, text = ("dim", "–") if phase.done else ("behind" if finished_by_others else "dim", "·")
                elif rank == dead_rank and phase is failed_phase:
                    key, text = "failed", "✖"
                elif part.end_line is not None:
                    key, text = "done", f"✓{_short(part.seconds)}"
                else:
                    since = None if now is None or part.start_ts is None else now - part.start_ts
                    key = "behind" if finished_by_others else "running"
                    text = f"▶{_short(since)}"
            row.append(text.rjust(cell), palette.style(key))
        rows.append(row)
    for line in rows:
        line.truncate(width)
    return Text("\n", end="").join(rows)


def _gauge(fraction: float, width: int) -> str:
    """A progress gauge ``■■■■■□□□`` of ``width`` cells."""
    filled = int(round(min(1.0, max(0.0, fraction)) * width))
    return "■" * filled + "□" * (width - filled)


def _short(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds:.0f}s" if seconds < 100 else clock(seconds, '—')


class PhaseTimeline(Widget):
    """Canonical phases as rows; bars in log time; silent stretches shaded."""

    DEFAULT_CSS = """
    PhaseTimeline { height: auto; min-height: 7; }
    """

    def __init__(self, session: WatchSession, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session

    def second(self) -> None:
        """The app's clock (``WatchtowerApp.second``): a growing silence moves the bars and the
        axis, a repaint of this panel alone. Its rows follow the state (``_draw`` relayouts on a state
        change), never the clock: a relayout here would redraw the whole screen every second at rest
        (issue 37, item 5)."""
        if self.session.times.quiet_for() is not None:
            self.refresh()

    def render(self) -> Text:
        return render_timeline(self.session, self.size.width or 80, self.app.palette)  # type: ignore[attr-defined]


class RankGrid(Widget):
    """Which rank is behind or died, per phase."""

    DEFAULT_CSS = """
    RankGrid { height: auto; width: auto; }
    """

    def __init__(self, session: WatchSession, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session

    def render(self) -> Text:
        return render_ranks(self.session, self.size.width or 60, self.app.palette)  # type: ignore[attr-defined]
