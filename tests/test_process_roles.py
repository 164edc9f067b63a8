"""Which processes of a watched server are its ranks, and which are helpers (issue 37).

A real vLLM worker forks children that keep its title (``VLLM::Worker``) for a fraction of a
second before they execute a compiler probe, and runs helpers by the dozen; none of them is
a rank, and their ends are no failure. ``tests/forking_server.py`` starts that shape with real
processes (started by a shell that exits at once: not Watchtower's children, as a server
started by hand). The in-process tests read it with the real writer discovery and session;
the CLI ones (``slow``) with ``watch --plain``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launch_helpers import wait_for_file
from tests.support import start_cli, until
from tui.core.events import ServerProcess, WriterGone, WritersFound
from tui.core.verdict import FAILED, READY
from tui.core.writers import WriterState
from tui.session import SessionInfo, WatchSession
from tui.sources import procscan
from tui.sources.factory import log_tailer, writer_source
from tui.sources.writers import Converter

FAKE = Path(__file__).parent / "forking_server.py"
WAIT = 30.0

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(not procscan.available(), reason="no /proc here")]


class ForkingServer:
    """``forking_server.py >> LOG 2>&1 &`` from a shell that exits: main, engine and worker pids."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.log = tmp_path / "server.log"
        self.log.touch()
        self.pid_file = tmp_path / "server.pids"
        subprocess.run(["sh", "-c", 'exe=$0 fake=$1 pids=$2 log=$3; shift 3; '
                        'setsid "$exe" "$fake" --pid-file "$pids" "$@" >> "$log" 2>&1 < /dev/null &',
                        sys.executable, str(FAKE), str(self.pid_file), str(self.log), *args], check=True)
        self.main = self.engine = self.worker = 0

    async def started(self) -> ForkingServer:
        self.main, self.engine, self.worker = map(int, (await wait_for_file(self.pid_file)).split())
        return self

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            if self.main:
                os.killpg(self.main, signal.SIGKILL)


@pytest.fixture
def forking(tmp_path):
    started: list[ForkingServer] = []

    async def start(*args: str) -> ForkingServer:
        started.append(ForkingServer(tmp_path, *args))
        return await started[-1].started()

    yield start
    for server in started:
        server.kill()


def watching(log: Path) -> tuple[WatchSession, list[str]]:
    """A session reading ``log`` and its writers as ``watch`` does, and every verdict kind it judged."""
    session = WatchSession(log=log_tailer(str(log), writers=True), info=SessionInfo(log_path=str(log)))
    source = writer_source(str(log))
    assert source is not None
    session.add_source(source)
    kinds: list[str] = []
    session.subscribe(lambda _update: kinds.append(session.verdict().kind))
    return session, kinds


# ------------------------------------------------------------------ roles from evidence, in-process


def proc(pid: int, ppid: int, title: str, argv: list[str], **more) -> dict:
    return {"pid": pid, "ppid": ppid, "state": "S", "title": title, "argv": argv, "ticks": pid, "started": None,
            "writes": False, **more}


WORKER_ARGV = ["VLLM::Worker", "/srv/worker.py"]


def test_a_fork_of_a_rank_that_has_not_executed_is_a_helper_and_its_end_no_failure():
    convert = Converter("server.log", "localhost")
    tree = [proc(10, 1, "python3", ["python3", "-m", "vllm.entrypoints.openai.api_server"], writes=True),
            proc(11, 10, "VLLM::EngineCor", ["VLLM::EngineCore"]),
            proc(12, 11, "VLLM::Worker", WORKER_ARGV),
            proc(13, 12, "VLLM::Worker", WORKER_ARGV)]  # forked by the worker, not executed yet
    [found] = convert.events([("found", "fd", tree, 10)])
    assert isinstance(found, WritersFound)
    roles = {p.pid: p.role for p in found.processes}
    assert roles == {10: "main", 11: "engine", 12: "rank", 13: "child"}
    [gone] = convert.events([("gone", {"pid": 13, "ticks": 13}, None, False, 3)])
    assert isinstance(gone, WriterGone) and gone.process.role == "child"
    state = WriterState()
    state.apply(found)
    state.apply(gone)
    status = state.status()
    assert status is not None and status.lost is None, status
    assert state.helpers.ended == 1 and not state.gone


def test_a_rank_titled_descendant_of_a_rank_is_no_rank():
    convert = Converter("server.log", "localhost")
    tree = [proc(10, 1, "python3", ["python3", "serve.py"], writes=True),
            proc(12, 10, "VLLM::Worker", WORKER_ARGV),
            proc(14, 12, "VLLM::Worker", ["VLLM::Worker", "-c", "probe"])]  # executed, but under a rank
    [found] = convert.events([("found", "fd", tree, 10)])
    assert [p.role for p in found.processes] == ["main", "rank", "child"]


