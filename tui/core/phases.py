"""The per-rank phases of one startup, for ``StartupTracker``: markers begin, end and step them.

A phase begins and ends per rank; it is over when the last rank that began it has ended it
(the slowest rank is named), tqdm bars advance the phase they belong to (rank 0's), the draft
model's repeats are told apart by count, and ready closes what is still open.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Collection
from typing import TypeGuard

from tui.core.profiles import LATE_IDENTITY, OWN_LINE_IDENTITY, SCRIPT_IDENTITY, PhaseSpec, Profile, any_of
from tui.core.quicktest import Memo, Pattern, candidates
from tui.core.ranks import MAIN, Ranks
from tui.core.state import FAILED, READY, STOPPED, Phase, RankPhase, StartupState
from tui.core.tracker_events import PhaseEnded, PhaseProgress, PhaseStarted, Ready, Stopped, TrackerEvent

DRAFT = "draft_init"
_DIGITS = re.compile(r"\d+")


def _count(text: str | None) -> int | None:
    """A bar's count as a number; None for what no real bar prints (a 300-digit number, "½")."""
    if text is None or not 0 < len(text) <= 18 or not text.isascii() or not text.isdigit():
        return None
    return int(text)


def _seconds(text: str | None) -> float | None:
    """An "elapsed=…" figure, if it is a plain, finite, non-negative number."""
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and 0.0 <= value < 1e9 else None


def _first(patterns: tuple[tuple[int, Pattern], ...], maybe: tuple[int, ...] | None, msg: str) -> re.Match[str] | None:
    """The first match in ``msg`` of the numbered ``patterns`` (numbered in a row), trying only those
    ``maybe`` (ascending) names (None: all)."""
    if not patterns:
        return None
    if maybe is not None:  # most lines name none of them: one bisection says so
        at = bisect.bisect_left(maybe, patterns[0][0])
        if at == len(maybe) or maybe[at] > patterns[-1][0]:
            return None
    for index, pattern in patterns:
        if maybe is None or index in maybe:
            match = pattern.search(msg)
            if match is not None:
                return match
    return None


@functools.lru_cache(maxsize=4096)
def _rank_zero(name: str) -> bool:
    """Whether rank ``name`` is rank 0 of its every kind ("TP0", "DP0 TP0", "main"): asked of each
    rank of a phase at each bar (a startup-dense log: thousands of bars over eight ranks)."""
    return not any(d != "0" for d in _DIGITS.findall(name))


def items_total(listed: str | None) -> int | None:
    """How many items an ``[identity]`` value lists (``[] , [2048]`` → 1): its count of numbers."""
    if listed is None:
        return None
    return len(_DIGITS.findall(listed)) or None


