#!/usr/bin/env python3
"""Eight simulated nodes × 8 GPUs: what watching a multi-node startup costs.

    idle CPU        `watch --plain --cluster` and the cluster dashboard (`watch --cluster`, in a
                    detached tmux) on 8 quiet local logs with 8 simulated GPUs per node (1 Hz), CPU
                    of the whole process after a warm-up; reference: `tail -F` on the same 8 logs
    barrier         the cluster dashboard (App.run_test, 8 nodes × 8 sim GPUs): a line that moves
                    the laggard past a milestone is appended; time until the barrier view shows it
    key → screen    `o` (one node's log) while all 8 logs grow (a line per node every 50 ms): the
                    key event posted as the terminal driver would, then the time until the log view
                    shows that node only and the frame is painted (Pilot.press adds ~150 ms of its
                    own waiting, so it is not used)

    .venv/bin/python bench/cluster.py              # 30 s idle window, 20 trials each
    .venv/bin/python bench/cluster.py --quick      # 5 s, 5 trials: a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.idle import WARMUP_S, cpu_seconds  # noqa: E402

NODES = 8
TS = "2026-02-22 23:39:00"


def node_lines(node: int, step: str) -> str:
    ranks = [f"TP{node * 8 + i}" for i in range(8)]
    if step == "start":
        return "".join(f"[{TS} {r}] Load weight begin. avail mem=78.12 GB\n" for r in ranks)
    return "".join(
        f"[{TS} {r}] Load weight end. elapsed=6.91 s, type=X, avail mem=70.40 GB, mem usage=7.72 GB.\n" for r in ranks
    )


def idle_cpu(workdir: Path, seconds: float) -> dict[str, float]:
    logs = []
    conf = workdir / "cluster.toml"
    for n in range(NODES):
        log = workdir / f"n{n}.log"
        log.write_text(f"[{TS}] server_args=ServerArgs(model_path='m', tp_size=64, nnodes=8)\n" + node_lines(n, "start"))
        logs.append(log)
    conf.write_text("".join(f'[[node]]\nname = "n{n}"\nlog = "{log}"\ngpus = "sim"\n\n' for n, log in enumerate(logs)))
    runs = {
        "watch": [sys.executable, "-m", "tui.cli", "watch", "--plain", "--cluster", str(conf), "--gpus", "sim"],
        "tail": ["tail", "-q", "-F", *map(str, logs)],
    }
    procs = {k: subprocess.Popen(v, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for k, v in runs.items()}
    pids = {k: p.pid for k, p in procs.items()}
    session = f"wt-bench-cluster-{os.getpid()}"
    dashboard = [sys.executable, "-m", "tui.cli", "watch", "--cluster", str(conf), "--gpus", "sim"]
    tmux = subprocess.run(["tmux", "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", session, "-x", "160", "-y",
                           "50", "exec " + " ".join(dashboard)], cwd=ROOT, capture_output=True, text=True)
    if tmux.returncode == 0:
        pids["dashboard"] = int(tmux.stdout.strip())
    try:
        time.sleep(WARMUP_S + 3.0)  # interpreter start-up, imports, the first paint and GPU samples
        before = {k: cpu_seconds(pid) for k, pid in pids.items()}
        time.sleep(seconds)
        after = {k: cpu_seconds(pid) for k, pid in pids.items()}
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    return {k: 100.0 * (after[k] - before[k]) / seconds for k in pids}


async def grow(logs: list[Path]) -> None:
    """A startup in progress on every node: one line per node every 50 ms."""
    step = 0
    while True:
        step += 1
        for n, log in enumerate(logs):
            with open(log, "a") as f:
                f.write(f"[{TS} TP{n * 8}] Capturing batches (bs={step} avail_mem=19.02 GB): 1%|\n")
        await asyncio.sleep(0.05)


async def dashboard_latencies(workdir: Path, trials: int) -> tuple[list[float], list[float]]:
    from textual import events

    from tui.app.dashboard import build_app
    from tui.cluster import ClusterSession, default_session
    from tui.core.options import NodeSpec

    barrier_ms, key_ms = [], []
    for trial in range(trials):
        logs = []
        for n in range(NODES):
            log = workdir / f"t{trial}-n{n}.log"
            log.write_text(f"[{TS}] server_args=ServerArgs(model_path='m', tp_size=64, nnodes=8)\n"
                           + node_lines(n, "start") + (node_lines(n, "end") if n else ""))
            logs.append(log)
        session = ClusterSession([NodeSpec(f"n{n}", str(log), gpus="sim") for n, log in enumerate(logs)],
                                 make_session=partial(default_session, gpu_interval=1.0))
        app = build_app(None, nodes=session)

        def weight_row(app=app) -> str:
            rows = str(app.query_one("#barrier").render()).split("\n")
            return next((row for row in rows if "weight load done" in row), "")

        async with app.run_test(size=(160, 50)) as pilot:
            while "waiting: n0" not in weight_row():  # weight load: n0 behind
                await pilot.pause(0.01)
            with open(logs[0], "a") as f:
                f.write(node_lines(0, "end"))
            start = time.perf_counter()
            while "waiting:" in weight_row():
                await asyncio.sleep(0.001)
            barrier_ms.append(1000 * (time.perf_counter() - start))
            writer = asyncio.create_task(grow(logs))
            await pilot.pause(0.3)
            start = time.perf_counter()
            app.post_message(events.Key("o", "o"))
            while app.node_filter != "n0" or app.log_view.session is not session.nodes["n0"]:
                await asyncio.sleep(0.0005)
            await pilot.pause(0)  # the frame it caused
            key_ms.append(1000 * (time.perf_counter() - start))
            writer.cancel()
    return barrier_ms, key_ms


def show(name: str, values: list[float]) -> None:
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    print(f"  {name:<16} median {statistics.median(values):6.1f} ms   p99 {p99:6.1f} ms   ({len(values)} trials)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seconds, trials = (5.0, 5) if args.quick else (args.seconds, args.trials)
    with tempfile.TemporaryDirectory(prefix="watchtower-cluster-") as tmp:
        cpu = idle_cpu(Path(tmp), seconds)
        tail = cpu["tail"]
        print(f"idle CPU over {seconds:.0f} s, {NODES} nodes × 8 sim GPUs at 1 Hz (% of one core):")
        print(f"  tail -F (8 logs, no GPUs)           {tail:5.2f} %")
        for key, name in (("watch", "watch --plain --cluster"), ("dashboard", "cluster dashboard (tmux)")):
            if key in cpu:
                ratio = f"{cpu[key] / tail:.1f}× tail -F" if tail else "tail -F used none"
                print(f"  {name:<34}{cpu[key]:5.2f} %   {ratio}")
        barrier, keys = asyncio.run(dashboard_latencies(Path(tmp), trials))
        print(f"cluster dashboard, {NODES} nodes × 8 sim GPUs:")
        show("barrier change", barrier)
        show("key o → screen", keys)
    return 0


if __name__ == "__main__":
    sys.exit(main())
