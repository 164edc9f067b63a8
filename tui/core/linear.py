"""User-supplied patterns on a linear-time engine (RE2): no pattern can freeze the tool.

A user's profile (``--server PATH.toml``) and hints file (``WATCHTOWER_HINTS``) hold regexes
that run on every log line. Under Python's backtracking ``re`` a pattern such as ``(a+)+$``
or ``(x+x+)+y`` takes exponential time on a line it almost matches, inside one C call that
Ctrl-C cannot interrupt. :func:`compile_linear` runs such a pattern on RE2 instead, with
Python's meaning: ``\\d``, ``\\w`` and ``\\s`` are the Unicode classes Python's ``re`` uses on
``str`` (RE2's own are ASCII-only), ``\\Z`` is RE2's ``\\z``, ``\\uXXXX`` its ``\\x{XXXX}``.
What RE2 cannot run in linear time — look-arounds, back-references, atomic groups,
possessive quantifiers, conditionals — is refused with a :class:`LinearError` saying which.
Two differences remain: ``\\b`` / ``\\B`` treat non-ASCII letters as non-word characters, and
the classes follow RE2's Unicode tables (characters assigned after Python's own differ).

The result is duck-typed as ``re.Pattern[str]``: it has the methods the tracker uses
(``search``, ``match``, ``fullmatch``, ``findall``, ``finditer``, ``sub``, ``split``,
``pattern``, ``groups``, ``groupindex``), and its matches have ``group``, ``groupdict``,
``start``, ``end``, ``span``.
"""

from __future__ import annotations

import re
import warnings
from typing import Any, cast

try:  # a dependency where wheels exist (x86_64, aarch64)
    import re2 as _re2
except ImportError:  # pragma: no cover - depends on the platform's wheels
    _re2 = None

Pattern = re.Pattern[str]

AVAILABLE = _re2 is not None


class LinearError(ValueError):
    """A pattern that cannot run on the linear-time engine: the message says why, in a few words."""


_WORD = r"\p{L}\p{N}_"
_DIGIT = r"\p{Nd}"
# Python's \s on str: every character str.isspace() accepts (all below U+3001).
_SPACE = "".join(f"\\x{{{c:x}}}" for c in range(0x3001) if chr(c).isspace())
_OUTSIDE = {
    "d": _DIGIT,
    "D": r"\P{Nd}",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
}
_INSIDE = {"d": _DIGIT, "D": r"\P{Nd}", "w": _WORD, "s": _SPACE}
_OCTAL = set("01234567")


