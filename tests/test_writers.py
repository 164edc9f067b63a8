"""The server behind a log, found from /proc: real processes that write, fork, pipe and die.

A pretend server (started the way an operator starts one by hand, outside Watchtower)
writes its log through its stdout, runs one child per rank whose process title is
``sglang::scheduler_TPn`` (argv[0], as setproctitle sets it), and dies as the test says.
The same promises hold locally (:class:`WriterSource`) and over the real sshd (the tail
agent's own discovery, through :class:`RemoteTailer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.launch_helpers import wait_for_file
from tests.support import until
from tests.tail_support import Reader
from tui.core.events import NoWriter, NoWriterReason, WriterGone, WritersFound
from tui.core.verdict import DEAD
from tui.session import SessionInfo, WatchSession
from tui.sources import procscan
from tui.sources.remote_tail import RemoteTailer
from tui.sources.writers import WriterSource, role_and_rank

pytestmark = pytest.mark.skipif(not procscan.available(), reason="no /proc here")

# argv: RANKS PIDFILE. Prints its startup, runs a child per rank (titled like SGLang's schedulers; they
# end when the main process goes: their stdin closes), and on SIGUSR1 starts a detokenizer.
SERVER = r"""
import os, signal, subprocess, sys, time
def child(title):
    return subprocess.Popen([title, "-c", "import sys; print('%s up' % sys.argv[0], flush=True); sys.stdin.read()"],
                            executable=sys.executable, stdin=subprocess.PIPE)
print("[2026-12-01 09:00:00] server_args=ServerArgs(model_path='/m')", flush=True)
kids = [child("sglang::scheduler_TP%d" % i) for i in range(int(sys.argv[1]))]
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
signal.signal(signal.SIGUSR1, lambda *_: kids.append(child("sglang::detokenizer")))
while True:
    time.sleep(3600)
"""


class Server:
    """The pretend server, started in the background by a shell that exits at once (so it
    is not our child: its exit status cannot be waited for), in its own session; with
    ``pipe``, as ``server | tee -a LOG``."""

    def __init__(self, log, ranks: int = 2, pipe: bool = False) -> None:
        self.log = log
        self.pid_file = log.with_name("server.pid")
        redirect = '| tee -a "$2" >/dev/null' if pipe else '>>"$2" 2>&1'
        script = f'{sys.executable} -c "$0" "$1" "$3" --api-key sk-secret1234 {redirect} &'
        self.shell = subprocess.Popen(
            ["sh", "-c", script, SERVER, str(ranks), str(log), str(self.pid_file)], start_new_session=True
        )
        self.shell.wait()
        self.pid = 0

    async def started(self) -> Server:
        self.pid = int((await wait_for_file(self.pid_file)).split()[0])
        return self

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.shell.pid, signal.SIGKILL)


@pytest.fixture
def server(tmp_path):
    started: list[Server] = []

    async def start(**kw) -> Server:
        started.append(Server(tmp_path / "server.log", **kw))
        return await started[-1].started()

    yield start
    for s in started:
        s.kill()


async def writer_events(source, want, timeout: float = 10.0) -> list:
    """Events from ``source`` until ``want(events)`` holds."""
    seen: list = []
    async with asyncio.timeout(timeout):
        while not want(seen):
            seen.append(await source.next(timeout))
    return seen


class Local:
    """A WriterSource read in a background task, like a Reader."""

    def __init__(self, path) -> None:
        self.source = WriterSource(path)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        async for event in self.source.events():
            await self.queue.put((time.monotonic(), event))

    async def next(self, timeout: float):
        return await asyncio.wait_for(self.queue.get(), timeout)

    async def close(self) -> None:
        await self.source.close()
        await asyncio.wait_for(self.task, 5)


class Remote:
    """The writer events a RemoteTailer's agent reports (the log events are read and dropped)."""

    def __init__(self, target, path) -> None:
        self.reader = Reader(RemoteTailer(target, str(path), writers=True))
        self.taken = 0
        self.pump = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        with contextlib.suppress(TimeoutError):
            while True:
                await self.reader.next(3600)

    async def next(self, timeout: float):
        async with asyncio.timeout(timeout):
            while len(self.reader.writers) <= self.taken:
                await asyncio.sleep(0.02)  # pacing only: the reader's own task fills the list
        self.taken += 1
        return time.monotonic(), self.reader.writers[self.taken - 1]

    async def close(self) -> None:
        self.pump.cancel()
        await self.reader.close()


