"""The phase tracker: log lines in, ``StartupState`` and tracker events out.

Pure Python, no I/O. The server's knowledge comes from its profile (TOML); this
module only knows the shape of a startup: phases begin and end per rank (a phase
is over when the last rank that began it has ended it, and the slowest rank is
named), tqdm bars advance the phase they belong to, the draft model's repeats are
told apart by count, ready is one marker, and errors come from the classifier.

``StartupTracker`` reads each line and keeps the errors; it holds the parts that own the rest,
each with its own state and its own reset: ``Detection`` (which server, by evidence),
``Attempts`` (many startups in one log), ``PhaseBook`` (the phases per rank), ``Ranks`` and
``Timestamps``.
"""

from __future__ import annotations

import bisect
import json
import re
import signal as signals
from collections.abc import Iterator, Mapping

from tui.core.attempts import Attempts
from tui.core.carriers import label_end, may_have_label, service
from tui.core.classifier import ERROR_WORDS, JOINED_GAP, Classifier
from tui.core.detection import Detection
from tui.core.tracker_events import (
    ErrorFound,
    LineUnparsed,
    NewStartup,
    PhaseEnded,
    ServerDetected,
    Stopped,
    TrackerEvent,
    WarningFound,
)
from tui.core.lines import Line, Progress
from tui.core.linear import recompile
from tui.core.phases import PhaseBook
from tui.core.quicktest import Memo
from tui.core.profiles import OWN_LINE_IDENTITY, SCRIPT_IDENTITY, Profile, QuickTest, any_of, builtin_profiles, generic_profile
from tui.core.ranks import MAIN, Ranks
from tui.core.state import (
    FAILED,
    PHASES,
    READY,
    STARTING,
    STOPPED,
    ErrorReport,
    StartupState,
)
from tui.core.timestamps import Timestamps

#: Errors kept in ``state.errors``; later ones are only counted (a serving log may hold millions).
MAX_ERRORS = 1000
# JSON log lines (vLLM's --logging-config with a JSON formatter, SGLang's SGLANG_LOGGING_CONFIG_PATH):
# the fields that hold the message, its traceback, the level, the process and the time (logging's
# asctime, read as a header's time is; one in neither that format nor the profile's is no time).
_JSON_MESSAGE = ("message", "msg")
_JSON_EXTRA = ("exc_info", "exc_text", "exception", "stack_info")
_JSON_LEVEL = ("levelname", "level", "severity")
_JSON_PROCESS = ("processName", "process_name")
_JSON_TIME = ("asctime",)


def json_record(text: str) -> tuple[list[str], dict[str, str | None]] | None:
    """A JSON log line as the lines of its message (then its traceback) and header fields (``lvl``,
    ``proc``, ``ts``); None for a line that is no JSON object with a message."""
    stripped = text.strip()
    if not stripped.endswith("}"):
        return None
    try:
        data = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    message = next((v for k in _JSON_MESSAGE if isinstance(v := data.get(k), str)), None)
    if message is None:
        return None
    lines = message.split("\n")
    for key in _JSON_EXTRA:
        extra = data.get(key)
        if isinstance(extra, str) and extra:
            lines += extra.split("\n")
    level = next((v.upper() for k in _JSON_LEVEL if isinstance(v := data.get(k), str)), None)
    proc = next((v for k in _JSON_PROCESS if isinstance(v := data.get(k), str)), None)
    if proc == "MainProcess":
        proc = None
    ts = next((v for k in _JSON_TIME if isinstance(v := data.get(k), str)), None)
    return lines, {"msg": message, "lvl": level, "proc": proc, "ts": ts, "ranks": None, "pid": None}


class _Said:
    """What a message says whatever the tracker's state, under one profile: asked once and kept
    (``Memo``), since the ranks print one message after another and every startup the same ones
    (on a startup-dense log 7 lines in 8 are the last one's message again, and each answer is a
    call or two less)."""

    __slots__ = ("msg", "begins", "quiet", "maybe")

    def __init__(self, msg: str, begins: bool, quiet: bool) -> None:
        self.msg = msg
        self.begins = begins  # a startup marker (``Attempts.may_begin``)
        self.quiet = quiet  # nothing in its text can match (the text's part of ``_message``'s first test)
        self.maybe: tuple[int, ...] | None = None  # ``PhaseBook.may_mark``'s answer, once asked


#: Lines that may explain a failure to come (``Signature.cause``) held at once, the first of each kind.
MAX_CAUSES = 16