def translate(pattern: str, *, loose: bool = False) -> str:
    """``pattern`` (Python syntax) in RE2 syntax with Python's meaning; ``LinearError`` where RE2
    cannot do it. ``loose``: drop ``\\b`` / ``\\B`` too (a looser pattern: a first test that must
    never miss a match on non-ASCII text)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e in "dDwWsS":
                if in_class:
                    if e not in _INSIDE:
                        raise LinearError(f"\\{e} inside a character class is not supported (write [^…] instead)")
                    out.append(_INSIDE[e])
                else:
                    out.append(_OUTSIDE[e])
                i += 2
                continue
            if e == "Z" and not in_class:
                out.append(r"\z")
            elif e in "bB" and not in_class and loose:
                pass
            elif e == "b" and in_class:
                out.append(r"\x08")  # Python: a backspace inside a class
            elif e in "uU":
                width = 4 if e == "u" else 8
                digits = pattern[i + 2 : i + 2 + width]
                out.append(f"\\x{{{digits}}}")
                i += 2 + width
                continue
            elif e == "N":
                raise LinearError("named characters (\\N{…}) are not supported")
            elif e in "123456789" and not in_class and not (
                len(pattern) >= i + 4 and set(pattern[i + 1 : i + 4]) <= _OCTAL
            ):
                raise LinearError("back-references (\\1 …) are not supported")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":  # a literal ] first in the class
                j += 1
            out.append(pattern[i:j])
            i = j
            continue
        if c == "(" and pattern.startswith("(?", i):
            rest = pattern[i + 2 : i + 4]
            if rest[:1] in ("=", "!") or rest in ("<=", "<!"):
                raise LinearError("look-around assertions ((?=…), (?!…), (?<=…), (?<!…)) are not supported")
            if rest == "P=":
                raise LinearError("back-references ((?P=name)) are not supported")
            if rest[:1] == ">":
                raise LinearError("atomic groups ((?>…)) are not supported")
            if rest[:1] == "(":
                raise LinearError("conditional groups ((?(…)…)) are not supported")
            if rest[:1] == "#":
                raise LinearError("comments ((?#…)) are not supported")
            flags = re.match(r"[a-zA-Z-]*", pattern[i + 2 :])
            if flags is not None and "x" in flags.group():
                raise LinearError("verbose mode ((?x)) is not supported")
        out.append(c)
        i += 1
    return "".join(out)


def compile_linear(pattern: str) -> Pattern:
    """``pattern`` on RE2, with Python's meaning (see the module's docstring).

    Raises ``LinearError`` (one short reason) for what RE2 cannot run, ``re.error`` for what
    Python's own ``re`` would refuse. Without RE2 on this platform: Python's ``re``.
    """
    with warnings.catch_warnings():  # ("possible nested set" and the like: RE2 decides below)
        warnings.simplefilter("ignore")
        compiled = re.compile(pattern)  # Python's syntax first: its error messages, its group names
    if _re2 is None:  # pragma: no cover - depends on the platform's wheels
        return compiled
    if compiled.flags & re.VERBOSE:
        raise LinearError("verbose mode ((?x)) is not supported")
    if compiled.flags & re.ASCII:
        raise LinearError("the ASCII flag ((?a)) is not supported")
    options = _re2.Options()
    options.log_errors = False  # the refusal is ours to word, not RE2's to print on stderr
    try:
        engine = _re2.compile(translate(pattern), options)
    except _re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise LinearError(reason or "not supported by the linear-time engine") from None
    return cast(Pattern, LinearPattern(pattern, engine))


def recompile(like: Pattern, pattern: str) -> Pattern:
    """``pattern`` on the same engine as ``like`` (a pattern derived from a profile's own)."""
    return compile_linear(pattern) if isinstance(like, LinearPattern) else re.compile(pattern)


def is_linear(pattern: Any) -> bool:
    return isinstance(pattern, LinearPattern)


class LinearPattern:
    """An RE2 program behind ``re.Pattern``'s methods; ASCII text takes a short path (byte
    offsets are character offsets), other text RE2's own wrapper (which maps offsets)."""

    __slots__ = ("_engine", "_raw", "groupindex", "groups", "pattern")

    def __init__(self, pattern: str, engine: Any) -> None:
        self.pattern = pattern
        self._engine = engine
        self._raw = engine._regexp
        self.groups: int = engine.groups
        self.groupindex: dict[str, int] = dict(engine.groupindex)

    def _run(self, anchor: Any, text: str, pos: int, endpos: int | None) -> Any:
        if text.isascii():
            data = text.encode("ascii")
            end = len(data) if endpos is None else max(0, min(endpos, len(data)))
            start = max(0, min(pos, len(data)))
            if start > end:
                return None
            spans = self._raw.Match(anchor, data, start, end)
            if spans[0] == _NULL_SPAN:
                return None
            return _re2._Match(self._engine, text, start, end, spans)
        return next(self._engine._match(anchor, text, pos, endpos), None)

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        return self._run(_UNANCHORED, text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        return self._run(_ANCHOR_START, text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        return self._run(_ANCHOR_BOTH, text, pos, endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        return self._engine.finditer(text, pos, endpos)

    def findall(self, text: str, pos: int = 0, endpos: int | None = None) -> list[Any]:
        return list(self._engine.findall(text, pos, endpos))

    def sub(self, repl: Any, text: str, count: int = 0) -> str:
        return str(self._engine.sub(repl, text, count))

    def split(self, text: str, maxsplit: int = 0) -> list[str]:
        return list(self._engine.split(text, maxsplit))

    def __repr__(self) -> str:
        return f"compile_linear({self.pattern!r})"


if _re2 is not None:
    _UNANCHORED = _re2._Anchor.UNANCHORED
    _ANCHOR_START = _re2._Anchor.ANCHOR_START
    _ANCHOR_BOTH = _re2._Anchor.ANCHOR_BOTH
    _NULL_SPAN = _re2._NULL_SPAN