@pytest.fixture(params=["local", "remote"])
def watch(request):
    if request.param == "remote":
        target = request.getfixturevalue("target")
        request.getfixturevalue("ssh_connections_closed")
        return lambda path: Remote(target, path)
    return Local


def found(events) -> WritersFound | None:
    return next((e for _, e in reversed(events) if isinstance(e, WritersFound)), None)


def test_role_and_rank_from_process_titles():
    assert role_and_rank("sglang::schedul", ["sglang::scheduler_DP0_TP3"]) == ("rank", "DP0 TP3")
    assert role_and_rank("sglang::detoken", ["sglang::detokenizer"]) == ("detokenizer", None)
    assert role_and_rank("VLLM::EngineCor", ["VLLM::EngineCore"]) == ("engine", None)
    assert role_and_rank("VLLM::Worker_TP", ["VLLM::Worker_PP1_TP2"]) == ("rank", "PP1 TP2")
    assert role_and_rank("python3", ["python3", "-m", "sglang.launch_server", "--tp", "8"]) == ("child", None)


async def test_writers_are_found_with_their_process_tree_and_ranks(server, watch):
    s = await server(ranks=2)
    w = watch(s.log)
    try:
        events = await writer_events(w, lambda ev: (f := found(ev)) is not None and len(f.processes) == 3)
        tree = found(events)
        main = tree.main
        assert main is not None and main.pid == s.pid and main.role == "main" and main.writes_log
        assert "sk-secret1234" not in main.command and "-c" in main.command
        assert main.started is not None and abs(main.started - time.time()) < 60
        ranks = sorted((p.rank, p.role, p.ppid) for p in tree.processes[1:])
        assert ranks == [("TP0", "rank", s.pid), ("TP1", "rank", s.pid)]
        assert not any(isinstance(e, NoWriter) for _, e in events)
        # a child appearing later joins the tree
        os.kill(s.pid, signal.SIGUSR1)
        events = await writer_events(w, lambda ev: (f := found(ev)) is not None and len(f.processes) == 4)
        assert [p.role for p in found(events).processes].count("detokenizer") == 1
    finally:
        await w.close()


async def test_sigkill_of_the_main_process_is_noticed_promptly_and_named(server, watch):
    s = await server(ranks=2)
    w = watch(s.log)
    try:
        await writer_events(w, lambda ev: (f := found(ev)) is not None and len(f.processes) == 3)
        killed = time.monotonic()
        os.kill(s.pid, signal.SIGKILL)
        events = await writer_events(w, lambda ev: any(isinstance(e, WriterGone) and e.main for _, e in ev))
        at, gone = next((t, e) for t, e in events if isinstance(e, WriterGone) and e.main)
        limit = 1.0 if isinstance(w, Local) else 3.0  # the agent's report crosses SSH
        assert at - killed <= limit + 0.3, f"noticed after {at - killed:.2f} s"
        assert gone.process.pid == s.pid and gone.process.role == "main"
        # not Watchtower's child: the status is known only if the kernel still held it
        assert gone.signal == signal.SIGKILL if gone.exit_known else (gone.returncode, gone.signal) == (None, None)
        # the ranks end too (their stdin closed): each is reported, and then nothing is "no writer"
        events = await writer_events(w, lambda ev: any(isinstance(e, WriterGone) and e.remaining == 0 for _, e in ev))
        assert not any(isinstance(e, NoWriter) for _, e in events)
    finally:
        await w.close()


