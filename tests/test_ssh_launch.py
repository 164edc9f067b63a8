"""Remote commands and detached processes through the real sshd: run, start_detached,
is_alive, signal_group. The sshd is on this machine, so /proc shows the truth."""

from __future__ import annotations

import asyncio
import signal

import pytest

from tests.support import until
from tui.sources import ssh
from tui.sources.ssh import RemoteCommandError, SshTarget

pytestmark = [pytest.mark.ssh, pytest.mark.usefixtures("ssh_connections_closed")]


def proc_ids(pid: int) -> tuple[int, int]:
    """(process group, session) of a local process, from /proc."""
    stat = open(f"/proc/{pid}/stat").read()
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[2]), int(fields[3])


def alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_run_passes_arguments_literally_and_reports_status(target):
    status, out, err = await ssh.run(target, ["sh", "-c", 'printf "%s|" "$@"; echo oops >&2; exit 3', "sh", "a b", "$(id)", "it's"])
    assert (status, out, err) == (3, "a b|$(id)|it's|", "oops\n")


async def test_detached_process_survives_the_connection_and_dies_as_a_group(tmp_path, sshd, target):
    log = tmp_path / "logs dir" / "server 'one'.log"
    log.parent.mkdir()
    script = 'echo "started $$ $X_MODE $(pwd)"; sleep 300 & echo "child $!"; wait'
    workdir = tmp_path / "work dir"
    workdir.mkdir()
    pid = await ssh.start_detached(
        target, ["sh", "-c", script], env={"X_MODE": "a b'c"}, log_path=str(log), cwd=str(workdir)
    )
    pid_file = tmp_path / "logs dir" / "server 'one'.log.pid"
    assert pid_file.read_text().strip() == str(pid)  # written beside the log
    await until(lambda: "child" in log.read_text())
    lines = log.read_text().splitlines()
    assert lines[0] == f"started {pid} a b'c {workdir}"
    child = int(lines[1].split()[1])
    assert proc_ids(pid) == (pid, pid) and proc_ids(child)[0] == pid  # own session and group

    await ssh.close_all()
    sshd.cut_all()  # every SSH connection cut, none left
    await until(lambda: not sshd.session_pids())
    assert alive(pid) and alive(child)
    assert await ssh.is_alive(target, pid)  # over a new connection

    assert await ssh.signal_group(target, pid, "TERM")
    await until(lambda: not alive(pid) and not alive(child))
    assert not await ssh.is_alive(target, pid)  # (a zombie where nothing reaps orphans counts as dead)


async def test_signal_group_of_a_group_that_does_not_exist(target):
    assert not await ssh.signal_group(target, 2**22 + 12345, signal.SIGTERM)


async def test_is_alive_of_a_pid_that_does_not_exist(target):
    assert not await ssh.is_alive(target, 2**22 + 12345)


async def test_start_detached_reports_a_failure_to_start(tmp_path, target):
    with pytest.raises(RemoteCommandError) as info:
        await ssh.start_detached(target, ["true"], log_path=str(tmp_path / "missing dir" / "x.log"))
    message = str(info.value)
    assert "\n" not in message and "starting true failed" in message and "missing dir" in message


def test_bad_arguments_are_refused_before_anything_runs():
    with pytest.raises(ValueError):
        ssh.command_line(["x"], {"BAD NAME": "1"})
    with pytest.raises(ValueError):
        ssh.command_line([])
    assert ssh.command_line(["echo", "$HOME", "a'b"], {"K": "v w"}) == "env 'K=v w' echo '$HOME' 'a'\"'\"'b'"


def test_signal_names_are_checked():
    target = SshTarget("example.invalid")
    with pytest.raises(ValueError):
        asyncio.run(ssh.signal_group(target, 1, "TERM; rm -rf /"))


async def test_kill_sessions_does_not_leave_a_stale_shared_connection(sshd, target):
    assert (await ssh.run(target, ["true"]))[0] == 0
    assert sshd.kill_sessions() > 0
    # the shared connection noticed it was closed: the next command reconnects by itself
    await until(lambda: not ssh.is_connected(target))
    assert (await ssh.run(target, ["echo", "again"]))[1] == "again\n"
