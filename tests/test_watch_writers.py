"""`watch` on a server Watchtower did not launch: real processes write a startup log, then die
(or a rank does, or they go quiet); the verdict names them. Real /proc, real signals, the real
CLI (and the loopback sshd for the remote case)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import screen_text, start_cli, until
from tests.conftest import sshd_available
from tui.app.dashboard import build_app
from tui.app.header import VerdictHeader
from tui.launch.proctable import is_alive
from tui.core.limits import StallLimits
from tui.core.verdict import STALLED
from tui.session import SessionInfo, WatchSession
from tui.sources.factory import log_tailer, writer_source
from tui.sources.procscan import available as proc_available

REPO = Path(__file__).parent.parent
SIM = REPO / "tests" / "server_sim.py"
WAIT = 20.0

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(not proc_available(), reason="no /proc to find writers in")]

# A stand-in for `nohup python -m sglang.launch_server … >> LOG 2>&1 &`: it writes the first lines
# of a startup to LOG itself; with "ranks" ("ranksN"), two (N) child processes named like SGLang's schedulers
# hold the log too. It prints its pid and its ranks' pids, then sleeps.
SERVER = r'''
import os, subprocess, sys, time
log = open(sys.argv[1], "a", buffering=1)
ranks = []
if sys.argv[2].startswith("ranks"):  # "ranks8": 8 of them
    for r in range(int(sys.argv[2][5:] or 2)):
        ranks.append(subprocess.Popen([f"sglang::scheduler_TP{r}", "3600"], executable="/bin/sleep", stdout=log, stderr=log))
log.write("[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=2)\n")
for r in range(2):
    log.write(f"[2026-03-14 21:04:20 TP{r}] Load weight begin. avail mem=139.26 GB\n")
print(os.getpid(), *[p.pid for p in ranks], flush=True)
time.sleep(3600)
'''


class Server:
    """The script started the way an operator starts a server by hand: detached, not ours."""

    def __init__(self, tmp_path: Path, mode: str = "main") -> None:
        self.script = tmp_path / "fake_server.py"
        self.script.write_text(SERVER)
        self.log = tmp_path / "server.log"
        self.log.touch()
        # a shell starts it in the background and exits: its parent is not the test (nor Watchtower)
        out = subprocess.run(
            ["bash", "-c", f'setsid {sys.executable} "$0" "$1" "$2" > "$0.out" 2>&1 < /dev/null & echo $!',
             str(self.script), str(self.log), mode],
            capture_output=True, text=True, check=True,
        )
        self.pid = int(out.stdout.split()[0])
        deadline = time.monotonic() + WAIT
        output = Path(f"{self.script}.out")
        while not output.read_text().strip():
            assert time.monotonic() < deadline, "the fake server did not start"
            time.sleep(0.05)
        pids = [int(p) for p in output.read_text().split()]
        assert pids[0] == self.pid
        self.ranks = pids[1:]

    def kill(self) -> None:
        for pid in (self.pid, *self.ranks):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def servers():
    started: list[Server] = []
    yield started
    for server in started:
        server.kill()


async def watch(log: Path, *extra: str, env: dict | None = None) -> asyncio.subprocess.Process:
    return await start_cli("watch", "--plain", str(log), "--timeout", "90", *extra, env=env)


async def expect(proc: asyncio.subprocess.Process, needle: str, seen: list[str]) -> str:
    """The first line holding ``needle``, among those already read or the next ones."""
    for line in seen:
        if needle in line:
            return line
    while True:
        raw = await asyncio.wait_for(proc.stdout.readline(), WAIT)
        if not raw:
            err = (await proc.stderr.read()).decode(errors="replace")
            raise AssertionError(f"watcher ended before {needle!r}: {''.join(seen)} {err}")
        line = raw.decode()
        seen.append(line)
        if needle in line:
            return line


async def kill_until_dead(proc: asyncio.subprocess.Process, server: Server, seen: list[str]) -> tuple[float, str]:
    """SIGKILL the server once the watcher follows its startup: (seconds to the DEAD line, the line);
    the watcher has exited 1, naming the process."""
    await expect(proc, "weight load started", seen)
    killed = time.monotonic()
    os.kill(server.pid, signal.SIGKILL)
    dead = await expect(proc, "DEAD", seen)
    took = time.monotonic() - killed
    assert f"main process pid {server.pid} (" in dead and "fake_server.py" in dead
    assert await asyncio.wait_for(proc.wait(), WAIT) == 1
    return took, dead


async def test_sigkilled_server_is_dead_promptly_naming_pid_and_command(tmp_path, servers):
    server = Server(tmp_path)
    servers.append(server)
    proc = await watch(server.log)
    seen: list[str] = []
    found = await expect(proc, f"server: pid {server.pid}", seen)
    assert "fake_server.py" in found and "writes the log" in found
    took, dead = await kill_until_dead(proc, server, seen)
    assert "exit status unknown" in dead or "killed by SIGKILL" in dead  # known only if the kernel still held it
    assert "Load weight begin" in dead  # what the log said last
    print(f"SIGKILL -> DEAD printed in {took:.2f} s")
    assert took < 3.0, f"{took:.2f} s"  # ~1 s: 0.5 s process polling, 0.5 s for the log's last words


async def test_a_rank_process_dying_while_the_main_lives_fails_naming_the_rank(tmp_path, servers):
    server = Server(tmp_path, "ranks")
    servers.append(server)
    proc = await watch(server.log)
    seen: list[str] = []
    await expect(proc, f"server: pid {server.pid}", seen)
    tp1 = server.ranks[1]
    await expect(proc, f"rank [TP1]: pid {tp1}", seen)
    os.kill(tp1, signal.SIGKILL)
    failed = await expect(proc, "FAILED", seen)
    assert f"TP1's process pid {tp1} (sglang::scheduler_TP1 3600) is gone" in failed
    assert f"while the main process {server.pid} lives" in failed
    assert "killed by SIGKILL" in failed  # a zombie of the server's: the kernel still holds its status
    assert await asyncio.wait_for(proc.wait(), WAIT) == 1
    os.kill(server.pid, 0)  # the main process was left alone


async def test_alive_and_silent_is_stalled_after_the_phase_limit(tmp_path, servers):
    server = Server(tmp_path)
    servers.append(server)
    proc = await watch(server.log, "--stall-limit", "10m,weight_load=2s", "--gpus", "sim")  # 8 idle GPUs
    seen: list[str] = []
    await expect(proc, f"server: pid {server.pid}", seen)
    stalled = await expect(proc, "STALLED?", seen)
    assert "past the limit for weight load (0:02, --stall-limit)" in stalled and "GPUs idle" in stalled
    assert "TP0, TP1 not done with weight load" in stalled
    os.kill(server.pid, 0)  # and it is alive: stalled, not dead
    proc.kill()
    await proc.wait()


async def test_dashboard_shows_the_tree_and_stalled_then_dead(tmp_path, servers):
    server = Server(tmp_path, "ranks")
    servers.append(server)
    log = str(server.log)
    session = WatchSession(
        log=log_tailer(log, writers=True),
        info=SessionInfo(log_path=log),
        stall_limits=StallLimits.parse("weight_load=2s"),
    )
    session.add_source(writer_source(log))
    app = build_app(session, gpus_enabled=False)
    async with app.run_test(size=(150, 45)) as pilot:
        await until(lambda: len(session.process.writers.processes) == 3, timeout=WAIT)
        await until(lambda: session.verdict().kind == STALLED, timeout=WAIT)
        app.query_one(VerdictHeader).refresh()  # (it redraws every second on its own)
        await until(lambda: "STALLED?" in screen_text(app) and "sglang::scheduler_TP0" in screen_text(app), timeout=WAIT,
                    pilot=pilot, what="the header and the process tree drawn")
        text = screen_text(app)
        assert "STALLED?" in text and "weight load (0:02, --stall-limit)" in text
        assert "Server processes" in text and str(server.pid) in text
        assert str(server.ranks[0]) in text and "sglang::scheduler_TP0" in text
        os.kill(server.pid, signal.SIGKILL)
        await until(lambda: session.verdict().kind == "dead", timeout=WAIT)
        await until(lambda: "DEAD" in screen_text(app), timeout=WAIT, pilot=pilot, what="the header redrawn")
        text = screen_text(app)
        assert "DEAD" in text and f"main process pid {server.pid}" in text
        assert app.exit_code_for_state() == 1


@pytest.mark.ssh
@pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")
async def test_remote_sigkilled_server_is_dead_within_seconds(tmp_path, servers, sshd):
    server = Server(tmp_path)
    servers.append(server)
    env = {"WATCHTOWER_SSH_KNOWN_HOSTS": str(sshd.known_hosts), "WATCHTOWER_SSH_IDENTITY": str(sshd.client_key)}
    proc = await watch(server.log, "--host", sshd.spec, env=env)
    seen: list[str] = []
    await expect(proc, f"server: pid {server.pid}", seen)
    took, _ = await kill_until_dead(proc, server, seen)
    print(f"remote: SIGKILL -> DEAD printed in {took:.2f} s")
    assert took < 5.0, f"{took:.2f} s"


async def test_at_80x24_the_dead_header_says_the_cause_first_and_the_tree_leaves_the_log_visible(tmp_path, servers):
    """Issue 20, item 4: a long command path no longer cuts how the process died, and the process
    tree takes one line at 80×24 so that the log's lines stay on screen."""
    deep = tmp_path / ("a-rather-long-directory-name-" * 3) / "srv"
    deep.mkdir(parents=True)
    server = Server(deep, "ranks")
    servers.append(server)
    log = str(server.log)
    session = WatchSession(log=log_tailer(log, writers=True), info=SessionInfo(log_path=log))
    session.add_source(writer_source(log))
    app = build_app(session, gpus_enabled=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: len(session.process.writers.processes) == 3 and session.state.lines >= 3, timeout=WAIT)
        # the panel redraws on the next refresh
        text = await until(lambda: "3 running" in (shown := screen_text(app)) and shown, timeout=WAIT, pilot=pilot)
        rows = text.splitlines()
        tree = [i for i, line in enumerate(rows) if "Server processes" in line]
        assert len(tree) == 1 and "3 running (main pid" in rows[tree[0]] and "2 ranks" in rows[tree[0]]
        assert rows[tree[0] + 1].startswith(" Log ")  # one row: nothing wraps onto the next
        assert str(server.ranks[0]) not in text  # the rows of the tree are folded into that one line
        assert "server_args=ServerArgs" in text and text.count("Load weight begin") == 2  # every log line shows
        os.kill(server.pid, signal.SIGKILL)
        await until(lambda: session.verdict().kind == "dead", timeout=WAIT)
        app.query_one(VerdictHeader).refresh()
        await pilot.pause()
        row = next(line for line in screen_text(app).splitlines() if "DEAD" in line)
        cause = "SIGKILL" if "SIGKILL" in row else "exit status unknown"
        assert row.split("DEAD", 1)[1].strip().startswith(f"{cause} · pid {server.pid}"), row


