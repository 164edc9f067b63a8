"""The header: where the log comes from, and one big verdict readable across the desk."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.text import Text
from textual.widget import Widget

from tui.app.themes import Palette
from tui.core.events import WarningFound
from tui.core.hints import Diagnosis, knowledge
from tui.core.lines import clean
from tui.core.profiles import ProfileError
from tui.core.verdict import DEAD, LOADING, REFUSED, STALLED, STOPPING, TIMEOUT, Verdict
from tui.core.wording import clock
from tui.present.report import session_hints
from tui.present.wording import fix_words
from tui.session import WatchSession

GLYPHS = {"starting": "◷", "ready": "✔", "failed": "✖", "stopped": "■"}
#: The theme's verdict styles (verdict_<style>) and glyphs cover four kinds; the rest read as one of them.
STYLE = {DEAD: "failed", REFUSED: "failed", LOADING: "starting", STALLED: "starting", STOPPING: "stopped", TIMEOUT: "stopped"}


class VerdictHeader(Widget):
    """Two lines: the source (server, host, log, attempt, elapsed, connection), then the verdict;
    a third under FAILED with the hint for a known failure (why, and the fix the F key applies), or
    while starting with a note: what a server quiet after its last line is doing (a silent download),
    else the note of a warning that predicts trouble ("slow, not stuck")."""

    DEFAULT_CSS = """
    VerdictHeader { height: 2; }
    """

    def __init__(self, session: WatchSession, judge: Callable[[], Verdict] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session
        self.judge = judge or session.verdict
        #: The verdict last drawn (tests and the launcher's notifications read it).
        self.verdict: Verdict | None = None
        #: The hints last drawn under a FAILED verdict (the F key applies the first one's fix).
        self.hints: list[Diagnosis] = []
        #: Hints of warnings that predict trouble ("slow, not stuck"), for the attempt they came in.
        self.notes: dict[str, Diagnosis] = {}
        self._notes_attempt = session.info.attempt

    def note_warnings(self, events) -> None:
        """Keep the hint of each warning that predicts trouble (the latest is shown while starting)."""
        if self.session.info.attempt != self._notes_attempt:
            self.notes, self._notes_attempt = {}, self.session.info.attempt
        for event in events:
            if not isinstance(event, WarningFound):
                continue
            try:
                found = knowledge().for_warning(event.text, line=event.line, server=self.session.state.server)
            except ProfileError:
                return
            if found is not None:
                self.notes.pop(found.id, None)
                self.notes[found.id] = found

    def on_mount(self) -> None:
        self.set_interval(1.0, self.refresh)  # the elapsed clock

    def render(self) -> Text:
        palette = self.app.palette  # type: ignore[attr-defined]
        session = self.session
        info = session.info
        current = self.verdict = self.judge()
        width = max(20, self.size.width)

        top = Text(no_wrap=True, overflow="ellipsis", end="")
        top.append(" WATCHTOWER ", palette.style("title"))
        fields = [
            session.state.server or info.server or "server?",
            info.host,
            info.title or info.log_path,
            f"attempt v{info.attempt}",
            f"startup {session.state.attempt} in this log" if session.state.attempt > 1 else "",
            f"elapsed {clock(elapsed, '—')}" if (elapsed := session.startup_elapsed()) is not None else "",
        ]
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
        no_writer = session.writers.no_writer
        if no_writer is not None and not session.writers.known:  # said once, here, until one is found
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
        found = self.hints = session_hints(session) if kind == "failed" else []
        if found:
            apply = bool(getattr(self.app, "can_apply_fix", False))
            rows.extend(hint_rows(found[0], width, palette, self.app.console, apply=apply))
        elif kind == "starting" and (note := self._quiet_note() or self._warning_note(info.attempt)) is not None:
            hint = Text(no_wrap=True, overflow="ellipsis", end="")
            hint.append(f" note (line {note.line}): " if note.line else " note: ", palette.style("dim"))
            hint.append(clean(note.why), palette.style("dim"))
            hint.truncate(width, overflow="ellipsis")
            rows.append(hint)
        if self.styles.height is None or self.styles.height.value != len(rows):
            self.styles.height = len(rows)
        return Text("\n", end="").join(rows)

    def _quiet_note(self) -> Diagnosis | None:
        """Why a startup takes long this time (a restart whose torch.compile cache key changed), else
        what a server quiet after its last line is doing meanwhile (a silent Hub download, a compile)."""
        try:
            kb = knowledge()
        except ProfileError:
            return None
        return next(iter(kb.restart_advice(self.session.state)), None) or kb.for_quiet(self.session.state)

    def _warning_note(self, attempt: int) -> Diagnosis | None:
        """The latest warning's note of this attempt."""
        if not self.notes or self._notes_attempt != attempt:
            return None
        return list(self.notes.values())[-1]


def hint_rows(hint: Diagnosis, width: int, palette: Palette, console: Console, apply: bool = True) -> list[Text]:
    """``hint: why — fix  [F] apply`` on one row, or two where it does not fit; the fix comes
    first when even two rows would cut it, so what to do is never the part an ellipsis hides.
    ``apply``: the app's F key applies the fix (a launch it can relaunch); else (``watch``, ``demo``)
    no key is offered and the fix is said as the change to make by hand."""
    row = Text(end="")
    row.append(" hint: ", palette.style("title"))
    if apply:
        fixes = "; ".join(action.text for action in hint.fix)
        key = "  [F] apply"
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
