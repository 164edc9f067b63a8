"""Benchmark the launcher: how fast a silent death is reported, and what watching a quiet server costs.

1. Death to verdict: a simulated server (tests/server_sim.py) hangs in weight loading and is
   killed with SIGKILL. Reference: a bare ``asyncio`` child wait noticing the exit. Watchtower:
   the full path (launcher → session → tracker → verdict "dead"). Target: under 1 s, and the
   ratio to the bare wait shows what the log drain and the verdict add.
2. Idle cost: CPU seconds Watchtower's launch loop spends over ``--idle`` seconds of a server
   that prints nothing, against ``tail -F`` following the same log for the same time.
   Target: no more than a few times tail's (both should be near zero).

Usage: python bench/launch.py [--trials 5] [--idle 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui.history import History  # noqa: E402
from tui.launch.controller import Launch  # noqa: E402
from tui.launch.spec import LaunchSpec  # noqa: E402
from tui.launch.events import VerdictChanged  # noqa: E402
from tui.session import WatchSession  # noqa: E402

SIM = str(ROOT / "tests" / "server_sim.py")


async def wait_file(path: Path) -> str:
    while not path.exists():
        await asyncio.sleep(0.01)
    return path.read_text()


async def reference_latency(tmp: Path) -> float:
    pids = tmp / "ref.pids"
    pids.unlink(missing_ok=True)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, SIM, "--outcome", "hang", "--pid-file", str(pids),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    await wait_file(pids)
    t0 = time.perf_counter()
    os.kill(proc.pid, signal.SIGKILL)
    await proc.wait()
    return time.perf_counter() - t0


async def watchtower_latency(tmp: Path, trial: int) -> float:
    pids = tmp / f"wt{trial}.pids"
    spec = LaunchSpec(f"bench{trial}", [sys.executable, SIM, "--outcome", "hang", "--pid-file", str(pids)],
                      log_dir=tmp / "logs")
    session = WatchSession()
    launch = Launch(spec, history=History(tmp / "history.sqlite3"))
    launch.attach(session)
    dead = asyncio.Event()
    launch.subscribe(lambda e: isinstance(e, VerdictChanged) and e.verdict.kind == "dead" and dead.set())
    session.start()
    await launch.start()
    server = int((await wait_file(pids)).split()[0])
    await asyncio.sleep(0.3)  # let the log reach weight loading
    t0 = time.perf_counter()
    os.kill(server, signal.SIGKILL)
    await dead.wait()
    took = time.perf_counter() - t0
    await launch.close(stop_server=True)
    await session.stop()
    return took


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def idle_cost(tmp: Path, seconds: float) -> tuple[float, float]:
    spec = LaunchSpec("idle", [sys.executable, SIM, "--outcome", "hang"], log_dir=tmp / "logs")
    session = WatchSession()
    launch = Launch(spec, history=History(tmp / "history.sqlite3"))
    launch.attach(session)
    session.start()
    await launch.start()
    await asyncio.sleep(1.0)  # past the startup lines
    tail = subprocess.Popen(["tail", "-F", str(launch.run.log_path)], stdout=subprocess.DEVNULL)
    before = cpu_seconds()
    await asyncio.sleep(seconds)
    ours = cpu_seconds() - before
    tail.terminate()
    _, _, usage = os.wait4(tail.pid, 0)
    theirs = usage.ru_utime + usage.ru_stime
    await launch.close(stop_server=True)
    await session.stop()
    return ours, theirs


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--idle", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        ref = [await reference_latency(tmp) for _ in range(args.trials)]
        wt = [await watchtower_latency(tmp, i) for i in range(args.trials)]
        r, w = statistics.median(ref), statistics.median(wt)
        print(f"death → noticed, bare asyncio wait:     median {r * 1000:7.1f} ms")
        print(f"death → 'dead' verdict, Watchtower:     median {w * 1000:7.1f} ms  (max {max(wt) * 1000:.1f} ms)")
        print(f"ratio {w / r:.1f}x the bare wait; target under 1 s: {'ok' if max(wt) < 1.0 else 'MISSED'}")
        ours, theirs = await idle_cost(tmp, args.idle)
        ratio = f"{ours / theirs:.1f}x" if theirs > 0 else "tail used no measurable CPU"
        print(f"idle {args.idle:g} s: Watchtower launch loop {ours * 1000:.1f} ms CPU,"
              f" tail -F {theirs * 1000:.1f} ms CPU ({ratio})")


if __name__ == "__main__":
    asyncio.run(main())