async def test_ranks_killed_by_their_parent_after_its_failure_are_follow_ons_not_the_oom_killer(tmp_path):
    """Issue 20, item 6: SGLang's main process kills its ranks after a ValueError; their SIGKILL is a
    follow-on of that failure, and without evidence nothing says "OOM killer". The server starts once
    the watch says it is watching (under load a watch started after it met a server already gone)."""
    sim = REPO / "tests" / "server_sim.py"
    log = tmp_path / "server.log"
    log.touch()
    proc = await start_cli("watch", "--plain", str(log), "--gpus", "none", "--timeout", "60")
    assert proc.stdout is not None
    first = await asyncio.wait_for(proc.stdout.readline(), WAIT)
    assert b"watching" in first, first
    subprocess.run(["bash", "-c", 'setsid "$0" "$1" --outcome raise --tp 4 --step 1.5 >> "$2" 2>&1 < /dev/null &',
                    sys.executable, str(sim), str(log)], check=True)
    rest, err = await asyncio.wait_for(proc.communicate(), 90)
    stdout = (first + rest).decode()
    assert proc.returncode == 1, stdout + err.decode()
    error = next(line for line in stdout.splitlines() if "error: line" in line and "ValueError" in line)
    line = error.split("error: line ", 1)[1].split()[0].rstrip(":")
    gone = [chunk for chunk in stdout.split("gone: rank")[1:]]
    assert len(gone) == 4, stdout
    assert all(f"after the failure at line {line}: a follow-on of it" in chunk.split("\n2")[0] for chunk in gone)
    assert "OOM" not in stdout


