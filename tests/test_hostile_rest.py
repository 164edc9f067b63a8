"""Issue 33 item 6, the rest: each hostile input gives one line, no traceback, and nothing false."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tui.core.secrets import mask_secret_bytes, mask_secrets


@pytest.mark.parametrize("text", [
    '["--api-key","sekrit-value"]',  # a compact JSON argv (json.dumps(separators=(",", ":")))
    "['--api-key','sekrit-value']",
    '{"argv":["vllm","serve","--api-key","sekrit-value","--port","8000"]}',
    '["--hf-token",\t"sekrit-value"]',
])
def test_a_compact_argv_list_masks_the_secret_after_its_flag(text):
    assert "sekrit" not in mask_secrets(text)
    assert b"sekrit" not in mask_secret_bytes(text.encode())
    assert "--port" not in text or '"8000"' in mask_secrets(text)  # (the flags after it kept)


def profile_of(text: bytes, server: str = "sglang"):
    from tui.core import startup_profile
    from tui.core.lines import LineAssembler
    from tui.core.profiles import load_profile
    from tui.core.tracker import StartupTracker

    tracker = StartupTracker(load_profile(server))
    for line in LineAssembler().feed(text):
        tracker.feed(line)
    return startup_profile.build(tracker.state)


READY_LOG = (Path(__file__).parent / "fixtures" / "sglang_eagle3_tp8_ready.log").read_bytes()


def test_a_log_whose_clock_goes_back_times_no_gap_and_no_startup():
    """Its first line in the year 9999, the rest in 1970: was "unaccounted 70389503:56:54"."""
    lines = READY_LOG.splitlines(keepends=True)
    back = lines[0].replace(b"2026-02-22", b"9999-12-31") + b"".join(lines[1:]).replace(b"2026-02-22", b"1970-01-01")
    profile = profile_of(back)
    assert profile is not None and profile.gaps == () and profile.total is None
    assert "to ready: cannot tell" in profile.lines()[0]
    honest = profile_of(READY_LOG)  # the same log with its own clock: its 6 s gap is still told
    assert honest is not None and [round(g.seconds) for g in honest.gaps] == [6] and honest.total is not None


def test_a_slurm_job_named_like_a_field_is_not_read_as_one():
    """``scontrol show job -o``'s real shape (Slurm 23.11), for a job named ``x JobId=999 JobState=COMPLETED``."""
    from tui.core.slurm import parse_job

    line = ("JobId=5 JobName=x JobId=999 JobState=COMPLETED UserId=root(0) GroupId=root(0) MCS_label=N/A "
            "Priority=1 Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=1 "
            "Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:03 TimeLimit=UNLIMITED Partition=debug "
            "NodeList=n[1-2] BatchHost=n1 NumNodes=2 NumCPUs=2 NumTasks=2 Command=/work/x.sh "
            "WorkDir=/work StdErr=/work/slurm-5.out StdIn=/dev/null StdOut=/work/slurm-5.out")
    job = parse_job(line)
    assert job is not None
    assert (job.job_id, job.name, job.state, job.nodes) == ("5", "x JobId=999 JobState=COMPLETED", "RUNNING", ("n1", "n2"))
    assert job.stdout == "/work/slurm-5.out"


async def test_a_log_replaced_by_a_directory_is_said_so_and_no_file_is_called_lost(tmp_path):
    """The path's directory creation is no log file that came and went unread: was "1 log file
    could not be read"; it is one clear wait, "is a directory"."""
    from tests.test_local_tailer import Reader
    from tui.core.events import LogGap, LogWaiting
    from tui.sources.local import LocalTailer

    log = tmp_path / "server.log"
    log.write_bytes(b"first\n")
    reader = Reader(LocalTailer(log, use_inotify=True))
    assert await reader.data(6) == b"first\n"
    log.unlink()
    log.mkdir()
    seen = []
    while not any(isinstance(e, LogWaiting) and "is a directory" in e.reason for e in seen):
        seen.append(await reader.next())
    log.rmdir()
    log.write_bytes(b"again\n")  # a log file again: read, still no gap
    while not any(getattr(e, "data", b"") == b"again\n" for e in seen):
        seen.append(await reader.next())
    await reader.close()
    assert not [e for e in seen if isinstance(e, LogGap)], seen


def test_history_pages_through_attempts_in_batches_and_names_come_from_the_index(tmp_path):
    """200k attempts made `history` 8 s and 1.3 GB, `history --names` (every <TAB>) 4.7 s and 741 MB:
    every row was read at once. Now batches along the (name, attempt) index, the same order."""
    import sqlite3

    from tui.history import History

    history = History(tmp_path / "history.sqlite3")
    for name in ("b", "a", "c"):
        for _ in range(7):
            history.start(name, command=["serve", "--api-key", "k"], env={}, host="h", log_path="/l")
    every = [(a.name, a.attempt) for a in history.each_attempt(batch=3)]
    assert every == [(n, i) for n in "abc" for i in range(1, 8)]
    assert [a.attempt for a in history.each_attempt("b", batch=2)] == list(range(1, 8))
    assert history.names() == ["a", "b", "c"]
    db = sqlite3.connect(tmp_path / "history.sqlite3")
    plan = " ".join(row[3] for row in db.execute("EXPLAIN QUERY PLAN SELECT DISTINCT name FROM attempts ORDER BY name"))
    assert "COVERING INDEX" in plan, plan  # names read from the index, never the rows


def test_history_against_a_locked_database_waits_then_says_it_could_not_read(tmp_path):
    """Another process's write lock: read when it lets go; past the wait, "cannot read" (it was
    "cannot write the history database", for a command that writes nothing)."""
    import sqlite3

    from tui.history import History, HistoryError

    path = tmp_path / "history.sqlite3"
    History(path).start("a", command=["serve"], env={}, host="h", log_path="/l")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(HistoryError) as caught:
            History(path).attempts()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    said = str(caught.value)
    assert "cannot write" not in said and ("cannot open" in said or "cannot read" in said), said
    assert "locked for 5 s" in said and "\n" not in said
    assert [a.name for a in History(path).attempts()] == ["a"]  # once it let go: read


async def test_a_metrics_textfile_that_can_no_longer_be_written_is_said_once_then_written_again(tmp_path, capsys,
                                                                                                 monkeypatch):
    """Its directory turning unwritable mid-run (here: replaced by a file — root writes through
    read-only modes) left the file stale in silence: node_exporter served the old state as now."""
    import shutil

    from tui.present import metrics
    from tui.session import WatchSession

    def marks() -> list[str]:
        return [entry.text for entry in session.scrollback.entries() if "--metrics-textfile" in entry.text]

    async def until(done) -> None:  # type: ignore[no-untyped-def]
        async with asyncio.timeout(10):
            while not done():
                await asyncio.sleep(0.02)

    monkeypatch.setattr(metrics, "TEXTFILE_EVERY_S", 0.02)
    folder = tmp_path / "textfiles"
    folder.mkdir()
    session = WatchSession()
    async with metrics.exporting(None, str(folder / "startup.prom"), metrics.one_log(session), {}):
        shutil.rmtree(folder)
        folder.write_text("not a folder")  # every write fails from now on
        await until(lambda: marks())
        ticks = len(marks())
        folder.unlink()
        folder.mkdir()
        await until(lambda: (folder / "startup.prom").exists() and len(marks()) > ticks)
    said = marks()
    assert len(said) == 2 and "cannot write it (Not a directory)" in said[0] and said[1].endswith("written again"), said
    assert said[0] in capsys.readouterr().err.replace("watchtower: ", "⚠ ")
