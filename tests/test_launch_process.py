"""The local launcher with real processes that really die: groups, signals, stops, pid files."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launch_helpers import adopts_orphans, no_leftover_servers, wait_for_file  # noqa: F401  (autouse; used by name)
from tests.support import until
from tui.core.events import ProcessExited, ProcessStarted, ProcessStopping
from tui.launch.local import LocalRunner
from tui.launch.proctable import group_members, is_alive, wait_pids_gone
from tui.launch.spec import LaunchError, StopPlan, attempt_paths

#: A runner's process adopts its servers' orphans in `run` (tui.wiring.launch.adopt_orphans): so here.
pytestmark = pytest.mark.usefixtures("adopts_orphans")

SIM = str(Path(__file__).with_name("server_sim.py"))


def sim(*args: str) -> list[str]:
    return [sys.executable, SIM, "--step", "0.01", *args]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[float, object]] = []
        self.changed = asyncio.Event()

    def __call__(self, event: object) -> None:
        self.events.append((time.time(), event))
        self.changed.set()

    def of(self, kind):
        return [(t, e) for t, e in self.events if isinstance(e, kind)]


def live(pids) -> list[int]:
    return [p for p in pids if is_alive(p)]


async def test_sigkill_with_a_silent_log_is_reported_with_the_signal_promptly(tmp_path):
    rec = Recorder()
    runner = LocalRunner(rec)
    log, pid_file = attempt_paths(tmp_path, "sim", 1)
    run = await runner.start(1, sim("--outcome", "sigkill", "--load-seconds", "0.4"), {}, log, pid_file)
    assert run.pgid == run.pid and os.getpgid(run.pid) == run.pid  # its own process group
    assert os.getsid(run.pid) == run.pid  # and session: no terminal signals from us
    await asyncio.wait_for(run.wait(), 20)
    (started_at, started), = rec.of(ProcessStarted)
    (seen_at, exited), = rec.of(ProcessExited)
    assert exited.signal == signal.SIGKILL and exited.returncode is None
    assert exited.detail == "killed by SIGKILL"
    # the log holds no error text: it simply stops inside the weight-loading bar
    text = log.read_text()
    assert "Loading safetensors checkpoint shards:  50%" in text and "Error" not in text
    # noticed promptly after the death: the kernel's exit time is in /proc no more, so
    # compare with the log's last write (the process dies right after it)
    assert seen_at - os.stat(log).st_mtime < 3.0  # ~0 s: the exit is reaped, not polled; the bound is load's slack
    assert not run.alive and run.status.signal == signal.SIGKILL


async def test_stop_takes_the_whole_group_down_escalating_from_sigint(tmp_path):
    rec = Recorder()
    runner = LocalRunner(rec)
    log, pid_file = attempt_paths(tmp_path, "sim", 1)
    pids_file = tmp_path / "pids"
    run = await runner.start(
        1, sim("--outcome", "hang", "--tp", "3", "--stubborn", "--pid-file", str(pids_file)), {}, log, pid_file
    )
    pids = [int(p) for p in (await wait_for_file(pids_file)).split()]
    assert len(pids) == 4 and set(pids) <= set(group_members(run.pgid))
    t0 = time.monotonic()
    gone = await runner.stop(run, StopPlan(after_int=0.3, after_term=0.3, after_kill=5))
    took = time.monotonic() - t0
    assert gone and not group_members(run.pgid) and live(pids) == []
    with pytest.raises(ProcessLookupError):
        os.killpg(run.pgid, 0)  # ESRCH: no process of the group is left, zombies included
    steps = [e.signal for _, e in rec.of(ProcessStopping)]
    assert steps == [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]  # it ignored the first two
    assert 0.6 <= took < 5.0  # the grace periods were kept, and it did not wait out after_kill (5 s)
    (_, exited), = rec.of(ProcessExited)
    assert exited.signal == signal.SIGKILL and exited.detail == "stopped (SIGKILL after the grace period)"
    assert run.status.stopped_by_user


async def test_a_polite_server_stops_at_sigint_without_escalation(tmp_path):
    rec = Recorder()
    runner = LocalRunner(rec)
    log, pid_file = attempt_paths(tmp_path, "sim", 1)
    pids_file = tmp_path / "pids"
    run = await runner.start(1, sim("--outcome", "hang", "--pid-file", str(pids_file)), {}, log, pid_file)
    pids = [int(p) for p in (await wait_for_file(pids_file)).split()]
    assert await runner.stop(run, StopPlan(after_int=10, after_term=10))
    assert [e.signal for _, e in rec.of(ProcessStopping)] == [signal.SIGINT]
    assert live(pids) == []


async def test_orphaned_children_are_found_in_the_group_after_the_leader_died(tmp_path):
    rec = Recorder()
    runner = LocalRunner(rec)
    log, pid_file = attempt_paths(tmp_path, "sim", 1)
    pids_file = tmp_path / "pids"
    run = await runner.start(
        1, sim("--outcome", "sigkill", "--orphans", "--pid-file", str(pids_file)), {}, log, pid_file
    )
    pids = [int(p) for p in (await wait_for_file(pids_file)).split()]
    await asyncio.wait_for(run.wait(), 20)
    assert runner.members(run) == sorted(pids[1:])  # the schedulers outlived the main process
    assert await runner.stop(run, StopPlan(after_int=2, after_term=2))
    assert live(pids) == []


# A server whose helpers leave its process group: one child calls setsid() and stays its
# child; another double-forks out of a fresh session, its parent exits, and it is re-parented
# to Watchtower (the subreaper). Both write their pid, then sleep; SIGINT and SIGTERM are ignored.
ESCAPER = """
import os, signal, sys, time
out = sys.argv[1]
def escape(double):
    written, done = os.pipe()  # the file's lines in a known order: the child's, then the orphan's
    if os.fork() == 0:
        os.setsid()
        if double and os.fork() != 0:
            os._exit(0)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        with open(out, "a") as f:
            f.write(f"{os.getpid()}\\n")
        os.write(done, b".")
        while True:
            time.sleep(3600)
    os.close(done)
    os.read(written, 1)
