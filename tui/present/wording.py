"""Small formatting helpers shared by the widgets and the plain-text report (times: ``tui.core.wording``)."""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence

from tui.core.cmdline import Action
from tui.core.lines import clean
from tui.core.events import WriterGone
from tui.core.state import FAILED, INTERRUPTED, READY, STOPPED, AttemptSummary, ErrorReport
from tui.core.verdict import ProcessStatus
from tui.core.wording import clock, plural
from tui.core.writers import Helpers, WriterState

GIB = float(1 << 30)
SPARKS = "▁▂▃▄▅▆▇█"


def gib(value: int | None, digits: int = 1) -> str:
    return "N/A" if value is None else f"{value / GIB:.{digits}f}"


def rank_key(rank: str) -> tuple:
    """Natural order for rank tags: TP2 before TP10, DP0 TP7 before DP1 TP0."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", rank))


def sparkline(values: list[float], top: float | None, width: int) -> str:
    """The last ``width`` values as block characters, scaled to ``top`` (or their max)."""
    values = values[-width:]
    if not values:
        return ""
    ceiling = top or max((v for v in values if v == v), default=0.0) or 1.0
    out = []
    for value in values:
        if value != value:  # NaN: unknown
            out.append(" ")
            continue
        level = min(len(SPARKS) - 1, max(0, int(value / ceiling * (len(SPARKS) - 1) + 0.5)))
        out.append(SPARKS[level])
    return "".join(out)


#: Earlier startups of one log listed (a crash-looping service leaves hundreds; the latest count).
STARTUPS_SHOWN = 5
#: Processes of the server listed (a TP16 server has 20-odd); the rest are counted.
PROCESSES_SHOWN = 8
STARTUP_GLYPHS: dict[str, str] = {READY: "✓", FAILED: "✗", STOPPED: "■", INTERRUPTED: "↯"}


def summary_line(attempt: AttemptSummary, current: bool = False) -> str:
    """``attempt 1  lines 1-7  ✓ ready 0:31`` / ``attempt 2  lines 8-…  ✗ failed 0:10  ValueError: boom``."""
    end = "…" if current else str(attempt.end_line)
    glyph = STARTUP_GLYPHS.get(attempt.outcome, "…")
    line = f"attempt {attempt.number}  lines {attempt.start_line}-{end}  {glyph} {attempt.outcome}"
    line += f" {clock(attempt.seconds, unknown='—')}"
    if attempt.first_error:
        line += f"  {clean(attempt.first_error)}"
    return line + ("  ← current" if current else "")


def fix_words(actions: Sequence[Action]) -> str:
    """A hint's fix as the change to make by hand, where no key applies it (``watch``, ``demo``):
    ``fix: set SGLANG_…=1 in the server's environment, then restart it``."""
    words = []
    for action in actions:
        if action.verb == "set_env":
            words.append(f"set {action.target}={action.value} in the server's environment")
        elif action.verb == "set_flag":
            words.append(f"add {action.target} {action.value}".rstrip() + " to its command line")
        elif action.verb == "drop_flag":
            words.append(f"remove {action.target} from its command line")
        elif action.verb == "free_port":
            words.append(f"stop what listens on port {action.target}")
        elif action.verb == "kill_gpu_holders":
            words.append("stop the processes that hold GPU memory")
        else:
            words.append(action.text)
    if not words:
        return ""
    edits = any(a.verb in ("set_env", "set_flag", "drop_flag") for a in actions)
    return "fix: " + "; ".join(words) + (", then restart it" if edits else "")


def gone_words(gone: WriterGone, main_pid: int | None, failure: ErrorReport | None) -> str:
    """How a process of the server ended: ``killed by SIGKILL``; for a child of the main process
    that ended after the log's failure (killed or of unknown status), ``…, after the failure at line
    N: a follow-on of it`` — SGLang's main process kills its ranks once one fails; that SIGKILL is no
    news of its own (and no sign of the OOM killer)."""
    how = ProcessStatus(False, gone.returncode, gone.signal, exit_known=gone.exit_known).exit_text
    killed = not gone.exit_known or gone.signal in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)
    if failure is not None and not gone.main and main_pid is not None and gone.process.ppid == main_pid and killed:
        return f"{how}, after the failure at line {failure.line}: a follow-on of it"
    return how


def process_rows(
    writers: WriterState, shown: int = PROCESSES_SHOWN, failure: ErrorReport | None = None, helpers: bool = False
) -> list[tuple[str, str]]:
    """(text, style) per line: the main process first, then the ranks in order (and the other
    processes the startup cannot do without), the helpers folded into one line (each listed with
    ``helpers``), then the ended ones. A ✗ marks a process whose loss matters, or a helper that
    exited non-zero where the log has an error; a helper's end is no failure."""
    essential = [p for p in writers.processes if writers.essential(p)]
    alive = sorted(essential, key=lambda p: (p.role != "main", p.rank is None, rank_key(p.rank or ""), p.pid))
    rows = []
    for process in alive[:shown]:
        rows.append((f"● {process.pid:>7}  {writers.label(process):<10} {clean(process.command or process.title)}", "done"))
    if len(alive) > shown:
        rows.append((f"  … {len(alive) - shown} more process(es)", "dim"))
    running = [p for p in writers.processes if not writers.essential(p)]
    if running or writers.helpers.ended:
        rows.append((f"· {helper_words(writers.helpers, len(running))}", "dim"))
    if helpers:
        for process in running:
            rows.append((f"  ● {process.pid:>7}  helper     {clean(process.command or process.title)}", "dim"))
        for gone in writers.helpers.recent:
            how = ProcessStatus(False, gone.returncode, gone.signal, exit_known=gone.exit_known).exit_text
            rows.append((f"    {gone.process.pid:>7}  helper     ended, {how}: {clean(gone.process.command)}", "dim"))
    for gone in [g for g in writers.helpers.recent if _helper_failed(g)][-3:] if failure is not None else []:
        how = ProcessStatus(False, gone.returncode, gone.signal, exit_known=True).exit_text
        rows.append((f"✗ {gone.process.pid:>7}  helper     {how}, then the log's error: {clean(gone.process.command)}",
                     "failed"))
    for gone in writers.gone[-3:]:
        process = gone.process
        how = gone_words(gone, writers.main_pid, failure)
        rows.append((f"✗ {process.pid:>7}  {writers.label(process):<10} gone, {how}: {clean(process.command or process.title)}",
                     "failed"))
    return rows


def _helper_failed(gone: WriterGone) -> bool:
    return gone.exit_known and (gone.returncode != 0 or gone.signal is not None)


def helper_words(helpers: Helpers, running: int = 0) -> str:
    """``14 helpers ran · 2 running · 12 ended: all exited 0``: the server's helpers (compilers,
    probes) in one line. An exit status read from a helper nobody waited for yet is said; the
    others (reaped by their parent at once) are honestly unknown."""
    total = helpers.ended + running
    parts = [f"{plural(total, 'helper')} ran"]
    if running:
        parts.append(f"{running} running")
    if helpers.ended:
        if helpers.exited_zero == helpers.ended:
            how = "all exited 0"
        else:
            how = ", ".join(text for count, text in (
                (helpers.exited_zero, f"{helpers.exited_zero} exited 0"),
                (helpers.failed, f"{helpers.failed} failed"),
                (helpers.unknown, f"{helpers.unknown} exit status unknown (not Watchtower's children)"),
            ) if count)
        parts.append(f"{helpers.ended} ended: {how}")
    return " · ".join(parts)