async def test_watch_health_ready_needs_the_url_to_answer_200_too(tmp_path):
    """`watch --plain --health URL` of a server started by hand: its log says ready, and READY is
    said only once the URL answers 200 (the simulator answers 503 until then)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, str(SIM), "--tp", "2", "--step", "0.01", "--port", str(port)],
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        proc = await start_cli("watch", str(log), "--plain", "--gpus", "none", "--timeout", "60", "--health",
                               f"http://127.0.0.1:{port}/health", env={"NO_COLOR": "1"})
        out, err = await asyncio.wait_for(proc.communicate(), 90)
        text = out.decode()
        assert proc.returncode == 0, text + err.decode()
        marker = text.index("ready marker (line")
        answered = text.index(f"http://127.0.0.1:{port}/health answers: HTTP 200")
        assert marker < answered < text.index("READY: the log's ready line")
        assert "READY (line" not in text  # the log's line alone is never called READY
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


async def test_watch_health_that_never_answers_is_not_ready(tmp_path):
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, str(SIM), "--tp", "2", "--step", "0.01"],
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        proc = await start_cli("watch", str(log), "--plain", "--gpus", "none", "--timeout", "5", "--health",
                               "http://127.0.0.1:1/health", env={"NO_COLOR": "1"})
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        text = out.decode()
        assert proc.returncode == 3, text
        assert "the log says ready" in text and "has not answered 200: connection refused" in text
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


async def kill_the_main(server: Server, session: WatchSession) -> None:
    """Once the main process and its two ranks are found: SIGKILL to the main alone, until DEAD."""
    await until(lambda: len(session.process.writers.processes) == 3, timeout=WAIT)
    os.kill(server.pid, signal.SIGKILL)
    await until(lambda: session.verdict().kind == "dead", timeout=WAIT)


def ranked_dashboard(server: Server):
    log = str(server.log)
    session = WatchSession(log=log_tailer(log, writers=True), info=SessionInfo(log_path=log))
    session.add_source(writer_source(log))
    return session, build_app(session, gpus_enabled=False)


async def test_q_after_the_main_process_died_names_its_live_ranks_and_stops_them_on_s(tmp_path, servers):
    """Issue 34 item 5: `kill -9` of the main process leaves its ranks (holding GPUs); `q` says they
    are there and offers to stop them before quitting (the `k` path: SIGTERM, then SIGKILL)."""
    server = Server(tmp_path, "ranks")
    servers.append(server)
    session, app = ranked_dashboard(server)
    async with app.run_test(size=(120, 35)) as pilot:
        await kill_the_main(server, session)
        await pilot.press("q")
        text = await until(lambda: "still run" in (shown := screen_text(app)) and shown, timeout=WAIT, pilot=pilot,
                           what="the question before quitting")
        assert app.is_running  # nothing quit yet
        for pid, rank in zip(server.ranks, ("TP0", "TP1")):
            assert f"pid {pid} [{rank}] (sglang::scheduler_{rank} 3600)" in text
        assert "[s] stop them" in text and "[l] leave them running and quit" in text
        await pilot.press("s")
        await until(lambda: not any(is_alive(pid) for pid in server.ranks), timeout=WAIT, pilot=pilot,
                    what="the ranks stopped")
        await until(lambda: not app.is_running, timeout=WAIT, pilot=pilot, what="quit after the stop")
    assert app.return_value == 1  # DEAD


async def test_q_after_the_main_process_died_can_leave_the_ranks_running(tmp_path, servers):
    server = Server(tmp_path, "ranks")
    servers.append(server)
    session, app = ranked_dashboard(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await kill_the_main(server, session)
        await pilot.press("q")
        await until(lambda: "leave them running" in screen_text(app), timeout=WAIT, pilot=pilot)
        await pilot.press("escape")  # cancel: the dashboard stays
        await pilot.pause()
        assert app.is_running and "leave them running" not in screen_text(app)
        await pilot.press("q")
        await until(lambda: "leave them running" in screen_text(app), timeout=WAIT, pilot=pilot)
        await pilot.press("l")
        await until(lambda: not app.is_running, timeout=WAIT, pilot=pilot)
    assert all(is_alive(pid) for pid in server.ranks)  # left as asked


async def test_q_with_the_server_alive_or_its_ranks_gone_quits_without_asking(tmp_path, servers):
    server = Server(tmp_path, "ranks")
    servers.append(server)
    session, app = ranked_dashboard(server)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: len(session.process.writers.processes) == 3, timeout=WAIT)
        server.kill()  # the main process and its ranks
        await until(lambda: session.verdict().kind == "dead" and not session.process.writers.processes, timeout=WAIT)
        await pilot.press("q")
        await until(lambda: not app.is_running, timeout=WAIT, pilot=pilot)


async def test_watch_plain_ending_on_dead_names_the_ranks_still_running_and_how_to_stop_them(tmp_path, servers):
    server = Server(tmp_path, "ranks")
    servers.append(server)
    proc = await watch(server.log)
    seen: list[str] = []
    await expect(proc, f"rank [TP1]: pid {server.ranks[1]}", seen)
    await kill_until_dead(proc, server, seen)
    rest = (await proc.stdout.read()).decode()
    left = next(line for line in [*seen, *rest.splitlines()] if "still run" in line)
    assert f"pid {server.ranks[0]} [TP0] (sglang::scheduler_TP0 3600)" in left, left
    assert f"stop them: kill {server.ranks[0]} {server.ranks[1]}" in left, left


async def test_after_dead_at_120x35_the_process_panel_takes_a_few_rows_not_the_log(tmp_path, servers):
    """Issue 34 item 10: 8 ranks outliving their main process took 12 rows from the log; the panel
    keeps a few and says how many more (the main process gone stays in sight)."""
    server = Server(tmp_path, "ranks8")
    servers.append(server)
    session, app = ranked_dashboard(server)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: len(session.process.writers.processes) == 9, timeout=WAIT)
        os.kill(server.pid, signal.SIGKILL)
        await until(lambda: session.verdict().kind == "dead", timeout=WAIT)
        text = await until(lambda: "more (" in (shown := screen_text(app)) and "main       gone" in shown and shown, timeout=WAIT,
                           pilot=pilot, what="the panel capped")
        rows = text.splitlines()
        top = next(i for i, line in enumerate(rows) if "Server processes" in line)
        log = next(i for i, line in enumerate(rows) if line.startswith(" Log"))
        assert log - top <= 7, "\n".join(rows[top:log])  # the title and at most 6 rows
        panel = "\n".join(rows[top:log])
        shown = panel.count("sglang::scheduler_TP")
        assert f"+{8 - shown} more" in panel and f"{server.pid}  main" in panel and "gone" in panel, panel
        assert "Load weight begin" in text  # the log keeps its lines


async def test_watch_plain_of_several_nodes_names_each_dead_nodes_live_ranks_under_its_name(tmp_path, servers):
    """Issue 34 item 5 across nodes: a node's main process killed, its ranks keep running; the node
    set's last lines name them under that node, with the kill that stops them there (as one log's
    watch does), and never another node's processes."""
    alpha_dir, beta_dir = tmp_path / "alpha", tmp_path / "beta"
    alpha_dir.mkdir()
    beta_dir.mkdir()
    alpha, beta = Server(alpha_dir, "ranks"), Server(beta_dir, "ranks")
    servers.extend([alpha, beta])
    conf = tmp_path / "nodes.toml"
    conf.write_text(f'[[node]]\nname = "alpha"\nlog = "{alpha.log}"\n\n[[node]]\nname = "beta"\nlog = "{beta.log}"\n')
    proc = await start_cli("watch", "--json", "--cluster", str(conf), "--gpus", "none", "--timeout", "90")
    seen: list[str] = []
    await expect(proc, f'"pid": {alpha.ranks[1]}', seen)
    await expect(proc, f'"pid": {beta.ranks[1]}', seen)
    os.kill(alpha.pid, signal.SIGKILL)
    rest, err = await asyncio.wait_for(proc.communicate(), WAIT * 2)
    assert proc.returncode == 1, err.decode()
    records = [json.loads(line) for line in [*seen, *rest.decode().splitlines()]]
    (left,) = [r for r in records if r["event"] == "survivors"]
    assert left["node"] == "alpha" and left["host"] == "localhost", left
    assert [(p["pid"], p["rank"]) for p in left["processes"]] == [(alpha.ranks[0], "TP0"), (alpha.ranks[1], "TP1")]
    assert left["stop"] == f"kill {alpha.ranks[0]} {alpha.ranks[1]}"
    assert records[-2] is left and records[-1]["event"] == "exit"  # last of all
    assert all(is_alive(pid) for pid in (beta.pid, *beta.ranks))  # the other node's: running, not named


