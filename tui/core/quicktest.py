"""A cheap first test per line: does any of a set of patterns *possibly* match?

The tracker and the classifier run it before their real patterns on every line, so it is
built for speed: RE2's linear-time engine where it can stand in for Python's ``re``.
"""

from __future__ import annotations

import re
from typing import Any

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
    (lookarounds dropped, which only loosens it); Python's ``re`` otherwise.
    """

    __slots__ = ("_bodies", "_re", "_re2")

    def __init__(self, patterns: list[Pattern]) -> None:
        bodies = [_NAMED_GROUP.sub("(?:", p.pattern) for p in patterns]
        self._bodies = bodies
        self._re: Pattern | None = None  # compiled on first need: most text is ASCII
        self._re2 = None
        if _re2 is not None:
            try:
                self._re2 = _re2.compile("|".join(f"(?:{_drop_lookarounds(b)})" for b in bodies))
            except Exception:  # a construct RE2 lacks: Python's re does it all
                self._re2 = None

    def search(self, text: str) -> Any:
        if self._re2 is not None and text.isascii():
            return self._re2.search(text)
        if self._re is None:
            self._re = re.compile("|".join(f"(?:{b})" for b in self._bodies))
        return self._re.search(text)


def any_of(patterns: list[Pattern]) -> QuickTest | None:
    return QuickTest(patterns) if patterns else None


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
