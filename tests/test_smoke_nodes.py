"""``--smoke`` on several nodes: the one completion goes to the node whose log says ready (the
serving node: SGLang's workers serve no HTTP and print no ready line), and the attempt is READY
only once it answered — `watch --cluster` of servers started by hand, and `run --nodes` over SSH.
Real processes throughout (tests/server_sim.py answers /v1/completions on its ``--port``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.test_run_nodes import cli, command, fake_sglang  # noqa: F401  (fake_sglang: a fixture)
from tests.test_smoke import free_port
from tests.test_watch_nodes_local import REPO, cluster, start_node, stop

pytestmark = pytest.mark.timeout(120)


def watch(conf, *extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "tui.cli", "watch", "--cluster", str(conf), "--plain", "--gpus", "none",
                           "--timeout", "60", "--smoke", *extra], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=90)


def test_watch_cluster_smoke_asks_the_serving_node_and_is_ready_after_its_answer(tmp_path) -> None:
    port = free_port()
    head, head_log = start_node(tmp_path, 0, "--port", str(port), "--completion-delay", "0.5")
    worker, worker_log = start_node(tmp_path, 1, "--port", str(free_port()))  # a worker opens no port, as SGLang's
    try:
        result = watch(cluster(tmp_path, [head_log, worker_log]))
        out = result.stdout
        assert result.returncode == 0, out + result.stderr
        answered = out.index(f"[n1] smoke test: sim/model answered http://127.0.0.1:{port}/v1/completions in ")
        ready = out.index("READY: n1 serving, n2 worker past CUDA graphs · answers: first token in ")
        assert out.index("[n1] ready marker (line") < answered < ready, out
        assert "READY (line" not in out, out  # the marker alone is not called ready
        assert out.count("smoke test") == 1, out  # none to the worker
        assert ready < out.index("startup profile (to ready:") and re.search(r"  n[12] TP\d", out[ready:]), out  # slowest node
    finally:
        stop(head, worker)


def test_watch_cluster_smoke_500_fails_naming_the_node(tmp_path) -> None:
    port = free_port()
    head, head_log = start_node(tmp_path, 0, "--port", str(port), "--completion-status", "500")
    worker, worker_log = start_node(tmp_path, 1)
    try:
        result = watch(cluster(tmp_path, [head_log, worker_log]))
        out = result.stdout
        assert result.returncode == 1, out + result.stderr
        assert "[n1] smoke test FAILED: POST /v1/completions: HTTP 500" in out, out
        assert "FAILED on n1: ready marker seen, but the smoke test failed: POST /v1/completions: HTTP 500" in out, out
        assert "READY: n1 serving" not in out and "READY (line" not in out, out
    finally:
        stop(head, worker)


@pytest.mark.ssh
def test_run_nodes_smoke_is_ready_once_the_serving_node_answered(sshd_nodes, tmp_path, fake_sglang) -> None:  # noqa: F811
    a, b = sshd_nodes
    addr, port = f"127.0.0.2:{free_port()}", free_port()
    result = cli(sshd_nodes, tmp_path, fake_sglang, "--nodes", f"{a.spec},{b.spec}", "--timeout", "60", "--no-check",
                 "--smoke", "--", *command(addr), "--port", str(port), "--host", "0.0.0.0", "--completion-delay", "0.3")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    answered = out.index(f"[127.0.0.2] smoke test: sim/model answered http://127.0.0.2:{port}/v1/completions in ")
    ready = out.index("READY: 127.0.0.2 serving, 127.0.0.3 worker past CUDA graphs · answers: first token in ")
    assert answered < ready, out
    assert out.count("smoke test:") == 1, out
