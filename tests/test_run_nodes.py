"""`watchtower run --nodes H1,H2` / `--cluster FILE`: one command on two SSH nodes (two real sshd,
127.0.0.2 and 127.0.0.3), node ranks added, the nodes' agreement checked, stop and relaunch on
every node, and a node given another dist-init address named by the barrier view."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401 (autouse: no simulator outlives a test)
from tests.test_cluster_core import wait_outcome
from tests.test_metrics import samples, value
from tests.support import run_cli
from tui.cluster import default_session
from tui.history import History
from tui.launch.controller import Launch
from tui.launch.events import Note
from tui.launch.nodes import NodesRunner

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(180)]
REPO = Path(__file__).parent.parent


@pytest.fixture
def fake_sglang(tmp_path) -> Iterator[Path]:
    """``python -m sglang.launch_server`` that is tests/server_sim.py (so the command reads as SGLang's).
    Afterwards no server of the test is left running: a ready ``run --plain`` leaves its servers up on
    purpose (their process groups are in the log folder's pid files)."""
    package = tmp_path / "fake" / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "launch_server.py").write_text(
        f"import runpy, sys\nsys.argv[0] = {str(REPO / 'tests' / 'server_sim.py')!r}\n"
        f"runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    yield package.parent
    for pid_file in (tmp_path / "logs").glob("*.pid"):
        subprocess.run(["kill", "-KILL", "--", f"-{pid_file.read_text().split()[0]}"], capture_output=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.2", 0))
        return sock.getsockname()[1]


def command(addr: str) -> list[str]:
    return [sys.executable, "-m", "sglang.launch_server", "--tp", "2", "--model-path", "/models/m",
            "--dist-init-addr", addr, "--load-seconds", "0.3"]


def cli(nodes, tmp_path, fake, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, WATCHTOWER_SSH_KNOWN_HOSTS=str(nodes[0].known_hosts),
               WATCHTOWER_SSH_IDENTITY=str(nodes[0].client_key), WATCHTOWER_DATA_DIR=str(tmp_path / "data"),
               NO_COLOR="1", PYTHONUNBUFFERED="1")
    return run_cli("run", "--plain", "--name", "mn", "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--env",
                   f"PYTHONPATH={fake}", *args, env=env, timeout=150)


def test_the_same_command_on_two_nodes_with_node_ranks_reaches_ready(sshd_nodes, tmp_path, fake_sglang):
    a, b = sshd_nodes
    addr = f"127.0.0.2:{free_port()}"
    # --no-check: the simulator has no model directory and no real SGLang, which each node's preflight says
    ready = tmp_path / "on-ready.txt"  # --on-ready runs for several nodes as for one (the one outcome code)
    result = cli(sshd_nodes, tmp_path, fake_sglang, "--nodes", f"{a.spec},{b.spec}", "--timeout", "60",
                 "--no-check", "--metrics-textfile", str(tmp_path / "mn.prom"),
                 "--on-ready", f"echo $WATCHTOWER_OUTCOME $WATCHTOWER_NAME v$WATCHTOWER_ATTEMPT $WATCHTOWER_HOST > {ready}",
                 "--", *command(addr))
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "hook ran (exit 0)" in out
    assert ready.read_text() == f"ready mn v1 {a.spec},{b.spec}\n"
    (record,) = History(tmp_path / "data" / "history.sqlite3").attempts("mn")  # written off the event loop, before the exit
    assert record.outcome == "ready" and record.host == f"{a.spec},{b.spec}"
    assert f"check: ✓ dist-init address: {addr} on every node" in out
    assert "check: ✓ node ranks: 0…1, one per node" in out
    assert "check [127.0.0.3]: preflight: sglang on root@127.0.0.3:" in out  # each node probed where it runs
    assert "check [127.0.0.2]: ✗ model: /models/m: no such directory" in out
    assert "[127.0.0.3] server: sglang" in out and "READY: 127.0.0.2 serving, 127.0.0.3 worker past CUDA graphs" in out
    assert "left running: 127.0.0.2: kill -INT -- -" in out
    node2 = (tmp_path / "logs" / "mn-127.0.0.3-v1.log").read_text()
    assert "TP3" in node2 and "TP0" not in node2  # --node-rank 1 was added on node 2
    metrics = samples((tmp_path / "mn.prom").read_text())  # the textfile's last write: per node, and the attempt
    assert value(metrics, "watchtower_verdict", launch="mn", watchtower_verdict="ready") == 1.0
    assert value(metrics, "watchtower_phase", launch="mn", node="127.0.0.3", watchtower_phase="dist_init") == 0.0
    assert value(metrics, "watchtower_phase_rank_seconds", launch="mn", node="127.0.0.3", phase="weight_load",
                 rank="TP3") is not None


def cluster_file(tmp_path: Path, nodes, node2_args: list[str]) -> Path:
    a, b = nodes
    conf = tmp_path / "cluster.toml"
    args = ", ".join(f'"{w}"' for w in node2_args)
    conf.write_text(f'[[node]]\nhost = "{a.spec}"\n\n[[node]]\nhost = "{b.spec}"\nargs = [{args}]\n')
    return conf


def test_node_2_with_another_dist_init_address_is_refused_by_the_check(sshd_nodes, tmp_path, fake_sglang):
    port = free_port()
    conf = cluster_file(tmp_path, sshd_nodes, ["--dist-init-addr", f"127.0.0.9:{port}"])
    result = cli(sshd_nodes, tmp_path, fake_sglang, "--cluster", str(conf), "--", *command(f"127.0.0.2:{port}"))
    assert result.returncode == 2
    assert f"✗ dist-init address: 127.0.0.3 has 127.0.0.9:{port}, the others 127.0.0.2:{port}" in result.stdout
    assert "--no-check to launch anyway" in result.stderr
    assert not (tmp_path / "logs").exists()  # nothing was started


def test_launched_anyway_the_barrier_view_names_node_2_not_past_dist_init(sshd_nodes, tmp_path, fake_sglang):
    port = free_port()
    conf = cluster_file(tmp_path, sshd_nodes, ["--dist-init-addr", f"127.0.0.9:{port}"])
    result = cli(sshd_nodes, tmp_path, fake_sglang, "--cluster", str(conf), "--no-check", "--timeout", "6", "--",
                 *command(f"127.0.0.2:{port}"))
    assert result.returncode == 3, result.stdout + result.stderr
    barrier = next(line for line in result.stdout.splitlines() if "dist-init done: 0/4 ranks; not yet" in line)
    # every rank waits in its distributed init; first: node 2's ranks, whose command disagrees
    assert "dist-init done: 0/4 ranks; not yet: 127.0.0.3 TP2 (" in barrier
    assert "[suspect: dist-init address: 127.0.0.3 has 127.0.0.9" in barrier
    assert "Init parallel begin." in barrier


async def test_stop_and_relaunch_act_on_every_node(sshd_nodes, tmp_path, fake_sglang, monkeypatch,
                                                   ssh_connections_closed):
    monkeypatch.setenv("WATCHTOWER_SSH_KNOWN_HOSTS", str(sshd_nodes[0].known_hosts))
    monkeypatch.setenv("WATCHTOWER_SSH_IDENTITY", str(sshd_nodes[0].client_key))
    from tui.launch.spec import LaunchSpec, StopPlan

    hosts = [n.spec for n in sshd_nodes]
    spec = LaunchSpec("mn", command(f"127.0.0.2:{free_port()}"), {"PYTHONPATH": str(fake_sglang)},
                      log_dir=tmp_path / "logs", plan=StopPlan(after_int=2, after_term=2))
    launch = Launch(spec, runner=lambda emit: NodesRunner(hosts, emit, gpus="sim"),
                    make_node=partial(default_session, gpu_interval=0.2))
    notes: list[str] = []
    launch.subscribe(lambda event: notes.append(event.text) if isinstance(event, Note) else None)
    first = await launch.start()
    session = launch.nodes
    session.start()
    try:
        assert "v1: started on 127.0.0.2, 127.0.0.3" in notes
        assert (await wait_outcome(session, {"ready", "failed"})).kind == "ready"
        parts = dict(launch.runner.nodes_of(first).runs)
        await launch.relaunch()
        new = launch.nodes
        assert new is not session
        assert len(parts) == 2 and all(not run.alive for run in parts.values())  # v1 gone on both nodes before v2 started
        assert "waiting for the GPU memory to be released on 127.0.0.2, 127.0.0.3" in notes
        assert not any("still held" in note for note in notes)
        assert launch.attempt == 2 and set(launch.runner.nodes_of(launch.run).runs) == {"127.0.0.2", "127.0.0.3"}
        new.start()
        assert (await wait_outcome(new, {"ready", "failed"})).kind == "ready"
        assert await launch.stop()
        assert not await launch.runner.alive(launch.run)
        # the worker's own Ctrl-C traceback is the stop's, not a failure; no node is left "running"
        await wait_outcome(new, {"stopped", "failed"})
        assert "KeyboardInterrupt" in (tmp_path / "logs" / "mn-127.0.0.3-v2.log").read_text()
        assert new.verdict().text == "STOPPED: stopped on every node"
        assert {new.node_verdict(n).kind for n in new.nodes} == {"stopped"}
    finally:
        await session.stop()
        await launch.close()


def test_attach_follows_a_run_nodes_attempt_again_on_every_node(sshd_nodes, tmp_path, fake_sglang):
    a, b = sshd_nodes
    addr = f"127.0.0.2:{free_port()}"
    slow = [*command(addr)[:-1], "6"]  # a 6 s weight load: Watchtower gives up first, the servers go on
    first = cli(sshd_nodes, tmp_path, fake_sglang, "--nodes", f"{a.spec},{b.spec}", "--timeout", "2", "--no-check",
                "--", *slow)
    assert first.returncode == 3, first.stdout + first.stderr
    assert "left running: 127.0.0.2: kill -INT" in first.stdout
    env = dict(os.environ, WATCHTOWER_SSH_KNOWN_HOSTS=str(a.known_hosts), WATCHTOWER_SSH_IDENTITY=str(a.client_key),
               WATCHTOWER_DATA_DIR=str(tmp_path / "data"), NO_COLOR="1", PYTHONUNBUFFERED="1")
    again = run_cli("attach", "mn", "--plain", "--gpus", "none", "--timeout", "60", env=env, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "v1: following it again on 127.0.0.2, 127.0.0.3" in again.stdout
    assert "READY: 127.0.0.2 serving, 127.0.0.3 worker past CUDA graphs" in again.stdout
    assert "started on" not in again.stdout  # nothing was launched
    rows = History(tmp_path / "data" / "history.sqlite3").attempts("mn")
    assert [(r.attempt, r.outcome) for r in rows] == [(1, "ready")]


def test_a_node_killed_is_dead_naming_the_servers_pid_not_the_wrappers(sshd_nodes, tmp_path, fake_sglang):
    """Each node's server runs under Watchtower's exit-status wrapper: the pids said (started,
    left running, DEAD) are the servers' own, as they wrote them, never a wrapper's."""
    a, b = sshd_nodes
    pids = tmp_path / "sim-{node_rank}.pids"  # each node's server writes its own pid
    result = cli(sshd_nodes, tmp_path, fake_sglang, "--nodes", f"{a.spec},{b.spec}", "--timeout", "30", "--no-check",
                 "--", *command(f"127.0.0.2:{free_port()}"), "--outcome", "sigkill", "--pid-file", str(pids))
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    wrappers = {int((tmp_path / "logs" / f"mn-{n.host}-v1.pid").read_text().split()[0]) for n in sshd_nodes}
    assert not any(f"pid {w}" in out for w in wrappers), out
    servers = [int((tmp_path / f"sim-{rank}.pids").read_text().split()[0]) for rank in (0, 1)]
    dead = [line for line in out.splitlines() if "DEAD" in line]
    assert dead and all(any(f"killed by SIGKILL · pid {s}" in line for s in servers) for line in dead), out
