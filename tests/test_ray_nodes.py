"""vLLM over Ray (issue 18): the head's one log holds every node's lines, a worker node's led by Ray
as ``(RayWorkerWrapper pid=N, ip=…)``. `watch --ray LOG` splits them by ``ip=`` so the barrier
and the verdict see each node: the head serves; a worker node that fails is named."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import start_cli
from tui.core.cluster import ray_node

REPO = Path(__file__).parent.parent
CYAN, DIM, RESET = "\x1b[36m", "\x1b[2m", "\x1b[0m"

pytestmark = pytest.mark.timeout(120)


def ray_head_log(fail: str | None = None, dedup: bool = False) -> str:
    """A vLLM V0 start over Ray on three nodes (pipeline parallel 3 × tensor parallel 2): the head's
    driver worker (no prefix) and its local actor (no ip), two actors on each other node. Ray
    colours its prefix, as it writes it into a file too. ``fail``: that node's first actor raises
    in its CUDA graph capture. ``dedup``: Ray's default log deduplication folds the actors' like
    lines after the first into one "[repeated Nx across cluster]" line: 10.0.0.3's actors' "Graph
    capturing finished" never appear under their own prefix."""
    actors = {"head": ["(RayWorkerWrapper pid=2201)"],
              "10.0.0.2": ["(RayWorkerWrapper pid=3101, ip=10.0.0.2)", "(RayWorkerWrapper pid=3102, ip=10.0.0.2)"],
              "10.0.0.3": ["(RayWorkerWrapper pid=4101, ip=10.0.0.3)", "(RayWorkerWrapper pid=4102, ip=10.0.0.3)"]}

    def every(message: str, second: int, file: str = "model_runner.py:1110", folded: bool = False) -> list[str]:
        line = f"INFO 02-26 06:24:{second:02d} {file}] {message}"
        own = [line]
        for tags in actors.values():
            own += [f"{CYAN}{tag}{RESET} {line}" for tag in tags]
        if folded:  # the first actor's line, then the rest folded into one, led by another's prefix
            return own[:2] + [f"{CYAN}{actors['10.0.0.2'][1]}{RESET} {line}{DIM} [repeated {len(own) - 2}x across cluster]{RESET}"]
        return own

    lines = [
        "INFO 02-26 06:24:10 api_server.py:912] vLLM API server version 0.7.3",
        "INFO 02-26 06:24:10 api_server.py:913] args: Namespace(model='/models/m', tensor_parallel_size=2, "
        "pipeline_parallel_size=3, distributed_executor_backend='ray')",
        "INFO 02-26 06:24:12 ray_utils.py:336] Connecting to existing Ray cluster at address: 10.0.0.1:6379...",
        *every("Starting to load model /models/m...", 20),
        *every("Loading model weights took 12.1 GiB", 40, "model_runner.py:1115"),
        "INFO 02-26 06:24:44 executor_base.py:111] # cuda blocks: 20000, # CPU blocks: 4096",
        *every("Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is not static.",
               45, "model_runner.py:1434"),
    ]
    if fail is not None:
        tag = actors[fail][0]
        lines += [f"{CYAN}{tag}{RESET} ERROR 02-26 06:24:50 worker_base.py:581] Error executing method 'capture_model'.",
                  f"{CYAN}{tag}{RESET} ERROR 02-26 06:24:50 worker_base.py:581] Traceback (most recent call last):",
                  f'{CYAN}{tag}{RESET} ERROR 02-26 06:24:50 worker_base.py:581]   File "/vllm/worker/worker_base.py", line 573, in execute_method',
                  f"{CYAN}{tag}{RESET} ERROR 02-26 06:24:50 worker_base.py:581] torch.OutOfMemoryError: CUDA out of memory. "
                  "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.20 GiB is free."]
        return "\n".join(lines) + "\n"
    lines += [
        *every("Graph capturing finished in 21 secs, took 0.40 GiB", 55, "model_runner.py:1562", folded=dedup),
        "INFO 02-26 06:24:56 llm_engine.py:436] init engine (profile, create kv cache, warmup model) took 12.5 seconds",
        "INFO 02-26 06:24:57 api_server.py:958] Starting vLLM API server on http://0.0.0.0:8000",
        "INFO:     Started server process [2100]",
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("line, node", [
    (b"(RayWorkerWrapper pid=3101, ip=10.0.0.2) INFO 02-26 06:24:20 x.py:1] hi", "10.0.0.2"),
    (b"\x1b[36m(RayWorkerWrapper pid=3101, ip=10.0.0.2)\x1b[0m INFO 02-26 06:24:20 x.py:1] hi", "10.0.0.2"),
    (b"\x1b[2m\x1b[36m(RayWorkerVllm pid=17, ip=192.168.1.7)\x1b[0m hi", "192.168.1.7"),  # vLLM <= 0.3.2, Ray 2.x's DIM
    (b"(pid=17, ip=fd00::2) a task's line", "fd00::2"),
    (b"\x1b[33m(raylet, ip=10.0.0.3)\x1b[0m A worker died or was killed while executing a task", "10.0.0.3"),
    (b"\x1b[36m(RayWorkerWrapper pid=2201)\x1b[0m INFO on the head's own node", None),
    (b"INFO 02-26 06:24:20 x.py:1] the driver", None),
    (b"INFO 02-26 06:24:20 x.py:1] text that mentions (RayWorkerWrapper pid=1, ip=10.0.0.9) later", None),
])
def test_the_node_a_ray_line_came_from(line, node):
    assert ray_node(line) == node


def watch(log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tui.cli", "watch", "--ray", str(log), "--plain", "--gpus", "none",
                           "--timeout", "30", *args], capture_output=True, text=True, cwd=REPO, timeout=90,
                          env=dict(os.environ, NO_COLOR="1"))


