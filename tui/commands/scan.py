"""`watchtower scan LOG`: one pass over a finished or growing log; a verdict and a timeline.

Imported at the top: what the search of a big log from its end needs (``bulk.searching``: the
profiles' words, the prefilter). What reads the lines and reports them (the tracker, the hints,
the timeline's words) is imported where it is used: the search forks first and runs while they
load, a tenth of a 300 MB scan (bench/scan.py)."""

from __future__ import annotations

from collections.abc import Sequence

import argparse
import json
import os
import select
import stat
from typing import TYPE_CHECKING

from tui.commands.bulk import read_into, searching
from tui.core.errors import UsageError
from tui.core.profiles import ProfileError, builtin_profiles, load_profile, prefilter_words
from tui.core.scan import Scanner, prefilter
from tui.sources.hs_cache import DatabaseCache, cache_dir

if TYPE_CHECKING:
    from tui.core.hints import Diagnosis, KnowledgeBase
    from tui.core.profiles import Profile
    from tui.core.state import StartupState
    from tui.core.tracker import StartupTracker


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scan", help="one pass over a log: phases, errors, verdict")
    p.add_argument("log", help="the server's log file (a FIFO, or - for stdin, works too)")
    p.add_argument("--server", help="sglang, vllm, or a profile .toml (default: detect)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def open_log(path: str):
    """Open a log for reading (``-``: stdin), or raise UsageError with one clear line.

    A regular file or a FIFO; anything else (a directory, ``/dev/zero``, a socket) is
    refused, its type read with ``fstat`` after an ``O_NONBLOCK`` open that cannot block.
    """
    if path == "-":
        return os.fdopen(os.dup(0), "rb")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            os.close(fd)
            kind = "a directory" if stat.S_ISDIR(mode) else "a device or socket"
            raise UsageError(f"{path}: is {kind}, not a log file")
        if stat.S_ISFIFO(mode):  # read it as cat does: wait for a writer, then until it closes
            # Not a second, blocking open: a writer that came, wrote and left before it would
            # leave that open waiting for ever. poll() on this fd returns once a writer has
            # written or come and gone (Linux reports no hang-up before a first writer).
            waiting = select.poll()
            waiting.register(fd, select.POLLIN)
            waiting.poll()
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except PermissionError:
        raise UsageError(f"{path}: permission denied (cannot read the log)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None


def profile_words(server: str | None) -> tuple[Profile | None, list[str]]:
    """The profile ``--server`` names (None: detect), and the prefilter words that go with it."""
    try:
        profile = load_profile(server) if server else None
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    return profile, prefilter_words([profile] if profile else builtin_profiles())


class WarningHints:
    """A tracker's stand-in for the scanner that notes the hints its warnings call for (first of each).
    The hints are read at the first warning: a log without any does not pay for them."""

    def __init__(self, tracker: StartupTracker) -> None:
        from tui.core.tracker_events import WarningFound

        self.tracker = tracker
        self._hints: KnowledgeBase | None = None
        self.found: dict[str, Diagnosis] = {}
        self._warning = WarningFound  # (imported once here, not at each batch of events: see the module's docstring)

    @property
    def hints(self) -> KnowledgeBase:
        if self._hints is None:
            from tui.core.hints import load_knowledge

            self._hints = load_knowledge()
        return self._hints

    @property
    def needs_every_line(self) -> bool:
        return self.tracker.needs_every_line

    def feed(self, item, at: float | None = None) -> list:
        events = self.tracker.feed(item, at)
        return self._note(events) if events else events

    def feed_rows(self, number: int, offset: int, rows: list[str], at: float | None = None) -> list:
        events = self.tracker.feed_rows(number, offset, rows, at)
        return self._note(events) if events else events

    @property
    def needs_rank_tags(self) -> bool:
        return self.tracker.needs_rank_tags

    def pass_over(self, number: int, text: str | None = None) -> None:
        self.tracker.pass_over(number, text)

    def skip(self, line) -> None:
        self.tracker.skip(line)

    def finish(self) -> list:
        return self._note(self.tracker.finish())

    def _note(self, events: list) -> list:
        for event in events:
            if isinstance(event, self._warning):
                hint = self.hints.for_warning(event.text, line=event.line, server=self.tracker.state.server)
                if hint is not None and hint.id not in self.found:
                    self.found[hint.id] = hint
        return events


def scan_file(path: str, server: str | None = None) -> StartupState:
    return scan_with_hints(path, server)[0]


def scan_with_hints(path: str, server: str | None = None) -> tuple[StartupState, list[Diagnosis]]:
    """The state a pass over ``path`` ends in, and the hints for its errors, then for its warnings.
    A big log's search from its end starts before the tracker is imported and built."""
    profile, words = profile_words(server)
    store = DatabaseCache(cache_dir())
    with open_log(path) as log:
        try:
            with searching(log, prefilter(tuple(words), store)) as helper:
                from tui.core.hint_need import has_user_file, may_diagnose
                from tui.core.tracker import StartupTracker

                if has_user_file():  # a bad hints file of the user's is refused whatever the log holds
                    from tui.core.hints import load_knowledge

                    load_knowledge()
                tracker = StartupTracker(profile)
                observed = WarningHints(tracker)
                scanner = Scanner(observed, words, store)
                read_into(scanner, log, helper)
        except OSError as exc:
            raise UsageError(f"{path}: read failed: {exc.strerror or exc}") from None
    scanner.finish()
    state = tracker.state
    found = []
    if may_diagnose(state):  # (else the hints are never read, nor their module imported)
        from tui.core.hints import load_knowledge

        found = load_knowledge().diagnose(state)
    found += [h for h in observed.found.values() if h.id not in {d.id for d in found} and observed.hints.still_relevant(h, state)]
    return state, found


def exit_status(state: StartupState) -> int:
    """A log's verdict by itself (no process, GPU or health to weigh it with), decided where every
    verdict is: the judging stage."""
    from tui.core.evidence import Evidence, Weighing, decide

    return decide(Weighing(state, Evidence())).exit_status


def to_json(state: StartupState, hints: Sequence[Diagnosis] = ()) -> dict:
    from tui.core.state import overlapping
    from tui.present.records import SCHEMA  # the version `watch --json`'s objects carry too
    from tui.present.startup import profile_json

    return {
        "schema": SCHEMA,
        "server": state.server,
        "outcome": state.outcome,
        "ready_line": state.ready_line,
        "phases": [
            {
                "name": p.name,
                "start_line": p.start_line,
                "end_line": p.end_line,
                "seconds": None if p.seconds is None else round(p.seconds, 3),
                "ranks": len(p.ranks),
                "slowest_rank": p.slowest_rank,
                "overlaps": overlapping(state, p),
            }
            for p in state.phases
        ],
        "errors": [
            {"line": e.line, "kind": e.kind, "message": e.message, "rank": e.rank}
            for e in state.errors
        ],
        "warnings": state.warnings,
        "unparsed": state.unparsed,
        "lines": state.lines,
        "attempts": [a.to_json() for a in state.attempts],
        "root_cause": state.root_cause_json(),
        "hints": [h.to_json() for h in hints],
        "profile": profile_json(state),
    }


def render(path: str, state: StartupState, hints: Sequence[Diagnosis] = ()) -> str:
    from tui.core.hints import hint_lines
    from tui.core.lines import clean
    from tui.core.state import PHASE_TITLES, overlapping
    from tui.core.wording import duration
    from tui.present.startup import profile_lines

    out = [f"{path}: {state.server or 'unknown server'}, {state.lines} lines — {state.outcome.upper()}"]
    if state.attempt > 1:  # several startups in one log: each on a line, the last one's details below
        out.append(f"  {state.attempt} startups in this log; the last one (from line {state.start_line}) is shown")
        for a in state.attempts:
            error = f": {a.first_error}" if a.first_error else ""
            out.append(f"  attempt {a.number}  lines {a.start_line}-{a.end_line}  {a.outcome}  {duration(a.seconds)}{error}")
    if state.phases:
        out.append(f"  {'phase':<13} {'lines':>17} {'took':>8}  {'ranks':>5}  slowest")
        for p in state.phases:
            span = f"{p.start_line}-{p.end_line if p.end_line is not None else '…'}"
            beside = ", ".join(PHASE_TITLES.get(n, n) for n in overlapping(state, p))
            out.append(
                f"  {PHASE_TITLES.get(p.name, p.name):<13} {span:>17} {duration(p.seconds):>8}  "
                f"{len(p.ranks):>5}  {p.slowest_rank or '-'}" + (f"  (beside {beside})" if beside else "")
            )
    same: dict[tuple[str, str], list] = {}  # 8 ranks raising one error: one row naming them
    for e in state.errors:
        same.setdefault((e.kind, e.message), []).append(e)
    for first, *others in same.values():
        ranks = [r for r in dict.fromkeys(e.rank for e in (first, *others)) if r]
        where = f" [{ranks[0]}{f', also {len(ranks) - 1} more rank(s)' if len(ranks) > 1 else ''}]" if ranks else ""
        out.append(f"  error at line {first.line}{where}: {first.title}")
    if state.unparsed:
        out.append(f"  warning: {state.unparsed} line(s) could not be parsed (the first: line {state.first_unparsed})")
    if state.warnings:
        out.append(f"  {state.warnings} warning(s)")
    out += hint_lines(list(hints))
    out += ["  " + line for line in profile_lines(state)]
    return "\n".join(map(clean, out))  # the path, too, reaches the terminal


def run(args: argparse.Namespace) -> int:
    try:
        state, hints = scan_with_hints(args.log, args.server)
        # (blank lines are as empty as no line: an empty log and one of blank lines both read as
        # a server that has written nothing yet, exit 3; text nothing recognises is exit 2)
        if state.server is None and not state.errors and state.last_line is not None:
            raise UsageError(f"{args.log}: not an SGLang, vLLM or TensorRT-LLM log (nothing recognised in {state.lines} lines)")
    except UsageError as exc:
        if args.json:  # a script reading stdout gets one object whatever happens (exit status 2)
            from tui.present.records import SCHEMA

            print(json.dumps({"schema": SCHEMA, "error": str(exc), "log": args.log}))
        raise
    print(json.dumps(to_json(state, hints)) if args.json else render(args.log, state, hints))
    return exit_status(state)