async def test_a_rank_dying_while_the_main_process_lives_is_reported_with_its_rank(server, watch):
    s = await server(ranks=2)
    w = watch(s.log)
    try:
        events = await writer_events(w, lambda ev: (f := found(ev)) is not None and len(f.processes) == 3)
        rank1 = next(p for p in found(events).processes if p.rank == "TP1")
        os.kill(rank1.pid, signal.SIGKILL)
        events = await writer_events(w, lambda ev: any(isinstance(e, WriterGone) for _, e in ev))
        gone = next(e for _, e in events if isinstance(e, WriterGone))
        assert (gone.process.pid, gone.process.rank, gone.main, gone.remaining) == (rank1.pid, "TP1", False, 2)
        events = await writer_events(w, lambda ev: found(ev) is not None)
        assert sorted(p.rank or p.role for p in found(events).processes) == ["TP0", "main"]
    finally:
        await w.close()


async def test_a_log_written_through_tee_names_the_server_behind_the_pipe(server, watch):
    s = await server(ranks=1, pipe=True)
    w = watch(s.log)
    try:
        events = await writer_events(w, lambda ev: (f := found(ev)) is not None and len(f.processes) == 2)
        tree = found(events)
        assert tree.via == "pipe" and tree.main.pid == s.pid
        assert [p.rank for p in tree.processes] == [None, "TP0"]
    finally:
        await w.close()


async def test_no_writer_is_said_once_then_a_writer_that_opens_the_log_is_found(tmp_path, watch):
    log = tmp_path / "server.log"
    log.write_bytes(b"written by someone long gone\n")
    w = watch(log)
    try:
        events = await writer_events(w, lambda ev: any(isinstance(e, NoWriter) for _, e in ev))
        none = next(e for _, e in events if isinstance(e, NoWriter))
        assert none.reason in (NoWriterReason.NOBODY, NoWriterReason.OTHER_USER) and "writ" in none.detail
        opened = time.monotonic()
        holder = subprocess.Popen(["sh", "-c", 'exec sleep 60 >>"$0"', str(log)])
        try:
            events = await writer_events(w, lambda ev: found(ev) is not None)
            assert found(events).main.pid == holder.pid
            assert events[-1][0] - opened < 2.0, "the open is noticed (inotify), not left to the slow scan"
            assert not any(isinstance(e, NoWriter) for _, e in events)
        finally:
            holder.kill()
            holder.wait()
    finally:
        await w.close()


async def test_exit_status_of_our_own_child_is_known(tmp_path):
    """A writer that is this process's child stays a zombie until waited for: its status is
    read from /proc (a process of someone else's is reaped at once: then it is unknown)."""
    log = tmp_path / "server.log"
    child = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
                             stdout=open(log, "ab"))
    w = Local(log)
    try:
        await writer_events(w, lambda ev: found(ev) is not None)
        child.send_signal(signal.SIGTERM)
        events = await writer_events(w, lambda ev: any(isinstance(e, WriterGone) for _, e in ev))
        gone = next(e for _, e in events if isinstance(e, WriterGone))
        assert (gone.exit_known, gone.returncode, gone.signal, gone.main) == (True, None, signal.SIGTERM, True)
    finally:
        child.kill()
        child.wait()
        await w.close()


