"""The header: where the log comes from, and one big verdict readable across the desk."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget

from tui.app.keys import ScrollingModal
from tui.app.themes import Palette
from tui.core.lines import clean
from tui.core.verdict import DEAD, LOADING, REFUSED, STALLED, STOPPING, TIMEOUT, Verdict
from tui.core.wording import clock
from tui.present.wording import fix_words
from tui.session import WatchSession
from tui.session.judging import Judging

if TYPE_CHECKING:
    from tui.core.hints import Diagnosis

GLYPHS = {"starting": "◷", "ready": "✔", "failed": "✖", "stopped": "■"}
#: The theme's verdict styles (verdict_<style>) and glyphs cover four kinds; the rest read as one of them.
STYLE = {DEAD: "failed", REFUSED: "failed", LOADING: "starting", STALLED: "starting", STOPPING: "stopped", TIMEOUT: "stopped"}


#: The fewest characters a log path is cut to: the end of its file name tells logs apart.
PATH_LEAST = 10


def path_tail(path: str, room: int) -> str:
    """``path`` in at most ``room`` characters (never under ``PATH_LEAST``): whole if it fits, else
    its last whole components after ``…/``, else the end of its file name after ``…``."""
    room = max(room, PATH_LEAST)
    if len(path) <= room:
        return path
    name = path.rsplit("/", 1)[-1]
    if len(name) + 2 > room:
        return "…" + name[len(name) - (room - 1):]
    tail = path[len(path) - (room - 2):]
    return "…/" + tail[tail.index("/") + 1:]


def title_head(title: str, room: int) -> str:
    """``title`` ("run: NAME", "simulated demo · …") in at most ``room`` characters (never under
    ``PATH_LEAST``): whole if it fits, else its beginning and ``…``."""
    room = max(room, PATH_LEAST)
    return title if len(title) <= room else title[:room - 1].rstrip(" ·") + "…"


class VerdictHeader(Widget):
    """Two lines: the source (server, host, log, attempt, elapsed, connection), then the verdict;
    a third under FAILED with the hint for a known failure (why, and the fix the F key applies), or
    while starting with a note: what a server quiet after its last line is doing (a silent download),
    else the note of a warning that predicts trouble ("slow, not stuck"). The verdict, hints and note
    are the judging stage's last push (``tui.session.judging``)."""

    DEFAULT_CSS = """
    VerdictHeader { height: 2; }
    """

    def __init__(self, session: WatchSession, judging: Judging, elapsed: Callable[[], float | None] | None = None,
                 place: Callable[[WatchSession], str] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        #: The attempt's elapsed time (with several nodes: across them, not the selected node's).
        self.elapsed = elapsed
        #: Where the shown node runs, in words (a Slurm job's task: the job and its nodes); else its host.
        self.place = place
        self.session = session  # the source fields' (with several nodes: the selected node's)
        self.judging = judging  # whose verdict it draws (with several nodes: the attempt's)
        #: The verdict last drawn (tests and the launcher's notifications read it).
        self.verdict: Verdict | None = None
        #: The hints last drawn under a FAILED verdict (the F key applies the first one's fix).
        self.hints: list[Diagnosis] = []

    def pushed_hints(self) -> list[Diagnosis]:
        """The hints of the verdict the judging stage pushed last, where it is FAILED: what the header
        draws (``i`` shows them whole, the footer offers ``i`` for them) whether or not it has drawn it yet."""
        pushed = self.judging.last
        return list(pushed.hints) if pushed is not None and STYLE.get(pushed.verdict.kind, pushed.verdict.kind) == "failed" else []

    def render(self) -> Text:
        palette = self.app.palette  # type: ignore[attr-defined]
        session = self.session
        info = session.info
        pushed = self.judging.last or self.judging.evaluate()  # drawn as decided, never decided here
        current = self.verdict = pushed.verdict
        width = max(20, self.size.width)

        top = Text(no_wrap=True, overflow="ellipsis", end="")
        top.append(" WATCHTOWER ", palette.style("title"))
        fields = [
            session.state.server or info.server or "server?",
            self.place(session) if self.place is not None else info.host,
            info.title or info.log_path,
            f"attempt v{info.attempt}",
            f"startup {session.state.attempt} in this log" if session.state.attempt > 1 else "",
            f"elapsed {clock(elapsed, '—')}" if (elapsed := (self.elapsed or session.startup_elapsed)()) is not None else "",
        ]
        # a long log path or title gives way (a path's tail kept, a title's head), so that the attempt and
        # its clock are seen on a narrow terminal
        rest = len(top) + sum(len(f) + 3 for i, f in enumerate(fields) if f and i != 2)
        fields[2] = path_tail(fields[2], width - rest) if not info.title else title_head(fields[2], width - rest)
        top.append(" · ".join(f for f in fields if f), palette.style("dim"))
        connection = session.connection
        if connection is not None:
            mark = "●" if connection.state == "connected" else "○"
            words = f"  {mark} {connection.state}"
            if connection.retry_in:  # "retrying in 8s", not "retrying, retrying in 8s"
                words = f"  {mark} {'retrying' if connection.state == 'retrying' else connection.state + ', retrying'}" \
                        f" in {connection.retry_in:.0f}s"
            if connection.detail and connection.state != "connected":
                words += f": {connection.detail.removeprefix(f'{connection.host}: ')}"
            top.append(words, palette.style("running" if connection.state != "connected" else "done"))
        no_writer = session.process.writers.no_writer
        if no_writer is not None and not session.process.writers.known:  # said once, here, until one is found
            top.append(f"  no writer found: {clean(no_writer.detail)}", palette.style("running"))
        for name, value in session.badges.items():
            top.append(f"  {name}: {value}", palette.style("dim"))
        top.truncate(width, overflow="ellipsis")

        kind = STYLE.get(current.kind, current.kind)
        style = palette.style(f"verdict_{kind}")
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        where = f" on {clean(current.node)}" if current.node else ""  # several nodes: which one it is about
        line.append(f" {GLYPHS.get(kind, '')} {current.word}{where} ", style)
        line.append(" " + clean(current.detail), style=palette.style("failed" if kind == "failed" else "title"))
        line.truncate(width, overflow="ellipsis")
        rows = [top, line]
        found = self.hints = self.pushed_hints()
        if found:
            fix_key = getattr(self.app, "fix_key", None)
            rows.extend(hint_rows(found[0], width, palette, self.app.console, fix_key=fix_key))
        elif kind == "starting" and pushed.note is not None:
            note = pushed.note
            hint = Text(no_wrap=True, overflow="ellipsis", end="")
            hint.append(f" note (line {note.line}): " if note.line else " note: ", palette.style("dim"))
            hint.append(clean(note.why), palette.style("dim"))
            hint.truncate(width, overflow="ellipsis")
            rows.append(hint)
        if self.styles.height is None or self.styles.height.value != len(rows):
            self.styles.height = len(rows)
        return Text("\n", end="").join(rows)


def hint_rows(hint: Diagnosis, width: int, palette: Palette, console: Console, fix_key: str | None = "F") -> list[Text]:
    """``hint: why — fix  [F] apply`` on one row, or two where it does not fit; the fix comes
    first when even two rows would cut it, so what to do is never the part an ellipsis hides.
    ``fix_key``: the app's key that applies the fix (a launch it can relaunch); None (``watch``,
    ``demo``): no key is offered and the fix is said as the change to make by hand."""
    row = Text(end="")
    row.append(" hint: ", palette.style("title"))
    if fix_key is not None:
        fixes = "; ".join(action.text for action in hint.fix)
        key = f"  [{fix_key}] apply"
    else:
        fixes = fix_words(hint.fix)
        key = ""
    text = f"{hint.why} — {fixes}" if fixes else hint.why
    if not fixes or Text(f" hint: {text}{key}").cell_len <= 2 * width - 8:
        row.append(clean(text), palette.style("title"))
        if fixes and key:
            row.append(key, palette.style("dim"))
    else:
        row.append(clean(fixes), palette.style("title"))
        if key:
            row.append(key, palette.style("dim"))
        row.append(" — " + clean(hint.why), palette.style("title"))
    lines = list(row.wrap(console, width - 1))
    if len(lines) > 2:
        lines[1].append(" " + " ".join(line.plain for line in lines[2:]))
        lines[1].truncate(width - 1, overflow="ellipsis")
    return [Text(" ", end="") + line if i else line for i, line in enumerate(lines[:2])]


class HintsScreen(ScrollingModal):
    """``i``: a failed start's hints in full — why, the fix and the link of each — where the
    header has room for the first one's two rows only (an 80-column pane cuts most of them)."""

    BINDINGS = [Binding("i", "dismiss", "Close")]

    def __init__(self, hints: list[Diagnosis], palette: Palette, fix_key: str | None = None) -> None:
        text = Text(end="")
        for n, hint in enumerate(hints):
            if n:
                text.append("\n\n")
            text.append(f"hint (line {hint.line}): " if hint.line else "hint: ", palette.style("title"))
            text.append(clean(hint.why))
            if hint.fix:
                fixes = "; ".join(action.text for action in hint.fix) if fix_key else fix_words(hint.fix)
                text.append("\nfix: ", palette.style("title"))
                text.append(clean(fixes))
                if fix_key and n == 0:  # (the key applies the first hint's fix)
                    text.append(f"  [{fix_key}] apply", palette.style("dim"))
            if hint.link:
                text.append("\n" + clean(hint.link), palette.style("dim"))
        if not hints:
            text.append("no hint: the start has not failed, or no hint knows its failure", palette.style("dim"))
        super().__init__("Hints", text, "hints")
        self.hints = hints
