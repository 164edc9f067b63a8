"""Known failure → why → fix, as data (``tui/profiles/hints.toml``).

A hint matches an error (its kind or category, a pattern on its message, a pattern on
its traceback lines, optionally the server and the phase it happened in) or a warning
(a pattern on its text). It says why in one sentence and gives the fix as structured
actions (:class:`tui.core.cmdline.Action`) with a link. Templates take their numbers
from the log: the pattern's named groups, the ``avail mem=`` figures of the phases, the
command's own values, and a few computed values (the memory fraction that would fit),
so advice reads "set --max-model-len 121840", not "lower it". A template whose value
is unknown is left out (a ``why`` may list alternatives, the first complete one wins):
a hint never guesses a number. Those values and their arithmetic are ``tui.core.hint_fill``.

A user's ``~/.config/watchtower/hints.toml`` (``WATCHTOWER_HINTS`` overrides the path)
is read first: its hints come before the built-in ones, and one with a built-in id
replaces it. A bad key or pattern is refused with one line naming it, as for profiles.
"""

from __future__ import annotations

import fnmatch
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tui.core.classifier import MESSAGE_CAP
from tui.core.cmdline import Action, ServerCommand
from tui.core.errors import UsageError
from tui.core.files import read_text
from tui.core.hint_fill import Context, render
from tui.core.hint_need import quiet, to_diagnose, user_path
from tui.core.profiles import (
    ProfileError,
    _bool,
    _builtin_text,
    _compile,
    _read_toml,
    _strings,
    _table,
    server_sites,
    trusted_patterns,
)
from tui.core.startup_profile import restart_evidence
from tui.core.state import FAILED, ErrorReport, Phase, StartupState

Pattern = re.Pattern[str]

_HINT_KEYS = {
    "id", "kind", "pattern", "lines", "match", "server", "phase", "warning", "why", "fix", "link", "links", "unless",
    "alongside", "noise", "with_failure", "root", "quiet_after", "when", "unread", "not_if", "fallback", "exclude",
}
_VERSION_KEYS = {"id", "package", "below", "at_least", "with", "with_below", "with_at_least", "why", "fix", "link"}


_CONDITION = re.compile(
    r"^\s*(?:(?P<neg>not)\s+)?(?P<fact>[A-Za-z_]\w*)"
    r"(?:\s*(?P<op><=|>=|==|!=|<|>|(?<=\s)in(?=\s))\s*(?P<other>'[^']*'|[\w.+-]+))?\s*$"
)
_COMPARE = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}


@dataclass(frozen=True, slots=True)
class Condition:
    """One precondition of a hint, on the log's own figures and settings (``when``):
    ``nnodes > 1``, ``weights_gib < gpu_gib``, ``not gloo_socket_ifname``, ``oom``,
    ``version >= 0.8``, ``quantization == 'fp8'``, ``arch in supported``. A bare name holds when the log said it (an
    absence is readable: ``not NAME`` holds where the log never set it); a comparison cannot be
    read when a side is unknown."""

    text: str
    fact: str
    negated: bool = False
    op: str | None = None
    other: str | None = None  # a number, a 'literal', or another fact's name

    def check(self, values: Mapping[str, str], context: Context) -> tuple[bool | None, str | None]:
        """(holds, the value read): holds is None where the log does not say."""
        value = _fact(self.fact, values, context)
        if self.op is None:
            return (value is None) if self.negated else (value is not None), value
        other = self.other or ""
        if other.startswith("'"):
            theirs: str | None = other.strip("'")
        elif re.fullmatch(r"[A-Za-z_]\w*", other):
            theirs = _fact(other, values, context)
        else:
            theirs = other
        if value is None or theirs is None:
            return None, value
        shown = value if self.other == theirs or (self.other or "").startswith("'") else f"{value} vs {theirs}"
        return _compare(self.op, value, theirs), shown


def _fact(name: str, values: Mapping[str, str], context: Context) -> str | None:
    found = values.get(name)
    return found if found is not None else context.fact(name.lower())


def _compare(op: str, mine: str, theirs: str) -> bool:
    """Numbers as numbers, releases as releases ("0.10.1" > "0.9"), anything else as text; ``in``:
    the one text inside the other (an architecture in the list the server printed)."""
    if op == "in":
        return mine.lower() in theirs.lower()
    number = re.compile(r"-?\d+(?:\.\d+)?")
    if number.fullmatch(mine) and number.fullmatch(theirs) and (mine.count(".") < 2 and theirs.count(".") < 2):
        if op not in ("==", "!=") or "." in mine or "." in theirs:
            return bool(_COMPARE[op](float(mine), float(theirs)))
    if re.match(r"\d", mine) and re.match(r"\d", theirs):
        return bool(_COMPARE[op](_version_key(mine), _version_key(theirs)))
    return bool(_COMPARE[op](mine.lower(), theirs.lower()))


