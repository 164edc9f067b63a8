"""Shared pytest fixtures.

``sshd``: a real OpenSSH server on 127.0.0.1, started once per test session with a
throwaway host key and user key, so the SSH sources are tested against the real thing.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import inspect
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


@dataclass(frozen=True)
class SshServer:
    """A running test sshd and everything a client needs to reach it."""

    host: str
    port: int
    username: str
    client_key: Path  # private key of the test user (authorized on this server)
    known_hosts: Path  # a known_hosts file that trusts this server's host key
    host_key_pub: Path
    bin_dir: Path  # on the PATH of remote sessions, ahead of /usr/bin: test executables go here
    log_path: Path  # sshd's own log, for diagnosing failures
    pid: int  # the listener

    @property
    def spec(self) -> str:
        """``user@host:port``, as a user would type it after ``--host``."""
        return f"{self.username}@{self.host}:{self.port}"

    def known_hosts_line(self, key_pub: Path | None = None) -> str:
        """A known_hosts line for this server with the given (default: its real) public key."""
        keytype, blob = (key_pub or self.host_key_pub).read_text().split()[:2]
        return f"[{self.host}]:{self.port} {keytype} {blob}\n"

    def session_pids(self) -> list[int]:
        """Per-connection sshd processes (children and grandchildren of the listener)."""
        children: dict[int, list[int]] = {}
        names: dict[int, str] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            # "pid (comm) state ppid ...": comm may contain spaces, so split at the last ')'
            comm = stat[stat.index("(") + 1 : stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(entry))
            names[int(entry)] = comm
        found, todo = [], list(children.get(self.pid, []))
        while todo:
            pid = todo.pop()
            if names.get(pid, "").startswith("sshd"):
                found.append(pid)
                todo.extend(children.get(pid, []))
        return found

    def cut_all(self, timeout: float = 10.0) -> None:
        """Cut every SSH connection (``kill_sessions``) and wait until none is left: a server that
        lives on must do so without one."""
        deadline = time.monotonic() + timeout
        while True:
            self.kill_sessions()
            if not self.session_pids():
                return
            assert time.monotonic() < deadline, f"SSH sessions still there: {self.session_pids()}"
            time.sleep(0.05)  # the listener reaps what was killed: only /proc can tell

    def kill_sessions(self) -> int:
        """Drop every open SSH connection the way a network failure would, keeping the listener.

        Kills the per-connection sshd processes (not the programs they run, which then see
        their pipes close). Returns how many processes were killed.
        """
        killed = 0
        for pid in self.session_pids():
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        return killed


def _free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


def _keygen(path: Path, comment: str) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )


def _wait_listening(proc: subprocess.Popen, port: int, log: Path, deadline: float, address: str = "127.0.0.1") -> None:
    """Block until sshd accepts TCP connections (a readiness probe, not a fixed sleep)."""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection((address, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"sshd did not start listening on port {port}: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def running_sshd(root: Path, address: str = "127.0.0.1") -> Iterator[SshServer]:
    """Start a throwaway sshd with its keys in ``root`` on ``address`` (a loopback address: each
    of 127.0.0.2, 127.0.0.3 … is another "host"); stop it (and its sessions) on exit.

    Raises RuntimeError when it cannot start. Also used by ``bench/ssh_tail.py``.
    """
    host_key, client_key = root / "host_key", root / "client_key"
    _keygen(host_key, "watchtower-test-host")
    _keygen(client_key, "watchtower-test-user")
    (root / "authorized_keys").write_text(Path(f"{client_key}.pub").read_text())
    bin_dir = root / "bin"
    bin_dir.mkdir()
    with contextlib.suppress(PermissionError):  # sshd's privilege separation directory (as root)
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    log = root / "sshd.log"
    username = getpass.getuser()
    proc = None
    for _attempt in range(5):  # the free port can be taken between probing and binding
        port = _free_port(address)
        config = root / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {port}",
                    f"ListenAddress {address}",
                    f"HostKey {host_key}",
                    f"PidFile {root / 'sshd.pid'}",
                    f"AuthorizedKeysFile {root / 'authorized_keys'}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin prohibit-password",
                    "UsePAM no",
                    "StrictModes no",
                    f"AllowUsers {username}",
                    "MaxStartups 100:30:200",
                    "MaxSessions 100",
                    f"SetEnv PATH={bin_dir}:/usr/local/bin:/usr/bin:/bin",
                    "Subsystem sftp internal-sftp",
                    "LogLevel VERBOSE",
                    "",
                ]
            )
        )
        proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config), "-E", str(log)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_listening(proc, port, log, time.monotonic() + 10, address)
            break
        except RuntimeError:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc = None
    if proc is None:
        raise RuntimeError(f"could not start sshd: {log.read_text()[-2000:] if log.exists() else ''}")
    known_hosts = root / "known_hosts"
    server = SshServer(
        host=address,
        port=port,
        username=username,
        client_key=client_key,
        known_hosts=known_hosts,
        host_key_pub=Path(f"{host_key}.pub"),
        bin_dir=bin_dir,
        log_path=log,
        pid=proc.pid,
    )
    known_hosts.write_text(server.known_hosts_line())
    try:
        yield server
    finally:
        server.kill_sessions()
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def sshd_available() -> bool:
    return os.path.isfile(SSHD) and os.access(SSHD, os.X_OK) and shutil.which("ssh-keygen") is not None


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A real OpenSSH sshd on 127.0.0.1 for this test session (skipped where none is installed)."""
    if not sshd_available():
        pytest.skip("OpenSSH sshd/ssh-keygen not installed (scripts/setup --test installs openssh-server)")
    try:
        with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
            yield server
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def sshd_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[SshServer]]:
    """Two more real sshd, on 127.0.0.2 and 127.0.0.3: two "nodes" for the multi-node tests.

    They share one known_hosts file and one client key (a user's setup for a cluster).
    """
    if not sshd_available():
        pytest.skip("OpenSSH sshd/ssh-keygen not installed (scripts/setup --test installs openssh-server)")
    with contextlib.ExitStack() as stack:
        try:
            nodes = [
                stack.enter_context(running_sshd(tmp_path_factory.mktemp(f"sshd-node{i}"), f"127.0.0.{i + 1}"))
                for i in (1, 2)
            ]
        except RuntimeError as exc:
            pytest.fail(str(exc))
        shared = tmp_path_factory.mktemp("sshd-nodes")
        known_hosts = shared / "known_hosts"
        known_hosts.write_text("".join(node.known_hosts_line() for node in nodes))
        key = shared / "client_key"
        key.write_bytes(nodes[0].client_key.read_bytes())
        key.chmod(0o600)
        for node in nodes[1:]:  # one user key for every node
            (node.client_key.parent / "authorized_keys").write_text(Path(f"{nodes[0].client_key}.pub").read_text())
        yield [
            SshServer(n.host, n.port, n.username, key, known_hosts, n.host_key_pub, n.bin_dir, n.log_path, n.pid)
            for n in nodes
        ]