@pytest.mark.ssh
@pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")
async def test_a_remote_nodes_live_ranks_are_named_with_the_host_to_stop_them_on(tmp_path, servers, sshd):
    """A node over SSH: its dead server's ranks are named under its name, with the host that
    `kill` must run on."""
    alpha_dir, beta_dir = tmp_path / "alpha", tmp_path / "beta"
    alpha_dir.mkdir()
    beta_dir.mkdir()
    alpha, beta = Server(alpha_dir, "ranks"), Server(beta_dir, "ranks")
    servers.extend([alpha, beta])
    conf = tmp_path / "nodes.toml"
    conf.write_text(f'[[node]]\nname = "alpha"\nhost = "{sshd.spec}"\nlog = "{alpha.log}"\n\n'
                    f'[[node]]\nname = "beta"\nlog = "{beta.log}"\n')
    env = {"WATCHTOWER_SSH_KNOWN_HOSTS": str(sshd.known_hosts), "WATCHTOWER_SSH_IDENTITY": str(sshd.client_key)}
    proc = await start_cli("watch", "--plain", "--cluster", str(conf), "--gpus", "none", "--timeout", "90", env=env)
    seen: list[str] = []
    await expect(proc, f"rank [TP1]: pid {alpha.ranks[1]}", seen)
    await expect(proc, f"rank [TP1]: pid {beta.ranks[1]}", seen)
    os.kill(alpha.pid, signal.SIGKILL)
    rest, err = await asyncio.wait_for(proc.communicate(), WAIT * 2)
    assert proc.returncode == 1, err.decode()
    left = [line for line in [*seen, *rest.decode().splitlines()] if "still run" in line]
    assert len(left) == 1 and "[alpha]" in left[0], left
    assert left[0].endswith(f"stop them on {sshd.spec}: kill {alpha.ranks[0]} {alpha.ranks[1]}"), left
