"""The tracker's events in words, one line each: what `watch --plain` and `run --plain` print.

Repeats are folded (the same error from another rank is named once, in the verdict),
progress is throttled, and warnings past the first few are counted, not shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, assert_never

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
    SmokeAnswered,
    Stopped,
    TrackerEvent,
    WarningFound,
    WriterGone,
    WritersFound,
)
from tui.core.hints import Diagnosis, hint_lines, load_knowledge
from tui.core.counting import CountEstimate
from tui.core.lines import clean
from tui.core.state import PHASE_TITLES, ErrorReport, StartupState
from tui.core.verdict import EXIT_KINDS, log_error
from tui.core.wording import duration
from tui.core.writers import WriterState, describe
from tui.present.records import Said
from tui.present.wording import gone_words
from tui.session.judging import NoteFound

#: A phase's progress is printed at most this often.
PROGRESS_EVERY_S = 3.0
#: Warnings printed one by one; later ones are only counted.
MAX_WARNINGS_SHOWN = 20
#: Helpers' ends printed one by one; later ones are only counted.
HELPERS_SAID = 3
#: Lines of a traceback shown with the error.
BLOCK_TAIL = 5


def title(phase: str) -> str:
    return PHASE_TITLES.get(phase, phase)


class EventWords:
    """The tracker's events in words, one line each, through ``say``: a :class:`Said` each, its
    words for the plain presenter and its fields for the JSON one (``tui.present.records``)."""

    def __init__(self, say: Callable[[Said], None], state: Callable[[], StartupState],
                 health_url: str | None = None, count: Callable[[], CountEstimate | None] | None = None) -> None:
        self.say = say
        self.state = state
        self.count = count  # the running phase's bar count and time left (graph capture), where known
        self.health_url = health_url  # --health: the log's ready line is only half of ready
        self.progress_at: dict[str, float] = {}
        self.warnings = 0  # every WarningFound received, shown or not
        self.helpers_ended = 0  # helpers' ends received, said or not
        self.printed: dict[tuple[str, str], list[ErrorReport]] = {}  # (kind, message) -> errors
        self.messages: dict[int, str] = {}  # error id -> message printed
        load_knowledge()  # a bad hints file is refused now, in one line (the session diagnoses with it)

    def show(self, event: TrackerEvent | NoteFound) -> None:
        match event:
            case ServerDetected():
                self.say(Said("server", f"server: {event.server} (line {event.line})", line=event.line,
                              fields={"server": event.server}))
            case PhaseStarted():
                self.say(Said("phase_started", f"{title(event.phase)} started (line {event.line})", line=event.line,
                              fields={"phase": event.phase, "title": title(event.phase), "log_ts": event.ts}))
            case PhaseProgress():
                self.progress(event)
            case PhaseEnded():
                self.phase_ended(event)
            case Ready() if self.health_url:  # READY is said once the URL answers too
                self.say(Said("ready_marker", f"ready marker (line {event.line}) after {duration(event.seconds)} of "
                              f"log time; waiting for {self.health_url} to answer", line=event.line,
                              fields={"seconds": event.seconds, "log_ts": event.ts, "health": self.health_url}))
            case Ready():
                self.say(Said("ready", f"READY (line {event.line}): the server is up after {duration(event.seconds)} "
                              "of log time", line=event.line, fields={"seconds": event.seconds, "log_ts": event.ts}))
            case Stopped():
                self.say(Said("stopped", f"stopped (line {event.line}): {event.text}", line=event.line,
                              fields={"message": event.text}))
            case NewStartup():
                self.new_startup(event)
            case WarningFound():
                self.warning(event)
            case ErrorFound():
                self.error(event.error)
            case NoteFound():  # a warning's hint, diagnosed by the judging stage (once per attempt)
                self.say(hint_said(event.hint))
            case _:
                assert_never(event)

    def phase_ended(self, event: PhaseEnded) -> None:
        start = event.start_line  # (the event's own: the state may be a later startup's by now)
        span = f"lines {start}-{event.line}" if start is not None else f"line {event.line}"
        ranks = f", slowest {event.slowest_rank} of {event.ranks} ranks" if event.ranks > 1 else ""
        self.say(Said("phase_ended", f"{title(event.phase)} done in {duration(event.seconds)} ({span}{ranks})",
                      line=event.line, fields={
                          "phase": event.phase, "title": title(event.phase), "seconds": event.seconds,
                          "start_line": start, "end_line": event.line,
                          "ranks": event.ranks, "slowest_rank": event.slowest_rank, "log_ts": event.ts}))

    def ready_marker(self, event: Ready, health_url: str | None = None) -> None:
        """``--smoke``: the log's ready line is only the marker — READY once one completion answered."""
        then = f"{health_url} to answer, then " if health_url else ""
        self.say(Said("ready_marker", f"ready marker (line {event.line}) after {duration(event.seconds)} of log time; "
                      f"--smoke: waiting for {then}one completion", line=event.line,
                      fields={"seconds": event.seconds, "log_ts": event.ts, "smoke": True}))

    def smoke(self, event: SmokeAnswered) -> None:
        """``--smoke``'s one completion: the time to the first token, or why it failed."""
        fields = {"url": event.url, "ok": event.ok, "status": event.status, "model": event.model,
                  "ttft_s": None if event.ttft is None else round(event.ttft, 3), "detail": event.detail}
        if event.ok:
            self.say(Said("smoke", f"smoke test: {event.model} answered {event.url}/v1/completions in "
                          f"{event.ttft:.2f} s (time to the first token)", fields=fields))
        else:
            self.say(Said("smoke", f"smoke test FAILED: {clean(event.detail)} ({event.url})", fields=fields))

    def restarted(self) -> None:
        self.progress_at.clear()

    def new_startup(self, event: NewStartup) -> None:
        before = event.previous
        error = f", {before.first_error}" if before.first_error else ""
        self.say(Said("new_startup", f"new startup at line {event.line} (attempt {event.attempt} in this log); "
                      f"attempt {before.number} (lines {before.start_line}-{before.end_line}): {before.outcome}{error}",
                      line=event.line, fields={"attempt": event.attempt, "previous": {
                          "attempt": before.number, "start_line": before.start_line, "end_line": before.end_line,
                          "outcome": before.outcome, "first_error": before.first_error}}))
        self.restarted()
        self.printed.clear()  # the same error in this attempt is news again
        self.warnings = 0

    def process(self, event: WritersFound | WriterGone | NoWriter, seen: set[int], writers: WriterState) -> None:
        """The processes behind the log: each the startup cannot do without once as it appears
        (``seen``), each one that ends; a helper (a compiler, a probe) only as it ends, the first
        few one by one, the others counted (the report and the dashboard's panel count them)."""
        if isinstance(event, WritersFound):
            for process in event.processes:
                if process.pid in seen or not writers.essential(process):
                    continue
                seen.add(process.pid)
                rank = f" [{process.rank}]" if process.rank else ""
                how = "writes the log" if process.writes_log else f"child of {process.ppid}"
                role = "server" if process.role == "main" else process.role if process.role != "child" else "rank"
                self.say(Said("writer_found", f"{role}{rank}: {describe(process)}, {how}",
                              fields=process_fields(process, event.host)))
        elif isinstance(event, WriterGone):
            process = event.process
            how = gone_words(event, writers.main_pid, log_error(self.state()))
            fields = {**process_fields(process, event.host), "main": event.main, "how": how,
                      "returncode": event.returncode, "signal": event.signal}
            if event.main or writers.essential(process):
                rank = f" [{process.rank}]" if process.rank else ""
                self.say(Said("writer_gone", f"gone: {process.role}{rank} {describe(process)}, {how}", fields=fields))
                return
            self.helpers_ended += 1
            if self.helpers_ended <= HELPERS_SAID:
                self.say(Said("helper_ended", f"helper ended: {describe(process)}, {how} (a helper of the server: no failure)",
                              fields={**fields, "role": "helper"}))
            elif self.helpers_ended == HELPERS_SAID + 1:
                self.say(Said("note", "more helpers ended: counted, not shown (the report lists them)"))
        else:
            self.say(Said("no_writer", f"no writer found: {clean(event.detail)}; judging by the log and the GPUs alone",
                          fields={"host": event.host, "reason": str(event.reason), "detail": event.detail}))

    def progress(self, event: PhaseProgress) -> None:
        now = time.monotonic()
        last = self.progress_at.get(event.phase)
        if last is not None and now - last < PROGRESS_EVERY_S:
            return
        self.progress_at[event.phase] = now
        pct = "" if event.fraction is None else f"{event.fraction * 100:.0f}% "
        count = self.count() if self.count is not None else None
        if count is not None and count.phase != event.phase:
            count = None
        pace = f" · {count.pace_words()}" if count is not None else ""
        self.say(Said("progress", f"{title(event.phase)} {pct}{event.detail}".rstrip() + pace, line=event.line,
                      fields={"phase": event.phase, "fraction": event.fraction, "detail": event.detail,
                              **({"count": count.to_json()} if count is not None else {})}))

    def warning(self, event: WarningFound) -> None:
        if isinstance(event, LineUnparsed):
            # always shown: a line Watchtower did not understand
            self.say(Said("unparsed", f"warning: {event.text}", line=event.line, fields={"message": event.text}))
            return
        self.warnings += 1
        if self.warnings <= MAX_WARNINGS_SHOWN:
            self.say(Said("warning", f"warning (line {event.line}): {event.text}", line=event.line,
                          fields={"message": event.text}))
        elif self.warnings == MAX_WARNINGS_SHOWN + 1:
            self.say(Said("note", "more warnings: counted, not shown"))

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
        tail = [(n, text.rstrip()[:300]) for n, text in error.block[-BLOCK_TAIL:]] if len(error.block) > 1 else []
        fields = error_fields(error)
        self.say(Said("error", f"{cause}: line {error.line}{rank}: {error.message}", line=error.line,
                      fields={**fields, "cause_now": previous is not None, "block_tail": [t for _, t in tail]}))
        for number, text in tail:
            self.say(Said("", text, "    | ", line=number))  # the plain words only: the JSON has them in block_tail

    def also_on(self, error: ErrorReport) -> list[str]:
        """Other ranks that raised the same error."""
        same = self.printed.get((error.kind, error.message), [])
        return list(dict.fromkeys(e.rank for e in same if e.rank and e.rank != error.rank))

    def totals(self) -> str:
        """What was counted and not shown, for the last line ('' when everything was shown)."""
        if self.warnings > MAX_WARNINGS_SHOWN:
            return f"{self.warnings} warnings in all ({MAX_WARNINGS_SHOWN} shown)"
        return ""


def process_fields(process: Any, host: str) -> dict[str, Any]:
    """A writer process, as the JSON output names it."""
    return {"pid": process.pid, "ppid": process.ppid, "rank": process.rank, "role": process.role,
            "command": describe(process), "writes_log": process.writes_log, "host": host}


def error_fields(error: ErrorReport) -> dict[str, Any]:
    """An error, as the JSON output names it (``scan --json``'s names)."""
    return {"kind": error.kind, "message": error.message, "rank": error.rank, "fatal": error.fatal,
            "secondary": error.secondary, "category": error.category, "end_line": error.end_line}


def hint_said(hint: Diagnosis, indent: str = "  ") -> Said:
    """A diagnosis hint: ``hint: why — fix`` and its link (the plain words), its parts (the JSON)."""
    return Said("hint", "\n".join(hint_lines([hint], indent="")), indent, line=hint.line,
                fields={**hint.to_json(), "warning": hint.warning})
