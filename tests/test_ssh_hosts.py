"""Hosts resolved as OpenSSH resolves them (issue 31 item 1): an alias of ``~/.ssh/config`` (in a test
``HOME``) with a HostName and a port that is not 22 is reached where ``ssh`` would go, named with
both names (``n3 (127.0.0.3:PORT)``), its changed host key called changed, and ``{master}`` and the
smoke test's address are the HostName, not the alias. Two real sshd, on 127.0.0.2 and 127.0.0.3."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401 (autouse: no simulator outlives a test)
from tests.support import run_cli, start_cli
from tests.test_run_nodes import fake_sglang  # noqa: F401 (a fixture)
from tui.core.events import ConnectionState
from tui.core.wording import connection_said
from tui.sources import ssh
from tui.sources.smoke import reachable_name
from tui.sources.ssh import SshError, SshTarget

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(180)]


def closed_port(address: str) -> int:
    """A port nothing listens on at ``address`` (bound, then closed again)."""
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class Home:
    path: Path
    refusing: int  # n4's port: nothing listens there


@pytest.fixture
def home(tmp_path, monkeypatch, sshd_nodes):
    """A HOME whose ~/.ssh/config names the two nodes n2 and n3 by alias (HostName, a port not 22,
    the key) and n4, whose address refuses; ~/.ssh/known_hosts trusts n2 and n3."""
    a, b = sshd_nodes
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    refusing = closed_port("127.0.0.4")
    (home / ".ssh" / "config").write_text(
        f"Host n2\n  HostName {a.host}\n  Port {a.port}\n  IdentityFile {a.client_key}\n"
        f"Host n3\n  HostName {b.host}\n  Port {b.port}\n  IdentityFile {b.client_key}\n"
        f"Host n4\n  HostName 127.0.0.4\n  Port {refusing}\n"
    )
    (home / ".ssh" / "known_hosts").write_text(a.known_hosts_line() + b.known_hosts_line())
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    for name in (ssh.ENV_KNOWN_HOSTS, ssh.ENV_IDENTITY, ssh.ENV_CONFIG):
        monkeypatch.delenv(name, raising=False)
    return Home(home, refusing)


async def test_an_alias_of_the_home_config_is_reached_and_named_with_its_address(home, sshd_nodes,
                                                                                 ssh_connections_closed):
    _, b = sshd_nodes
    assert (await ssh.run(SshTarget.parse("n3"), ["echo", "via n3"]))[1] == "via n3\n"
    resolved = await ssh.resolve(SshTarget.parse("n3"))
    assert (resolved.hostname, resolved.port, resolved.note) == (b.host, b.port, "")
    assert await ssh.named(SshTarget.parse("n3")) == f"n3 ({b.host}:{b.port})"
    with pytest.raises(SshError) as info:
        await ssh.connect(SshTarget.parse("n4", connect_timeout=5))
    refused = f"127.0.0.4:{home.refusing}"  # not "n4:22": the port and address ssh would use
    assert str(info.value).startswith(f"n4 ({refused}): connection refused (is sshd running there?)"), info.value
    assert str(info.value).count(refused) == 1  # the address said once


async def test_a_jump_host_given_as_an_alias_is_resolved_too(home, sshd_nodes, ssh_connections_closed):
    """``ProxyJump n2``: the jump host is the config's alias too (its HostName, port and key, as
    ``ssh -G n2`` gives them), not a name to look up in DNS on port 22."""
    a, b = sshd_nodes
    config = home.path / ".ssh" / "config"
    config.write_text(config.read_text() + f"Host n3j\n  HostName {b.host}\n  Port {b.port}\n  IdentityFile {b.client_key}\n"
                      "  ProxyJump n2\n")
    before = len(a.log_path.read_text())
    assert (await ssh.run(SshTarget.parse("n3j"), ["echo", "via n2"]))[1] == "via n2\n"
    assert "Accepted publickey" in a.log_path.read_text()[before:]  # through n2's sshd


async def test_a_jump_host_follows_the_targets_own_config_and_known_hosts_files(home, sshd_nodes, tmp_path,
                                                                               ssh_connections_closed):
    """A target given its own ssh config (``-F``) and known_hosts file: its ProxyJump host is read
    from that config and checked against that known_hosts too (``ssh -J`` passes ``-F`` on), not
    ~/.ssh's, which here trust no one."""
    a, b = sshd_nodes
    (home.path / ".ssh" / "known_hosts").write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = elsewhere / "config"
    config.write_text(f"Host j2\n  HostName {a.host}\n  Port {a.port}\n  IdentityFile {a.client_key}\n"
                      f"Host n3k\n  HostName {b.host}\n  Port {b.port}\n  IdentityFile {b.client_key}\n  ProxyJump j2\n")
    known = elsewhere / "known_hosts"
    known.write_text(a.known_hosts_line() + b.known_hosts_line())
    before = len(a.log_path.read_text())
    target = SshTarget.parse("n3k", config=str(config), known_hosts=str(known), connect_timeout=10)
    assert (await ssh.run(target, ["echo", "via j2"]))[1] == "via j2\n"
    assert "Accepted publickey" in a.log_path.read_text()[before:]  # through j2's sshd