def _condition(where: str, text: Any) -> Condition:
    found = _CONDITION.match(text) if isinstance(text, str) else None
    if found is None or (found["neg"] and found["op"]):
        raise ProfileError(
            f"{where}: expected a condition such as \"nnodes > 1\", \"weights_gib < gpu_gib\", \"not gloo_socket_ifname\""
            f" or \"oom\", not {text!r}"
        )
    return Condition(text.strip(), found["fact"], bool(found["neg"]), found["op"], found["other"])


@dataclass(frozen=True, slots=True)
class Hint:
    id: str
    why: tuple[str, ...]  # templates; the first whose values are all known is used
    fix: tuple[str, ...] = ()  # action templates
    link: str = ""
    kinds: frozenset[str] = frozenset()  # error kind or category, compared case-insensitively
    pattern: Pattern | None = None  # searched in the message (errors) or the text (warnings)
    lines: Pattern | None = None  # searched in the error's traceback lines
    servers: frozenset[str] = frozenset()
    phases: frozenset[str] = frozenset()
    warning: bool = False
    either: bool = False  # match = "any": the kind or the pattern is enough (a renamed kind still matches)
    #: error kinds or categories that rule the hint out when the startup has one (fatal or not):
    #: evidence that the hint's advice cannot help (Ray said the GPUs are not there: no "give it longer")
    unless: frozenset[str] = frozenset()
    #: error kinds or categories the startup must also have (fatal or not), one at least: what says
    #: whose file the error is about (llama.cpp's "failed to load draft model" after its loader's
    #: "failed to open GGUF file": the draft's path, not -m's)
    alongside: frozenset[str] = frozenset()
    #: a warning that an earlier failure explains (vLLM's shm_broadcast waits after a worker died):
    #: not shown once the startup has a root cause before it
    noise: bool = False
    #: false: a warning about the next start's speed, not about this one's failure (a compile cache
    #: that does not load): not shown once the startup failed, where the failure's hints speak
    with_failure: bool = True
    #: only for the startup's root cause: the same line after an earlier failure is its consequence
    #: (a router that gave up on a server that had already died), and the advice would be wrong
    root: bool = False
    #: no error: a startup still under way whose log went quiet after a line like this (its last
    #: line) is doing what the hint says (vLLM downloading from the Hub shows no progress)
    quiet_after: Pattern | None = None
    #: what must be true in the log's own figures before the hint may prescribe its fix; one found
    #: false rules the hint out, one the log does not show makes it say ``unread`` instead
    when: tuple[Condition, ...] = ()
    #: the lesser sentence (no fix) said where a ``when`` cannot be read; none: the hint is skipped
    unread: str | None = None
    #: what rules the hint out where the log shows it (unknown does not): "weights_gib >= gpu_gib"
    not_if: tuple[Condition, ...] = ()
    #: a link per server ((server, url), ...), before ``link`` for that server's logs
    links: tuple[tuple[str, str], ...] = ()
    #: tried only for the startup's root cause, and only where no other hint spoke for the startup
    #: nor recognised the root cause and ruled itself out: its ``pattern`` reads the error's own
    #: lines (the exception's message and the lines that continue it, not the traceback's frames):
    #: the advice the error itself gives, quoted where nothing more specific is known
    fallback: bool = False
    #: a match whose text this finds is passed over (the next one is tried): advice known to
    #: mislead, or diagnostics that are no fix (``PYTORCH_CUDA_ALLOC_CONF``, ``NCCL_DEBUG``)
    exclude: Pattern | None = None

    def judge(self, values: Mapping[str, str], context: Context) -> tuple[bool | None, tuple[Evidence, ...]]:
        """Do the preconditions hold (None: one cannot be read), and what each read."""
        evidence: list[Evidence] = []
        verdict: bool | None = True
        for condition in self.not_if:
            holds, value = condition.check(values, context)
            evidence.append(Evidence(f"not if {condition.text}", value, None if holds is None else not holds))
            if holds:
                return False, tuple(evidence)
        for condition in self.when:
            holds, value = condition.check(values, context)
            evidence.append(Evidence(condition.text, value, holds))
            if holds is False:
                return False, tuple(evidence)
            if holds is None:
                verdict = None
        return verdict, tuple(evidence)


@dataclass(frozen=True, slots=True)
class Evidence:
    """One precondition a hint checked, the value the log gave (None: it said nothing), and
    whether it held (None: could not be read)."""

    check: str
    value: str | None
    holds: bool | None

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "value": self.value, "holds": self.holds}


