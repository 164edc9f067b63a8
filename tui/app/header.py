"""The header: where the log comes from, and one big verdict readable across the desk."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from tui.app.fmt import duration
from tui.app.timeline import origin
from tui.core.lines import clean
from tui.core.state import FAILED, PHASE_TITLES, READY, STOPPED
from tui.core.verdict import DEAD, LOADING, STALLED
from tui.session import WatchSession

GLYPHS = {"starting": "◷", "ready": "✔", "failed": "✖", "stopped": "■"}  # (TIMEOUT: stopped)
#: The judged verdicts of a quiet log, in the header's styles.
JUDGED = {LOADING: "starting", STALLED: "starting"}
QUIET_NOTE = 10.0  # seconds of log silence before the header mentions it


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: str  # starting / ready / failed / stopped (the theme style "verdict_<kind>")
    word: str  # STARTING, READY, FAILED, STOPPED
    detail: str


def verdict(session: WatchSession) -> Verdict:
    """The one-line verdict for ``session``: a pure reading of its state."""
    if session.timed_out:
        return Verdict("stopped", "TIMEOUT", f"after {duration(session.timeout)}, still starting · " + _starting(session))
    override = getattr(session, "verdict_override", None)  # the launcher's verdict (tui.app.relaunch)
    found = override() if override is not None else None
    if found is not None:
        return found
    state = session.state
    judged = session.verdict()  # the log, and what the GPUs and the server's processes say
    if judged.kind == DEAD or (judged.kind == FAILED and state.outcome != FAILED):  # a process gone
        return Verdict("failed", judged.title, clean(judged.detail))
    if judged.kind == STOPPED and state.outcome == READY:
        return Verdict("stopped", "STOPPED", clean(judged.detail))
    if state.outcome == READY:
        ready = state.phase("ready")
        start = origin(state)
        total = None
        at = None if ready is None else (ready.end_ts if ready.end_ts is not None else ready.start_ts)
        if at is not None and start is not None:
            total = at - start  # to the ready marker itself
        if total is None:
            total = startup_elapsed(session)
        return Verdict("ready", "READY", f"in {duration(total)}" + (f" · line {state.ready_line}" if state.ready_line else ""))
    if state.outcome == FAILED:
        error = state.first_error
        if error is not None:
            where = " · ".join(p for p in (error.rank or "", f"line {error.line}") if p)
            return Verdict("failed", "FAILED", f"{where} · {error.title}")
        return Verdict("failed", "FAILED", state.stop_reason or _exit_words(session) or "the server died")
    if state.outcome == STOPPED:
        return Verdict("stopped", "STOPPED", state.stop_reason or "the server shut down after ready")
    if session.exit is not None:
        return Verdict("failed", "FAILED", _exit_words(session))
    if judged.kind in JUDGED:  # quiet: still loading, or stalled?
        return Verdict(JUDGED[judged.kind], judged.title, clean(judged.detail))
    return Verdict("starting", "STARTING", _starting(session))


def _starting(session: WatchSession) -> str:
    """Where a startup that is still undecided is."""
    state = session.state
    phase = state.current_phase
    if phase is None and not state.lines:
        return f"waiting for the log ({session.waiting or 'no log output yet'})"
    parts = []
    if phase is not None:
        parts.append(PHASE_TITLES.get(phase.name, phase.name))
        if phase.progress is not None:
            parts.append(f"{phase.progress:.0%}")
        if phase.detail:
            parts.append(phase.detail)
    quiet = session.quiet_for()
    if quiet is not None and quiet >= QUIET_NOTE:
        parts.append(f"log quiet for {duration(quiet)}")
    if not parts:  # lines, but no phase begun: say what was read, not that reading goes on
        parts.append(f"{state.lines:,} lines read, no startup phase yet")
    return " · ".join(parts)


def startup_elapsed(session: WatchSession) -> float | None:
    """Time since the startup began, in the log's own time (right for a log read after the
    fact too); the watcher's own clock before the log has given a timestamp."""
    start, now = origin(session.state), session.log_now()
    if start is not None and now is not None:
        return max(0.0, now - start)
    return session.elapsed()


def _exit_words(session: WatchSession) -> str:
    exit_ = session.exit
    if exit_ is None:
        return ""
    if exit_.signal is not None:
        return f"process killed by signal {exit_.signal}" + (f" ({exit_.detail})" if exit_.detail else "")
    return f"process exited with code {exit_.returncode}" + (f" ({exit_.detail})" if exit_.detail else "")


class VerdictHeader(Widget):
    """Two lines: the source (server, host, log, attempt, elapsed, connection), then the verdict."""

    DEFAULT_CSS = """
    VerdictHeader { height: 2; }
    """

    def __init__(self, session: WatchSession, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session
        #: The verdict last drawn (tests and the launcher's notifications read it).
        self.verdict: Verdict | None = None

    def on_mount(self) -> None:
        self.set_interval(1.0, self.refresh)  # the elapsed clock

    def render(self) -> Text:
        palette = self.app.palette  # type: ignore[attr-defined]
        session = self.session
        info = session.info
        current = self.verdict = verdict(session)
        width = max(20, self.size.width)

        top = Text(no_wrap=True, overflow="ellipsis", end="")
        top.append(" WATCHTOWER ", palette.style("title"))
        fields = [
            session.state.server or info.server or "server?",
            info.host,
            info.title or info.log_path,
            f"attempt v{info.attempt}",
            f"startup {session.state.attempt} in this log" if session.state.attempt > 1 else "",
            f"elapsed {duration(elapsed)}" if (elapsed := startup_elapsed(session)) is not None else "",
        ]
        top.append(" · ".join(f for f in fields if f), palette.style("dim"))
        connection = session.connection
        if connection is not None:
            mark = "●" if connection.state == "connected" else "○"
            words = f"  {mark} {connection.state}"
            if connection.retry_in:
                words += f", retrying in {connection.retry_in:.0f}s"
            if connection.detail and connection.state != "connected":
                words += f": {connection.detail}"
            top.append(words, palette.style("running" if connection.state != "connected" else "done"))
        no_writer = session.writers.no_writer
        if no_writer is not None and not session.writers.known:  # said once, here, until one is found
            top.append(f"  no writer found: {clean(no_writer.detail)}", palette.style("running"))
        for name, value in session.badges.items():
            top.append(f"  {name}: {value}", palette.style("dim"))
        top.truncate(width, overflow="ellipsis")

        style = palette.style(f"verdict_{current.kind}")
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        line.append(f" {GLYPHS.get(current.kind, '')} {current.word} ", style)
        line.append(" " + current.detail, style=palette.style("failed" if current.kind == "failed" else "title"))
        line.truncate(width, overflow="ellipsis")
        return Text("\n", end="").join([top, line])
