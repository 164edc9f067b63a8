"""What a run keeps for the next (tui.core.kept): an optimisation that can never change a result — a
kept program gives the pattern ``re.compile`` gives, a kept table the one ``tomllib`` parses, and what
cannot be read or is refused is made afresh."""

from __future__ import annotations

import re

import pytest

from tui.core.hints import knowledge
from tui.core.profiles import all_patterns, builtin_profiles
from tui.core.kept import Programs

LINES = [
    "[2026-03-04 11:00:03 TP0] Load weight begin. avail mem=78.00 GB",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB",
    "ERROR 08-14 11:00:14 [core.py:700] ValueError: No available memory for the cache blocks.",
    "0.00.010.969 E llama_model_load: error loading model: key not found in model: llama.context_length",
    "(APIServer pid=1) INFO 08-14 11:00:00 [api_server.py:1] vLLM API server version 0.10.1",
    "plain text with nothing in it, and ünïcode",
]


def builtin_patterns() -> list[str]:
    found = {p.pattern for profile in builtin_profiles() for p in all_patterns(profile)}
    for hint in knowledge().hints:
        found.update(p.pattern for p in (hint.pattern, hint.lines) if p is not None)
    return sorted(found)


def spans(pattern: re.Pattern[str]) -> list[object]:
    return [(m.span(), m.groupdict()) if (m := pattern.search(line)) else None for line in LINES]


def test_every_builtin_pattern_from_its_kept_program_is_the_one_re_compiles():
    patterns = builtin_patterns()
    first = Programs()
    first.take(None)  # (a scan's: nothing kept yet)
    for pattern in patterns:
        first.compile(pattern)
    assert first.fresh == len(patterns) > 300
    later = Programs()
    later.take(first.kept())
    for pattern in patterns:
        kept, fresh = later.compile(pattern), re.compile(pattern)
        assert (kept.pattern, kept.flags, kept.groups, kept.groupindex) == (fresh.pattern, fresh.flags, fresh.groups,
                                                                            fresh.groupindex), pattern
        assert spans(kept) == spans(fresh), pattern
    assert later.fresh == 0 and later.kept() is None  # nothing new: nothing to write


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],  # cut short
    lambda data: data.replace(b"Load weight", b"Load wEight"),  # another pattern's text: its program is not this one's
    lambda data: data[:-3] + bytes([data[-3] ^ 1]) + data[-2:],  # one bit of a program: the engine may take it
    lambda data: data[:40] + b"\xff" * 64 + data[104:],  # a header that reads wrong
])
def test_a_program_that_cannot_be_read_or_is_refused_is_compiled_afresh(damage):
    pattern = r"Load weight begin\. avail mem=(?P<avail>[\d.]+) GB"
    first = Programs()
    first.take(None)
    first.compile(pattern)
    later = Programs()
    later.take(damage(first.kept()))
    compiled = later.compile(pattern)
    assert spans(compiled) == spans(re.compile(pattern)) and compiled.groupindex == {"avail": 1}
    assert later.fresh == 1


def builtin_texts() -> dict[str, str]:
    from tui.core.profiles import BUILTIN, COMMON, _builtin_text

    return {name: _builtin_text(name) for name in (*BUILTIN, COMMON, "hints")}


def test_every_builtin_files_kept_table_is_the_one_tomllib_parses_and_each_caller_has_its_own():
    import tomllib

    from tui.core.kept import Tables

    first = Tables()
    first.take(None)
    for text in builtin_texts().values():
        first.parse(text, tomllib.loads)
    later = Tables()
    later.take(first.kept())
    for name, text in builtin_texts().items():
        table = later.parse(text, tomllib.loads)
        assert table == tomllib.loads(text), name
        table.clear()  # a caller that changes what it was given changes no other's
        assert later.parse(text, tomllib.loads) == tomllib.loads(text), name
    assert later.fresh == 0 and later.kept() is None


@pytest.mark.parametrize("damage", [lambda data: data[: len(data) // 2], lambda data: b"[]", lambda data: b'{"x": 1}'])
def test_kept_tables_that_cannot_be_read_are_parsed_afresh(damage):
    import tomllib

    from tui.core.kept import Tables

    text = 'name = "x"\n[prefix]\npattern = "^(?P<msg>.*)$"\n'
    first = Tables()
    first.take(None)
    first.parse(text, tomllib.loads)
    later = Tables()
    later.take(damage(first.kept()))
    assert later.parse(text, tomllib.loads) == tomllib.loads(text) and later.fresh == 1


def test_a_process_that_never_took_programs_or_tables_keeps_none():
    """A process that takes nothing (a test's, a library user's) compiles and parses as re and tomllib
    do, and has nothing to write."""
    import tomllib

    from tui.core.kept import Tables

    programs, tables = Programs(), Tables()
    assert programs.compile(r"Load weight (?P<what>\w+)").groupindex == {"what": 1}
    assert tables.parse('name = "x"\n', tomllib.loads) == {"name": "x"}
    assert programs.kept() is None and tables.kept() is None and programs.fresh == tables.fresh == 0


def test_what_is_taken_later_is_read_at_the_first_compile_or_parse_and_only_once():
    """``take_later``: a command that compiles and parses nothing never reads the kept files; one that
    does reads each once, at its first compile or parse, and keeps only what it made afresh."""
    from tui.core.kept import Tables, parse_toml

    text = 'name = "x"\n'
    pattern = r"Load weight (?P<what>\w+)"
    first_programs, first_tables = Programs(), Tables()
    first_programs.take(None)
    first_tables.take(None)
    first_programs.compile(pattern)
    first_tables.parse(text, parse_toml)
    made = {"programs": first_programs.kept(), "tables": first_tables.kept()}
    reads: list[str] = []

    def loader(kind: str):
        return lambda: reads.append(kind) or made[kind]

    programs, tables = Programs(), Tables()
    programs.take_later(loader("programs"))
    tables.take_later(loader("tables"))
    assert reads == [] and programs.kept() is None and tables.kept() is None  # nothing made: nothing read
    assert spans(programs.compile(pattern)) == spans(re.compile(pattern)) and programs.compile(pattern).groupindex == {"what": 1}
    assert tables.parse(text, parse_toml) == {"name": "x"} == tables.parse(text, parse_toml)
    assert reads == ["programs", "tables"]  # once each, at the first use
    assert programs.fresh == tables.fresh == 0 and programs.kept() is None and tables.kept() is None


def test_a_deferred_load_that_finds_nothing_compiles_afresh_and_keeps_it():
    from tui.core.kept import Tables, parse_toml

    programs, tables = Programs(), Tables()
    programs.take_later(lambda: None)  # (no file yet: the first run on a machine)
    tables.take_later(lambda: b"not json")
    assert programs.compile(r"KV Cache is allocated").search("x KV Cache is allocated") is not None
    assert tables.parse("a = 1\n", parse_toml) == {"a": 1}
    assert programs.fresh == tables.fresh == 1 and programs.kept() is not None and tables.kept() is not None


def test_parse_toml_is_tomllibs_parse_and_its_errors_are_value_errors():
    import tomllib

    from tui.core.kept import parse_toml

    text = '[colors]\nprimary = "#ff0000"\nlist = [1, 2]\n'
    assert parse_toml(text) == tomllib.loads(text)
    with pytest.raises(ValueError, match="at line 1"):
        parse_toml("[colors\n")
