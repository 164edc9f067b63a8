"""The plain-text report (`w`): verdict, timeline, errors with their tracebacks, GPUs."""

from __future__ import annotations

import time

from tui.core.hints import hint_lines
from tui.core.state import PHASE_TITLES, PHASES, shown, skipped
from tui.core.verdict import Verdict, log_error
from tui.core.wording import clock, plural
from tui.present.wording import STARTUPS_SHOWN, gib, process_rows, summary_line
from tui.session import WatchSession

#: Lines of one error block a report holds at most (its head and tail beyond this).
REPORT_BLOCK_LINES = 20_000


def build_report(session: WatchSession, verdict: Verdict | None = None, now: float | None = None) -> str:
    """The report for ``session`` with ``verdict`` (default: the log's own)."""
    state = session.state
    info = session.info
    current = verdict or session.verdict()
    out = [
        "Watchtower report",
        f"written   {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(now or time.time()))}",
        f"server    {state.server or info.server or 'unknown'}",
        f"host      {info.host}",
        f"GPUs      {session.gpus.kind or 'none'}",
        f"log       {info.log_path or info.title}",
        f"attempt   v{info.attempt}",
        f"verdict   {current.word} — {current.detail}",
        f"lines     {state.lines} ({plural(state.warnings, 'warning')})",
    ]
    found = session.judging.evaluate().hints  # the failure's hints, as the judging stage diagnoses them
    if found:
        out += ["", "Hints", *hint_lines(found)]
    preflight = getattr(info, "preflight", None)
    if preflight is not None:
        out += ["", preflight.summary.capitalize(), *(f"  {c.line}" for c in preflight.checks)]
    out.append("")
    if state.attempt > 1:  # several startups in this log: the phases and errors below are the last one's
        *earlier, latest = state.attempts
        out.append(f"Startups in this log ({state.attempt})")
        out += [f"  {summary_line(a)}" for a in earlier[-STARTUPS_SHOWN :]]
        out += [f"  {summary_line(latest, current=True)}", ""]
    writers = session.process.writers
    if writers.known or writers.gone:
        out.append("Server processes")
        out += [f"  {line}" for line, _ in process_rows(writers, failure=log_error(state))]
        out.append("")
    elif writers.no_writer is not None:
        out += [f"Server processes: no writer found ({writers.no_writer.detail})", ""]
    out.append("Phases")
    for name in shown(state, PHASES):
        phase = state.phase(name)
        title = PHASE_TITLES[name]
        if phase is None:
            out.append(f"  {title:<12} {'skipped' if skipped(state, name) else 'not reached'}")
            continue
        seconds = clock(phase.seconds, "—") if phase.done else "running"
        where = f"lines {phase.start_line}–{phase.end_line}" if phase.end_line else f"from line {phase.start_line}"
        slow = f", slowest {phase.slowest_rank}" if phase.slowest_rank and len(phase.ranks) > 1 else ""
        ranks = f", {plural(len(phase.ranks), 'rank')}" if phase.ranks else ""
        out.append(f"  {title:<12} {seconds:>8}  {where}{ranks}{slow}")
    if session.times.silences:
        total = sum(s.end_ts - s.start_ts for s in session.times.silences)
        out.append(f"  log silent for {clock(total, '—')} in {len(session.times.silences)} stretches of 5 s or more")
    out.append("")
    from tui.present.startup import profile_lines

    profile = profile_lines(state, session.weight.facts())
    if profile:  # after READY: where the time went, and what would make the next start faster
        out += [profile[0][:1].upper() + profile[0][1:], *profile[1:], ""]
    out.append(f"Errors ({len(state.errors)})")
    for error in state.errors:
        rank = f" rank {error.rank}" if error.rank else ""
        out.append(f"  line {error.line}{rank}: {error.title}")
        block = session.block_text(error, REPORT_BLOCK_LINES)
        for number, text in block.numbered():
            out.append(f"    {number:>7} | {text}" if number is not None else f"    {'':>7} {text}")
        if block.note():
            out.append(f"    ({block.note()})")
        out.append("")
    sample = session.gpus.latest
    out.append("GPUs (simulated: made-up figures, not this machine's)" if sample is not None and sample.simulated
               else "GPUs")
    if session.gpus.unavailable:
        out.append(f"  unavailable: {session.gpus.unavailable}")
    if sample is None:
        out.append("  no sample")
    else:
        for gpu in sample.gpus:
            state_text = gpu.error or (
                f"{gib(gpu.memory_used)}/{gib(gpu.memory_total)} GiB, util {gpu.utilization}%, "
                f"{gpu.temperature}°C, {gpu.power_w} W"
            )
            out.append(f"  GPU {gpu.index}: {state_text}")
    return "\n".join(out) + "\n"
