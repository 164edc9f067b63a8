"""The history database under faults, and two `run --name X` at once: real `watchtower run`
processes, real SQLite files made read-only, corrupt, unreachable or deleted under them.

Whatever the fault, no traceback, and never a launched server that no record owns: a history
that cannot be written stops `run` before anything starts.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launch_helpers import kill_attempts, no_leftover_servers  # noqa: F401  (autouse)
from tests.support import run_cli
from tui.history import History

SIM = str(Path(__file__).with_name("server_sim.py"))
REPO = Path(__file__).parent.parent

pytestmark = pytest.mark.timeout(120)


def run_argv(tmp_path: Path, *sim: str) -> list[str]:
    return [
        sys.executable, "-m", "tui.cli", "run", "--plain", "--name", "sim", "--log-dir", str(tmp_path / "logs"),
        "--gpus", "none", "--", sys.executable, SIM, "--step", "0.01", *sim,
    ]


def watchtower_run(tmp_path: Path, data: Path, *sim: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "WATCHTOWER_DATA_DIR": str(data)}
    return subprocess.run(
        [*prefix, *run_argv(tmp_path, *sim)], env=env, cwd=REPO, capture_output=True, text=True, timeout=90
    )


def unprivileged() -> tuple[str, ...]:
    """A prefix that makes file permissions bind (root ignores them): a user namespace where we
    own nothing. Skips where user namespaces are not allowed."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("unshare") is None or subprocess.run(["unshare", "--user", "true"]).returncode != 0:
        pytest.skip("running as root and cannot enter a user namespace: permissions cannot be tested")
    return ("unshare", "--user")


def launched(tmp_path: Path) -> list[str]:
    logs = tmp_path / "logs"
    return sorted(p.name for p in logs.glob("*.log")) if logs.exists() else []


