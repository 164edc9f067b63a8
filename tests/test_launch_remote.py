"""Remote launches through a real sshd on 127.0.0.1: detached, exit status beside the log, reattach."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers, wait_for_file  # noqa: F401  (autouse)
from tests.support import until
from tui.core.events import ProcessExited, ProcessStarted, ProcessStopping
from tui.launch.proctable import group_members, is_alive
from tui.launch.remote import RemoteRunner
from tui.launch.spec import StopPlan, attempt_paths, exit_path
from tui.sources import ssh

pytestmark = pytest.mark.ssh
SIM = str(Path(__file__).with_name("server_sim.py"))


class Recorder(list):
    def __call__(self, event) -> None:
        self.append((time.time(), event))

    def of(self, kind):
        return [(t, e) for t, e in self if isinstance(e, kind)]


def sim(*args: str) -> list[str]:
    return [sys.executable, SIM, "--step", "0.01", *args]


async def test_remote_silent_death_is_reported_with_its_signal_within_a_few_seconds(tmp_path, target):
    rec = Recorder()
    runner = RemoteRunner(target, rec, poll=0.5)
    log, pid_file = attempt_paths(tmp_path / "remote logs", "sim", 1)  # a path with a space
    try:
        run = await runner.start(1, sim("--outcome", "sigkill", "--load-seconds", "0.4"), {"X_MODE": "a b"}, log, pid_file)
        assert run.pid and run.pgid == run.pid and rec.of(ProcessStarted)
        await asyncio.wait_for(run.wait(), 20)
        (seen_at, exited), = rec.of(ProcessExited)
        assert exited.signal == signal.SIGKILL and exited.detail == "killed by SIGKILL"  # no OOM guess without evidence
        assert seen_at - Path(exit_path(pid_file)).stat().st_mtime < 3.0  # "within a few seconds"
        assert "Loading safetensors checkpoint shards:  50%" in log.read_text()
        assert pid_file.read_text().strip() == str(run.pid)
    finally:
        await runner.close()
        await ssh.close_all()


async def test_remote_attempt_survives_the_connection_and_watchtower_and_stops_as_a_group(tmp_path, target, sshd):
    first = RemoteRunner(target, Recorder(), poll=0.5)
    log, pid_file = attempt_paths(tmp_path, "sim", 2)
    pids_file = tmp_path / "pids"
    try:
        run = await first.start(2, sim("--outcome", "hang", "--tp", "2", "--pid-file", str(pids_file)), {}, log, pid_file)
        pids = [int(p) for p in (await wait_for_file(pids_file)).split()]
        await first.close()  # "Watchtower exits"
        await ssh.close_all()
        sshd.cut_all()  # and every connection is cut, none left
        await asyncio.sleep(0.3)  # time passing is the point: a server the cut hung up on would be dying now
        assert pids and all(is_alive(p) for p in pids)  # the server keeps running

        rec = Recorder()
        second = RemoteRunner(target, rec, poll=0.5)  # a new Watchtower reattaches
        again = await second.reattach(2, ["sim"], log, pid_file)
        assert again is not None and again.pid == run.pid and again.alive
        # filled in by the next liveness check (every 0.5 s here)
        await until(lambda: len(second.members(again)) > len(pids), timeout=10)
        assert set(pids) < set(second.members(again))  # the wrapper, the server and its children
        assert await second.stop(again, StopPlan(after_int=5, after_term=5))
        assert [e.signal for _, e in rec.of(ProcessStopping)] == [signal.SIGINT]
        assert not any(is_alive(p) for p in pids) and not group_members(run.pgid)
        (_, exited), = rec.of(ProcessExited)
        assert exited.signal == signal.SIGINT  # the wrapper saw 130 and wrote it down
        assert await second.reattach(2, ["sim"], log, pid_file) is None
        await second.close()
    finally:
        await ssh.close_all()


async def test_a_death_during_a_cut_connection_is_reported_once_it_is_back(tmp_path, target, sshd):
    rec = Recorder()
    runner = RemoteRunner(target, rec, poll=0.3)
    log, pid_file = attempt_paths(tmp_path, "sim", 1)
    pids_file = tmp_path / "pids"
    try:
        run = await runner.start(1, sim("--outcome", "hang", "--pid-file", str(pids_file)), {}, log, pid_file)
        server = int((await wait_for_file(pids_file)).split()[0])
        sshd.kill_sessions()  # the network drops …
        os.kill(server, signal.SIGKILL)  # … and meanwhile the OOM killer strikes
        await asyncio.wait_for(run.wait(), 30)
        (_, exited), = rec.of(ProcessExited)
        assert exited.signal == signal.SIGKILL and exited.detail == "killed by SIGKILL"  # no OOM guess without evidence
    finally:
        await runner.close()
        await ssh.close_all()


async def test_a_remote_helper_that_setsid_out_of_the_group_is_stopped_and_named(tmp_path, target):
    """Over SSH the attempt is its group and the wrapper's descendants (``ps`` pid/ppid/pgid)."""
    from tests.test_launch_process import ESCAPER

    runner = RemoteRunner(target, Recorder(), poll=0.3)
    log, pid_file = attempt_paths(tmp_path, "esc", 1)
    pids_file = tmp_path / "escaped"
    try:
        run = await runner.start(1, [sys.executable, "-c", ESCAPER, str(pids_file)], {}, log, pid_file)
        await until(lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2, timeout=10,
                    what="the helpers to start (their pids in the file)")
        child = int(pids_file.read_text().split()[0])  # setsid() and stays the server's child
        assert os.getpgid(child) != run.pgid
        result = await runner.stop(run, StopPlan(after_int=0.5, after_term=0.5, after_kill=5))
        assert result.gone and not is_alive(child)
        assert child in {p.pid for p in result.escaped} and f"pid {child}" in result.text
        await runner.close()
    finally:
        for pid in map(int, pids_file.read_text().split()) if pids_file.exists() else ():
            try:
                os.kill(pid, signal.SIGKILL)  # the double-forked one went to init, out of reach over ps
            except ProcessLookupError:
                pass
        await ssh.close_all()


def test_run_host_dead_and_the_start_note_name_the_servers_pid_not_the_wrappers(tmp_path, sshd):
    """`run --host` over the loopback sshd: the server runs under Watchtower's exit-status
    wrapper there too; the pid said (started, DEAD) is the server's, as it wrote it itself."""
    from tests.support import run_cli

    env = dict(os.environ, WATCHTOWER_SSH_KNOWN_HOSTS=str(sshd.known_hosts), WATCHTOWER_SSH_IDENTITY=str(sshd.client_key),
               WATCHTOWER_DATA_DIR=str(tmp_path / "data"), NO_COLOR="1")
    pids = tmp_path / "sim.pids"
    dead = run_cli("run", "--plain", "--name", "sim", "--host", sshd.spec, "--log-dir", str(tmp_path / "logs"),
                   "--gpus", "none", "--no-check", "--", *sim("--outcome", "sigkill", "--pid-file", str(pids)),
                   env=env, timeout=60)
    server = int(pids.read_text().split()[0])  # the simulated server's own pid
    wrapper = int((tmp_path / "logs" / "sim-v1.pid").read_text().split()[0])
    assert dead.returncode == 1, dead.stdout + dead.stderr
    assert server != wrapper
    assert f"DEAD: SIGKILL · pid {server};" in dead.stdout, dead.stdout
    assert f": pid {server}, log" in dead.stdout and f"pid {wrapper}" not in dead.stdout, dead.stdout
