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


def test_the_words_database_of_one_scan_is_the_next_scans_whatever_the_hash_seed(tmp_path):
    """Two `scan` processes, each with its own string hashing: the second loads the database the first
    kept (one file, rewritten by none). Ordered by length alone, the words' order followed the hash
    seed: no scan found the last one's, and each kept one more (2,929 files, 231 MB, here)."""
    from tests.support import run_cli

    log = tmp_path / "server.log"
    log.write_text("[2026-03-04 11:00:00] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
                   "[2026-03-04 11:00:05] The server is fired up and ready to roll!\n")
    cache = tmp_path / "cache" / "watchtower"
    seen = []
    for seed in ("1", "2"):
        done = run_cli("scan", "--json", log, env={"XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr
        seen.append({p.relative_to(cache): p.stat().st_mtime_ns for p in cache.glob("*/*")})
    # one database, and the programs and tables the first scan worked out: the second rewrote none of them
    assert sorted(p.parts[0] for p in seen[0]) == ["hyperscan", "programs", "programs"] and seen[1] == seen[0]


def test_a_cache_folder_keeps_only_its_newest_files(tmp_path):
    import os

    from tui.sources.hs_cache import KEEP

    store = DatabaseCache(tmp_path)
    for n in range(KEEP + 5):
        store.save(f"key{n:02d}", b"x")
        os.utime(tmp_path / f"key{n:02d}", ns=(n * 10**9, n * 10**9))  # (each save newer than the last)
    store.save("latest", b"y")
    assert sorted(stored(tmp_path)) == sorted(["latest", *(f"key{n:02d}" for n in range(6, KEEP + 5))])


def test_a_dashboard_command_keeps_what_it_compiled_and_a_command_that_compiles_nothing_reads_and_writes_nothing(tmp_path):
    """Every command runs keeping (``tui.sources.hs_cache.keeping``): a `watch` keeps the programs and
    tables it made for the next run, which takes them and rewrites none; `config` touches no cache."""
    from tests.support import run_cli

    log = tmp_path / "server.log"
    log.write_text("[2026-03-04 11:00:00] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
                   "[2026-03-04 11:00:05] The server is fired up and ready to roll!\n")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    cache = tmp_path / "cache" / "watchtower"
    done = run_cli("config", env=env)
    assert done.returncode == 0, done.stderr
    assert not cache.exists()
    seen = []
    for _ in range(2):
        done = run_cli("watch", "--plain", "--gpus", "none", log, env=env)
        assert done.returncode == 0 and "READY" in done.stdout, done.stderr
        seen.append({p.relative_to(cache): p.stat().st_mtime_ns for p in cache.glob("programs/*")})
    assert len(seen[0]) == 2 and seen[1] == seen[0]
