"""A cheap first test per line: does any of a set of patterns *possibly* match?

The tracker and the classifier run it before their real patterns on every line, so it is
built for speed: RE2's linear-time engine where it can stand in for Python's ``re``, and for
safety: never Python's backtracking ``re`` over the patterns of a user's file, which could freeze
on a line (``tui.core.linear``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from tui.core.linear import translate

try:  # linear-time engine for the per-line first test (a dependency where wheels exist)
    import re2 as _re2
except ImportError:  # pragma: no cover - depends on the platform's wheels
    _re2 = None

Pattern = re.Pattern[str]


class QuickTest:
    """``search(text)``: does any of the patterns *possibly* match? A cheap first test per line.

    Never says no where one of them matches; may say yes where none does (the caller
    then runs the real patterns). Uses RE2's linear-time engine on ASCII text, where
    its ``\\w``, ``\\d``, ``\\s`` and ``\\b`` mean what they mean in Python's ``re``
    (lookarounds dropped, which only loosens it); on other text RE2 again, the classes
    translated to Python's Unicode ones and ``\\b`` / ``\\B`` dropped too (looser still).
    Only where RE2 cannot take the patterns: each pattern's own ``search``.
    """

    __slots__ = ("_bodies", "_patterns", "_narrow", "_wide")

    def __init__(self, patterns: list[Pattern]) -> None:
        self._bodies = [_body(p.pattern) for p in patterns]
        self._patterns = patterns
        # RE2 programs for ASCII and for other text, each compiled on first need (a tracker builds
        # tests it may never run: the generic profile's, until the first line names the server),
        # False where RE2 cannot take the patterns
        self._narrow: Any = None
        self._wide: Any = None

    def search(self, text: str) -> Any:
        if text.isascii():
            if self._narrow is None:
                self._narrow = _narrow(self._bodies)
            if self._narrow is not False:
                return self._narrow.search(text)
        else:
            if self._wide is None:
                self._wide = _wide(self._bodies)
            if self._wide is not False:
                return self._wide.search(text)
        return next((found for p in self._patterns if (found := p.search(text)) is not None), None)


def _options() -> Any:
    options = _re2.Options()
    options.log_errors = False
    return options


def _narrow(bodies: list[str]) -> Any:
    """One RE2 program for ASCII text, lookarounds dropped; False where RE2 cannot."""
    if _re2 is None:
        return False
    try:
        return _re2.compile("|".join(f"(?:{_loose(b)})" for b in bodies), _options())
    except Exception:  # a construct RE2 lacks: each pattern's own search
        return False


def _wide(bodies: list[str]) -> Any:
    """One RE2 program for non-ASCII text, looser than the patterns; False where RE2 cannot."""
    if _re2 is None:
        return False
    try:
        return _re2.compile("|".join(f"(?:{translate(_loose(b), loose=True)})" for b in bodies), _options())
    except Exception:
        return False


def any_of(patterns: list[Pattern]) -> QuickTest | None:
    """The first test for ``patterns`` (None for none). The same patterns share one: every tracker
    builds the same few, and each is a compile."""
    if not patterns:
        return None
    # (a built-in pattern's flags are in its text, and asking for them would compile it)
    return _shared(tuple((type(p), p.pattern, p.flags if isinstance(p, re.Pattern) else 0) for p in patterns), patterns)


_SHARED = 64  # first tests kept for reuse (a handful per profile)


def _shared(key: tuple[tuple[type, str, int], ...], patterns: list[Pattern]) -> QuickTest:
    found = _tests.get(key)
    if found is None:
        if len(_tests) >= _SHARED:
            _tests.clear()
        found = _tests[key] = QuickTest(patterns)
    return found


_tests: dict[tuple[tuple[type, str, int], ...], QuickTest] = {}


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