@pytest.fixture
def target(sshd: SshServer):
    """An SshTarget for the test sshd, trusting its host key and using the test user's key."""
    from tui.sources.ssh import SshTarget

    return SshTarget.parse(sshd.spec, identity=(str(sshd.client_key),), known_hosts=str(sshd.known_hosts))


@pytest.fixture
async def ssh_connections_closed():
    """Close the shared SSH connections after the test (they are cached per event loop)."""
    yield
    from tui.sources import ssh

    await ssh.close_all()


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory):
    """A real two-node Slurm cluster (munged, slurmctld, slurmd n1 and n2) for this test session.

    Skipped only where the programs are not installed (scripts/setup --test installs them).
    """
    from tests.slurm_cluster import missing_binaries, running_slurm

    missing = missing_binaries()
    if missing:
        pytest.skip(f"Slurm/munge not installed ({', '.join(missing)}); scripts/setup --test installs them")
    try:
        with running_slurm(tmp_path_factory.mktemp("slurm")) as cluster:
            yield cluster
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture
def slurm_env(slurm, monkeypatch: pytest.MonkeyPatch):
    """The test cluster for code under test: SLURM_CONF set in this process, jobs cancelled after."""
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    yield slurm
    slurm.cancel_all()


#: Fixtures that start a real service, and the marker a test that uses one gets (so the fast tier,
#: ``scripts/test --fast``, can leave it out without each test saying so).
SERVICE_MARKERS = {"sshd": "ssh", "sshd_nodes": "ssh", "target": "ssh", "remote_env": "ssh",
                   "slurm": "slurm", "slurm_env": "slurm"}