class PhaseBook:
    """The phases of ``state`` per rank, from the marker lines and bars of ``profile``'s server;
    ``ranks`` says which ranks print (a phase all of them print waits for every one)."""

    def __init__(self, profile: Profile, state: StartupState, ranks: Ranks) -> None:
        self._profile = profile
        self._ranks = ranks
        self._specs = {spec.name: spec for spec in profile.phases}
        self._draft = self._specs.get(DRAFT)
        self._any_bar = any_of([p for spec in profile.phases for p in spec.progress])
        self._index_markers(profile)
        self.new_startup(state)

    def _index_markers(self, profile: Profile) -> None:
        """Number every pattern ``markers`` tries, so that one ``Candidates`` pass a line says which
        can match and only those are run. The phases' are numbered in the order ``markers`` tries
        them (phase, then implicit, begin, end, step, progress), so ascending indices keep it."""
        patterns: list[Pattern] = []

        def number(group: tuple[Pattern, ...]) -> tuple[tuple[int, Pattern], ...]:
            patterns.extend(group)
            return tuple(enumerate(group, len(patterns) - len(group)))

        # The gate: a line none of these can match is no marker (``may_mark``); the ready_with and
        # the other identity patterns are only tried on a line that passed it.
        self._ready_patterns = number(profile.ready)
        self._close_patterns = number(profile.close)
        self._stop_patterns = number(profile.stop)
        number(profile.startup)
        self._identity = tuple((key, number(group)) for key, group in profile.identity if key in OWN_LINE_IDENTITY)
        self._phase_from = len(patterns)
        #: per phase pattern, in index order: (phase, action, pattern, group key)
        self._phase_slots: list[tuple[PhaseSpec, str, Pattern, int]] = []
        for spec in profile.phases:
            for action, group in (
                ("implicit", spec.implicit_begin),
                ("begin", spec.begin),
                ("end", spec.end),
                ("step", spec.step),
                ("progress", spec.progress),
            ):
                key = len(self._phase_slots)  # the group's first slot: one match a group
                self._phase_slots.extend((spec, action, pattern, key) for pattern in group)
                patterns.extend(group)
        self._gate_end = len(patterns)
        self._ready_with = number(profile.ready_with)
        self._identity += tuple((key, number(group)) for key, group in profile.identity if key not in OWN_LINE_IDENTITY)
        order = [key for key, _ in profile.identity]
        self._identity = tuple(sorted(self._identity, key=lambda item: order.index(item[0])))
        self._late = tuple(item for item in self._identity if item[0] in LATE_IDENTITY)
        self._candidates = candidates(patterns)
        self._identity_indices = frozenset(index for _key, group in self._identity for index, _pattern in group)
        # each group's indices: one set operation says a line names none of them (most lines), no call
        self._ready_set, self._ready_with_set, self._stop_set, self._close_set = (
            frozenset(index for index, _pattern in group)
            for group in (self._ready_patterns, self._ready_with, self._stop_patterns, self._close_patterns)
        )
        self._matches: Memo[str, list[tuple[PhaseSpec, str, re.Match[str], float | None]]] = Memo()  # _phase_matches' answers
        self._figures: Memo[str, tuple[str | None]] = Memo()  # _figure's answers

    def may_mark(self, msg: str) -> tuple[int, ...]:
        """The indices of the patterns that may match ``msg`` (for ``markers``); empty where no
        marker can, and then ``markers`` need not be called."""
        found = self._candidates.which(msg)
        return found if found and found[0] < self._gate_end else ()

    def new_startup(self, state: StartupState) -> None:
        """The phases of a new startup, whose state is ``state``: nothing of the last one's is left."""
        self.state = state
        #: (phase, rank) -> the line and time of the last line before the phase showed on the rank
        self._implicit: dict[tuple[str, str], tuple[int, float | None]] = {}
        self._tentative: set[str] = set()  # settle phases whose ranks have all ended
        self._placeholders: dict[str, str] = {}  # phase -> rank key a bar started it under
        self._ready_parts: set[str] = set()  # of a ready that needs two lines: "ready", "with" seen so far
        self._items: dict[tuple[str, str], list[int]] = {}  # (phase, rank) -> [items done, of them cached]

    def rename(self, old: str, new: str) -> None:
        """One process's tag changed ("Worker pid=N" before device init, "Worker_TP1" after):
        what it did under the old name is the new name's."""
        for phase in self.state.phases:
            entry = phase.ranks.pop(old, None)
            if entry is not None and new not in phase.ranks:
                entry.rank = new
                phase.ranks[new] = entry
        for (name, rank) in [k for k in self._implicit if k[1] == old]:
            self._implicit.setdefault((name, new), self._implicit.pop((name, rank)))
        for name, rank in list(self._placeholders.items()):
            if rank == old:
                self._placeholders[name] = new

    def markers(self, number: int, msg: str, rank: str, ts: float | None, events: list[TrackerEvent], maybe: tuple[int, ...]) -> None:
        """A line's phase markers, ready and stop lines; ``maybe``: ``may_mark(msg)``, the only
        patterns worth trying."""
        state = self.state
        if not self._identity_indices.isdisjoint(maybe):  # (identify asks that first: most lines name none)
            self.identify(msg, maybe=maybe)
        if state.ready_line is None:
            if not self._ready_set.isdisjoint(maybe) and _first(self._ready_patterns, maybe, msg) is not None:
                self._ready_parts.add("ready")
                if self._owns_ready():
                    self._ready(number, ts, events)
                    return
                # not (yet) the server's ready: the line may still begin a phase
            elif not self._ready_with_set.isdisjoint(maybe) and _first(self._ready_with, maybe, msg) is not None:
                self._ready_parts.add("with")
                if "ready" in self._ready_parts and self._owns_ready():
                    self._ready(number, ts, events)
                    return
        elif state.outcome == READY and not self._stop_set.isdisjoint(maybe) and _first(self._stop_patterns, maybe, msg) is not None:
            state.outcome = STOPPED
            state.stop_reason = msg.strip()[:500]
            events.append(Stopped(number, state.stop_reason))
            return
        for spec, action, match, took in self._phase_matches(msg, maybe):
            self._act(spec, action, match, took, number, msg, rank, ts, events)
        if not self._close_set.isdisjoint(maybe) and _first(self._close_patterns, maybe, msg) is not None:
            self._close_phases(events)

    def repeat(self, lines: list[tuple[int, str]], msg: str, ts: float | None, events: list[TrackerEvent], maybe: tuple[int, ...]) -> None:
        """``markers`` of each of ``lines`` (line number, rank) in turn: the ranks' lines of the message
        ``markers`` was asked about for the line just before them, one after another, at its time
        ``ts``. Where the message can be no ready, stop or close line (nearly every rank's line), only
        its phase actions are left to take, and each line takes them without asking anything else
        again: what it says of the run (``identify``) that line said already (each key's first value
        stays, the same text gives the same value, and the keys read only ever get fewer)."""
        if not (
            self._ready_set.isdisjoint(maybe) and self._ready_with_set.isdisjoint(maybe)
            and self._stop_set.isdisjoint(maybe) and self._close_set.isdisjoint(maybe)
        ):
            for number, rank in lines:
                self.markers(number, msg, rank, ts, events, maybe)
            return
        actions = self._phase_matches(msg, maybe)
        for number, rank in lines:
            for spec, action, match, took in actions:
                self._act(spec, action, match, took, number, msg, rank, ts, events)

    def _act(
        self, spec: PhaseSpec, action: str, match: re.Match[str], took: float | None, number: int, msg: str, rank: str,
        ts: float | None, events: list[TrackerEvent],
    ) -> None:
        """One phase action a line's message matched (``_phase_matches``), taken for that line."""
        if action == "progress":
            self._bar(spec, match, number, msg, ts, events)
        elif not (action in ("begin", "step") and spec.yield_to and self._yields(spec, msg, rank)):
            self._mark(spec, action, took, number, msg, rank, ts, events)

    def _phase_matches(self, msg: str, maybe: tuple[int, ...]) -> list[tuple[PhaseSpec, str, re.Match[str], float | None]]:
        """The phase actions ``msg`` matches, in order: (phase, action, match, the seconds the line says
        it took), one a group (the first of a group's patterns that matches; its others are not
        tried). Remembered for the next line:
        the ranks print one message after another (what they do with it depends on the state, which
        the markers then weigh; which patterns match it does not), and every startup says it again."""
        known = self._matches.get(msg)
        if known is not None:
            return known
        start, slots = self._phase_from, self._phase_slots
        found = []
        done = -1  # the group (phase, action) a pattern matched in
        for index in maybe[bisect.bisect_left(maybe, start):]:
            slot = index - start
            if slot >= len(slots):
                break
            spec, action, pattern, group = slots[slot]
            if group == done:
                continue
            match = pattern.search(msg)
            if match is not None:
                done = group
                found.append((spec, action, match, _seconds(match.groupdict().get("seconds"))))
        self._matches.keep(msg, msg, found)
        return found

    def _owns_ready(self) -> bool:
        """Is a ready line the server's own? By the order of evidence: before the server has loaded
        anything, a line such as uvicorn's "Application startup complete." is another program's
        (vLLM tags it in some versions and not in others, so the tag cannot say)."""
        state, profile = self.state, self._profile
        if profile.ready_with and "with" not in self._ready_parts:
            return False  # listening, but the model is not in yet (llama.cpp answers 503 meanwhile)
        return not profile.ready_after or any(state.phase(name) is not None for name in profile.ready_after)

    def identify(self, msg: str, keys: Collection[str] | None = None, maybe: tuple[int, ...] | None = None) -> None:
        """What the run is, from its argument lines (before the first real phase; ``keys``: only
        these; ``maybe``: only the patterns ``may_mark`` named): the first value of a key stays,
        but a job script's (``SCRIPT_IDENTITY``: its ``ray status`` before and after the other
        nodes joined) is the last one before the server's first phase, what the server met."""
        state, identity = self.state, self.state.identity
        if not self._profile.identity or len(identity) >= len(self._profile.identity):
            return
        if maybe is not None and self._identity_indices.isdisjoint(maybe):
            return
        early = not state.phases
        # past the first phases only the figures printed later are read (LATE_IDENTITY)
        wanted = self._identity if len(state.phases) <= 1 else self._late
        for key, patterns in wanted:
            if (keys is not None and key not in keys) or (key in identity and not (early and key in SCRIPT_IDENTITY)):
                continue
            match = _first(patterns, maybe, msg)
            if match is not None:
                identity[key] = match.group("value")[:500]

    def _yields(self, spec: PhaseSpec, msg: str, rank: str) -> bool:
        """Does a phase ``spec`` yields to claim this line while it runs on ``rank``?"""
        for name in spec.yield_to:
            other = self._specs.get(name)
            phase = self.state.phase(name)
            if other is None or phase is None or phase.done:
                continue
            if other.ranked and rank not in phase.ranks:
                continue
            if any(p.search(msg) for p in (*other.begin, *other.end, *other.step)):
                return True
        return False

    def bar_only(self, number: int, text: str, ts: float | None, events: list[TrackerEvent]) -> None:
        """A live update of a still-open line (at ``ts``): only its progress bar matters."""
        if self._any_bar is None or self._any_bar.search(text) is None:
            return
        for spec in self._profile.phases:
            for pattern in spec.progress:
                match = pattern.search(text)
                if match is not None:
                    self._bar(spec, match, number, text, ts, events)
                    return

    def _mark(
        self,
        spec: PhaseSpec,
        action: str,
        took: float | None,
        number: int,
        msg: str,
        rank: str,
        ts: float | None,
        events: list[TrackerEvent],
    ) -> None:
        """``action`` of ``spec`` on line ``number`` of ``rank``, which says it took ``took`` seconds."""
        if not spec.ranked:
            rank = MAIN
        if spec.after and not any((before := self.state.phase(name)) is not None and before.done for name in spec.after):
            return  # its predecessor is not over: the line belongs to no phase yet
        phase = self.state.phase(spec.name)
        if action == "implicit":
            entry = phase.ranks.get(rank) if phase is not None else None
            if entry is None:  # the last such line before the phase shows on this rank is its start
                self._implicit[(spec.name, rank)] = (number, ts)
            return
        if (spec.repeat_is_draft or spec.repeat_after_draft_is_draft) and self._draft is not None and phase is not None:
            entry = phase.ranks.get(rank)
            if entry is not None and entry.end_line is not None and (
                spec.repeat_is_draft or self._draft_began_since(rank, entry.end_line)
            ):
                spec, phase = self._draft, self.state.phase(DRAFT)  # the repeat is the draft model's
                if action != "begin" and (phase is None or rank not in phase.ranks):
                    return  # a second end with no second begin: not a draft
        if self._tentative:
            self.settle(spec.index, events)
        if spec.requires_begin and action != "begin" and (phase is None or rank not in phase.ranks):
            return
        if phase is None:
            start_ts = ts
            if took is not None and ts is not None:
                start_ts = ts - took
            start = min(
                (v for k, v in self._implicit.items() if k[0] == spec.name),
                default=(number, start_ts),
                key=lambda v: v[0],
            )
            phase = self._new_phase(spec.name, start[0], start[1], events)
        if action == "begin" and spec.once and phase.done:
            return  # printed once: a later begin line (vLLM 0.31's version banner after the args) is no new one
        if action == "begin" and spec.collective and phase.done:
            self._through(phase, rank, number, ts)
            return
        entry = self._entry(phase, rank, number, ts)
        if action == "begin":
            if entry.end_line is not None:
                entry.end_line = entry.end_ts = None
            if phase.end_line is not None:
                phase.end_line = phase.end_ts = None  # reopened: a later end reports it again
            self._tentative.discard(phase.name)
        elif action == "end":
            if entry.end_line is not None and phase.done:
                return  # a later line that also ends it (vLLM's "Model loading took" after the drafter's load)
            if took is not None and ts is not None and entry.start_ts is not None:
                ts = max(ts, entry.start_ts + took)  # a line with no time of its own ("-- 48.20s")
            entry.end_line, entry.end_ts = number, ts
        elif entry.end_line is not None:
            return  # a step after this rank's end
        entry.last_line, entry.last_ts = number, ts
        found = self._figure(msg)
        if found is not None:
            phase.detail = found
            phase.first_detail = phase.first_detail or phase.detail
        if action == "step" and spec.items:
            self._item(spec, phase, rank, number, msg, events)
        if action == "end":
            if spec.collective:
                self._end_phase(phase, events)  # one rank through a barrier: every rank is
            else:
                self._check_done(phase, spec, events)

    def _figure(self, text: str) -> str | None:
        """The first of the profile's figures ``text`` shows (``avail mem=70.12 GB``), None for none;
        remembered (the ranks print one message after another, every startup the same ones)."""
        known = self._figures.get(text)
        if known is not None:
            return known[0]
        found = None
        for figure in self._profile.figures:
            match = figure.search(text)
            if match is not None:
                found = match.group(0)
                break
        self._figures.keep(text, text, (found,))
        return found

    def _draft_began_since(self, rank: str, line: int) -> bool:
        """Has the draft model begun on ``rank`` after ``line`` (its weights loading after the
        target's graphs, as old EAGLE logs have it)?"""
        draft = self.state.phase(DRAFT)
        entry = draft.ranks.get(rank) if draft is not None else None
        return entry is not None and entry.start_line > line

    def _through(self, phase: Phase, rank: str, number: int, ts: float | None) -> None:
        """A rank's line of a collective phase another rank already ended: it was through it too
        (its line only came later), so it ends there, and the phase no earlier."""
        entry = self._entry(phase, rank, number, ts)
        if entry.end_line is None:
            entry.end_line, entry.end_ts = number, ts
        if phase.end_line is not None and number > phase.end_line:
            phase.end_line = number
            if ts is not None and (phase.end_ts is None or ts > phase.end_ts):
                phase.end_ts = ts

    def _entry(self, phase: Phase, rank: str, number: int, ts: float | None) -> RankPhase:
        entry = phase.ranks.get(rank)
        if entry is not None:
            return entry
        placeholder = self._placeholders.pop(phase.name, None)
        if placeholder is not None and placeholder in phase.ranks and placeholder != rank:
            entry = phase.ranks.pop(placeholder)  # a bar started it: now we know whose it is
            entry.rank = rank
        else:
            start = self._implicit.pop((phase.name, rank), None)
            if start is None:
                start = (phase.start_line, phase.start_ts) if not phase.ranks else (number, ts)
            entry = RankPhase(rank, start[0], start[1])
            if entry.start_line < phase.start_line:
                phase.start_line, phase.start_ts = entry.start_line, entry.start_ts
        phase.ranks[rank] = entry
        return entry

    def _new_phase(self, name: str, line: int, ts: float | None, events: list[TrackerEvent]) -> Phase:
        phase = Phase(name, line, ts)
        bisect.insort(self.state.phases, phase, key=lambda p: p.start_line)
        events.append(PhaseStarted(name, line, ts))
        if self.state.outcome == FAILED:
            phase.failed = True
        return phase

    def _check_done(self, phase: Phase, spec: PhaseSpec, events: list[TrackerEvent]) -> None:
        for r in phase.ranks.values():
            if r.end_line is None:
                return
        if spec.all_ranks and spec.ranked and not self._ranks.tagged.issubset(phase.ranks):
            return  # a rank that prints this phase has not even begun it yet
        if spec.settle:
            self._tentative.add(phase.name)  # over once a later phase shows (or a close marker)
            return
        self._end_phase(phase, events)

    def settle(self, index: int, events: list[TrackerEvent]) -> None:
        """The phases that wait to be settled and come before phase ``index`` are over."""
        for name in list(self._tentative):
            if self._specs[name].index < index:
                phase = self.state.phase(name)
                if phase is not None:
                    self._end_phase(phase, events)
                self._tentative.discard(name)

    def _end_phase(self, phase: Phase, events: list[TrackerEvent]) -> None:
        """All ranks are done (those that never said so end at their last line in it)."""
        self._tentative.discard(phase.name)
        if phase.done:
            return
        end_line, end_ts = phase.start_line, phase.start_ts
        for entry in phase.ranks.values():
            if entry.end_line is None:
                entry.end_line = entry.last_line if entry.last_line is not None else entry.start_line
                entry.end_ts = entry.last_ts if entry.last_line is not None else entry.start_ts
            if entry.end_line > end_line:
                end_line = entry.end_line
            if entry.end_ts is not None and (end_ts is None or entry.end_ts > end_ts):
                end_ts = entry.end_ts
        phase.end_line, phase.end_ts = end_line, end_ts
        events.append(PhaseEnded(phase.name, end_line, end_ts, phase.seconds, phase.slowest_rank, len(phase.ranks),
                                 phase.start_line))

    def _close_phases(self, events: list[TrackerEvent], keep: str = "ready") -> None:
        for phase in list(self.state.phases):
            if not phase.done and phase.name != keep:
                self._end_phase(phase, events)

    def _bar_owner(self, phase: Phase) -> str | None:
        """The rank a bar belongs to: rank 0 of the phase (bars carry no rank)."""
        for name in phase.ranks:
            if _rank_zero(name):
                return name
        return next(iter(phase.ranks), None)

    def _running_on_owner(self, phase: Phase | None) -> TypeGuard[Phase]:
        """``phase`` exists, is open, and its bar's owner rank has not ended it."""
        if phase is None or phase.done:
            return False
        owner = self._bar_owner(phase)
        return owner is None or phase.ranks[owner].end_line is None

    def _bar(
        self,
        spec: PhaseSpec,
        match: re.Match[str],
        number: int,
        text: str,
        ts: float | None,
        events: list[TrackerEvent],
    ) -> None:
        phase = self.state.phase(spec.name)
        draft = self.state.phase(DRAFT) if self._draft is not None else None
        if self._running_on_owner(phase):
            pass
        elif self._running_on_owner(draft):
            phase = draft
        elif phase is None:
            if self._tentative:
                self.settle(spec.index, events)
            phase = self._new_phase(spec.name, number, ts, events)
            rank = self._profile.bar_rank
            phase.ranks[rank] = RankPhase(rank, number, ts)
            self._placeholders[spec.name] = rank
        elif phase.done:
            return  # a stray bar after its phase
        groups = match.groupdict()
        fraction = None
        n, total, pct = _count(groups.get("n")), _count(groups.get("total")), _count(groups.get("pct"))
        if n is not None and total:
            fraction = min(1.0, n / total)
            detail = f"{n}/{total}"
        elif pct is not None:
            fraction = min(1.0, pct / 100)
            detail = f"{pct}%"
        else:
            detail = ""
        found = self._figure(text)
        if found is not None:
            detail = f"{detail} {found}".strip()
        phase.progress = fraction
        phase.detail = detail
        owner = self._bar_owner(phase)
        if owner is not None:
            entry = phase.ranks[owner]
            if entry.end_line is None:
                entry.last_line, entry.last_ts = number, ts
        counted = n is not None and bool(total)
        if counted and total:
            phase.count = max(phase.count or 0, total)
        events.append(PhaseProgress(phase.name, number, fraction, detail, n if counted else None,
                                    total if counted else None))

    def _item(self, spec: PhaseSpec, phase: Phase, rank: str, number: int, msg: str, events: list[TrackerEvent]) -> None:
        """A line that says one item of the phase is done (a torch.compile range compiled, or
        loaded from the cache): counted per rank; the count of the phase's first rank (rank 0,
        as for a bar) is reported, against the total the startup's arguments listed."""
        match = next((found for p in spec.items if (found := p.search(msg)) is not None), None)
        if match is None:
            return
        counts = self._items.setdefault((phase.name, rank), [0, 0])
        groups = match.groupdict()
        cached = groups.get("cached") is not None
        counts[0] += 1
        counts[1] += cached
        if rank != self._bar_owner(phase):
            return
        total = items_total(self.state.identity.get(spec.items_total or ""))
        done = counts[0]
        if total is not None and done > total:
            total = None  # more than the arguments listed (a second model compiling): no total
        if total is not None:
            phase.count, phase.progress = total, done / total
        detail = f"{done}/{total}" if total is not None else f"{done} done"
        events.append(PhaseProgress(phase.name, number, None if total is None else done / total, detail, done, total,
                                    _seconds(groups.get("seconds")), cached))

    def _ready(self, number: int, ts: float | None, events: list[TrackerEvent]) -> None:
        state = self.state
        self._tentative.clear()
        self._close_phases(events)
        phase = state.phase("ready")
        if phase is None:
            phase = self._new_phase("ready", number, ts, events)
        entry = self._entry(phase, MAIN, number, ts)
        entry.end_line, entry.end_ts = number, ts
        for other in phase.ranks.values():
            if other.end_line is None:
                other.end_line, other.end_ts = number, ts
        phase.failed = False
        self._end_phase(phase, events)
        state.ready_line = number
        state.outcome = READY
        for p in state.phases:
            p.failed = False
        seconds = None if ts is None or state.first_ts is None else max(0.0, ts - state.first_ts)
        events.append(Ready(number, ts, seconds))