def _quick_test(profile: Profile) -> QuickTest | None:
    """One first test for a whole line: could any signature, warning or marker match it?"""
    patterns = [s.regex for s in profile.signatures] + list(profile.warnings)
    patterns += [*profile.ready, *profile.close, *profile.stop, *profile.startup, *_identity_patterns(profile)]
    for spec in profile.phases:
        patterns += [*spec.begin, *spec.end, *spec.step, *spec.implicit_begin, *spec.progress]
    return any_of(patterns)


def _header(profile: Profile, text: str) -> tuple[str, dict[str, str | None] | None]:
    """A line's message and its prefix's groups (None: no header of the profile's matched)."""
    match = _matched(profile, text)
    if match is None:
        return text, None
    groups = match.groupdict()
    return groups["msg"] or "", groups


def _matched(profile: Profile, text: str) -> re.Match[str] | None:
    """The match of the first of the profile's headers that matches ``text`` (None: none does)."""
    for header in profile.headers:
        match = header.match(text)
        if match is not None:
            return match
    return None


def _identity_patterns(profile: Profile) -> list[re.Pattern[str]]:
    """What a job script says of the run, on lines no phase claims (its ``ray status`` before the
    server starts, the environment it printed), and the figures read all through the log (the
    weights' size): those lines are markers too."""
    return [pattern for key, patterns in profile.identity if key in OWN_LINE_IDENTITY for pattern in patterns]


def _is_bar(text: str) -> bool:
    return "%|" in text or "% Completed" in text


def _one_plain(segments: tuple[str, ...]) -> bool:
    """A line of one segment that is neither a bar nor led by a carrier's label (``srun -l``'s,
    docker compose's): it is matched as it is (``StartupTracker._texts`` would yield it alone) —
    most lines, in a flood."""
    return len(segments) == 1 and not may_have_label(segments[0]) and not _is_bar(segments[0])


# A tqdm bar's end ("… 6/23 [00:06<00:17,  2.41it/s]") with other text glued after it, no
# newline between: a C++ error written while the bar was drawn ("…it/s]terminate called …").
_GLUED = re.compile(r"\[[\d:?]+<[\d:?]+,\s*[^\]]{0,40}\](?=\S)")


def _said(event: TrackerEvent) -> tuple[object, ...] | None:
    """What a warning or error event reported, to tell one reported already when kept lines are
    read again (None: any other event, always said again)."""
    if isinstance(event, WarningFound):
        return ("warning", event.line, event.text)
    if isinstance(event, ErrorFound):
        error = event.error
        return ("error", error.line, error.kind, error.category, error.message)
    return None


