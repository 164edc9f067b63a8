"""`watch --cluster` of servers Watchtower did not start, each node a real process tree writing its own
log (tests/server_sim.py, SGLang-shaped: node 0 serves and prints ready, node 1 is a worker whose log
ends after its CUDA graphs): READY as SGLang is, a worker killed or silent is named."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_watch_plain import expect, finish
from tests.support import start_cli

REPO = Path(__file__).parent.parent
SIM = REPO / "tests" / "server_sim.py"

pytestmark = pytest.mark.timeout(90)


def start_node(tmp_path: Path, rank: int, *extra: str) -> tuple[subprocess.Popen[bytes], Path]:
    """A node's server, started by hand (as pdsh or Ansible would): its output into its own log."""
    log = tmp_path / f"n{rank + 1}.log"
    out = open(log, "wb")
    proc = subprocess.Popen([sys.executable, str(SIM), "--tp", "2", "--node-rank", str(rank), "--step", "0.01",
                             *extra], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    out.close()
    return proc, log


def cluster(tmp_path: Path, logs: list[Path]) -> Path:
    conf = tmp_path / "nodes.toml"
    conf.write_text("".join(f'[[node]]\nname = "n{i + 1}"\nlog = "{log}"\n\n' for i, log in enumerate(logs)))
    return conf


async def watch(conf: Path, *extra: str) -> asyncio.subprocess.Process:
    return await start_cli("watch", "--cluster", str(conf), "--plain", "--gpus", "none", "--timeout", "60", *extra,
                           env={"NO_COLOR": "1"})


def stop(*procs: subprocess.Popen[bytes]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


async def test_a_healthy_two_node_startup_is_ready_though_the_worker_never_says_so(tmp_path):
    head, head_log = start_node(tmp_path, 0)
    worker, worker_log = start_node(tmp_path, 1)
    try:
        proc = await watch(cluster(tmp_path, [head_log, worker_log]))
        line = await expect(proc, "READY: ")
        code, _out, err = await finish(proc)
        assert code == 0, err
        assert "READY: n1 serving, n2 worker past CUDA graphs" in line
        assert "fired up" not in worker_log.read_text()  # the worker never said it
    finally:
        stop(head, worker)


async def test_a_worker_killed_is_dead_naming_the_node_within_seconds(tmp_path):
    head, head_log = start_node(tmp_path, 0, "--outcome", "hang")
    worker, worker_log = start_node(tmp_path, 1, "--outcome", "hang")
    try:
        proc = await watch(cluster(tmp_path, [head_log, worker_log]))
        seen: list[str] = []
        for needle in (f"[n2] server: pid {worker.pid}", "barrier: dist-init done on all 4 ranks of 2 nodes"):
            if needle not in "".join(seen):  # its writer found (as `watch` finds one), and the worker hanging
                await expect(proc, needle, seen)
        killed = time.monotonic()
        os.kill(worker.pid, signal.SIGKILL)
        line = await expect(proc, "DEAD on n2", seen)
        assert time.monotonic() - killed < 3.0, "".join(seen)
        code, _out, err = await finish(proc)
        assert code == 1, err
        assert f"main process pid {worker.pid}" in line and ("SIGKILL" in line or "exit status unknown" in line)
    finally:
        stop(head, worker)


async def test_a_worker_silent_past_its_limit_is_stalled_naming_the_node(tmp_path):
    head, head_log = start_node(tmp_path, 0, "--load-seconds", "4")  # a bar update each 0.5 s: never silent 2 s
    worker, worker_log = start_node(tmp_path, 1, "--outcome", "hang")
    try:
        proc = await watch(cluster(tmp_path, [head_log, worker_log]), "--stall-limit", "2s", "--timeout", "8")
        seen: list[str] = []
        line = await expect(proc, "STALLED? on n2", seen)
        assert "its process alive" in line and "TP2, TP3 not done with weight load" in line
        code, out, _err = await finish(proc)
        assert code == 3  # stalled? is a suspicion, not a verdict: the timeout ends the watch
        assert out.count("STALLED? on n2") == 1  # said once, not every second
    finally:
        stop(head, worker)


async def test_nodes_that_never_meet_at_the_dist_init_address_are_said_so_with_the_odd_command(tmp_path):
    """The classic hang: node 1 was given another --dist-init-addr. Every rank waits in the
    distributed init; the verdict says the nodes never met, and which node's command disagrees
    (read from its writer's command line: these servers were started by hand)."""
    import socket

    fake = tmp_path / "fake" / "sglang"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "launch_server.py").write_text(f"import runpy, sys\nsys.argv[0] = {str(SIM)!r}\n"
                                           "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    ports = []
    for _ in range(2):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
    procs, logs = [], []
    for rank, port in enumerate(ports):
        log = tmp_path / f"n{rank + 1}.log"
        with open(log, "wb") as out:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "sglang.launch_server", "--tp", "2", "--nnodes", "2", "--node-rank", str(rank),
                 "--model-path", "/models/m", "--dist-init-addr", f"127.0.0.1:{port}"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env=dict(os.environ, PYTHONPATH=str(fake.parent))))
        logs.append(log)
    try:
        proc = await watch(cluster(tmp_path, logs), "--stall-limit", "2s", "--timeout", "10")
        seen: list[str] = []
        line = await expect(proc, "STALLED? on n2", seen)
        assert "no rank past dist-init" in line and "the nodes never met at the dist-init address" in line, line
        assert f"dist-init address: n2 has 127.0.0.1:{ports[1]}, the others 127.0.0.1:{ports[0]}" in line, line
        code, _out, _err = await finish(proc)
        assert code == 3
    finally:
        stop(*procs)


def test_a_node_whose_log_directory_does_not_exist_is_said_so_at_the_timeout(tmp_path):
    """Issue 18 item 8: not "the log is empty", nor a bare "waiting for n2": the directory that is
    missing, on the node's own line and on the attempt's."""
    from tests.test_cluster_core import node_log

    n1 = tmp_path / "n1.log"
    n1.write_text("\n".join(node_log(["TP0"], until="load_begin")) + "\n")
    conf = tmp_path / "cluster.toml"
    conf.write_text(f'[[node]]\nname = "n1"\nlog = "{n1}"\n\n[[node]]\nname = "n2"\nlog = "{tmp_path}/gone/logs/n2.log"\n')
    result = subprocess.run([sys.executable, "-m", "tui.cli", "watch", "--cluster", str(conf), "--plain", "--gpus", "none",
                             "--timeout", "3"], capture_output=True, text=True, timeout=60, cwd=REPO)
    out = result.stdout
    assert result.returncode == 3, out + result.stderr
    missing = f"{tmp_path}/gone/logs/n2.log: its directory {tmp_path}/gone does not exist"
    timeout = next(line for line in out.splitlines() if "TIMEOUT after" in line)
    assert f"STARTING on n2: {missing}" in timeout, out  # the node in trouble is the headline
    assert f"[n2] STARTING: waiting for the log ({missing}" in out
    assert "the log is empty" not in out
