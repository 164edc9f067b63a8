"""`watchtower run --host`: the whole launch loop against the loopback sshd.

Remote launch → fail → relaunch with the env fixed → ready; Watchtower restarted
mid-startup reattaches; the connection is cut while the server keeps running.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.support import launch_verdict
from tui.history import History
from tui.launch.controller import Launch
from tui.launch.spec import LaunchSpec
from tui.launch.proctable import is_alive
from tui.launch.spec import StopPlan
from tui.session import WatchSession
from tui.sources import ssh

pytestmark = pytest.mark.ssh
SIM = str(Path(__file__).with_name("server_sim.py"))


@pytest.fixture
def remote_env(sshd, tmp_path, monkeypatch):
    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv(ssh.ENV_KNOWN_HOSTS, str(sshd.known_hosts))
    monkeypatch.setenv(ssh.ENV_IDENTITY, str(sshd.client_key))
    yield sshd


def remote_spec(sshd, tmp_path, *args: str, **kwargs) -> LaunchSpec:
    return LaunchSpec(
        name="rsim",
        command=[sys.executable, SIM, "--step", "0.02", *args],
        log_dir=tmp_path / "remote logs",
        host=sshd.spec,
        plan=StopPlan(after_int=3, after_term=3),
        **kwargs,
    )


async def test_remote_fail_relaunch_ready_and_stop(remote_env, tmp_path):
    session = WatchSession()
    launch = Launch(remote_spec(remote_env, tmp_path, "--outcome", "raise"), history=History())
    launch.attach(session)
    session.start()
    try:
        await launch.start()
        failed = await launch_verdict(launch, lambda v: v.final, timeout=30)
        assert failed.kind == "failed" and "ValueError" in failed.detail
        await asyncio.wait_for(launch.run.wait(), 15)
        await launch.relaunch(env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"})
        ready = await launch_verdict(launch, lambda v: v.final, timeout=30)
        assert ready.kind == "ready" and launch.run.attempt == 2
        assert session.connection is not None and session.connection.state == "connected"
        pid = launch.run.pid
        assert await launch.stop()
        assert not is_alive(pid)
        assert (await launch_verdict(launch, lambda v: v.kind == "stopped", timeout=30)).kind == "stopped"
    finally:
        await launch.close(stop_server=True)
        await session.stop()
        await ssh.close_all()
    rows = History().attempts("rsim")
    assert [(r.attempt, r.outcome, r.host) for r in rows] == [(1, "failed", remote_env.spec), (2, "ready", remote_env.spec)]
    assert rows[0].exit_text == "exited with code 1"  # read from the exit file beside the remote log


async def test_restart_mid_startup_reattaches_and_a_cut_connection_leaves_the_server_running(remote_env, tmp_path):
    spec = remote_spec(remote_env, tmp_path, "--outcome", "hang")
    session = WatchSession()
    launch = Launch(spec, history=History())
    launch.attach(session)
    session.start()
    await launch.start()
    await launch_verdict(launch, lambda v: session.state.current_phase is not None, timeout=30)
    pid = launch.run.pid
    await launch.close()  # Watchtower exits mid-startup, leaving the server running
    await session.stop()
    await ssh.close_all()
    remote_env.cut_all()  # and no connection is left
    await asyncio.sleep(0.5)  # time passing is the point: a server the cut hung up on would be dying now
    assert is_alive(pid)

    session = WatchSession()
    launch = Launch(remote_spec(remote_env, tmp_path, "--outcome", "hang"), history=History())
    launch.attach(session)
    session.start()
    try:
        run = await launch.start()
        assert run.pid == pid and run.attempt == 1  # reattached, not relaunched
        await launch_verdict(launch, lambda v: session.state.current_phase is not None, timeout=30)
        assert session.state.current_phase.name == "weight_load"
        remote_env.kill_sessions()  # the network drops
        t0 = time.monotonic()
        await launch_verdict(launch, lambda v: session.connection is not None and session.connection.state != "connected",
                           timeout=20)
        assert is_alive(pid) and launch.server_running  # the server does not care
        await launch_verdict(launch, lambda v: session.connection.state == "connected", timeout=30)
        assert time.monotonic() - t0 < 30
        assert await launch.stop()
        assert not is_alive(pid)
    finally:
        await launch.close(stop_server=True)
        await session.stop()
        await ssh.close_all()


async def test_remote_health_is_asked_from_the_servers_host(remote_env, tmp_path, monkeypatch):
    import socket

    from tui.sources import health

    async def not_from_here(*_args, **_kwargs):
        raise AssertionError("a remote server's health URL was asked from this machine")

    monkeypatch.setattr(health, "http_status", not_from_here)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = remote_spec(remote_env, tmp_path, "--outcome", "ready", "--port", str(port),
                       health_url=f"http://127.0.0.1:{port}/health")
    session = WatchSession()
    launch = Launch(spec, history=History())
    launch.attach(session)
    session.start()
    try:
        await launch.start()
        ready = await launch_verdict(launch, lambda v: v.final, timeout=30)
        assert ready.kind == "ready" and launch.health is not None and launch.health.ok
        assert launch.health.detail == "HTTP 200 OK"
    finally:
        await launch.close(stop_server=True)
        await session.stop()
        await ssh.close_all()


async def test_remote_health_goes_through_a_channel_of_the_ssh_connection(target, ssh_connections_closed, monkeypatch):
    """No process per probe on the server's host: the GET rides the connection Watchtower holds."""
    import asyncio
    import socket

    from tui.sources import health

    async def no_process(*_args, **_kwargs):
        raise AssertionError("a process was started on the host for a health probe")

    monkeypatch.setattr(ssh, "run", no_process)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    assert await health.remote_http_status(target, f"http://127.0.0.1:{closed}/health") == (None, "connection refused")

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        got = await health.remote_http_status(target, f"http://127.0.0.1:{port}/health")
        assert got == (503, "HTTP 503 Service Unavailable")
    finally:
        server.close()
        await server.wait_closed()