class StartupTracker:
    """Feed it lines in order; read ``state``; act on the events ``feed`` returns.

    ``profile=None`` detects the server among the built-in profiles by weighing the
    evidence of the first lines (``Evidence``): the likeliest server is used at once, and
    a definitive marker of another one switches to it, reading the lines so far again.
    Until a server is known (and for good if nothing is recognised) errors are still
    classified. After ``restart()`` or a switch read ``state`` again: it is a new object.
    """

    def __init__(self, profile: Profile | None = None) -> None:
        self._forced = profile
        self._candidates = [profile] if profile is not None else builtin_profiles()
        self._generic = generic_profile()
        self._generic_test = _quick_test(self._generic)
        self.classifier = Classifier(profile or self._generic)
        self._reset()

    def _reset(self) -> None:
        """A new log: nothing learnt about it."""
        self._detection = Detection(self._candidates, settled=self._forced is not None)
        #: the warnings and errors already reported for the lines kept while detecting: a switch that
        #: reads them again reports only what the new profile finds beyond them (a watch counts them)
        self._said_while_detecting: set[tuple[object, ...]] = set()
        #: the docker compose container whose lines are the server's (``vllm-1``), once a line of
        #: one gave evidence of a server; the other services' lines (a router, a web UI) are then
        #: counted but never read as the server's
        self._service: str | None = None
        self._services_seen: set[str] = set()  # compose containers whose lines were read before
        self._evidence = any_of([p for c in self._candidates for p in (*c.identify, *c.detect)])
        self._fresh()

    def _fresh(self) -> None:
        """A new state and everything derived from lines (not what detection has learnt)."""
        self.state = StartupState()
        self.profile: Profile | None = None
        self._announced = False
        self._clock = Timestamps()
        self._ranks = Ranks()
        self._phases: PhaseBook | None = None
        self._attempts: Attempts | None = None
        self._error_ids: set[int] = set()
        self._causes: list[ErrorReport] = []  # lines that explain a failure if one follows (held back)
        self._offset: int | None = None  # stream offset of the line being fed
        self._first_arrived = False  # the startup's first time is an arrival time, not the log's own
        self._said: _Said | None = None  # the last message's answers (``_message``), under this profile
        self._sayings: Memo[str, _Said] = Memo()  # the answers of the messages read, under this profile
        self._marked = 0  # the last line whose markers were read (``PhaseBook.markers``)
        self.classifier.reset()
        self.classifier.set_profile(self._generic)
        self._anything = self._generic_test
        if self._forced is not None:
            self._use(self._forced)

    def _use(self, profile: Profile) -> None:
        """Read the log as ``profile``'s server's from now on."""
        self.profile = profile
        self.state.server = profile.name
        self.state.stall_after = profile.stall_after
        self.classifier.set_profile(profile)
        self._clock = Timestamps(profile.timestamp)
        self._ranks = Ranks(profile)
        self._phases = PhaseBook(profile, self.state, self._ranks)
        self._attempts = Attempts(profile)
        self._anything = _quick_test(profile)
        self._said = None
        self._sayings = Memo()
        # A bar may swallow the next record with no \r in between: find its header inside.
        self._inner_headers = [recompile(h, h.pattern.removeprefix("^")) for h in profile.headers if "ts" in h.groupindex]

    # ------------------------------------------------------------ public API

    @property
    def process_pids(self) -> Mapping[str, str]:
        """The processes the log's prefixes named by pid (``(Worker pid=3893)``): pid -> the name
        last written with it. Each writes a rank's lines: evidence that it is one (``WriterState``)."""
        return self._ranks.pids

    @property
    def needs_every_line(self) -> bool:
        """True while a traceback is open or the server is not yet settled: no line may be skipped
        (every path through the tracker must weigh the same evidence)."""
        return self.classifier.open or not self._detection.done

    def feed(self, item: Line | Progress, at: float | None = None) -> list[TrackerEvent]:
        """One line (or a live ``\\r`` update of the open line); ``at``: when it arrived.

        Never raises: a line the tracker fails on is skipped, counted in ``state.unparsed``
        and reported as a ``LineUnparsed`` warning, so one odd line cannot stop a watch."""
        events: list[TrackerEvent] = []
        try:
            if isinstance(item, Progress):
                if self._phases is not None:
                    last = self._clock.last
                    self._phases.bar_only(item.number, item.text, last if last is not None else at, events)
            elif self._detection.settled:  # (the common case: nothing to weigh, keep or count)
                self._line(item, at, events)
            else:
                self._while_detecting(item, at, events)
        except Exception as exc:  # the boundary: whatever one line does, following goes on
            self._unparsed(item.number, exc, events)
        return events

    def _unparsed(self, number: int, exc: Exception, events: list[TrackerEvent]) -> None:
        """Line ``number`` failed to be read (``exc``): counted, and reported as a ``LineUnparsed`` warning."""
        self.pass_over(number)
        state = self.state
        state.unparsed += 1
        state.warnings += 1
        if state.first_unparsed is None:
            state.first_unparsed = number
        reason = f"{type(exc).__name__}: {exc}"[:200]
        events.append(LineUnparsed(number, f"line {number} could not be parsed ({reason})"))

    def feed_rows(self, number: int, offset: int, rows: list[str], at: float | None = None) -> list[TrackerEvent]:
        """Lines ``number``, ``number + 1``, … from stream ``offset`` on, one a text of ``rows`` as
        ``tui.core.lines.plain_rows`` gives them (each its ``Line``'s one segment, none for an empty
        one): what feeding each as a ``Line`` does, events and all, in one call. Another rank's
        repeat of the line just fed is read by ``_repeats``, not as a line of its own."""
        events: list[TrackerEvent] = []
        feed, count, i = self.feed, len(rows), 0
        while i < count:
            row = rows[i]
            events += feed(Line(number + i, offset, (row,) if row else ()), at)
            offset += len(row) + 1
            i += 1
            said = self._said
            if i < count and said is not None and rows[i].endswith(said.msg):  # (else it repeats nothing)
                taken = self._repeats(row, rows, i, number + i, offset, at, events)
                if taken:
                    offset += sum(map(len, rows[i : i + taken])) + taken
                    i += taken
        return events

    def _repeats(
        self, first: str, rows: list[str], start: int, number: int, offset: int, at: float | None, events: list[TrackerEvent]
    ) -> int:
        """How many of ``rows[start:]`` (line ``number`` on, at stream ``offset``) repeat ``first``, the
        line just fed, with another rank's tag, each read here as feeding it would read it; 0 where
        none does or where a repeat may need more than this (a traceback open, a startup marker, a
        compose service, a line that is also a warning).

        The ranks print each message one after another: on a startup-dense log 7 lines in 8 are
        such repeats. All that differs between them is the rank (and the line), so what is asked of
        the message alone (its header, whether it can match, the classifier's plain answer, which
        phase patterns match it) is asked once, and each line takes only its rank's part: its tag
        counted, and the message's phase actions (``PhaseBook.repeat``), in the order of the lines.
        """
        said, profile = self._said, self.profile
        if (
            said is None or said.begins or profile is None or self._phases is None
            or not self._detection.settled or self._service is not None or self._services_seen
            or self.classifier.open or self._causes
        ):
            return 0
        head = _matched(profile, first)
        if head is None or may_have_label(first) or _is_bar(first) or first[:1] == "{":
            return 0
        groups = head.groupdict()
        if "ranks" not in groups or groups.get("proc") or groups.get("pid") or (groups["msg"] or "") != said.msg:
            return 0
        msg, level = said.msg, groups.get("lvl")
        unheard = self._unheard(said, level, profile)
        if not unheard and (
            (groups.get("ts") is None and level is None)
            or self.classifier.said_plainly(msg, level) is not False
            or self._marked != number - 1
        ):
            # a line the classifier looks at further (or a warning: each line is one) is read as a line
            # of its own, and so is the next line after one whose markers were not read (it may be the
            # first to read them)
            return 0
        others = [name for name in groups if name != "ranks"]
        same, pattern = head.group(*others), head.re
        tags: list[str | None] = []
        for index in range(start, len(rows)):  # the repeats: every group of the same header the same but the rank tag
            row = rows[index]
            if not row.endswith(msg):  # (where the message ends the line, as it does, a first test)
                break
            match = _matched(profile, row)
            if match is None or match.re is not pattern or match.group(*others) != same:
                break
            if may_have_label(row) or _is_bar(row) or row[:1] == "{":
                break
            tags.append(match["ranks"])
        if not tags:
            return 0
        try:
            self._repeat(tags, groups, unheard, rows, start, number, offset, at, events)
        except Exception as exc:  # the boundary ``feed`` keeps, for the lines read here
            self._unparsed(number, exc, events)
        return len(tags)

    def _repeat(
        self, tags: list[str | None], groups: dict[str, str | None], unheard: bool, rows: list[str], start: int,
        number: int, offset: int, at: float | None, events: list[TrackerEvent],
    ) -> None:
        """Lines ``number`` on (``rows[start:]``, at ``offset``), the repeats ``_repeats`` found, tagged
        ``tags``: what ``_line`` does with each (the message's answers, ``_said``, are the same for all;
        ``unheard``: it can change nothing but the ranks known, else the classifier's answer is plain)."""
        said, phases = self._said, self._phases
        assert said is not None and phases is not None
        msg, level, ts_text = said.msg, groups.get("lvl"), groups.get("ts")
        ranks, state = self._ranks, self.state
        ts: float | None = None
        maybe: tuple[int, ...] = ()
        if not unheard:
            ts = self._time(ts_text, at)  # (the first line's time again)
            if said.maybe is None:
                said.maybe = phases.may_mark(msg)
            maybe = said.maybe
        lines: list[tuple[int, str]] = []
        for i, tag in enumerate(tags):
            if state.ready_line is None and not ranks.counted(tag):
                if lines:  # the lines before it take their actions first
                    phases.repeat(lines, msg, ts, events, maybe)
                    lines = []
                self._register({"ranks": tag})
            if maybe:
                lines.append((number + i, ranks.name(tag, None)))
        if lines:
            phases.repeat(lines, msg, ts, events, maybe)
        last = number + len(tags) - 1
        offset += sum(map(len, rows[start : start + len(tags) - 1])) + len(tags) - 1  # the last line's
        self._offset = offset
        if not unheard:  # (what the classifier's plain answer changes, the last line's feed changes last)
            self.classifier.feed(last, msg, ranks.name(tags[-1], None), True, level, ts, offset)
        for back in range(len(tags) - 1, -1, -1):  # what the log said last: its last line with text
            row = rows[start + back]
            if not row.isspace():
                self.pass_over(number + back, row)
                break
        self.pass_over(last)

    def _while_detecting(self, item: Line, at: float | None, events: list[TrackerEvent]) -> None:
        """A line while the server is not settled: until detection gives up, counted and kept (to be
        read again on a switch)."""
        detection = self._detection
        detecting = not detection.done
        if detecting:
            detection.count()
        before = len(events)
        self._line(item, at, events)
        if detecting:
            detection.keep(item, at)
            if not detection.done:  # what these lines said already: not said again when they are read again
                self._said_while_detecting.update(k for e in events[before:] if (k := _said(e)) is not None)

    def _line(self, item: Line, at: float | None, events: list[TrackerEvent]) -> None:
        number = item.number
        segments = item.segments
        # (the label test asked once: for ``_servers_line`` and ``label_end`` both)
        labelled = bool(segments) and may_have_label(segments[0])
        if (
            (labelled or self._service is not None or self._services_seen)
            and not self._servers_line(segments[0], at, events)
        ):
            self.pass_over(number)  # another compose service's line (a router, a web UI): counted only
            return
        self._offset = item.offset
        state = self.state
        if number > state.lines:  # (pass_over(number), inline: every line fed comes here)
            state.lines = number
        if len(segments) == 1 and not _is_bar(segments[0]):
            # one segment, no bar: the one text ``_texts`` would yield, without its generator (most
            # lines, and nearly every line of a startup-dense log)
            text = segments[0]
            start = label_end(text) if labelled else 0
            self._one(number, text[start:] if start else text, at, events)
        else:
            for text in self._texts(segments):
                self._one(number, text, at, events)
        if segments:
            self.pass_over(number, segments[-1])

    @property
    def needs_rank_tags(self) -> bool:
        """Until ready, every line's rank tag counts (``skip`` the lines not fed): a rank that
        prints only lines no pattern matches is still one of the server's ranks."""
        return self.state.ready_line is None

    def _servers_line(self, first: str, at: float | None, events: list[TrackerEvent]) -> bool:
        """Whether a line whose first segment is ``first`` is the server's: not when a docker compose
        label names another container than the server's. The server's container is the first one
        whose line gives evidence of a server (a profile's ``detect`` or ``identify``); the lines of
        the others read before that are read again without them. Asked by ``_line`` only where the
        line may carry a label or a service was seen (else it is the server's)."""
        name = service(first)
        if name is None:
            return True
        if self._service is not None:
            return name == self._service
        if self._evidence is not None and self._evidence.search(first[label_end(first) :]) is not None:
            self._service = name
            if self._services_seen - {name}:
                self._without_others(at, events)
            return True
        self._services_seen.add(name)
        return True

    def _without_others(self, at: float | None, events: list[TrackerEvent]) -> None:
        """The server's container is now known, and another's lines were read before: read the log
        so far again from the start, the server's lines only (the lines kept while detecting)."""
        kept = self._detection.kept() if not self._detection.done else []
        if not kept:
            return
        self._fresh()
        self._replay(kept, events)

    def _replay(self, kept: list[tuple[Line, float | None]], events: list[TrackerEvent]) -> None:
        """The lines kept while detecting, read again (the events they make that were said already dropped)."""
        self._detection.replaying = True
        start = len(events)
        try:
            for line, when in kept:
                self._line(line, when, events)
        finally:
            self._detection.replaying = False
        self._unsaid(events, start)

    def _unsaid(self, events: list[TrackerEvent], start: int) -> None:
        """Drop from ``events[start:]`` (kept lines read again) the warnings and errors reported
        when those lines were first read: a watch counts each one once."""
        said = self._said_while_detecting
        events[start:] = [e for e in events[start:] if _said(e) not in said]

    def skip(self, line: Line) -> None:
        """Line ``line`` was read but needs no matching (a prefilter found no marker word in it):
        what a fed line with nothing to match leaves, no more: its count, its text as what the
        log said last, and (until ready) its rank tag."""
        if self._service is not None and line.segments and service(line.segments[0]) not in (None, self._service):
            self.pass_over(line.number)
            return
        if self.state.ready_line is None:
            headers = (self.profile or self._generic).headers
            segments = line.segments
            for text in segments if _one_plain(segments) else self._texts(segments):
                for header in headers:
                    match = header.match(text)
                    if match is not None:
                        groups = match.groupdict()
                        if groups.get("proc") or groups.get("pid") or not self._ranks.counted(groups.get("ranks")):
                            self._register(groups)
                        break
        self.pass_over(line.number, line.text)

    def pass_over(self, number: int, text: str | None = None) -> None:
        """Line ``number`` was read but needs no matching (a prefilter found no marker word in
        it): count it, and keep ``text`` as what the log said last (shown when the server dies)."""
        state = self.state
        if number > state.lines:
            state.lines = number
        if text and not text.isspace():
            state.last_line = number
            state.last_text = text[:1000]

    def finish(self) -> list[TrackerEvent]:
        """End of input: close any open traceback block; phases every rank ended are over."""
        events: list[TrackerEvent] = []
        self._errors(self.classifier.close_all(), events)
        self._settle(events)
        return events

    def quiet(self) -> list[TrackerEvent]:
        """The log went quiet: tracebacks whose exception line came are over."""
        events: list[TrackerEvent] = []
        self._errors(self.classifier.close_complete(), events)
        return events

    def process_exited(self, returncode: int | None, signal: int | None, at: float) -> list[TrackerEvent]:
        """The launched server died: a failed startup, or (once ready) a stop."""
        events = self.finish()
        state = self.state
        if signal is not None:
            try:
                name = signals.Signals(signal).name
            except ValueError:
                name = f"signal {signal}"
            what = f"process killed by {name}"
        else:
            what = f"process exited with code {returncode}"
        said = f"; the log's last line ({state.last_line}): {state.last_text.strip()}" if state.last_line else "; the log is empty"
        if state.outcome in (READY, STOPPED):
            if state.outcome == READY:
                state.outcome = STOPPED
                state.stop_reason = what
                events.append(Stopped(state.lines, what))
            return events
        killed = signal == signals.SIGKILL or returncode in (137, -9)
        report = ErrorReport(
            line=state.last_line or state.lines,
            kind="killed" if killed else "exited",
            message=(what + said)[:1000],
            end_line=state.last_line,
            category="killed" if killed else "exited",
            secondary=state.first_error is not None,
            ts=at,
        )
        state.stop_reason = what
        self._errors([report], events)
        return events

    def restart(self) -> None:
        """The log was replaced: a fresh attempt starts (``state`` is a new object)."""
        self._reset()

    def prime(self) -> None:
        """Run each candidate profile's example lines through a scratch tracker.

        RE2 builds its automata lazily, on the first text that needs them: without this
        the first ready line or traceback of a watch pays for that (about 0.3 ms,
        doubling the append-to-verdict latency; bench/latency.py). Call it while idle.
        """
        for profile in self._candidates:
            scratch = StartupTracker(profile)
            for number, text in enumerate(profile.examples, 1):
                scratch.feed(Line(number, 0, (text,)), 0.0)
            scratch.finish()

    # ------------------------------------------------------------ one segment

    def _texts(self, segments: tuple[str, ...]) -> Iterator[str]:
        """The texts a line is matched as: its ``\\r`` segments but the bar updates the next one
        supersedes, and a record a bar swallowed (no ``\\r`` between) apart from the bar; the
        label a carrier puts in front of every line (``srun -l``'s ``0: ``, docker compose's
        ``vllm-1  | ``: ``tui.core.carriers``) read past."""
        last = len(segments) - 1
        if segments:
            start = label_end(segments[0])
            if start:
                segments = (segments[0][start:], *segments[1:])
        for i, text in enumerate(segments):
            if i < last and _is_bar(text) and _is_bar(segments[i + 1]):
                continue  # an intermediate bar update: the next one supersedes it
            if self.profile is not None and _is_bar(text):
                for header in self._inner_headers:
                    match = header.search(text, 1)
                    if match is not None:
                        yield text[: match.start()]
                        text = text[match.start() :]
                        break
                else:
                    glued = _GLUED.search(text)
                    if glued is not None:
                        yield text[: glued.end()]
                        text = text[glued.end() :]
            yield text

    def _one(self, number: int, text: str, at: float | None, events: list[TrackerEvent]) -> None:
        detection = self._detection
        if not detection.settled and not detection.replaying:
            switch = detection.weigh(text, self.profile)
            if switch is not None:
                self._switch(switch, number, events)
        if not self._announced and self.profile is not None:
            self._announced = True
            events.append(ServerDetected(self.profile.name, number))
        profile = self.profile or self._generic
        if text[:1] == "{":
            parsed = json_record(text)
            if parsed is not None:  # a JSON log line: the message (and its traceback), the process, the level
                lines, fields = parsed
                for i, line in enumerate(lines):
                    first = i == 0
                    self._message(number, line, fields, first, fields["lvl"] if first else None, fields["ts"] if first else None, at, events)
                return
        msg, groups = _header(profile, text)
        ts_text = groups.get("ts") if groups is not None else None
        level = groups.get("lvl") if groups is not None else None
        record = ts_text is not None or level is not None
        self._message(number, msg, groups, record, level, ts_text, at, events)

    def _message(
        self,
        number: int,
        msg: str,
        groups: dict[str, str | None] | None,
        record: bool,
        level: str | None,
        ts_text: str | None,
        at: float | None,
        events: list[TrackerEvent],
    ) -> None:
        profile = self.profile or self._generic
        said = self._said
        if said is None or msg != said.msg:
            said = self._sayings.get(msg)
            if said is None:
                said = self._say(msg)
                self._sayings.keep(msg, msg, said)
            self._said = said
        if said.begins and self._attempts is not None and self._attempts.begins_anew(msg, self.state):
            self._new_startup(number, events)
        if (
            groups is not None
            and self.state.ready_line is None
            and (groups.get("proc") or groups.get("pid") or not self._ranks.counted(groups.get("ranks")))
        ):
            self._register(groups)  # (a tag counted already, with no process, adds nothing: skip's test)
        if self._unheard(said, level, profile):
            # Nothing can match: the common case, one search. Such a line leaves what one a
            # prefilter skipped leaves (see skip), so scan == watch: no timestamp, for one.
            return
        rank = None if groups is None else self._ranks.name(groups.get("ranks"), groups.get("proc"))
        ts = self._time(ts_text, at)
        errors, warning, consumed = self.classifier.feed(number, msg, rank, record, level, ts, self._offset)
        if errors:
            self._errors(errors, events)
        if warning:
            self.state.warnings += 1
            events.append(WarningFound(number, msg.strip()[:500]))
        if consumed or self._phases is None:
            return
        maybe = said.maybe
        if maybe is None:
            maybe = said.maybe = self._phases.may_mark(msg)
        if not maybe:
            return
        before = len(events)
        self._marked = number
        self._phases.markers(number, msg, MAIN if rank is None else rank, ts, events, maybe)
        if self._causes and any(isinstance(e, PhaseEnded) for e in events[before:]):
            # a phase ended on every rank after them: those lines did not stop the startup
            self._causes = [c for c in self._causes if c.line >= number]

    def _unheard(self, said: _Said, level: str | None, profile: Profile) -> bool:
        """Whether a record of ``said``'s message at ``level`` can change nothing but the ranks known."""
        return (
            not self.classifier.open
            and said.quiet
            and (level is None or (level not in profile.warning_levels and level not in profile.error_levels
                                   and level not in ERROR_WORDS))
        )

    def _say(self, msg: str) -> _Said:
        """What ``msg`` says whatever the state (``_Said``)."""
        anything = self._anything
        quiet = (
            anything is not None
            and anything.search(msg) is None
            and "Traceback" not in msg
            and not msg.startswith(("Process ", "Exception ignored "))
            and not msg.lstrip().startswith('File "')  # a frame: a traceback whose first line the log lacks
        )
        return _Said(msg, self._attempts is not None and self._attempts.may_begin(msg), quiet)

    def _switch(self, profile: Profile, number: int, events: list[TrackerEvent]) -> None:
        """Use ``profile`` (the likeliest server now), start over with it and read the kept lines
        again (the current line goes on from here): the lines read before the server was named
        were read without its signatures (llama.cpp's "error loading model: failed to open …"
        before its first ``llama_…:`` line), or under another server's."""
        first = self.profile is None
        if first and not self._detection.kept_any():
            self._use(profile)
            self._announced = True
            events.append(ServerDetected(profile.name, number))
            return
        kept = self._detection.kept()
        self._fresh()
        self._use(profile)
        self._announced = True
        events.append(ServerDetected(profile.name, number))
        self._replay(kept, events)
        if first:
            self._identify_kept(profile, kept)

    def _identify_kept(self, profile: Profile, kept: list[tuple[Line, float | None]]) -> None:
        """The lines read before the server was named, read again for what they say of the run as
        a job script's (a ``ray status`` before the server's first line: its last value counts)."""
        if self._phases is None:
            return
        for line, _at in kept:
            for text in self._texts(line.segments):
                self._phases.identify(_header(profile, text)[0], SCRIPT_IDENTITY)

    def _new_startup(self, number: int, events: list[TrackerEvent]) -> None:
        """Line ``number`` begins a new startup: the earlier one is summarised, all else restarts
        (what was learnt of the log itself, its server, clock and rank names, stays)."""
        events.extend(self.finish())
        self.state = Attempts.next(self.state, number)
        self._ranks.new_startup()
        if self._phases is not None:
            self._phases.new_startup(self.state)
        self._error_ids.clear()
        self._causes.clear()
        self.classifier.reset()
        events.append(NewStartup(number, self.state.attempt, self.state.earlier[-1]))

    def _register(self, groups: dict[str, str | None]) -> None:
        """A line's rank tag (or process name) is one of the server's ranks (a renamed process's phases move)."""
        renamed = self._ranks.register(groups, self.state.ranks)
        if renamed is not None and self._phases is not None:
            self._phases.rename(*renamed)

    def _time(self, ts_text: str | None, at: float | None) -> float | None:
        """The line's time (``Timestamps.time``), the first and last of the startup kept.

        A startup whose first line had no time of its own starts at that line's arrival, unless the
        log's own clock then says earlier: its lines came after the fact (``attach`` to a running
        server, a log read later), so the arrival is no start (it made "ready in 0:00")."""
        ts = self._clock.time(ts_text, at)
        if ts is not None:
            state = self.state
            if state.first_ts is None:
                state.first_ts = ts
                self._first_arrived = self._clock.last is None
            elif self._first_arrived and self._clock.last is not None:
                self._first_arrived = False
                state.first_ts = min(state.first_ts, ts)
            state.last_ts = ts
        return ts

    def _settle(self, events: list[TrackerEvent]) -> None:
        """Phases that ended on every rank and waited to be settled are over."""
        if self._phases is not None:
            self._phases.settle(len(PHASES), events)

    # ------------------------------------------------------------ errors

    def _hold(self, error: ErrorReport, events: list[TrackerEvent]) -> None:
        """A line that explains a failure if one follows: held back, not an error (yet)."""
        state = self.state
        if state.outcome != STARTING and state.ready_line is None:
            self._explains_after(error, events)
            return
        if state.outcome != STARTING or state.ready_line is not None or len(self._causes) >= MAX_CAUSES:
            return  # it came after the ready line: it explains nothing
        if all(c.category != error.category for c in self._causes):
            self._causes.append(error)

    def _explains_after(self, error: ErrorReport, events: list[TrackerEvent]) -> None:
        """A cause line right after the failure (within ``JOINED_GAP`` lines of its last one, from
        its rank): where its signature says it may come there (``Signature.after``: the compiler's
        words an exception carries), it is the failure's root cause, the failure its follow-on;
        any other cause line after the failure explains nothing (another rank dying of it)."""
        failure = self.state.first_error
        profile = self.profile or self._generic
        signature = next((s for s in profile.signatures if s.kind == error.category), None)
        if (
            signature is None or not signature.after
            or failure is None or failure.cause or failure.end_line is None
            or not 0 < error.line - failure.end_line <= JOINED_GAP
            or (error.rank is not None and failure.rank is not None and error.rank != failure.rank)
            or len(self.state.errors) >= MAX_ERRORS
        ):
            return
        error.fatal = True
        error.follow_on = failure.line
        failure.secondary = True
        self._error_ids.add(id(error))
        bisect.insort(self.state.errors, error, key=lambda e: e.line)
        events.append(ErrorFound(error))

    def _blame(self, error: ErrorReport, events: list[TrackerEvent]) -> None:
        """``error`` fails the startup: the held lines before it are its root cause, it their follow-on."""
        upto = error.end_line or error.line
        causes = [c for c in self._causes if c.line <= upto]
        if not causes:
            return
        self._causes = [c for c in self._causes if c.line > upto]
        for cause in causes:
            cause.fatal = True
            cause.follow_on = error.line
            self._error_ids.add(id(cause))
            if len(self.state.errors) < MAX_ERRORS:
                bisect.insort(self.state.errors, cause, key=lambda e: e.line)
                events.append(ErrorFound(cause))
        error.secondary = True

    def _errors(self, errors: list[ErrorReport], events: list[TrackerEvent]) -> None:
        state = self.state
        for error in errors:
            if error.cause and not error.fatal:
                self._hold(error, events)
                continue
            kept = id(error) in self._error_ids
            if not kept and error.fatal and self._causes and state.ready_line is None:
                self._blame(error, events)
            if not kept and len(state.errors) < MAX_ERRORS:
                self._error_ids.add(id(error))
                bisect.insort(state.errors, error, key=lambda e: e.line)
                kept = True
            elif not kept:
                state.errors_dropped += 1
            if state.ready_line is not None and error.line > state.ready_line:
                error.fatal = False  # a serving-time error: not a failed startup
            if error.fatal and state.outcome == STARTING:
                state.outcome = FAILED
                self._settle(events)  # what had ended on every rank did end
                for phase in state.phases:
                    if not phase.done:
                        phase.failed = True
            if not kept:
                continue
            events.append(ErrorFound(error))