async def test_a_changed_key_of_an_alias_is_called_changed(home, sshd_nodes, tmp_path):
    _, b = sshd_nodes
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    (home.path / ".ssh" / "known_hosts").write_text(b.known_hosts_line(other.with_suffix(".pub")))
    with pytest.raises(SshError) as info:
        await ssh.connect(SshTarget.parse("n3"))
    message = str(info.value)
    assert message.startswith(f"HOST KEY CHANGED for {b.host}:{b.port} (n3)"), message  # not "not in known_hosts"
    assert f"`ssh-keygen -R '[{b.host}]:{b.port}'`" in message


async def test_without_an_ssh_program_the_config_is_read_as_before_and_said_so(home, sshd_nodes, tmp_path,
                                                                                monkeypatch, ssh_connections_closed):
    _, b = sshd_nodes
    bare = tmp_path / "no-ssh"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    assert shutil.which("ssh") is None
    target = SshTarget.parse("n3", connect_timeout=7)  # (another target: resolved afresh)
    resolved = await ssh.resolve(target)
    assert resolved.note and "no ssh program" in resolved.note
    assert (await ssh.run(target, ["echo", "still"]))[1] == "still\n"


def test_a_refusal_is_its_reason_and_a_loss_is_said_once():
    refused = ConnectionState("n3 (127.0.0.3:2343)", "refused",
                              "n3 (127.0.0.3:2343): HOST KEY CHANGED for 127.0.0.3:2343 (n3): …")
    assert connection_said(refused) == "HOST KEY CHANGED for 127.0.0.3:2343 (n3): …"
    lost = ConnectionState("n2", "lost", "n2: connection lost (keepalive timeout)")
    assert connection_said(lost) == "connection lost (keepalive timeout)"
    assert connection_said(ConnectionState("n2", "connected")) == "connected"


async def test_the_smoke_test_asks_the_host_name_an_alias_stands_for(home, sshd_nodes):
    a, _ = sshd_nodes
    assert await reachable_name("n2") == a.host
    assert await reachable_name("127.0.0.9") == "127.0.0.9"


def test_run_nodes_by_alias_gives_master_the_host_name(home, sshd_nodes, tmp_path, fake_sglang):  # noqa: F811
    a, b = sshd_nodes
    port = closed_port(a.host)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WATCHTOWER_SSH")}
    env.update(HOME=str(home.path), WATCHTOWER_DATA_DIR=str(tmp_path / "data"), NO_COLOR="1", PYTHONUNBUFFERED="1")
    env.pop("SSH_AUTH_SOCK", None)
    result = run_cli(
        "run", "--plain", "--name", "mn", "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--env",
        f"PYTHONPATH={fake_sglang}", "--nodes", "n2,n3", "--timeout", "60", "--no-check", "--",
        sys.executable, "-m", "sglang.launch_server", "--tp", "2", "--model-path", "/models/m",
        "--dist-init-addr", f"{{master}}:{port}", "--load-seconds", "0.3", env=env, timeout=150,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert f"check: ✓ dist-init address: {a.host}:{port} on every node" in out  # not n2:PORT


# ---------------------------------------------------------------- issue 31 item 2: Ctrl-C on run --nodes --plain


async def test_ctrl_c_on_run_nodes_plain_says_what_keeps_running_and_how_to_stop_it(sshd_nodes, tmp_path,
                                                                                   fake_sglang):  # noqa: F811
    a, b = sshd_nodes
    proc = await start_cli(
        "run", "--plain", "--name", "mn", "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--env",
        f"PYTHONPATH={fake_sglang}", "--nodes", f"{a.spec},{b.spec}", "--timeout", "120", "--no-check", "--",
        sys.executable, "-m", "sglang.launch_server", "--tp", "2", "--model-path", "/models/m",
        "--dist-init-addr", f"{a.host}:{closed_port(a.host)}", "--load-seconds", "60",
        env={"WATCHTOWER_SSH_KNOWN_HOSTS": str(a.known_hosts), "WATCHTOWER_SSH_IDENTITY": str(a.client_key),
             "WATCHTOWER_DATA_DIR": str(tmp_path / "data"), "NO_COLOR": "1"},
    )
    assert proc.stdout is not None
    seen: list[str] = []
    while not any("weight load started" in line for line in seen):  # both nodes run: loading for a minute
        raw = await asyncio.wait_for(proc.stdout.readline(), 60)
        assert raw, "".join(seen)
        seen.append(raw.decode())
    proc.send_signal(signal.SIGINT)
    rest, err = await asyncio.wait_for(proc.communicate(), 60)
    out = "".join(seen) + rest.decode()
    assert proc.returncode == 130, out + err.decode()
    said = [line for line in out.splitlines() if "keeps running" in line]
    assert len(said) == 1, out
    assert re.search(r"interrupted \(Ctrl-C\): v1 keeps running: 127\.0\.0\.2: kill -INT -- -\d+; "
                     r"127\.0\.0\.3: kill -INT -- -\d+; or `watchtower attach mn` then x", said[0]), out