def assert_refused_before_launch(result: subprocess.CompletedProcess, tmp_path: Path, *words: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr
    assert launched(tmp_path) == [], "a server was launched that no record owns"


def fresh_history(data: Path) -> Path:
    data.mkdir(parents=True, exist_ok=True)
    History(data / "history.sqlite3")
    return data / "history.sqlite3"


def test_a_read_only_history_file_refuses_before_launching(tmp_path):
    prefix = unprivileged()
    db = fresh_history(tmp_path / "data")
    db.chmod(0o444)
    result = watchtower_run(tmp_path, tmp_path / "data", prefix=prefix)
    assert_refused_before_launch(result, tmp_path, str(db), "readonly", "WATCHTOWER_DATA_DIR")


def test_a_read_only_history_directory_refuses_before_launching(tmp_path):
    prefix = unprivileged()
    data = tmp_path / "data"
    fresh_history(data)
    data.chmod(0o555)
    try:
        result = watchtower_run(tmp_path, data, prefix=prefix)
    finally:
        data.chmod(0o755)
    assert_refused_before_launch(result, tmp_path, "history", str(data))


def test_a_data_dir_that_cannot_exist_refuses_before_launching(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data directory should be\n")
    result = watchtower_run(tmp_path, blocker / "data")
    assert_refused_before_launch(result, tmp_path, str(blocker / "data"), "WATCHTOWER_DATA_DIR")


def test_a_file_that_is_not_a_database_is_kept_aside_and_a_fresh_one_used(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "history.sqlite3").write_bytes(b"these are not the bytes of a database\n" * 200)
    result = watchtower_run(tmp_path, data)
    assert result.returncode == 0, result.stdout + result.stderr
    (aside,) = data.glob("history.sqlite3.corrupt-*")
    assert aside.read_bytes().startswith(b"these are not")
    assert f"kept as {aside}" in result.stderr and "Traceback" not in result.stderr
    (row,) = History(data / "history.sqlite3").attempts("sim")
    assert row.outcome == "ready" and row.pid is not None


def test_a_damaged_page_is_found_and_the_file_kept_aside(tmp_path):
    data = tmp_path / "data"
    db_path = fresh_history(data)
    history = History(db_path)
    for n in range(1, 200):
        history.start("old", command=["python", "-m", "sglang.launch_server", "x" * 200], env={}, host="h",
                      log_path=f"/l/{n}", attempt=n)
    raw = bytearray(db_path.read_bytes())
    page = 4096
    raw[2 * page : 2 * page + 64] = b"\xff" * 64  # a b-tree page's header overwritten
    db_path.write_bytes(bytes(raw))
    result = watchtower_run(tmp_path, data)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "corrupt" in result.stderr and "kept as" in result.stderr and "Traceback" not in result.stderr
    assert len(list(data.glob("history.sqlite3.corrupt-*"))) == 1
    assert [r.attempt for r in History(db_path).attempts("sim")] == [1]


async def test_a_history_deleted_mid_run_is_recreated_and_the_attempt_kept(tmp_path):
    import asyncio

    data = tmp_path / "data"
    db = fresh_history(data)
    proc = await asyncio.create_subprocess_exec(
        *run_argv(tmp_path, "--load-seconds", "2"), env={**os.environ, "WATCHTOWER_DATA_DIR": str(data)},
        cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    seen = []
    while True:
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line, f"run ended early: {''.join(seen)}"
        seen.append(line)
        if "v1 started" in line:
            break
    db.unlink()  # the user cleans up the data directory while the server loads
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, "".join(seen) + out.decode() + err.decode()
    assert "Traceback" not in err.decode() and "never retrieved" not in err.decode()
    (row,) = History(db).attempts("sim")
    assert row.attempt == 1 and row.outcome == "ready" and row.phases


RACERS = 3


async def test_runs_of_one_name_at_once_start_one_server(tmp_path):
    import asyncio

    data = tmp_path / "data"
    env = {**os.environ, "WATCHTOWER_DATA_DIR": str(data)}
    argv = run_argv(tmp_path, "--load-seconds", "0.5")[3:]  # after "python -m tui.cli"
    # Each imports everything, says so, and waits for a line on stdin: both are then let go at once.
    start = (
        "import sys, tui.cli, tui.wiring, tui.launch, tui.history, tui.present.plain; "
        "print('loaded', flush=True); sys.stdin.readline(); sys.exit(tui.cli.main(sys.argv[1:]))"
    )
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", start, *argv, env=env, cwd=REPO, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(RACERS)
    ]
    for proc in procs:
        assert await asyncio.wait_for(proc.stdout.readline(), 30) == b"loaded\n"
    for proc in procs:
        proc.stdin.write(b"go\n")
    await asyncio.gather(*(proc.stdin.drain() for proc in procs))
    results = [await asyncio.wait_for(p.communicate(), 60) for p in procs]
    try:
        outs = [out.decode() + err.decode() for out, err in results]
        assert all("Traceback" not in o for o in outs), outs
        assert [p.returncode for p in procs] == [0] * RACERS, outs
        started = [o for o in outs if "v1 started:" in o]
        followed = [o for o in outs if "v1 reattached to the running" in o]
        assert len(started) == 1 and len(followed) == RACERS - 1, outs
        assert launched(tmp_path) == ["sim-v1.log"]
        rows = History(data / "history.sqlite3").attempts("sim")
        assert [(r.attempt, r.outcome) for r in rows] == [(1, "ready")]
        history = run_cli("history", "--json", env=env)
        assert [r["attempt"] for r in json.loads(history.stdout)] == [1]
    finally:
        kill_attempts(tmp_path)


def test_the_loser_of_a_claim_race_refuses_in_one_line(tmp_path):
    """Without the lock (another data dir's Watchtower, a clock skew): the number is taken by the time
    it is recorded; the record says so in one line and nothing is launched twice."""
    history = History(tmp_path / "h.sqlite3")
    history.start("sim", command=["a"], env={}, host="localhost", log_path="/l/1", attempt=1)
    from tui.history import AttemptTaken

    with pytest.raises(AttemptTaken, match=r"sim v1 was just recorded by another watchtower: follow it with `watchtower attach sim`"):
        history.start("sim", command=["a"], env={}, host="localhost", log_path="/l/1", attempt=1)
    with sqlite3.connect(tmp_path / "h.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 1


async def test_two_launches_deciding_at_the_same_moment_start_one_server(tmp_path, monkeypatch):
    """Two launch controllers in one event loop interleave at every await: without the lock on the
    name both read an empty history, both launch v1 and one dies on the UNIQUE constraint."""
    import asyncio

    from tui.launch.controller import Launch
    from tui.launch.spec import LaunchSpec
    from tui.session import WatchSession

    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path / "data"))
    spec = lambda: LaunchSpec(  # noqa: E731
        name="sim", command=[sys.executable, SIM, "--step", "0.01"], log_dir=tmp_path / "logs"
    )
    launches = [Launch(spec(), history=History()) for _ in range(2)]
    sessions = [WatchSession() for _ in launches]
    for launch, session in zip(launches, sessions):
        launch.attach(session)
        session.start()
    try:
        runs = await asyncio.wait_for(asyncio.gather(*(launch.start() for launch in launches)), 30)
        assert [run.attempt for run in runs] == [1, 1]
        assert runs[0].pid == runs[1].pid and [launch.reattached for launch in launches] == [False, True]
        assert launched(tmp_path) == ["sim-v1.log"]
        assert [r.attempt for r in History().attempts("sim")] == [1]
    finally:
        for launch, session in zip(launches, sessions):
            await launch.close(stop_server=True)
            await session.stop()


def test_the_history_command_says_a_corrupt_file_was_kept_aside(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "history.sqlite3").write_bytes(b"\x00garbage\x00" * 100)
    env = {**os.environ, "WATCHTOWER_DATA_DIR": str(data)}
    result = run_cli("history", env=env, timeout=60)
    (aside,) = data.glob("history.sqlite3.corrupt-*")
    assert result.returncode == 0 and "no attempts recorded" in result.stdout
    assert result.stderr.startswith("watchtower: history database") and f"kept as {aside}" in result.stderr


# ---------------------------------------------------------------- issue 22, items 3 and 12


def test_two_corruptions_in_one_second_keep_both_copies(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    path = data / "history.sqlite3"
    kept = []
    for n in range(3):  # far quicker than a second apart: the copies' names share their stamp
        path.write_bytes(f"corruption number {n}\n".encode() * 300)
        history = History(path)
        assert history.notice is not None and "kept as" in history.notice
        kept.append(history.notice)
    copies = sorted(data.glob("history.sqlite3.corrupt-*"))
    assert len(copies) == 3
    assert sorted(p.read_bytes()[:19] for p in copies) == [b"corruption number 0", b"corruption number 1", b"corruption number 2"]


def test_a_locked_database_says_locked_not_permissions(tmp_path):
    path = fresh_history(tmp_path / "data")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process's long write, as far as SQLite can tell
    try:
        result = run_cli("history", "--json", env={"WATCHTOWER_DATA_DIR": str(path.parent)}, timeout=60)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "locked" in result.stderr and "permissions" not in result.stderr, result.stderr


def test_a_full_disk_says_full_not_permissions(tmp_path):
    from tui.history import _advice

    with pytest.raises(OSError) as info:
        with open("/dev/full", "w") as full:  # a real ENOSPC from the kernel
            full.write("x")
    advice = _advice(info.value)
    assert "full" in advice and "permissions" not in advice
    db = sqlite3.connect(tmp_path / "small.sqlite3")
    db.execute("CREATE TABLE t (x)")
    db.execute("PRAGMA max_page_count = 2")  # SQLite's own 'database or disk is full'
    with pytest.raises(sqlite3.OperationalError) as info2:
        db.execute("INSERT INTO t VALUES (?)", ("y" * 100_000,))
    assert "full" in _advice(info2.value) and "permissions" not in _advice(info2.value)


def test_a_too_long_name_says_so(tmp_path):
    data = tmp_path / "data"
    argv = run_argv(tmp_path)
    at = argv.index("--name")
    argv[at + 1] = "n" * 300
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO,
                            env={**os.environ, "WATCHTOWER_DATA_DIR": str(data)})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "too long" in result.stderr and "permissions" not in result.stderr, result.stderr
    assert not (tmp_path / "logs").exists() or not list((tmp_path / "logs").iterdir())  # nothing launched


async def test_a_name_too_long_for_a_file_name_is_not_a_permissions_problem(tmp_path):
    from tui.history import HistoryError

    history = History(fresh_history(tmp_path / "data"))
    with pytest.raises(HistoryError) as info:
        async with history.claim("n" * 300):
            pass
    assert "too long" in str(info.value) and "permissions" not in str(info.value)


def test_replay_does_not_look_for_the_writer_of_its_own_file():
    demo = REPO / "tui" / "data" / "demo-crash-attr.wtrec"
    result = run_cli("replay", str(demo), "--plain", "--speed", "100", timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAILED" in result.stdout
    assert "no process here holds it open" not in result.stdout and "no writer found" not in result.stdout
