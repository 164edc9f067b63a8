"""What a run works out from the built-in files the same way every time, kept for the next: the
patterns' compiled programs and the TOML files' parsed tables.

Python's ``re`` compiles a pattern in Python (its parser and compiler) into a program, a list of
integers, which it hands to its C engine (``_sre.compile``); ``tomllib`` parses a file in Python
too. A `scan` compiles some two hundred of the profiles' patterns and parses six files, a sixth of
its fixed cost (bench/scan.py). A release's files give the same programs and tables every run, so
they are kept (files in the user's cache: ``tui.sources.hs_cache``): a program is handed to the
engine as it is (which checks it before it takes it), a table is read as JSON. Everything here is an
optimisation: what is missing, from another Python, cut short or refused is made afresh, and the
core does no I/O (the caller reads and writes what ``take`` and ``kept`` exchange).
"""

from __future__ import annotations

import importlib
import json
import re
import struct
import sys
from array import array
from collections.abc import Callable
from typing import Any

try:  # Python's own compiler and engine, as re.compile uses them (private, so each use is guarded)
    _sre: Any = importlib.import_module("_sre")
    _parser: Any = importlib.import_module("re._parser")
    _compiler: Any = importlib.import_module("re._compiler")
except ImportError:  # pragma: no cover - another Python implementation
    _sre = None

#: Under which name the tables are kept (JSON: the same for every Python).
TABLES_KEY = "tables-1"
#: Under which name the programs are kept: they hold only for this Python's engine.
KEY = f"programs-{sys.implementation.cache_tag}-{getattr(_sre, 'MAGIC', 0)}-{getattr(_sre, 'CODESIZE', 0)}"
#: Programs kept at most (the patterns of a few releases): past it, only those this run used.
KEPT_MAX = 4096
# the records' checksum (SHA-256), first; then each program's record: its pattern's and group names'
# lengths in bytes, its flags, its groups, its length (in 32-bit words), and those four
_DIGEST = 32
_HEAD = struct.Struct("<IIIII")


class _Keeper:
    """What ``Programs`` and ``Tables`` share: until ``take`` (or ``take_later``), nothing is kept and
    each compile or parse is the plain one (a process that keeps nothing does no work for a file it
    never writes)."""

    def __init__(self) -> None:
        self._keeping = False
        self._load: Callable[[], bytes | None] | None = None
        #: Made afresh in this process (nothing kept for it, or what was kept refused).
        self.fresh = 0

    def take(self, data: bytes | None) -> None:
        """What ``kept`` gave an earlier run (``data``; None: nothing kept yet), kept from now on."""
        self._keeping = True
        self._load = None
        self._read(data)

    def _read(self, data: bytes | None) -> None:
        raise NotImplementedError

    def take_later(self, load: Callable[[], bytes | None]) -> None:
        """``take(load())``, at the first compile or parse: a command that makes nothing (`config`)
        reads no file, and one that does pays for the read only then."""
        self._keeping = True
        self._load = load

    def _taken(self) -> None:
        """What ``take_later`` deferred, taken now (once; nothing where nothing waits)."""
        load, self._load = self._load, None
        if load is not None:
            self.take(load())


