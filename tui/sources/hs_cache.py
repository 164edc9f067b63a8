"""Compiled Hyperscan databases kept on disk between runs (``$XDG_CACHE_HOME/watchtower/hyperscan``).

Compiling the prefilter words' database is a fixed cost of every `scan`, as long as reading
a few megabytes of log; loading a serialised one takes microseconds. Each file is named by
the key ``tui.core.scan`` derives from the exact words, flags and Hyperscan release, so a
database is only ever loaded for the words it was compiled from. Everything here is an
optimisation: a file that cannot be read or written costs the compile and nothing else.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tui.core.kept import KEY as PROGRAMS_KEY
from tui.core.kept import PROGRAMS, TABLES, TABLES_KEY


def cache_dir(kind: str = "hyperscan") -> Path:
    """``$XDG_CACHE_HOME/watchtower/KIND`` (default ``~/.cache``): ``hyperscan`` for the prefilter's
    databases, ``programs`` for the built-in patterns' compiled programs and files' parsed tables
    (``tui.core.kept``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "watchtower" / kind


#: Files kept in one cache folder at most: the newest (a few releases' words or patterns).
KEEP = 16


@dataclass(frozen=True)
class DatabaseCache:
    """Serialised databases by key, one file each (``tui.core.scan.DatabaseStore``); equal for the same
    directory, so ``prefilter``'s own cache keeps one prefilter per word set and folder."""

    directory: Path

    def load(self, key: str) -> bytes | None:
        try:
            return (self.directory / key).read_bytes()
        except OSError:
            return None

    def save(self, key: str, data: bytes) -> None:
        """Write ``data`` under ``key`` atomically (a reader never sees half a file), and remove the
        oldest files past ``KEEP`` (each release's words or patterns leave one behind); silently not at
        all where the directory cannot be made or written."""
        import tempfile  # (only to write: a scan whose words were kept before never loads it, nor its shutil)

        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, self.directory / key)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return
        self._prune(key)

    def _prune(self, kept: str) -> None:
        try:
            files = [entry for entry in os.scandir(self.directory) if entry.is_file() and entry.name != kept]
            files.sort(key=lambda entry: entry.stat().st_mtime, reverse=True)
            for entry in files[KEEP - 1 :]:
                os.unlink(entry.path)
        except OSError:
            pass


@contextlib.contextmanager
def keeping() -> Iterator[None]:
    """A command's run with the built-in files' compiled patterns and parsed tables an earlier run
    kept (``tui.core.kept``: read at the first compile or parse, if any), and what this run made
    afresh kept for the next on the way out. Every command that reads a log builds the profiles'
    trackers: a dashboard's start (its profiles' tables, and the patterns its tracker primes with
    before it reads a line) is 20 ms shorter with them (issue 35)."""
    kept = DatabaseCache(cache_dir("programs"))
    PROGRAMS.take_later(lambda: kept.load(PROGRAMS_KEY))
    TABLES.take_later(lambda: kept.load(TABLES_KEY))
    try:
        yield
    finally:
        for key, made in ((PROGRAMS_KEY, PROGRAMS.kept()), (TABLES_KEY, TABLES.kept())):
            if made is not None:  # patterns compiled or files parsed afresh: kept for the next run
                kept.save(key, made)