escape(False)
escape(True)
while True:
    time.sleep(3600)
"""


async def test_processes_that_setsid_out_of_the_group_are_stopped_and_named(tmp_path):
    rec = Recorder()
    runner = LocalRunner(rec)
    log, pid_file = attempt_paths(tmp_path, "esc", 1)
    pids_file = tmp_path / "escaped"
    run = await runner.start(1, [sys.executable, "-c", ESCAPER, str(pids_file)], {}, log, pid_file)
    try:
        await until(lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2, timeout=10,
                    what="the helpers to start (their pids in the file)")
        escaped = [int(p) for p in pids_file.read_text().split()]
        assert all(os.getsid(p) != run.pgid and os.getpgid(p) != run.pgid for p in escaped)  # out of group and session
        assert set(escaped) <= set(runner.members(run))  # still the attempt's
        result = await runner.stop(run, StopPlan(after_int=0.5, after_term=0.5, after_kill=5))
        assert result.gone and live(escaped) == []
        assert {p.pid for p in result.escaped} == set(escaped)
        assert {p.pid for p in result.killed} >= set(escaped)  # they ignored SIGINT and SIGTERM
        assert all(f"pid {p}" in result.text for p in escaped) and "outside its process group" in result.text
    finally:
        for pid in [int(p) for p in pids_file.read_text().split()] if pids_file.exists() else []:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


async def test_wait_pids_gone_wakes_on_exit_not_on_a_timer(tmp_path):
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(0.3)")
    t0 = time.monotonic()
    assert await wait_pids_gone(lambda: [proc.pid] if is_alive(proc.pid) else [], 10.0)
    assert time.monotonic() - t0 < 5.0  # (a timer would wait the full 10 s)
    await proc.wait()
    assert not await wait_pids_gone(lambda: [os.getpid()], 0.2)  # we do not go away


async def test_launch_errors_are_one_line(tmp_path):
    runner = LocalRunner(Recorder())
    log, pid_file = attempt_paths(tmp_path, "x", 1)
    with pytest.raises(LaunchError, match="command not found: no-such-server-binary"):
        await runner.start(1, ["no-such-server-binary"], {}, log, pid_file)
    blocked = tmp_path / "file"
    blocked.write_text("")
    log, pid_file = attempt_paths(blocked / "sub", "x", 1)
    with pytest.raises(LaunchError, match="cannot write the log"):
        await runner.start(1, ["true"], {}, log, pid_file)


async def test_reattach_follows_a_process_started_by_an_earlier_watchtower(tmp_path):
    first = LocalRunner(Recorder())
    log, pid_file = attempt_paths(tmp_path, "sim", 3)
    pids_file = tmp_path / "pids"
    run = await first.start(3, sim("--outcome", "hang", "--pid-file", str(pids_file)), {}, log, pid_file)
    server = int((await wait_for_file(pids_file)).split()[0])
    rec = Recorder()
    second = LocalRunner(rec)  # "Watchtower restarted": a runner that did not start it
    again = await second.reattach(3, ["sim"], log, pid_file)
    assert again is not None and again.pid == run.pid and again.alive
    os.kill(server, signal.SIGKILL)  # the OOM killer picks the server
    await asyncio.wait_for(again.wait(), 5)
    (_, exited), = rec.of(ProcessExited)
    # not our child, yet its status is known: the wrapper wrote it beside the log
    assert exited.signal == signal.SIGKILL and exited.detail == "killed by SIGKILL"
    assert Path(str(pid_file)[:-4] + ".exit").read_text() == "137\n"
    await run.wait()
    assert run.signal == signal.SIGKILL  # the first runner (its parent) sees the same status
    assert await second.reattach(3, ["sim"], log, pid_file) is None  # dead: nothing to reattach to


def test_a_local_runner_does_not_make_its_process_a_subreaper():
    """Orphans are adopted by the `run` command's own process only: a library user's or a test
    run's process stays as it was (PR_GET_CHILD_SUBREAPER, read in a fresh interpreter)."""
    code = (
        "import ctypes, sys\n"
        "from tui.launch.local import LocalRunner\n"
        "LocalRunner(lambda event: None)\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "flag = ctypes.c_int(-1)\n"
        "assert libc.prctl(37, ctypes.byref(flag), 0, 0, 0) == 0\n"  # PR_GET_CHILD_SUBREAPER
        "print(flag.value)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parent.parent, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"