def test_a_process_the_log_names_in_a_rank_prefix_is_a_rank_whatever_its_title():
    """No setproctitle: the worker's title is ``python3``, but it writes ``(Worker pid=N)`` lines."""
    convert = Converter("server.log", "localhost")
    tree = [proc(10, 1, "python3", ["python3", "serve.py"], writes=True),
            proc(12, 10, "python3", ["python3", "-c", "from multiprocessing.spawn import spawn_main"])]
    [found] = convert.events([("found", "fd", tree, 10)])
    assert found.processes[1].role == "child"
    state = WriterState()
    state.apply(found)
    state.logged({"12": "Worker"})
    state.apply(convert.events([("gone", {"pid": 12, "ticks": 12}, None, False, 1)])[0])
    status = state.status()
    assert status is not None and status.lost is not None and "pid 12" in status.lost, status


def test_titles_that_mean_a_rank_are_the_profiles_data():
    from tui.core.profiles import process_titles

    titles = process_titles()
    assert any(p.search("sglang::scheduler_TP3") for p in titles["rank"])
    assert any(p.search("VLLM::Worker") for p in titles["rank"])
    assert any(p.search("VLLM::EngineCore") for p in titles["engine"])


async def test_a_forking_start_read_in_process_is_ready_with_no_failure(forking):
    server = await forking("--helpers", "16")
    session, kinds = watching(server.log)
    session.start()
    try:
        await until(lambda: session.verdict().kind == READY, timeout=WAIT, seen=lambda: (kinds, session.process.writers.lost))
        assert FAILED not in kinds, kinds
        assert session.process.writers.lost is None
        ranks = [p for p in session.process.writers.processes if p.role == "rank"]
        assert [p.pid for p in ranks] == [server.worker]
    finally:
        await session.stop()


async def test_the_real_worker_killed_is_failed_naming_it_promptly(forking):
    server = await forking("--helpers", "4", "--hold", "60", "--no-prefix")
    session, kinds = watching(server.log)
    session.start()
    try:
        await until(lambda: server.worker in session.process.writers.pids, timeout=WAIT)
        os.kill(server.worker, signal.SIGKILL)
        killed = time.monotonic()
        await until(lambda: session.verdict().kind == FAILED, timeout=WAIT)
        took = time.monotonic() - killed
        verdict = session.verdict()
        assert f"pid {server.worker} (VLLM::Worker" in verdict.detail, verdict.detail
        assert took < 3.0, f"{took:.2f} s"  # ~1 s (0.5 s process polling, 0.5 s for the last words); the 60 s timeout is far off
    finally:
        await session.stop()


def test_the_helpers_are_folded_into_one_line_and_the_ranks_come_first():
    from tui.present.wording import process_rows

    state = WriterState()
    main = ServerProcess(10, 1, "python3", "python3 serve.py", None, "main", writes_log=True)
    rank = ServerProcess(12, 10, "VLLM::Worker", "VLLM::Worker", None, "rank")
    helper = ServerProcess(20, 12, "sh", "sh -c true", None, "child")
    state.apply(WritersFound("log", "localhost", (helper, rank, main), 0.0))
    for i in range(14):
        state.apply(WriterGone("log", "localhost", ServerProcess(100 + i, 12, "g++", "g++ x.hpp", None, "child"),
                               False, 3, 1.0, exit_known=i < 4, returncode=0 if i < 4 else None))
    rows = process_rows(state)
    texts = [text for text, _ in rows]
    assert texts[0].startswith("●") and " 10 " in texts[0] and " 12 " in texts[1]
    assert not any(text.startswith("✗") for text in texts), texts
    assert any("helper" in text and "15" in text and "14 ended" in text for text in texts), texts
    assert " 20 " not in "".join(texts)  # folded
    expanded = [text for text, _ in process_rows(state, helpers=True)]
    assert any(" 20 " in text for text in expanded) and any("g++ x.hpp" in text for text in expanded)


# ------------------------------------------------------------------ the CLI, as an operator runs it


@pytest.mark.slow
async def test_watch_plain_reads_a_forking_start_as_ready_with_no_failed(forking):
    server = await forking("--helpers", "24")
    proc = await start_cli("watch", "--plain", str(server.log), "--gpus", "none", "--timeout", "60",
                           env={"NO_COLOR": "1"})
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    text = out.decode()
    assert proc.returncode == 0, text + err.decode()
    assert "READY" in text and "FAILED" not in text, text
    assert f"rank: pid {server.worker}" in text, text
    assert "helper" in text and "is gone" not in text


@pytest.mark.slow
async def test_watch_plain_says_failed_naming_a_killed_real_worker(forking):
    server = await forking("--helpers", "4", "--hold", "60")
    proc = await start_cli("watch", "--plain", str(server.log), "--gpus", "none", "--timeout", "60",
                           env={"NO_COLOR": "1"})
    seen = []
    while f"pid {server.worker}" not in "".join(seen):
        seen.append((await asyncio.wait_for(proc.stdout.readline(), WAIT)).decode())
    os.kill(server.worker, signal.SIGKILL)
    killed = time.monotonic()
    while "FAILED" not in seen[-1]:
        raw = await asyncio.wait_for(proc.stdout.readline(), WAIT)
        assert raw, "".join(seen)
        seen.append(raw.decode())
    took = time.monotonic() - killed
    assert f"pid {server.worker} (VLLM::Worker" in seen[-1], seen[-1]
    assert took < 3.0, f"{took:.2f} s"  # ~1 s (0.5 s process polling, 0.5 s for the last words); the 60 s timeout is far off
    assert await asyncio.wait_for(proc.wait(), WAIT) == 1