def test_a_healthy_three_node_start_reads_ready_with_each_node_seen(tmp_path):
    log = tmp_path / "vllm-head.log"
    log.write_text(ray_head_log())
    result = watch(log)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "READY: head serving, 10.0.0.2 worker past CUDA graphs, 10.0.0.3 worker past CUDA graphs" in out
    assert "barrier: weight load done on all 5 ranks of 3 nodes" in out  # the head's actor, two per worker node
    assert "[10.0.0.3] weight load done" in out


def test_with_ray_folding_like_lines_the_heads_ready_still_decides(tmp_path):
    """Ray's deduplication (on by default) leaves a worker node's own lines short of its last
    set-up step: vLLM's engine serves only once every actor is set up, so the head's ready says it."""
    log = tmp_path / "vllm-head.log"
    log.write_text(ray_head_log(dedup=True))
    result = watch(log)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "READY: head serving, 10.0.0.2 worker, 10.0.0.3 worker" in out
    assert "[10.0.0.3] CUDA graphs done" not in out  # (their own lines never said so)


def test_a_worker_node_that_fails_is_named(tmp_path):
    log = tmp_path / "vllm-head.log"
    log.write_text(ray_head_log(fail="10.0.0.3"))
    result = watch(log)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    verdict = next(line for line in out.splitlines() if "FAILED on" in line)
    assert "FAILED on 10.0.0.3" in verdict and "OutOfMemoryError" in verdict, out
    assert "[10.0.0.2]" in out and "[head]" in out


async def test_the_dashboard_shows_each_node_of_a_ray_log(tmp_path):
    """The worker nodes appear in the dashboard's node rows as their first lines are read."""
    from tests.support import until
    from tests.test_app_cluster import text_of
    from tui.app.dashboard import build_app
    from tui.core.options import ClusterOptions, GpuOptions
    from tui.wiring import make_cluster

    log = tmp_path / "vllm-head.log"
    log.write_text(ray_head_log())
    session = make_cluster(ClusterOptions(ray_log=str(log), gpus=GpuOptions(kind="none")))
    app = build_app(None, nodes=session)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(lambda: app.verdict().text.startswith("READY: head serving, 10.0.0.2 worker"), timeout=30, pilot=pilot)
        await until(lambda: all(n in text_of(app, "#nodes") for n in ("head", "10.0.0.2", "10.0.0.3")), timeout=30,
                    pilot=pilot)


async def test_the_heads_log_replaced_is_said_once_not_once_per_node(tmp_path):
    """Every node of a Ray start is read from the head's one log: a new file there is one notice, led
    by the head (each node's startup begins again all the same), then the new attempt's READY."""
    log = tmp_path / "vllm-head.log"
    healthy = ray_head_log()
    log.write_text(healthy[:healthy.index("Graph capturing finished")])  # every node in its CUDA graph capture
    proc = await start_cli("watch", "--ray", str(log), "--plain", "--gpus", "none", "--timeout", "60",
                           env={"NO_COLOR": "1"})
    assert proc.stdout is not None
    seen = []
    while not any("[10.0.0.3] CUDA graphs started" in line for line in seen):
        raw = await asyncio.wait_for(proc.stdout.readline(), 20)
        assert raw, "the watch ended before node 10.0.0.3's CUDA graph capture was read: " + "".join(seen)
        seen.append(raw.decode())
    replacement = tmp_path / "vllm-head.log.new"
    replacement.write_text(healthy)
    replacement.replace(log)  # relaunched: a new file at the log's path
    out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0, "".join(seen) + out.decode() + err.decode()
    notices = [line for line in out.decode().splitlines() if "a new attempt starts at line 1" in line]
    assert len(notices) == 1 and "[head] the log was " in notices[0], out.decode()
    assert "READY: head serving" in out.decode()