#: Modules whose tests run real server processes or the CLI, seconds each: the ``slow`` marker.
SLOW_MODULES = frozenset({
    "test_launch_flow", "test_launch_cli", "test_launch_app", "test_launch_process", "test_launch_notify",
    "test_launch_oom", "test_seed_attempts", "test_history_faults", "test_demo_plain", "test_watch_nodes_local",
    "test_watch_writers", "test_writers", "test_watch_plain", "test_record_cli", "test_exit_statuses",
    "test_setup_script", "test_plain_flood", "test_writer_verdicts", "test_stall_limits", "test_secrets_everywhere",
    "test_plain_node_count",
})


#: What starts another process: the CLI in a subprocess, a server, a shell. A test whose body (or a
#: helper of its module that it calls) says one of these is ``slow`` too, so the fast tier stays in
#: process in fact, not only where a module was listed above.
SPAWNS = re.compile(r"\bsubprocess\.(?:run|Popen|check_output|check_call|call)\b|\bcreate_subprocess_(?:exec|shell)\b"
                    r"|\bPopen\(|\brun_cli\(|\bos\.(?:fork|spawn\w*|exec\w*)\(")


@functools.cache
def _spawning_helpers(module: object) -> re.Pattern[str] | None:
    """A call of any function of ``module`` whose own source starts a process."""
    names = []
    for name, value in vars(module).items():
        if inspect.isfunction(value) and value.__module__ == getattr(module, "__name__", None) and not name.startswith("test_"):
            with contextlib.suppress(OSError, TypeError):
                if SPAWNS.search(inspect.getsource(value)):
                    names.append(re.escape(name))
    return re.compile(rf"\b(?:{'|'.join(names)})\(") if names else None


def _starts_a_process(item: pytest.Item) -> bool:
    function = getattr(item, "function", None)
    if function is None:
        return False
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    helpers = None if item.module is None else _spawning_helpers(item.module)
    return bool(SPAWNS.search(source) or (helpers is not None and helpers.search(source)))


@pytest.hookimpl(tryfirst=True)  # (before xdist's own, which reads the xdist_group marks added here)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for name in set(getattr(item, "fixturenames", ())) & SERVICE_MARKERS.keys():
            item.add_marker(SERVICE_MARKERS[name])
        module = "" if item.module is None else item.module.__name__.rpartition(".")[2]
        if module in SLOW_MODULES or _starts_a_process(item):
            item.add_marker("slow")
        if module.startswith("test_real_"):  # the real servers' tier (tests/real_servers.py)
            item.add_marker("real")
            item.add_marker("slow")
            # one real server starts at a time (`--dist loadgroup`): each takes a core while it starts
            item.add_marker(pytest.mark.xdist_group("real"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fuzz", action="store_true", help="run the parser fuzz tests long (thousands of examples, minutes)"
    )


@pytest.fixture(scope="session")
def fuzz_examples(request: pytest.FixtureRequest) -> int:
    """Examples per fuzz test: a few seconds' worth normally, many more under ``--fuzz``."""
    return 5000 if request.config.getoption("--fuzz") else 150


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The history database of every test is its own (never the user's; `watch` records the
    startups it sees, and one test's phase times must not set another's stall limits)."""
    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    # nor the user's config file (a [gpu] or [keys] of theirs would change what the tests see)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
