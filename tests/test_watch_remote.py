"""`watchtower watch --plain --host`: the real CLI following a log on the loopback sshd."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import sshd_available
from tests.support import run_cli

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")]

FIXTURES = Path(__file__).parent / "fixtures"


def watch(sshd, log: Path, known_hosts: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, WATCHTOWER_SSH_KNOWN_HOSTS=str(known_hosts), WATCHTOWER_SSH_IDENTITY=str(sshd.client_key))
    return subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "watch", "--plain", "--host", sshd.spec, str(log), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def test_remote_log_reaches_ready_with_the_same_verdict_as_local(sshd, tmp_path):
    log = tmp_path / "remote dir" / "server's log.log"  # spaces and a quote in the remote path
    proc = watch(sshd, log, sshd.known_hosts, "--timeout", "60")
    log.parent.mkdir()
    log.write_bytes((FIXTURES / "sglang_eagle3_tp8_ready.log").read_bytes())
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, out + err
    assert "connected" in out
    assert "READY (line " in out
    local = run_cli("scan", "--json", str(log))
    ready_line = __import__("json").loads(local.stdout)["ready_line"]
    assert f"READY (line {ready_line})" in out


def test_unknown_host_key_is_refused_with_the_fix(sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    proc = watch(sshd, tmp_path / "x.log", empty, "--timeout", "60")
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 2, out + err
    assert "not in" in out and "known_hosts" in out and "to verify and add it" in out
    assert "Traceback" not in out + err


def test_record_a_remote_log_then_the_recording_holds_its_bytes(sshd, tmp_path):
    from tui.sources.replay import load

    log = tmp_path / "remote.log"
    data = (FIXTURES / "sglang_eagle3_tp8_ready.log").read_bytes()
    log.write_bytes(data)
    out = tmp_path / "session.wtrec"
    env = dict(os.environ, WATCHTOWER_SSH_KNOWN_HOSTS=str(sshd.known_hosts), WATCHTOWER_SSH_IDENTITY=str(sshd.client_key))
    proc = run_cli("record", "--host", sshd.spec, "--gpus", "none", "--duration", "60", str(log), "-o", str(out),
                   env=env, timeout=90)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(ready)" in proc.stdout
    assert load(out).log_bytes() == data


def test_a_known_hosts_path_that_does_not_exist_fails_at_once_with_the_fix(sshd, tmp_path):
    missing = tmp_path / "no such dir" / "known_hosts"
    proc = watch(sshd, tmp_path / "x.log", missing, "--timeout", "60")
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 2, out + err
    assert f"known_hosts file {missing} does not exist" in out
    assert "WATCHTOWER_SSH_KNOWN_HOSTS" in out and "retrying" not in out
    assert "Traceback" not in out + err


def test_while_the_connection_is_down_the_verdict_cannot_tell_it_never_guesses():
    """The real session's verdict once its tailer said the SSH connection went (its process last
    seen alive, the log silent past the limit): not stalled?, not dead — cannot tell, and why."""
    from tui.core.events import ConnectionState, LogChunk, ServerProcess, WritersFound
    from tui.core.limits import StallLimits
    from tui.session import WatchSession

    now = [1000.0]
    session = WatchSession(clock=lambda: now[0], stall_limits=StallLimits(5.0))
    session.handle(ConnectionState("n2:22", "connected"))
    session.handle(LogChunk("log", 0, b"[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.12 GB\n", now[0]))
    main = ServerProcess(4242, 1, "python", "python -m sglang.launch_server", 990.0, "main", writes_log=True)
    session.handle(WritersFound("log", "n2", (main,), now[0]))
    now[0] += 60
    assert session.verdict().kind == "stalled?"  # seen: silent, its process alive
    session.handle(ConnectionState("n2:22", "lost", "Connection reset by peer"))
    verdict = session.verdict()
    assert verdict.kind == "starting", verdict
    assert verdict.detail.startswith("cannot tell: connection to n2:22 lost: Connection reset by peer · last known: weight load")
    session.handle(ConnectionState("n2:22", "connected"))
    assert session.verdict().kind == "stalled?"  # seen again


def test_a_host_never_reached_says_so_instead_of_an_empty_log():
    from tui.core.events import ConnectionState
    from tui.session import WatchSession

    session = WatchSession()
    session.handle(ConnectionState("n2:22", "connecting"))
    assert not session.verdict().detail.startswith("cannot tell")
    session.handle(ConnectionState("n2:22", "retrying", "[Errno -2] Name or service not known", retry_in=2.0))
    session.limits.timeout, session.limits.timed_out = 30.0, True
    verdict = session.verdict()
    assert verdict.kind == "timeout"
    assert "cannot tell: never connected to n2:22: [Errno -2] Name or service not known" in verdict.detail


def test_a_host_name_that_does_not_resolve_is_said_at_once_and_exit_2(tmp_path):
    """A typo in --host is not a network to wait for: never reached, it is one line and exit 2
    (a name that stops resolving after a connection was made is retried as a passing failure)."""
    result = run_cli("watch", "--plain", "--gpus", "none", "--host", "gpu-node-07.invalid:/var/log/sglang.log",
                     "--timeout", "60", cwd=Path(__file__).parent.parent, timeout=90)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cannot resolve host 'gpu-node-07.invalid'" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
