"""Attempts v1…vN in a small SQLite database, and ETAs from them.

One row per launch attempt: name, attempt number, command and environment
overrides (masked: secrets never reach the database), the environment diff against
the previous attempt, host, start time, per-phase durations, outcome, first error,
log path. The file lives in the user's data directory (platformdirs), or in
``$WATCHTOWER_DATA_DIR`` (tests). Every call opens its own short connection, so
the async code runs them in a worker thread (``asyncio.to_thread``) without
sharing a connection between threads.

The records themselves are ``tui.history.records`` and `watch`'s memory of log startups
``tui.history.watched``; what stays here is the schema and the one class that owns the file
Opening, migrating, locking and every query share its connection handling.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tui.core.errors import UsageError
from tui.core.secrets import Masker, env_diff, mask_argv
from tui.core.verdict import DEAD, FAILED, REFUSED, STOPPED
from tui.history.records import AttemptRecord, Expectations, command_diff, phase_seconds

#: Outcomes nothing changes once recorded: a failed attempt later stopped is still failed (``ready``
#: is not one: a server ready may die or be stopped later).
KEPT_OUTCOMES = frozenset({FAILED, DEAD, REFUSED, STOPPED})

#: Forward migrations: ``MIGRATIONS[n]`` takes the database from schema version n to n + 1
#: (``PRAGMA user_version``). Version 1 is round 1's schema, which such databases already
#: hold (hence IF NOT EXISTS). A change to the schema is a new entry here, never an edit.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """
        CREATE TABLE IF NOT EXISTS attempts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            host TEXT NOT NULL,
            command TEXT NOT NULL,      -- JSON list, masked
            env TEXT NOT NULL,          -- JSON object of overrides, masked
            env_diff TEXT NOT NULL,     -- JSON list of "+K=V", "-K", "~K=V (was W)"
            command_diff TEXT NOT NULL, -- JSON list of changed words, masked
            started_at REAL NOT NULL,
            ended_at REAL,
            phases TEXT NOT NULL DEFAULT '{}',  -- JSON {phase: seconds}
            outcome TEXT NOT NULL DEFAULT 'starting',
            first_error TEXT,
            ready_seconds REAL,
            log_path TEXT NOT NULL,
            pid INTEGER,
            exit_text TEXT,
            UNIQUE (name, attempt)
        )
        """,
        """
        CREATE INDEX IF NOT EXISTS attempts_by_command ON attempts (command, host, outcome)
        """,
    ),
    (  # 2: the hint whose fix an attempt applied (the F key)
        "ALTER TABLE attempts ADD COLUMN applied TEXT",
    ),
    (  # 3: startups `watch` saw in logs it did not launch, keyed by what the log says (log_key)
        """
        CREATE TABLE IF NOT EXISTS log_startups (
            key TEXT NOT NULL,          -- server, model path, TP size
            recorded_at REAL NOT NULL,
            outcome TEXT NOT NULL,
            phases TEXT NOT NULL DEFAULT '{}'  -- JSON {phase: seconds}
        )
        """,
        """
        CREATE INDEX IF NOT EXISTS log_startups_by_key ON log_startups (key, recorded_at)
        """,
    ),
    (  # 4: whether the weight load came from the page cache ("warm") or the storage ("cold"), where told
        "ALTER TABLE attempts ADD COLUMN page_cache TEXT",
    ),
    (  # 5: the GPU source an attempt was watched with (NVML, nvidia-smi, simulated, none); older rows: NULL
        "ALTER TABLE attempts ADD COLUMN gpu_source TEXT",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


#: How long a launch waits for another Watchtower that is deciding the same name's next attempt.
CLAIM_WAIT_S = 120.0
_FIX = "fix its permissions, or point WATCHTOWER_DATA_DIR at a writable directory"


class HistoryError(UsageError):
    """The history database cannot be used: one line saying why and what to do (exit 2)."""


class HistoryCorrupt(HistoryError):
    """The file is not an SQLite database, or a page of it is damaged."""


class AttemptTaken(HistoryError):
    """Another Watchtower recorded this attempt number first."""


def migrate(db: sqlite3.Connection) -> int:
    """Bring ``db`` to SCHEMA_VERSION in one transaction; the version it had."""
    db.execute("BEGIN IMMEDIATE")  # one writer migrates; a concurrent opener waits, then sees it done
    try:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise HistoryError(f"history database schema v{version} is newer than this Watchtower's (v{SCHEMA_VERSION})")
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return version

#: How long a connection waits for another process's lock before it gives up (seconds).
LOCK_WAIT_S = 5.0
#: Startups kept per log key (the newest): enough for "the longest it has taken".
LOG_STARTUPS_KEPT = 50


def data_dir() -> Path:
    override = os.environ.get("WATCHTOWER_DATA_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_data_dir("watchtower"))


class History:
    """The attempts database. Small and synchronous: call from a worker thread in async code."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else data_dir() / "history.sqlite3"
        #: Something the user should hear once (a corrupt file moved aside), else None.
        self.notice: str | None = None
        try:
            self._create()
        except HistoryCorrupt as exc:  # not a database, a malformed page: keep it, start afresh
            try:
                aside = self._move_aside()
            except OSError as err:
                raise HistoryError(f"{exc}, and cannot be moved aside: {_why(err)}") from None
            self.notice = f"{exc}: kept as {aside}, a fresh one started"
            self._create()

    def _move_aside(self) -> Path:
        """The corrupt file renamed to ``….corrupt-DATE-TIME`` (``-2``, ``-3`` … after one of that
        second): a name no earlier copy holds, taken atomically (a hard link refuses an existing
        name), so a second corruption never overwrites the first copy."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for n in range(1, 1000):
            aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}" + (f"-{n}" if n > 1 else ""))
            try:
                os.link(self.path, aside)
            except FileExistsError:
                continue
            except OSError as exc:  # a filesystem without hard links: the same, not atomic
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                    raise
                if aside.exists():
                    continue
                os.replace(self.path, aside)
                return aside
            os.unlink(self.path)
            return aside
        raise OSError(errno.EEXIST, "too many kept-aside copies this second")

    def _create(self) -> None:
        """The file at its schema version (created, or migrated), and whole."""
        db = self._open(autocommit=True)
        try:
            with self._failures("open"):
                if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:  # a read-only one is read
                    migrate(db)
                check = db.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            db.close()
        if check != "ok":
            raise HistoryCorrupt(f"history database {self.path} is corrupt (integrity check: {check})")

    @contextmanager
    def _connect(self, doing: str = "write") -> Iterator[sqlite3.Connection]:
        """One short connection: committed (or rolled back) and closed on the way out. A file that
        vanished (deleted mid-run) is created again; a failure to ``doing`` is a ``HistoryError``."""
        db = self._open(recreate=True)
        db.row_factory = sqlite3.Row
        try:
            with self._failures(doing), db:
                yield db
        finally:
            db.close()

    def _open(self, *, autocommit: bool = False, recreate: bool = False) -> sqlite3.Connection:
        """A connection to the file (``recreate``: made again first if it vanished); HistoryError if none."""
        try:
            if recreate and not self.path.exists():
                self._create()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if autocommit:  # migrate() runs its own BEGIN IMMEDIATE … COMMIT
                return sqlite3.connect(self.path, timeout=LOCK_WAIT_S, isolation_level=None)
            return sqlite3.connect(self.path, timeout=LOCK_WAIT_S)
        except (OSError, sqlite3.OperationalError) as exc:
            raise HistoryError(f"cannot open the history database {self.path}: {_why(exc)}; {_advice(exc)}") from None

    @contextmanager
    def _failures(self, doing: str = "write") -> Iterator[None]:
        """SQLite's errors as ours: cannot write (or read: ``doing``; locked past the wait,
        read-only, disk full) or corrupt; a constraint (another Watchtower's row first) passes
        through for the caller to judge."""
        try:
            yield
        except sqlite3.IntegrityError:
            raise
        except sqlite3.OperationalError as exc:
            raise HistoryError(f"cannot {doing} the history database {self.path}: {_why(exc)}; {_advice(exc)}") from None
        except sqlite3.DatabaseError as exc:
            raise HistoryCorrupt(f"history database {self.path} is corrupt ({exc})") from None

    @contextlib.asynccontextmanager
    async def claim(self, name: str) -> AsyncIterator[None]:
        """While held, no other Watchtower decides ``name``'s next attempt (between reading the
        history and recording the launched attempt): two ``run --name X`` at once start one server."""
        lock = self.path.with_name(f".{name.replace(os.sep, '_')}.lock")
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise HistoryError(f"cannot lock the history for {name!r} ({lock}): {_why(exc)}; {_advice(exc)}") from None
        try:
            deadline = time.monotonic() + CLAIM_WAIT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise HistoryError(f"another watchtower has been launching {name!r} for"
                                           f" {CLAIM_WAIT_S:.0f} s; try again, or `watchtower attach {name}`") from None
                    await asyncio.sleep(0.05)  # a lock held for moments, by another process
            yield
        finally:
            os.close(fd)  # releases the lock

    # ------------------------------------------------------------ writing

    def next_attempt(self, name: str) -> int:
        with self._connect() as db:
            row = db.execute("SELECT MAX(attempt) FROM attempts WHERE name = ?", (name,)).fetchone()
        return (row[0] or 0) + 1

    def start(
        self,
        name: str,
        *,
        command: Sequence[str],
        env: Mapping[str, str],
        host: str,
        log_path: str,
        attempt: int | None = None,
        started_at: float | None = None,
        pid: int | None = None,
        applied: str | None = None,
        gpu_source: str | None = None,
    ) -> AttemptRecord:
        """Record a new attempt. ``command`` and ``env`` may hold secrets: they are masked here."""
        masker = Masker.for_launch(env, command)
        masked_cmd = mask_argv(command, masker)
        masked_env = masker.env(env)
        previous = self.latest(name)
        record = AttemptRecord(
            name=name,
            attempt=attempt or ((previous.attempt + 1) if previous else 1),
            host=host,
            command=masked_cmd,
            env=masked_env,
            started_at=started_at if started_at is not None else time.time(),
            log_path=log_path,
            env_diff=env_diff(previous.env, masked_env) if previous else [],
            command_diff=command_diff(previous.command if previous else None, masked_cmd),
            pid=pid,
            applied=applied,
            gpu_source=gpu_source,
        )
        try:
            with self._connect() as db:
                record.id = self._insert(db, record)
        except sqlite3.IntegrityError:
            raise AttemptTaken(f"{name} v{record.attempt} was just recorded by another watchtower:"
                               f" follow it with `watchtower attach {name}`") from None
        return record

    @staticmethod
    def _insert(db: sqlite3.Connection, record: AttemptRecord) -> int | None:
        cur = db.execute(
            "INSERT INTO attempts (name, attempt, host, command, env, env_diff, command_diff, started_at,"
            " log_path, pid, phases, outcome, first_error, ended_at, ready_seconds, exit_text, applied, page_cache,"
            " gpu_source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.name,
                record.attempt,
                record.host,
                json.dumps(record.command),
                json.dumps(record.env),
                json.dumps(record.env_diff),
                json.dumps(record.command_diff),
                record.started_at,
                record.log_path,
                record.pid,
                json.dumps(record.phases),
                record.outcome,
                record.first_error,
                record.ended_at,
                record.ready_seconds,
                record.exit_text,
                record.applied,
                record.page_cache,
                record.gpu_source,
            ),
        )
        return cur.lastrowid

    def forget(self, record: AttemptRecord) -> None:
        """Drop an attempt recorded before its launch, when the launch did not happen."""
        with self._connect() as db:
            db.execute("DELETE FROM attempts WHERE name = ? AND attempt = ?", (record.name, record.attempt))

    def update(
        self,
        record: AttemptRecord,
        *,
        phases: Mapping[str, float] | None = None,
        outcome: str | None = None,
        first_error: str | None = None,
        ended_at: float | None = None,
        ready_seconds: float | None = None,
        pid: int | None = None,
        exit_text: str | None = None,
        page_cache: str | None = None,
        log_path: str | None = None,
        masker: Masker | None = None,
    ) -> AttemptRecord:
        """Store progress of an attempt (per-phase seconds; the rest as given, masked). A fact once
        recorded is kept: a later watcher (``attach``) adds what it saw, never rewrites its time to
        ready, its first error, a finished phase's seconds or a final outcome (``KEPT_OUTCOMES``)."""
        masker = masker or Masker()
        if log_path is not None:
            record.log_path = log_path
        if phases is not None:
            record.phases = {**phases, **record.phases}
        if outcome is not None and record.outcome not in KEPT_OUTCOMES:
            record.outcome = outcome
        if first_error is not None and record.first_error is None:
            record.first_error = masker.text(first_error)
        if ended_at is not None:
            record.ended_at = ended_at
        if ready_seconds is not None and record.ready_seconds is None:
            record.ready_seconds = ready_seconds
        if pid is not None:
            record.pid = pid
        if exit_text is not None:
            record.exit_text = masker.text(exit_text)
        if page_cache is not None:
            record.page_cache = page_cache
        with self._connect() as db:
            cur = db.execute(
                "UPDATE attempts SET phases = ?, outcome = ?, first_error = COALESCE(first_error, ?), ended_at = ?,"
                " ready_seconds = COALESCE(ready_seconds, ?),"
                " pid = ?, exit_text = ?, page_cache = ?, log_path = ? WHERE name = ? AND attempt = ?",
                (
                    json.dumps(record.phases),
                    record.outcome,
                    record.first_error,
                    record.ended_at,
                    record.ready_seconds,
                    record.pid,
                    record.exit_text,
                    record.page_cache,
                    record.log_path,
                    record.name,
                    record.attempt,
                ),
            )
            if cur.rowcount == 0:  # the database was deleted (and re-created) under us: keep the attempt
                self._insert(db, record)
        return record

    # ------------------------------------------------------------ reading

    @staticmethod
    def _record(row: sqlite3.Row) -> AttemptRecord:
        return AttemptRecord(
            id=row["id"],
            name=row["name"],
            attempt=row["attempt"],
            host=row["host"],
            command=json.loads(row["command"]),
            env=json.loads(row["env"]),
            env_diff=json.loads(row["env_diff"]),
            command_diff=json.loads(row["command_diff"]),
            started_at=row["started_at"],
            ended_at=row["ended_at"],
            phases=json.loads(row["phases"]),
            outcome=row["outcome"],
            first_error=row["first_error"],
            ready_seconds=row["ready_seconds"],
            log_path=row["log_path"],
            pid=row["pid"],
            exit_text=row["exit_text"],
            applied=row["applied"],
            page_cache=row["page_cache"],
            gpu_source=row["gpu_source"],
        )

    def attempts(self, name: str | None = None) -> list[AttemptRecord]:
        return list(self.each_attempt(name))

    def each_attempt(self, name: str | None = None, batch: int = 500) -> Iterator[AttemptRecord]:
        """Every attempt (of ``name``), by name and number, read ``batch`` rows at a time along the
        (name, attempt) index, each batch in its own short connection: memory stays bounded
        however long the history, and a reader paging through it (``history | less``) holds no
        lock that would make a running Watchtower's write wait."""
        after: tuple[str, int] = ("", 0)
        while True:
            with self._connect(doing="read") as db:
                if name is None:
                    rows = db.execute("SELECT * FROM attempts WHERE (name, attempt) > (?, ?) ORDER BY name, attempt"
                                      " LIMIT ?", (*after, batch)).fetchall()
                else:
                    rows = db.execute("SELECT * FROM attempts WHERE name = ? AND attempt > ? ORDER BY attempt LIMIT ?",
                                      (name, after[1], batch)).fetchall()
            yield from map(self._record, rows)
            if len(rows) < batch:
                return
            after = (rows[-1]["name"], rows[-1]["attempt"])

    def names(self) -> list[str]:
        """The launches' names, sorted (shell completion asks on every <TAB>): read from the
        (name, attempt) index alone, never the rows."""
        with self._connect(doing="read") as db:
            return [row[0] for row in db.execute("SELECT DISTINCT name FROM attempts ORDER BY name")]

    def latest(self, name: str) -> AttemptRecord | None:
        with self._connect(doing="read") as db:
            row = db.execute(
                "SELECT * FROM attempts WHERE name = ? ORDER BY attempt DESC LIMIT 1", (name,)
            ).fetchone()
        return self._record(row) if row else None

    def record_log_startup(self, key: str, outcome: str, phases: Mapping[str, float]) -> None:
        """A startup `watch` saw to its end (ready or failed), under ``key`` (``log_key``)."""
        with self._connect() as db:
            db.execute(
                "INSERT INTO log_startups (key, recorded_at, outcome, phases) VALUES (?, ?, ?, ?)",
                (key, time.time(), outcome, json.dumps(dict(phases))),
            )
            db.execute(
                "DELETE FROM log_startups WHERE key = ? AND rowid NOT IN"
                " (SELECT rowid FROM log_startups WHERE key = ? ORDER BY recorded_at DESC LIMIT ?)",
                (key, key, LOG_STARTUPS_KEPT),
            )

    def log_phase_longest(self, key: str) -> dict[str, float]:
        """The longest each phase took in the startups recorded under ``key``."""
        with self._connect() as db:
            rows = db.execute("SELECT phases FROM log_startups WHERE key = ?", (key,)).fetchall()
        longest: dict[str, float] = {}
        for (phases,) in rows:
            for phase, seconds in json.loads(phases).items():
                longest[phase] = max(longest.get(phase, 0.0), float(seconds))
        return longest

    def expectations(self, command: Sequence[str], host: str) -> Expectations:
        """What history expects of a launch of ``command`` (masked the same way) on ``host``."""
        key = json.dumps(mask_argv(command))
        with self._connect() as db:
            rows = db.execute(
                "SELECT * FROM attempts WHERE command = ? AND host = ? ORDER BY started_at", (key, host)
            ).fetchall()
        records = [self._record(r) for r in rows]
        good = [r for r in records if r.outcome == "ready"]
        longest: dict[str, float] = {}
        for r in records:
            for phase, seconds in r.phases.items():
                longest[phase] = max(longest.get(phase, 0.0), seconds)
        return Expectations(good[-1] if good else None, longest)


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _advice(exc: BaseException) -> str:
    """What to do about ``exc``: what actually happened decides (a lock, a full disk, a name too
    long are not a permissions problem)."""
    code = getattr(exc, "errno", None)
    text = str(exc).lower()
    if code == errno.ENOSPC or code == errno.EDQUOT or "disk is full" in text or "disk full" in text:
        return "the disk (or your quota) is full: free some space, or point WATCHTOWER_DATA_DIR at another disk"
    if "locked" in text or "busy" in text:
        return (f"another process has held the database locked for {LOCK_WAIT_S:.0f} s (another watchtower, or sqlite3):"
                " try again once it is done")
    if code == errno.ENAMETOOLONG:
        return "the name is too long for a file name: choose a shorter one"
    if code == errno.EROFS or "read-only file system" in text:
        return "its filesystem is read-only: point WATCHTOWER_DATA_DIR at a writable directory"
    return _FIX


__all__ = [
    "AttemptRecord", "AttemptTaken", "Expectations", "History", "HistoryError", "command_diff",
    "data_dir",
    "phase_seconds",
]