class Programs(_Keeper):
    """Patterns compiled from the programs of an earlier run where they are given (``take``), afresh
    where not; what a later run may take (``kept``)."""

    def __init__(self) -> None:
        super().__init__()
        self._kept: dict[str, tuple[int, int, str, bytes]] = {}  # pattern -> flags, groups, names, program
        self._used: dict[str, tuple[int, int, str, bytes]] = {}

    def _read(self, data: bytes | None) -> None:
        """The programs ``kept`` gave an earlier run; none where their checksum is not theirs (a file
        cut short or damaged: a program changed in a way the engine still takes would match
        otherwise), and what cannot be read is passed over."""
        kept: dict[str, tuple[int, int, str, bytes]] = {}
        at = _DIGEST
        if not data or _digest(data[_DIGEST:]) != data[:_DIGEST]:
            data = b""
        try:
            while at < len(data):
                size, names_size, flags, groups, length = _HEAD.unpack_from(data, at)
                at += _HEAD.size
                pattern = data[at : at + size].decode()
                at += size
                names = data[at : at + names_size].decode()
                at += names_size
                program = data[at : at + 4 * length]
                at += 4 * length
                if len(program) != 4 * length:
                    break
                kept[pattern] = (flags, groups, names, program)
        except (struct.error, UnicodeDecodeError):
            pass
        self._kept = kept

    def compile(self, pattern: str) -> re.Pattern[str]:
        """``re.compile(pattern)``, from its kept program where there is one."""
        if not self._keeping:
            return re.compile(pattern)
        self._taken()
        found = self._kept.get(pattern)
        if found is not None:
            try:
                compiled = _engine(pattern, *found)
            except Exception:  # refused (the engine checks each program), or not this Python's
                compiled = None
            if compiled is not None:
                self._used[pattern] = found
                return compiled
        self.fresh += 1
        made = _program(pattern)
        if made is not None:
            try:
                compiled = _engine(pattern, *made)
            except Exception:  # an engine that takes its programs otherwise (another Python's)
                compiled = None
            if compiled is not None:
                self._used[pattern] = made
                return compiled
        return re.compile(pattern)  # (and a pattern that does not parse says why here)

    def kept(self) -> bytes | None:
        """The programs a later run may take; None where this run compiled none afresh (the kept
        ones hold)."""
        if not self.fresh:
            return None
        programs = {**self._kept, **self._used} if len(self._kept) + len(self._used) <= KEPT_MAX else self._used
        out = bytearray()
        for pattern, (flags, groups, names, program) in programs.items():
            text, named = pattern.encode(), names.encode()
            out += _HEAD.pack(len(text), len(named), flags, groups, len(program) // 4) + text + named + program
        return _digest(out) + bytes(out)


def _digest(data: bytes | bytearray) -> bytes:
    """``data``'s SHA-256 (hashlib, imported at the first use: it loads OpenSSL, 2.5 ms that a command
    which compiles and parses nothing need not pay)."""
    import hashlib

    return hashlib.sha256(data).digest()


def _program(pattern: str) -> tuple[int, int, str, bytes] | None:
    """What ``re.compile`` hands the engine for ``pattern``: its flags, groups, group names
    ("name:index …") and program; None where this Python's compiler is not the one known."""
    if _sre is None:
        return None
    try:
        parsed = _parser.parse(pattern, 0)
        code = array("I", _compiler._code(parsed, 0))
        names = " ".join(f"{name}:{index}" for name, index in parsed.state.groupdict.items())
        return int(parsed.state.flags), parsed.state.groups - 1, names, code.tobytes()
    except Exception:  # a pattern that does not parse, or another release's internals: re.compile's to say
        return None


def _engine(pattern: str, flags: int, groups: int, names: str, program: bytes) -> re.Pattern[str]:
    """The engine's compiled pattern from a program, as ``re._compiler.compile`` makes it."""
    index = {name: int(at) for name, _, at in (item.partition(":") for item in names.split())}
    by_number: list[str | None] = [None] * (groups + 1)
    for name, at in index.items():
        by_number[at] = name
    code = array("I")
    code.frombytes(program)
    compiled: re.Pattern[str] = _sre.compile(pattern, flags, code.tolist(), groups, index, tuple(by_number))
    return compiled


def parse_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)``; its errors are ValueErrors (``TOMLDecodeError``). ``tomllib`` is
    imported at the first parse: a command whose files were all parsed before (``Tables``) never
    loads it, nor its ``datetime`` (4 ms of every `scan`, issue 35)."""
    import tomllib

    return tomllib.loads(text)


class Tables(_Keeper):
    """TOML texts parsed into their tables: from an earlier run's (``take``) where it parsed the same
    text, afresh where not; what a later run may take (``kept``). Each table is kept as its JSON
    text, and read from it anew for each caller (none shares, or can change, another's)."""

    def __init__(self) -> None:
        super().__init__()
        self._kept: dict[str, str] = {}  # the TOML text's SHA-256 -> its table as JSON
        self._used: dict[str, str] = {}

    def _read(self, data: bytes | None) -> None:
        """The tables ``kept`` gave an earlier run; none where they cannot be read."""
        try:
            kept = json.loads(data) if data else {}
        except (ValueError, RecursionError):
            kept = {}
        self._kept = {k: v for k, v in kept.items() if isinstance(v, str)} if isinstance(kept, dict) else {}

    def parse(self, text: str, parse: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
        """``parse(text)``, or the table an earlier run's parse of the same text gave."""
        if not self._keeping:
            return parse(text)
        self._taken()
        key = _digest(text.encode()).hex()
        found = self._kept.get(key)
        if found is not None:
            try:
                table = json.loads(found)
            except (ValueError, RecursionError):
                table = None
            if isinstance(table, dict):
                self._used[key] = found
                return table
        self.fresh += 1
        table = parse(text)
        try:
            self._used[key] = json.dumps(table)
        except (TypeError, ValueError):  # what JSON cannot hold (TOML's dates: no built-in file has one)
            pass
        return table

    def kept(self) -> bytes | None:
        """The tables a later run may take; None where this run parsed none afresh."""
        return json.dumps(self._used).encode() if self.fresh else None


#: The process's programs (built-in patterns compile through it: ``tui.core.profiles``).
PROGRAMS = Programs()
#: The process's parsed tables (the profiles' and hints' files parse through it).
TABLES = Tables()
