"""The Hyperscan database cache (tui.sources.hs_cache): an optimisation that can never change a result."""

from __future__ import annotations

import pytest

from tui.core import scan as core_scan
from tui.core.scan import Prefilter
from tui.sources.hs_cache import DatabaseCache, cache_dir

pytestmark = pytest.mark.skipif(core_scan._hs is None, reason="no Hyperscan wheel here")

LOG = b"nothing\n[TP0] Load weight begin\nDecode batch\nKV Cache is allocated\n"


def hits(words: tuple[str, ...], store=None) -> list[int]:
    return list(Prefilter(words, store=store).positions(LOG))


def at(word: bytes) -> int:
    """Where a search reports ``word``: at its last byte."""
    return LOG.index(word) + len(word) - 1


def stored(directory) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir()}


def test_a_database_is_kept_and_loaded_for_the_same_words(tmp_path):
    saved = []

    class Watched(DatabaseCache):
        def save(self, key: str, data: bytes) -> None:  # (what follows a compile, never a load)
            saved.append(key)
            super().save(key, data)

    store = Watched(tmp_path / "db")
    first = hits(("Load weight",), store)
    [(name, data)] = stored(tmp_path / "db").items()
    assert saved == [name]
    assert hits(("Load weight",), store) == first == [at(b"Load weight")] and saved == [name]
    assert stored(tmp_path / "db") == {name: data}


@pytest.mark.parametrize("damage", [lambda data: data[: len(data) // 2], lambda data: b"\0" * len(data), lambda data: b""])
def test_a_corrupt_or_truncated_file_is_ignored_and_rewritten(tmp_path, damage):
    store = DatabaseCache(tmp_path)
    expected = hits(("Load weight", "KV Cache"), store)
    [(name, data)] = stored(tmp_path).items()
    (tmp_path / name).write_bytes(damage(data))
    assert hits(("Load weight", "KV Cache"), store) == expected and len(expected) == 2
    assert stored(tmp_path) == {name: data}


def test_a_database_for_other_words_is_never_used(tmp_path):
    store = DatabaseCache(tmp_path)
    assert hits(("Load weight",), store) == [at(b"Load weight")]
    assert hits(("KV Cache",), store) == [at(b"KV Cache")]
    assert hits(("Decode",), store) == [at(b"Decode")]
    assert len(stored(tmp_path)) == 3


def test_an_unwritable_cache_costs_only_the_compile(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert hits(("Load weight",), DatabaseCache(blocker / "db")) == [at(b"Load weight")]
    assert blocker.read_text() == "not a directory"


def test_the_cache_lives_under_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "watchtower" / "hyperscan"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "watchtower" / "hyperscan"
