"""A cheap first test per line: does any of a set of patterns *possibly* match?

The tracker and the classifier run it before their real patterns on every line, so it is
built for speed: RE2's linear-time engine where it can stand in for Python's ``re``, and for
safety: never Python's backtracking ``re`` over the patterns of a user's file, which could freeze
on a line (``tui.core.linear``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from tui.core.linear import translate

try:  # linear-time engine for the per-line first test (a dependency where wheels exist)
    import re2 as _re2
except ImportError:  # pragma: no cover - depends on the platform's wheels
    _re2 = None
#: RE2's unanchored search and its no-match span, where this google-re2 release has them by these names.
_UNANCHORED = getattr(getattr(_re2, "_Anchor", None), "UNANCHORED", None)
_NULL_SPAN = getattr(_re2, "_NULL_SPAN", None)

Pattern = re.Pattern[str]

K = TypeVar("K")
V = TypeVar("V")

#: What a ``Memo`` keeps at most: answers (then it starts over), and the longest text it keeps one for.
MEMO_ANSWERS = 1024
MEMO_TEXT = 1000
#: Questions a first test answers with the patterns' own searches before it compiles its RE2 programs.
EXACT_ASKS = 64


class Memo(Generic[K, V]):
    """Answers that depend on a line's text alone, kept per text, within bounds whatever the log
    holds. A log says the same few messages again and again (a startup-dense log, a thousand
    startups of some twenty messages each): each is worked out once, not once a startup."""

    __slots__ = ("_answers",)

    def __init__(self) -> None:
        self._answers: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        return self._answers.get(key)

    def keep(self, key: K, text: str, answer: V) -> None:
        """Keep ``answer`` for ``key``, whose text is ``text`` (not kept if it is very long)."""
        if len(text) <= MEMO_TEXT:
            if len(self._answers) >= MEMO_ANSWERS:
                self._answers.clear()
            self._answers[key] = answer


# Both tests below remember their last answer: the ranks of a startup print the same message one
# after another ("[TP0] Load weight begin." … "[TP7] Load weight begin."), and the message is what
# they are asked about, so on a startup-dense log 7 questions in 8 are the last one again; comparing
# two strings costs far less than encoding the text and running the program.


class _Prefilter:
    """What both tests below share: the patterns' bodies, an RE2 program for ASCII text and one for
    other text, each compiled once the test has been asked ``EXACT_ASKS`` times (a tracker builds
    tests it may never run: the generic profile's, until the first line names the server), False
    where RE2 cannot take the patterns; and the last answer, remembered (see above)."""

    __slots__ = ("_bodies", "_patterns", "_narrow", "_wide", "_last", "_asked")

    def __init__(self, patterns: list[Pattern]) -> None:
        self._bodies = [_body(p.pattern) for p in patterns]
        self._patterns = patterns
        self._narrow: Any = None
        self._wide: Any = None
        self._last: tuple[str, Any] = ("", None)  # the last text asked about, and the answer
        self._asked = 0  # questions answered by the patterns themselves, before any program

    def _ask(self, text: str) -> Any:
        last = self._last
        if text == last[0] and text:
            return last[1]
        wide = not text.isascii()
        program = self._wide if wide else self._narrow
        if program is None:
            program = self._program(wide=wide)
        found = self._answer(text, program)
        self._last = (text, found)
        return found

    def _program(self, *, wide: bool) -> Any:
        """The program for ``wide`` (non-ASCII) or ASCII text, compiled now; False (each pattern's
        own search: exact, so the answers are the same) for the first ``EXACT_ASKS`` questions.

        An RE2 program costs milliseconds to compile and to build its automaton's first states,
        what a thousand searches by the patterns themselves cost: a serving log asks a test some
        tens of times (the few lines its prefilter words let through), and a `scan` of it would
        spend more on the programs than on the log. A startup-dense log asks millions of times."""
        if self._asked < EXACT_ASKS:
            self._asked += 1
            return False
        program = self._compile(wide=wide)
        if wide:
            self._wide = program
        else:
            self._narrow = program
        return program

    def _compile(self, *, wide: bool) -> Any:
        raise NotImplementedError

    def _answer(self, text: str, program: Any) -> Any:
        raise NotImplementedError


class QuickTest(_Prefilter):
    """``search(text)``: does any of the patterns *possibly* match? A cheap first test per line.

    Never says no where one of them matches; may say yes where none does (the caller
    then runs the real patterns). Uses RE2's linear-time engine on ASCII text, where
    its ``\\w``, ``\\d``, ``\\s`` and ``\\b`` mean what they mean in Python's ``re``
    (lookarounds dropped, which only loosens it); on other text RE2 again, the classes
    translated to Python's Unicode ones and ``\\b`` / ``\\B`` dropped too (looser still).
    Only where RE2 cannot take the patterns: each pattern's own ``search``.
    """

    __slots__ = ()

    #: ``search(text)``: something (True, or a match) where one of the patterns may match ``text``; None
    #: where none does. ``_ask`` itself, not a method calling it: a first test runs on every line.
    search = _Prefilter._ask

    def _compile(self, *, wide: bool) -> Any:
        return _wide(self._bodies) if wide else _narrow(self._bodies)

    def _answer(self, text: str, program: Any) -> Any:
        if program is not False:
            return program(text)
        return next((found for p in self._patterns if (found := p.search(text)) is not None), None)


class Candidates(_Prefilter):
    """``which(text)``: the indices of the patterns that *possibly* match ``text``, ascending.

    One RE2 set program a line instead of one search per pattern: the phase book tries some fifty
    markers on each line, and on a startup-dense log nearly every line holds a marker word, so
    the prefilter lets them all through. Loose as ``QuickTest`` is (never leaves out a pattern
    that matches; may name one that does not, and the caller then runs it); where RE2 cannot take
    the patterns, each pattern's own ``search`` says exactly which match.
    """

    __slots__ = ()

    #: ``which(text)``: the indices, ascending (``_ask`` itself: the phase book asks it on every line).
    which = _Prefilter._ask

    def _compile(self, *, wide: bool) -> Any:
        return _set([translate(_loose(b), loose=True) if wide else _loose(b) for b in self._bodies])

    def _answer(self, text: str, program: Any) -> tuple[int, ...]:
        if program is not False:
            found: list[int] = program.Match(text.encode())
            if len(found) > 1:
                found.sort()
            return tuple(found)
        return tuple(i for i, p in enumerate(self._patterns) if p.search(text) is not None)


def _set(bodies: list[str]) -> Any:
    """One RE2 set program (its raw matcher: a list of indices, no wrapper); False where RE2 cannot
    take every body (then none is left to a second engine: the caller's gate stays one rule)."""
    if _re2 is None or _UNANCHORED is None or not bodies:
        return False
    try:
        program = _re2._re2.Set(_UNANCHORED, _options())
        for body in bodies:
            if program.Add(body.encode()) < 0:
                return False
        return program if program.Compile() else False
    except Exception:  # another google-re2 release, or a construct RE2 lacks
        return False


class _Possible:
    """An RE2 program asked only yes or no: RE2's own matcher called on the line's bytes, without
    the Python wrapper's span bookkeeping around each call (a first test runs on every line: ~3 µs
    a line against ~10; a startup-dense log is several such tests a line). Where the wrapper's
    internals differ (another google-re2 release), its ``search``."""

    __slots__ = ("_match", "_search")

    def __init__(self, program: Any) -> None:
        raw = getattr(program, "_regexp", None)
        self._match = getattr(raw, "Match", None) if _UNANCHORED is not None else None
        self._search = program.search

    def __call__(self, text: str) -> Any:
        if self._match is None:
            return self._search(text)
        data = text.encode()
        return True if self._match(_UNANCHORED, data, 0, len(data))[0] != _NULL_SPAN else None


def bytes_search(pattern: bytes) -> Callable[[bytes, int], int]:
    """Where ``pattern`` first matches in the bytes it is given at or after an offset (-1: nowhere):
    RE2's own matcher called on them where this google-re2 release has it (as ``_Possible``: no
    wrapper's span bookkeeping), else the compiled pattern's ``search``. For a pattern that never
    matches across a newline, one search a hit tells the lines of a chunk apart: a flood's chunk
    holds one URL and a thousand lines without a secret, and each line need not be asked alone."""
    program = (_re2 or re).compile(pattern)
    raw = getattr(getattr(program, "_regexp", None), "Match", None)
    if raw is None or _UNANCHORED is None:
        search = program.search

        def find(data: bytes, pos: int) -> int:
            match = search(data, pos)
            return -1 if match is None else match.start()

        return find

    def raw_find(data: bytes, pos: int) -> int:
        span = raw(_UNANCHORED, data, pos, len(data))[0]
        return -1 if span == _NULL_SPAN else span[0]

    return raw_find


#: RE2's memory budget for one first test's automaton. At RE2's default (8 MiB) the whole-line
#: test of a profile (~90 patterns) fills its DFA cache over and over on a startup-dense log and
#: falls back to the NFA: 90 µs a line instead of 5 (16 MiB was enough there). A budget, not an
#: allocation: the cache grows only as far as the lines seen need.
_MAX_MEM = 32 << 20


def _options() -> Any:
    options = _re2.Options()
    options.log_errors = False
    options.never_capture = True  # a yes or no: no group is ever read
    options.max_mem = _MAX_MEM
    return options


def _narrow(bodies: list[str]) -> Any:
    """One RE2 program for ASCII text, lookarounds dropped; False where RE2 cannot."""
    if _re2 is None:
        return False
    try:
        return _Possible(_re2.compile("|".join(f"(?:{_loose(b)})" for b in bodies), _options()))
    except Exception:  # a construct RE2 lacks: each pattern's own search
        return False


def _wide(bodies: list[str]) -> Any:
    """One RE2 program for non-ASCII text, looser than the patterns; False where RE2 cannot."""
    if _re2 is None:
        return False
    try:
        return _Possible(_re2.compile("|".join(f"(?:{translate(_loose(b), loose=True)})" for b in bodies), _options()))
    except Exception:
        return False


def any_of(patterns: list[Pattern]) -> QuickTest | None:
    """The first test for ``patterns`` (None for none). The same patterns share one: every tracker
    builds the same few, and each is a compile."""
    if not patterns:
        return None
    found = _shared(QuickTest, patterns)
    assert isinstance(found, QuickTest)
    return found


def candidates(patterns: list[Pattern]) -> Candidates:
    """The ``Candidates`` of ``patterns``, shared as ``any_of``'s tests are."""
    found = _shared(Candidates, patterns)
    assert isinstance(found, Candidates)
    return found


_SHARED = 64  # first tests kept for reuse (a handful per profile)


def _shared(kind: type[QuickTest] | type[Candidates], patterns: list[Pattern]) -> QuickTest | Candidates:
    # (a built-in pattern's flags are in its text, and asking for them would compile it)
    key = (kind, tuple((type(p), p.pattern, p.flags if isinstance(p, re.Pattern) else 0) for p in patterns))
    found = _tests.get(key)
    if found is None:
        if len(_tests) >= _SHARED:
            _tests.clear()
        found = _tests[key] = kind(patterns)
    return found


_tests: dict[tuple[type, tuple[tuple[type, str, int], ...]], QuickTest | Candidates] = {}


@functools.lru_cache(maxsize=4096)
def _body(pattern: str) -> str:
    """``pattern`` with its named groups plain (RE2 and the alternation need no names)."""
    return _NAMED_GROUP.sub("(?:", pattern)


@functools.lru_cache(maxsize=4096)
def _loose(body: str) -> str:
    return _drop_lookarounds(body)


def _drop_lookarounds(pattern: str) -> str:
    """``pattern`` without its ``(?=…)`` / ``(?!…)`` / ``(?<=…)`` / ``(?<!…)`` groups (a looser regex)."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            depth = 0
            while i < n:
                c = pattern[i]
                if c == "\\":
                    i += 2
                    continue
                if c == "[":  # a class may hold parentheses
                    i = _class_end(pattern, i)
                    continue
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                    if depth == 0:
                        i += 1
                        break
                i += 1
            continue
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
        elif c == "[":
            end = _class_end(pattern, i)
            out.append(pattern[i:end])
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _class_end(pattern: str, i: int) -> int:
    """Index just past the character class that starts at ``pattern[i] == "["``."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