async def test_a_writer_gone_while_the_connection_was_down_keeps_its_command(server, target, sshd, ssh_connections_closed):
    """The agent started after a reconnect knows the earlier writers by pid only; the client
    still knows their command lines, and the report of their death must not erase them."""
    s = await server(ranks=1)
    w = Remote(target, s.log)
    try:
        first = found(await writer_events(w, lambda ev: (f := found(ev)) is not None and len(f.processes) == 2))
        assert first is not None
        (main,) = [p for p in first.processes if p.role == "main"]
        assert "-c" in main.command  # the full command line, not the title
        sshd.kill_sessions()  # the network drops …
        os.kill(s.pid, signal.SIGKILL)  # … and meanwhile the server dies
        events = await writer_events(w, lambda ev: any(isinstance(e, WriterGone) and e.main for _, e in ev), 20)
        gone = next(e for _, e in events if isinstance(e, WriterGone) and e.main)
        assert gone.process.pid == s.pid and gone.process.command == main.command
    finally:
        await w.close()


def test_a_command_line_with_newlines_is_described_on_one_line():
    from tui.core.events import ServerProcess
    from tui.core.writers import describe

    child = ServerProcess(42, 1, "python", "python -c \nimport sys\nsys.stdin.read()", 1.0, "child")
    assert describe(child) == "pid 42 (python -c ␊import sys␊sys.stdin.read())"


async def test_a_writer_killed_before_it_was_seen_and_left_a_zombie_is_gone_with_its_status(tmp_path):
    """``server > log 2>&1 & exec tail -f log`` (a container's entrypoint): ``tail`` never reaps
    the server, so a server killed before the watch began is a zombie holding no descriptor. It is
    the log's writer all the same (a child of the log's reader, started before its last write):
    gone, as the main process, with the wait status the kernel still holds (/proc/PID/stat, 52)."""
    log = tmp_path / "server.log"
    script = (f"{sys.executable} -c \"import time; print('up', flush=True); time.sleep(60)\" > {log} 2>&1 & "
              f"sleep 0.5; exec tail -f {log} > /dev/null")
    shell = subprocess.Popen(["sh", "-c", script])
    try:
        await wait_for_file(log)
        server = next(p for p in procscan.children(shell.pid) if (procscan.process(p) or {}).get("title") != "sleep")
        await until(lambda: (procscan.process(shell.pid) or {}).get("title") == "tail")
        os.kill(server, signal.SIGKILL)
        await until(lambda: (procscan.process(server) or {}).get("state") == "Z")
        w = Local(log)
        try:
            events = await writer_events(w, lambda ev: any(isinstance(e, (WriterGone, NoWriter)) for _, e in ev))
            gone = next(e for _, e in events if isinstance(e, WriterGone))
            assert (gone.main, gone.process.pid, gone.process.role) == (True, server, "main")
            assert (gone.exit_known, gone.returncode, gone.signal) == (True, None, signal.SIGKILL)
            session = WatchSession(info=SessionInfo(log_path=str(log)))
            session.handle(gone)
            verdict = session.verdict()
            assert verdict.kind == DEAD and f"SIGKILL · pid {server}" in verdict.detail, verdict.text
        finally:
            await w.close()
    finally:
        shell.kill()
        shell.wait()


def test_a_long_command_keeps_its_script_and_flags_its_long_paths_give_way():
    """Under a deep venv and a pytest tmp dir the script name fell past the cut (CI: 'fake_server.…')."""
    from tui.core.events import ServerProcess
    from tui.core.writers import describe

    venv = "/check/work/main/.venv/bin/python"
    script = "/tmp/pytest-of-root/pytest-278/popen-gw0/test_sigkilled_server_is_dead_0/fake_server.py"
    server = ServerProcess(7, 1, "python", f"{venv} {script} --tp 8 --model-path /m", 1.0, "main")
    assert describe(server) == "pid 7 (…/python …/fake_server.py --tp 8 --model-path /m)"
    short = ServerProcess(8, 1, "python", f"{venv} -m sglang.launch_server --model-path /models/x", 1.0, "main")
    assert describe(short) == f"pid 8 ({venv} -m sglang.launch_server --model-path /models/x)"  # fits: whole
    endless = ServerProcess(9, 1, "python", "python -m x " + "--flag value " * 30, 1.0, "main")
    assert len(describe(endless)) == len("pid 9 ()") + 120 and describe(endless).endswith("…)")