@dataclass(frozen=True, slots=True)
class VersionRule:
    """A known-bad combination of installed packages (``check`` reads the versions)."""

    id: str
    package: str
    why: str
    below: str | None = None
    at_least: str | None = None
    other: str | None = None  # the second package of the combination
    other_below: str | None = None
    other_at_least: str | None = None
    fix: str = ""
    link: str = ""

    def matches(self, versions: Mapping[str, str]) -> bool:
        mine = versions.get(self.package)
        if mine is None or not _in_range(mine, self.at_least, self.below):
            return False
        if self.other is None:
            return True
        theirs = versions.get(self.other)
        return theirs is not None and _in_range(theirs, self.other_at_least, self.other_below)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """One hint, filled in with this log's numbers."""

    id: str
    why: str
    fix: tuple[Action, ...]
    link: str
    line: int | None = None  # the error's or warning's line
    warning: bool = False
    #: the preconditions checked and what the log said of each (why it fired, or said less)
    evidence: tuple[Evidence, ...] = ()
    #: the figures its sentence and fix were filled with ({name: value})
    figures: tuple[tuple[str, str], ...] = ()

    @property
    def text(self) -> str:
        """``why — set_env K=V; set_flag --x 1`` (the header, plain output, reports)."""
        fixes = "; ".join(a.text for a in self.fix)
        return f"{self.why} — {fixes}" if fixes else self.why

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "why": self.why, "fix": [a.text for a in self.fix], "link": self.link,
            "evidence": [e.to_json() for e in self.evidence], "figures": dict(self.figures),
        }


