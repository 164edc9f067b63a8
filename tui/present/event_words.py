"""The tracker's events in words, one line each: what `watch --plain` and `run --plain` print.

Repeats are folded (the same error from another rank is named once, in the verdict),
progress is throttled, and warnings past the first few are counted, not shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tui.core.events import (
    ErrorFound,
    LineUnparsed,
    NewStartup,
    NoWriter,
    PhaseEnded,
    PhaseProgress,
    PhaseStarted,
    Ready,
    ServerDetected,
    Stopped,
    WarningFound,
    WriterGone,
    WritersFound,
)
from tui.core.hints import hint_lines, load_knowledge
from tui.core.lines import clean
from tui.core.state import PHASE_TITLES, ErrorReport, StartupState
from tui.core.verdict import EXIT_KINDS, log_error
from tui.core.wording import duration
from tui.core.writers import describe
from tui.present.wording import gone_words

#: A phase's progress is printed at most this often.
PROGRESS_EVERY_S = 3.0
#: Warnings printed one by one; later ones are only counted.
MAX_WARNINGS_SHOWN = 20
#: Lines of a traceback shown with the error.
BLOCK_TAIL = 5


def title(phase: str) -> str:
    return PHASE_TITLES.get(phase, phase)


class EventWords:
    """The tracker's events in words, one line each, through ``say(text, indent)``."""

    def __init__(self, say: Callable[[str, str], None], state: Callable[[], StartupState],
                 health_url: str | None = None) -> None:
        self.say = say
        self.state = state
        self.health_url = health_url  # --health: the log's ready line is only half of ready
        self.progress_at: dict[str, float] = {}
        self.warnings = 0  # every WarningFound received, shown or not
        self.printed: dict[tuple[str, str], list[ErrorReport]] = {}  # (kind, message) -> errors
        self.messages: dict[int, str] = {}  # error id -> message printed
        self.hints = load_knowledge()
        self.hinted: set[str] = set()  # warning hints already printed

    def show(self, event: Any) -> None:
        if isinstance(event, ServerDetected):
            self.say(f"server: {event.server} (line {event.line})", "")
        elif isinstance(event, PhaseStarted):
            self.say(f"{title(event.phase)} started (line {event.line})", "")
        elif isinstance(event, PhaseProgress):
            self.progress(event)
        elif isinstance(event, PhaseEnded):
            phase = self.state().phase(event.phase)
            span = f"lines {phase.start_line}-{event.line}" if phase else f"line {event.line}"
            ranks = f", slowest {event.slowest_rank} of {event.ranks} ranks" if event.ranks > 1 else ""
            self.say(f"{title(event.phase)} done in {duration(event.seconds)} ({span}{ranks})", "")
        elif isinstance(event, Ready) and self.health_url:  # READY is said once the URL answers too
            self.say(f"ready marker (line {event.line}) after {duration(event.seconds)} of log time; "
                     f"waiting for {self.health_url} to answer", "")
        elif isinstance(event, Ready):
            self.say(f"READY (line {event.line}): the server is up after {duration(event.seconds)} of log time", "")
        elif isinstance(event, Stopped):
            self.say(f"stopped (line {event.line}): {event.text}", "")
        elif isinstance(event, NewStartup):
            self.new_startup(event)
        elif isinstance(event, WarningFound):
            self.warning(event)
        elif isinstance(event, ErrorFound):
            self.error(event.error)

    def restarted(self) -> None:
        self.progress_at.clear()

    def new_startup(self, event: NewStartup) -> None:
        before = event.previous
        error = f", {before.first_error}" if before.first_error else ""
        self.say(f"new startup at line {event.line} (attempt {event.attempt} in this log); "
                 f"attempt {before.number} (lines {before.start_line}-{before.end_line}): {before.outcome}{error}", "")
        self.restarted()
        self.printed.clear()  # the same error in this attempt is news again
        self.warnings = 0

    def process(self, event: WritersFound | WriterGone | NoWriter, seen: set[int], main_pid: int | None = None) -> None:
        """The processes behind the log: each once as it appears (``seen``), each one that ends."""
        if isinstance(event, WritersFound):
            for process in event.processes:
                if process.pid in seen:
                    continue
                seen.add(process.pid)
                rank = f" [{process.rank}]" if process.rank else ""
                how = "writes the log" if process.writes_log else f"child of {process.ppid}"
                self.say(f"{'server' if process.role == 'main' else process.role}{rank}: {describe(process)}, {how}", "")
        elif isinstance(event, WriterGone):
            process = event.process
            rank = f" [{process.rank}]" if process.rank else ""
            how = gone_words(event, main_pid, log_error(self.state()))
            self.say(f"gone: {process.role}{rank} {describe(process)}, {how}", "")
        else:
            self.say(f"no writer found: {clean(event.detail)}; judging by the log and the GPUs alone", "")

    def progress(self, event: PhaseProgress) -> None:
        now = time.monotonic()
        last = self.progress_at.get(event.phase)
        if last is not None and now - last < PROGRESS_EVERY_S:
            return
        self.progress_at[event.phase] = now
        pct = "" if event.fraction is None else f"{event.fraction * 100:.0f}% "
        self.say(f"{title(event.phase)} {pct}{event.detail}".rstrip(), "")

    def warning(self, event: WarningFound) -> None:
        if isinstance(event, LineUnparsed):
            self.say(f"warning: {event.text}", "")  # always shown: a line Watchtower did not understand
            return
        self.warnings += 1
        if self.warnings <= MAX_WARNINGS_SHOWN:
            self.say(f"warning (line {event.line}): {event.text}", "")
        elif self.warnings == MAX_WARNINGS_SHOWN + 1:
            self.say("more warnings: counted, not shown", "")
        hint = self.hints.for_warning(event.text, line=event.line, server=self.state().server)
        if hint is not None and hint.id not in self.hinted:
            self.hinted.add(hint.id)
            self.say("\n".join(hint_lines([hint], indent="")), "  ")

    def error(self, error: ErrorReport) -> None:
        if error.kind in EXIT_KINDS:
            return  # made up from the process's exit: the verdict says it
        key = (error.kind, error.message)
        previous = self.messages.get(id(error))
        if previous == error.message:
            return
        self.messages[id(error)] = error.message
        same = self.printed.setdefault(key, [])
        same.append(error)
        if len(same) > 1:
            return  # the same error from another rank: named in the verdict
        rank = f" [{error.rank}]" if error.rank else ""
        what = "note" if error.secondary else "error" if error.fatal else "not fatal"
        cause = "cause now" if previous is not None else what
        self.say(f"{cause}: line {error.line}{rank}: {error.message}", "")
        tail = [text for _, text in error.block[-BLOCK_TAIL:]] if len(error.block) > 1 else []
        for text in tail:
            self.say(text.rstrip()[:300], "    | ")

    def also_on(self, error: ErrorReport) -> list[str]:
        """Other ranks that raised the same error."""
        same = self.printed.get((error.kind, error.message), [])
        return list(dict.fromkeys(e.rank for e in same if e.rank and e.rank != error.rank))

    def totals(self) -> str:
        """What was counted and not shown, for the last line ('' when everything was shown)."""
        if self.warnings > MAX_WARNINGS_SHOWN:
            return f"{self.warnings} warnings in all ({MAX_WARNINGS_SHOWN} shown)"
        return ""