def test_with_inotify_watching_a_quiet_log_the_proc_scan_is_only_a_safety_net(tmp_path):
    """Issue 35: eight quiet local logs each scanned every 5 s cost half a watch's CPU at rest. While
    inotify watches the directory and the file, an open (or a new file at the path) asks for the scan;
    the timer's own scan waits a minute. Where inotify cannot watch, the timer is all there is: 5 s."""
    from tui.sources.follow import Inotify

    log = tmp_path / "server.log"
    log.write_bytes(b"written by someone long gone\n")
    inotify = Inotify(True)
    watched, polled = procscan.Discovery(str(log), inotify), procscan.Discovery(str(log))
    try:
        now = time.monotonic()
        for discovery in (watched, polled):
            assert [item[0] for item in discovery.tick(now)] == ["none"]
        assert watched.timeout(now) == pytest.approx(procscan.WATCHED_SCAN) and not watched.scan_wanted(now + procscan.SLOW_SCAN)
        assert polled.timeout(now) == pytest.approx(procscan.SLOW_SCAN) and polled.scan_wanted(now + procscan.SLOW_SCAN)
        holder = subprocess.Popen(["sh", "-c", 'exec sleep 60 >>"$0"', str(log)])
        try:
            deadline = time.monotonic() + 10
            while not watched.due:  # the open, through inotify, without waiting for the timer
                assert time.monotonic() < deadline, "the open never woke the discovery"
                select_readable(watched.fd, deadline - time.monotonic())
                watched.wakeup()
            assert watched.timeout(time.monotonic()) <= procscan.MIN_RESCAN  # (scans are spaced: as the source does)
            time.sleep(watched.timeout(time.monotonic()))
            found = watched.tick(time.monotonic())
            assert [item[0] for item in found] == ["found"] and found[0][3] == holder.pid
        finally:
            holder.kill()
            holder.wait()
    finally:
        inotify.close()


def select_readable(fd: int, timeout: float) -> None:
    import select

    select.select([fd], [], [], max(0.0, timeout))


async def test_a_fork_seen_before_it_executed_is_seen_again_once_it_has(tmp_path):
    """Python starting python as ``sglang::scheduler_TP1`` (``Popen([title, …], executable=python)``):
    found between its fork and its exec, the child is its parent's copy — a helper; after the exec
    its ``comm`` is the same (``python``) but its command line is the rank's. The tree sees it again,
    or the rank ended as "helper ended" (a 1-in-6 failure of the ranks' follow-on test)."""
    log = tmp_path / "server.log"
    go = tmp_path / "go"
    script = ("import os, sys, time\n"
              f"out = open({str(log)!r}, 'a'); out.write('up\\n'); out.flush()\n"
              "if os.fork() == 0:\n"
              f"    while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
              "    os.execv(sys.executable, ['sglang::scheduler_TP1', '-c', 'import time; time.sleep(60)'])\n"
              "time.sleep(60)\n")
    server = subprocess.Popen([sys.executable, "-c", script])
    try:
        await wait_for_file(log)
        st = os.stat(log)
        tree = procscan.ServerTree()

        def both_seen() -> bool:  # (a scan before the fork finds the parent alone: scanned again)
            tree.rescan(st.st_dev, st.st_ino)
            return len(tree.procs) == 2

        await until(both_seen)
        child = next(pid for pid in tree.procs if pid != server.pid)
        assert tree.procs[child]["argv"] == tree.procs[server.pid]["argv"]  # (its parent's copy, for now)
        go.touch()
        await until(lambda: tree.check()[1] and tree.procs[child]["argv"][0] == "sglang::scheduler_TP1")
        assert role_and_rank(tree.procs[child]["title"], tree.procs[child]["argv"]) == ("rank", "TP1")
    finally:
        for pid in procscan.children(server.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        server.kill()
        server.wait()