@dataclass(frozen=True, slots=True)
class SpeedHint:
    """What would make the next start faster (``kind = "speed"``): shown only when the startup
    profile has its ``evidence`` (``tui.core.startup_profile.evidence``), its sentence filled
    with the figures it rests on."""

    id: str
    evidence: str
    why: str
    link: str = ""
    server: str | None = None  # whose flags it names: only for that server's startups

    def advice(self, values: Mapping[str, str]) -> str | None:
        """The sentence with its figures in; None when one is missing (no advice without evidence)."""
        try:
            return self.why.format_map(dict(values))
        except (KeyError, IndexError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class Storage:
    """What a filesystem type says of a checkpoint's reads (``[storage]``): ``block`` ones lie on a
    local block device, so a read the page cache misses shows in ``/proc/PID/io`` ``read_bytes``;
    ``network`` ones (and FUSE) read over the network. Names may end in ``*`` (``fuse.*``)."""

    block: tuple[str, ...] = ()
    network: tuple[str, ...] = ()

    def kind(self, filesystem: str | None) -> str | None:
        """"block", "network" or None (not known, or not said)."""
        if not filesystem:
            return None
        for kind, names in (("block", self.block), ("network", self.network)):
            if any(fnmatch.fnmatchcase(filesystem, name) for name in names):
                return kind
        return None


@dataclass(frozen=True, slots=True)
class KnowledgeBase:
    hints: tuple[Hint, ...]
    versions: tuple[VersionRule, ...] = ()
    source: str = "hints.toml"
    speed: tuple[SpeedHint, ...] = ()
    storage: Storage = Storage()

    def link(self, default: str, server: str | None, links: Sequence[tuple[str, str]] = ()) -> str:
        """The link for a log of ``server``: its own one if the hint has one, else the default
        unless that is another server's page and not one of its own (a vLLM OOM does not send the
        reader to SGLang's issues; a user's profile of an SGLang fork that names SGLang's sites
        does); the default where the server is not known. Sites: each profile's (``server_sites``)."""
        if server is None:
            return default
        own = next((url for name, url in links if name == server), None)
        if own is not None:
            return own
        where = re.sub(r"^[a-z]+://", "", default)

        def on(sites: Iterable[str]) -> bool:
            return any(where == site or where.startswith(site + "/") for site in sites)

        sites = server_sites()
        if on(sites.get(server, ())):
            return default
        return "" if on(site for name, theirs in sites.items() if name != server for site in theirs) else default

    def speed_advice(self, evidence: Sequence[Any]) -> list[tuple[str, str]]:
        """``(sentence, link)`` of each speed hint whose evidence the startup profile found."""
        out = []
        for found in evidence:
            for hint in self.speed:
                if hint.server is not None and hint.server != found.values.get("server"):
                    continue
                if hint.evidence == found.name and (text := hint.advice(found.values)) is not None:
                    out.append((text, self.link(hint.link, found.values.get("server"))))
                    break
        return out

    def for_error(
        self,
        error: ErrorReport,
        *,
        server: str | None = None,
        phase: Phase | None = None,
        phases: Sequence[Phase] = (),
        command: ServerCommand | None = None,
        identity: Mapping[str, str] | None = None,
        seen: frozenset[str] = frozenset(),
        root: bool = True,
    ) -> Diagnosis | None:
        """The first hint that explains ``error`` (``phase``: the phase it happened in; ``identity``:
        what the log's argument lines said of the run, e.g. its memory fraction; ``seen``: the
        kinds and categories of every error of the startup, lower-case, for a hint's ``unless`` and ``alongside``;
        ``root``: whether ``error`` is the startup's root cause)."""
        return self._for_error(error, server, phase, phases, command, identity, seen, root, fallback=False)[0]

    def _for_error(
        self,
        error: ErrorReport,
        server: str | None,
        phase: Phase | None,
        phases: Sequence[Phase],
        command: ServerCommand | None,
        identity: Mapping[str, str] | None,
        seen: frozenset[str],
        root: bool,
        *,
        fallback: bool,
    ) -> tuple[Diagnosis | None, bool]:
        """The first hint that explains ``error`` (``fallback``: only the fallback hints, else only
        the others), and whether a hint recognised the error but was ruled out (its ``unless``, its
        ``root`` or its preconditions): then what the error itself advises is no safe fallback."""
        kinds = {k.lower() for k in (error.kind, error.category) if k}
        ruled_out = False
        read: dict[bool, list[str]] = {}  # what the patterns search, made once (fallback: the error's own words)
        for hint in self.hints:
            if hint.fallback != fallback:
                continue
            if hint.warning or hint.quiet_after is not None or (hint.servers and server not in hint.servers):
                continue
            if hint.alongside and not hint.alongside & seen:
                continue  # (not its error: what it is about is not in the log)
            barred = bool(hint.unless & seen) or (hint.root and not root)
            if hint.phases and (phase is None or phase.name not in hint.phases):
                continue
            kind_ok = not hint.kinds or bool(hint.kinds & kinds)
            if not kind_ok and not (hint.either and hint.pattern is not None):
                continue
            values: dict[str, str] = {}
            if hint.pattern is not None:
                texts = read.get(hint.fallback)
                if texts is None:
                    texts = read[hint.fallback] = _own_texts(error) if hint.fallback else _texts(error)
                found = _search(hint.pattern, texts, hint.exclude)
                if found is None and not (hint.either and kind_ok):
                    continue
                values.update(_groups(found) if found is not None else {})
            if hint.lines is not None:
                found = _search(hint.lines, [t for _, t in error.block] or [error.message])
                if found is None:
                    continue
                values.update(_groups(found))
            recognised = hint.pattern is not None or hint.lines is not None  # (it read the error's own words)
            if barred:
                ruled_out = ruled_out or recognised
                continue
            context = Context(
                error.message, phases, command, server, identity,
                block=[t for _, t in error.block], kinds=kinds, phase=phase,
            )
            diagnosis = _judged(hint, values, context, error.line, self.link(hint.link, context.server, hint.links))
            if diagnosis is not None:
                return diagnosis, ruled_out
            ruled_out = ruled_out or recognised
        return None, ruled_out

    def for_warning(self, text: str, *, line: int | None = None, server: str | None = None,
                    command: ServerCommand | None = None) -> Diagnosis | None:
        for hint in self.hints:
            if not hint.warning or hint.pattern is None or (hint.servers and server not in hint.servers):
                continue
            found = hint.pattern.search(text)
            if found is not None:
                context = Context(text, (), command, server)
                diagnosis = _judged(hint, _groups(found), context, line, self.link(hint.link, context.server, hint.links))
                if diagnosis is not None:
                    return diagnosis
        return None

    def diagnose(self, state: StartupState, command: ServerCommand | None = None) -> list[Diagnosis]:
        """Hints for the root-cause error (the one the verdict names), then for other fatal errors,
        then for the errors a signature named but that did not end the startup (before ready)."""
        out: dict[str, Diagnosis] = {}
        first = state.first_error
        seen = frozenset(k.lower() for e in state.errors for k in (e.kind, e.category) if k)
        recognised = False  # a hint knew the root cause and ruled itself out: no fallback either
        for error in to_diagnose(state):
            found, ruled_out = self._for_error(
                error, state.server, phase_at(state, error.line), state.phases, command, state.identity, seen,
                error is first, fallback=False,
            )
            recognised = recognised or (ruled_out and error is first)
            if found is not None and found.id not in out:
                out[found.id] = found
        if not out and first is not None and not recognised:  # the root cause's own advice, quoted
            found, _ = self._for_error(
                first, state.server, phase_at(state, first.line), state.phases, command, state.identity, seen, True,
                fallback=True,
            )
            if found is not None:
                out[found.id] = found
        out.update((d.id, d) for d in self.restart_advice(state) if d.id not in out)
        quiet = self.for_quiet(state, command)
        if quiet is not None and quiet.id not in out:
            out[quiet.id] = quiet
        return list(out.values())

    def for_quiet(self, state: StartupState, command: ServerCommand | None = None) -> Diagnosis | None:
        """A startup still under way, quiet after its last line: the first ``quiet_after`` hint that
        explains what the server is doing meanwhile."""
        if not quiet(state):
            return None
        for hint in self.hints:
            if hint.quiet_after is None or (hint.servers and state.server not in hint.servers):
                continue
            found = hint.quiet_after.search(state.last_text)
            if found is not None:
                context = Context(state.last_text, state.phases, command, state.server, state.identity)
                diagnosis = _judged(hint, _groups(found), context, state.last_line,
                                    self.link(hint.link, context.server, hint.links))
                if diagnosis is not None:
                    return diagnosis
        return None

    def restart_advice(self, state: StartupState) -> list[Diagnosis]:
        """Speed hints a startup not yet ready already has the evidence of (a restart in the same log
        whose torch.compile cache key changed: it compiles from scratch again)."""
        out = []
        for found in restart_evidence(state):
            for hint in self.speed:
                if hint.evidence == found.name and (text := hint.advice(found.values)) is not None:
                    out.append(Diagnosis(hint.id, text, (), self.link(hint.link, state.server)))
                    break
        return out

    def still_relevant(self, found: Diagnosis, state: StartupState) -> bool:
        """A warning's hint is shown unless it is noise after the startup's root cause, or a speed
        warning beside a failure."""
        hint = next((h for h in self.hints if h.id == found.id), None)
        if hint is None or not found.warning:
            return True
        if not hint.with_failure and state.outcome == FAILED:
            return False
        if not hint.noise:
            return True
        first = state.first_error
        return first is None or found.line is None or found.line < first.line

    def bad_versions(self, versions: Mapping[str, str]) -> list[VersionRule]:
        return [rule for rule in self.versions if rule.matches(versions)]


def hint_lines(hints: Sequence[Diagnosis], indent: str = "  ") -> list[str]:
    """``hint: why — fix`` and the link under it: how every text output (scan, plain, report) shows one."""
    out = []
    for hint in hints:
        where = f" (line {hint.line})" if hint.warning and hint.line else ""
        out.append(f"{indent}hint{where}: {hint.text}")
        if hint.link:
            out.append(f"{indent}      {hint.link}")
    return out


def phase_at(state: StartupState, line: int) -> Phase | None:
    """The phase running at ``line``: the latest one started at or before it and not ended before it."""
    found = None
    for phase in state.phases:
        if phase.start_line <= line and (phase.end_line is None or phase.end_line >= line):
            found = phase
    return found


# ------------------------------------------------------------------ filling in templates


def _groups(found: re.Match[str]) -> dict[str, str]:
    return {k: v for k, v in found.groupdict().items() if v is not None}


def _texts(error: ErrorReport) -> list[str]:
    """What a hint's ``pattern`` is searched in: the error's message, then each line of its block,
    then the block read as one text (a message wrapped over lines, as a terminal or an issue's
    excerpt breaks it). A message that is only a display's cut of one of the block's lines (a
    long line capped) is left out: a pattern that reads to a line's end must see the whole line,
    not mistake the cut for the log's."""
    return _read_as(error.message, [t for _, t in error.block])


#: Typographic quotes, and the straight ones they stand for.
_CURLY = re.compile("[\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f]")
_STRAIGHT = str.maketrans("\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f", "''''" + '""""')


def _read_as(message: str, lines: list[str]) -> list[str]:
    """``message``, then each of ``lines``, then ``lines`` joined (``_texts``: an error's whole block;
    ``_own_texts``: its lines from the message's on)."""
    cut = len(message) >= MESSAGE_CAP and any(message in t for t in lines)
    texts = lines if cut else [message, *lines]
    if len(lines) > 1:
        texts.extend(_joined(lines))
    # a paste that went through a word processor or an issue's Markdown has typographic quotes
    # ("cannot import name ‘x’ from ‘pkg’"): read as well with the straight ones the patterns name
    texts.extend([t.translate(_STRAIGHT) for t in texts if _CURLY.search(t)])
    return texts


def _joined(lines: list[str]) -> list[str]:
    """A block's lines read as one text: joined at a word's edge (a wrap between words, whose space
    the wrap ate), then joined as they stand (a paste hard-wrapped at a column splits a word or a
    figure from its bracket: "… KV cache (" / "3984). Try …" — issue 32, batch R: vllm#7526)."""
    spaced = " ".join(t.strip() for t in lines)
    packed = "".join(t.rstrip("\r\n") for t in lines)
    return [spaced] if packed == spaced else [spaced, packed]


def _own_texts(error: ErrorReport) -> list[str]:
    """The error's own words, what a fallback hint reads: its message and the block's lines from
    the message's line on (a message wrapped over lines continues there), then those lines read
    as one text — not the traceback's frames before it, whose source lines are other code's."""
    lines = [t for _, t in error.block]
    at = max((i for i, t in enumerate(lines) if error.message and error.message in t), default=None)
    return _read_as(error.message, lines[at:] if at is not None else [])


def _search(pattern: Pattern, texts: Iterable[str], exclude: Pattern | None = None) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``texts`` (with ``exclude``: the first whose text it does not find)."""
    for text in texts:
        if exclude is None:
            found = pattern.search(text)
            if found is not None:
                return found
            continue
        for found in pattern.finditer(text):
            if exclude.search(found.group(0)) is None:
                return found
    return None


def _judged(hint: Hint, values: dict[str, str], context: Context, line: int | None, link: str) -> Diagnosis | None:
    """The hint filled in where its preconditions hold; its lesser sentence (no fix) where one
    cannot be read; None where one is false (or the lesser sentence is missing). ``link``: the
    hint's link for this log's server (:meth:`KnowledgeBase.link`)."""
    holds, evidence = hint.judge(values, context)
    if holds is False:
        return None
    if holds is None:
        if hint.unread is None:
            return None
        why = render(hint.unread, values, context)
        if why is None:
            return None
        return Diagnosis(hint.id, why, (), link, line, hint.warning, evidence, _figures((hint.unread,), values, context))
    return _fill(hint, values, context, line, link, evidence)


def _fill(hint: Hint, values: dict[str, str], context: Context, line: int | None, link: str,
          evidence: tuple[Evidence, ...] = ()) -> Diagnosis | None:
    chosen = next(((t, text) for t in hint.why if (text := render(t, values, context)) is not None), None)
    if chosen is None:
        return None
    template, why = chosen
    actions, used = [], [template]
    for fix in hint.fix:
        text = render(fix, values, context)
        if text is not None:
            actions.append(Action.parse(text))
            used.append(fix)
    figures = _figures(used, values, context)
    return Diagnosis(hint.id, why, tuple(actions), link, line, hint.warning, evidence, figures)


def _figures(templates: Iterable[str], values: Mapping[str, str], context: Context) -> tuple[tuple[str, str], ...]:
    """The values the templates named, as they were filled in (``scan --json``'s figures)."""
    out: dict[str, str] = {}
    for template in templates:
        for _, field, _, _ in string.Formatter().parse(template):
            name = re.split(r"\*|//", field)[0] if field else ""
            if name and name not in out:
                value = values.get(name) or context.fact(name)
                if value is not None:
                    out[name] = value
    return tuple(out.items())


# ------------------------------------------------------------------ versions


def _version_key(text: str) -> tuple[int, ...]:
    """``2.5.1+cu124`` → (2, 5, 1); pre-release tags count as the release."""
    parts = []
    for piece in re.split(r"[.+-]", text):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def _in_range(version: str, at_least: str | None, below: str | None) -> bool:
    key = _version_key(version)
    if at_least is not None and key < _version_key(at_least):
        return False
    return below is None or key < _version_key(below)


# ------------------------------------------------------------------ loading


def parse(text: str, source: str) -> KnowledgeBase:
    """A knowledge base from TOML text; ``ProfileError`` with one line naming the bad key."""
    data = _read_toml(text, source)
    _table(source, data, {"hints", "versions", "storage"})
    hints_raw = data.get("hints") or []
    if not isinstance(hints_raw, list):
        raise ProfileError(f"{source}: hints: expected an array of tables ([[hints]])")
    hints, seen, speed = [], set(), []
    for i, body in enumerate(hints_raw):
        where = f"{source}: hints[{i}]"
        speedy = isinstance(body, dict) and body.get("kind") == "speed"
        body = _table(where, body, _SPEED_KEYS if speedy else _HINT_KEYS)
        hint_id = body.get("id")
        if not isinstance(hint_id, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", hint_id):
            raise ProfileError(f"{where}: 'id' is missing or not a short name such as \"context-length-override\"")
        if hint_id in seen:
            raise ProfileError(f"{where}: id {hint_id!r} is used twice")
        seen.add(hint_id)
        where = f"{source}: hints.{hint_id}"
        if speedy:
            speed.append(_speed_hint(where, hint_id, body))
            continue
        why = body.get("why")
        why_list = [why] if isinstance(why, str) else why
        if not why_list or not isinstance(why_list, list) or not all(isinstance(w, str) and w for w in why_list):
            raise ProfileError(f"{where}.why: expected one sentence (or a list of alternatives)")
        fixes = _strings(f"{where}.fix", body.get("fix"))
        for template in fixes:  # a fix must be an action once its values are in
            try:
                Action.parse(re.sub(r"\{[^}]*\}", "1", template))
            except ValueError as exc:
                raise ProfileError(f"{where}.fix: {exc}") from None
        pattern = body.get("pattern")
        lines = body.get("lines")
        kinds = _strings(f"{where}.kind", [body["kind"]] if isinstance(body.get("kind"), str) else body.get("kind"))
        warning = _bool(f"{where}.warning", body.get("warning"), False)
        quiet_after = body.get("quiet_after")
        if not kinds and pattern is None and lines is None and quiet_after is None:
            raise ProfileError(f"{where}: needs a 'kind', a 'pattern', 'lines' or 'quiet_after' to match")
        if quiet_after is not None and (kinds or pattern is not None or lines is not None or warning):
            raise ProfileError(f"{where}: 'quiet_after' matches a quiet log, not an error: no 'kind', 'pattern', 'lines' or 'warning' beside it")
        if warning and pattern is None:
            raise ProfileError(f"{where}: a warning hint needs a 'pattern'")
        match = body.get("match", "all")
        if match not in ("all", "any"):
            raise ProfileError(f"{where}.match: expected \"all\" (kind and pattern) or \"any\" (either)")
        link = body.get("link", "")
        if not isinstance(link, str):
            raise ProfileError(f"{where}.link: expected a URL string")
        links = body.get("links", {})
        if not isinstance(links, dict) or not all(isinstance(url, str) and url for url in links.values()):
            raise ProfileError(f"{where}.links: expected a URL per server, such as {{ vllm = \"https://…\" }}")
        when, not_if = body.get("when", []), body.get("not_if", [])
        for key, listed in (("when", when), ("not_if", not_if)):
            if not isinstance(listed, list):
                raise ProfileError(f"{where}.{key}: expected a list of conditions such as [\"nnodes > 1\"]")
        fallback = _bool(f"{where}.fallback", body.get("fallback"), False)
        exclude = body.get("exclude")
        if (fallback or exclude is not None) and (pattern is None or warning or quiet_after is not None):
            raise ProfileError(f"{where}: 'fallback' and 'exclude' read what an error's 'pattern' matched: they need one")
        unread = body.get("unread")
        if unread is not None and (not isinstance(unread, str) or not unread):
            raise ProfileError(f"{where}.unread: expected one sentence")
        if unread is not None and not when:
            raise ProfileError(f"{where}.unread: is said where a 'when' cannot be read, and there is no 'when'")
        hints.append(
            Hint(
                id=hint_id,
                why=tuple(why_list),
                fix=fixes,
                link=link,
                kinds=frozenset(k.lower() for k in kinds),
                pattern=_compile(f"{where}.pattern", pattern) if pattern is not None else None,
                lines=_compile(f"{where}.lines", lines) if lines is not None else None,
                servers=frozenset(_strings(f"{where}.server", _listed(body.get("server")))),
                phases=frozenset(_strings(f"{where}.phase", _listed(body.get("phase")))),
                warning=warning,
                either=match == "any",
                unless=frozenset(k.lower() for k in _strings(f"{where}.unless", _listed(body.get("unless")))),
                alongside=frozenset(k.lower() for k in _strings(f"{where}.alongside", _listed(body.get("alongside")))),
                noise=_bool(f"{where}.noise", body.get("noise"), False),
                with_failure=_bool(f"{where}.with_failure", body.get("with_failure"), True),
                root=_bool(f"{where}.root", body.get("root"), False),
                quiet_after=_compile(f"{where}.quiet_after", quiet_after) if quiet_after is not None else None,
                when=tuple(_condition(f"{where}.when[{n}]", c) for n, c in enumerate(when)),
                unread=unread,
                not_if=tuple(_condition(f"{where}.not_if[{n}]", c) for n, c in enumerate(not_if)),
                links=tuple(links.items()),
                fallback=fallback,
                exclude=_compile(f"{where}.exclude", exclude) if exclude is not None else None,
            )
        )
    versions = _versions(source, data.get("versions"))
    return KnowledgeBase(tuple(hints), versions, source, tuple(speed), _storage(source, data.get("storage")))


def _storage(source: str, value: Any) -> Storage:
    table = _table(f"{source}: storage", value, {"block", "network"})
    lists = {}
    for key in ("block", "network"):
        names = table.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise ProfileError(f"{source}: storage.{key}: expected a list of filesystem types such as \"ext4\"")
        lists[key] = tuple(names)
    return Storage(lists["block"], lists["network"])


_SPEED_KEYS = {"id", "kind", "evidence", "why", "link", "server"}
#: What a speed hint may rest on: the names ``tui.core.startup_profile.evidence`` gives.
SPEED_EVIDENCE = frozenset({"compile_cache_changed", "compile_cache_changed_on_restart", "graph_capture_many_sizes",
                            "download_in_load", "weight_load_storage_bound", "weight_load_network_filesystem"})


def _speed_hint(where: str, hint_id: str, body: Mapping[str, Any]) -> SpeedHint:
    evidence, why, link = body.get("evidence"), body.get("why"), body.get("link", "")
    if evidence not in SPEED_EVIDENCE:
        raise ProfileError(f"{where}.evidence: expected one of {', '.join(sorted(SPEED_EVIDENCE))}")
    if not isinstance(why, str) or not why:
        raise ProfileError(f"{where}.why: expected one sentence")
    if not isinstance(link, str):
        raise ProfileError(f"{where}.link: expected a URL string")
    server = body.get("server")
    if server is not None and not isinstance(server, str):
        raise ProfileError(f"{where}.server: expected a server's name such as \"sglang\"")
    return SpeedHint(hint_id, str(evidence), why, link, server)


def _listed(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _versions(source: str, value: Any) -> tuple[VersionRule, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ProfileError(f"{source}: versions: expected an array of tables ([[versions]])")
    out = []
    for i, body in enumerate(value):
        where = f"{source}: versions[{i}]"
        body = _table(where, body, _VERSION_KEYS)
        for key in ("id", "package", "why"):
            if not isinstance(body.get(key), str) or not body[key]:
                raise ProfileError(f"{where}: '{key}' is missing")
        for key in ("below", "at_least", "with_below", "with_at_least", "with", "fix", "link"):
            if key in body and not isinstance(body[key], str):
                raise ProfileError(f"{where}.{key}: expected a string")
        if "fix" in body:
            try:
                Action.parse(body["fix"])
            except ValueError as exc:
                raise ProfileError(f"{where}.fix: {exc}") from None
        out.append(
            VersionRule(
                id=body["id"], package=body["package"], why=body["why"], below=body.get("below"),
                at_least=body.get("at_least"), other=body.get("with"), other_below=body.get("with_below"),
                other_at_least=body.get("with_at_least"), fix=body.get("fix", ""), link=body.get("link", ""),
            )
        )
    return tuple(out)


def merge(user: KnowledgeBase, builtin: KnowledgeBase) -> KnowledgeBase:
    """The user's hints first; a user hint with a built-in id replaces the built-in one."""
    ids = {h.id for h in user.hints}
    version_ids = {v.id for v in user.versions}
    speed_ids = {h.id for h in user.speed}
    return KnowledgeBase(
        user.hints + tuple(h for h in builtin.hints if h.id not in ids),
        user.versions + tuple(v for v in builtin.versions if v.id not in version_ids),
        f"{user.source} + {builtin.source}",
        user.speed + tuple(h for h in builtin.speed if h.id not in speed_ids),
        Storage(user.storage.block + builtin.storage.block, user.storage.network + builtin.storage.network),
    )


_builtin: KnowledgeBase | None = None
_merged: dict[tuple[str, float], KnowledgeBase] = {}


def load_knowledge() -> KnowledgeBase:
    """:func:`knowledge`, with a bad file reported as a ``UsageError`` (one line, exit 2)."""
    try:
        return knowledge()
    except ProfileError as exc:
        raise UsageError(str(exc)) from None


def knowledge() -> KnowledgeBase:
    """The built-in hints, with the user's file (if there is one) merged in front.

    Raises ``ProfileError`` (one line) for a bad file, the user's or the built-in one.
    """
    global _builtin
    if _builtin is None:
        text = _builtin_text("hints")
        with trusted_patterns():  # a user's hints file: the linear-time engine (tui.core.linear)
            _builtin = parse(text, "hints.toml")
    path = user_path()
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return _builtin
    key = (str(path), stamp)
    if key not in _merged:
        try:
            text = read_text(path)  # a regular file, capped (tui.core.files)
        except (OSError, UnicodeDecodeError) as exc:
            raise ProfileError(f"{path}: cannot read the hints file: {getattr(exc, 'strerror', None) or exc}") from None
        _merged[key] = merge(parse(text, str(path)), _builtin)
    return _merged[key]
