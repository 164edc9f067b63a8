#!/usr/bin/env python3
"""Idle overhead: CPU used while watching a quiet log plus the simulated 8-GPU source at 1 Hz.

Runs side by side for the same window, each in its own process, CPU read from /proc
after a warm-up (so interpreter start-up is not counted):

    sources        LocalTailer (inotify) + SimGpuSource(8 GPUs, 1 Hz), events consumed
    sources-poll   the same with the adaptive-poll fallback instead of inotify
    + writers      the inotify one plus writer discovery (WriterSource) of the writer below
    watch --plain  the real CLI on the same log (no GPU panel in plain mode; writer discovery on)
    tail -F        the reference

A quiet writer (a shell and two children holding the log open, as a server's ranks do)
runs the whole time, so writer discovery keeps its known processes under watch.

    .venv/bin/python bench/idle.py                # 60 s
    .venv/bin/python bench/idle.py --seconds 20
    .venv/bin/python bench/idle.py --quick        # 5 s, a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
WARMUP_S = 2.0


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def child(log: str, use_inotify: bool, writers: bool = False) -> None:
    """Consume the sources forever (the parent kills this process)."""
    from tui.sources.local import LocalTailer
    from tui.sources.sim import SimGpuSource
    from tui.sources.writers import WriterSource

    samples = 0

    async def drain(events) -> None:
        nonlocal samples
        async for _ in events:
            samples += 1

    tailer = LocalTailer(log, use_inotify=use_inotify)
    sim = SimGpuSource(8, interval=1.0)
    extra = [drain(WriterSource(log).events())] if writers else []
    await asyncio.gather(drain(tailer.events()), drain(sim.samples()), *extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--quick", action="store_true", help="5 s: a smoke run")
    parser.add_argument("--child", choices=["inotify", "poll", "writers"], help=argparse.SUPPRESS)
    parser.add_argument("--log", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(child(args.log, args.child != "poll", writers=args.child == "writers"))
        return 0
    seconds = 5.0 if args.quick else args.seconds
    me = os.path.abspath(__file__)
    with tempfile.TemporaryDirectory(prefix="watchtower-idle-") as workdir:
        log = os.path.join(workdir, "server.log")
        with open(log, "wb") as f:
            f.write(b'[2026-11-30 08:00:00] server_args=ServerArgs(model_path="x", tp_size=8)\n' * 1000)
        writer = subprocess.Popen(["sh", "-c", 'exec >>"$0"; sleep 3600 & sleep 3600 & wait', log])
        runs = {
            "sources (inotify) + sim 8 GPUs": [sys.executable, me, "--child", "inotify", "--log", log],
            "sources (poll) + sim 8 GPUs": [sys.executable, me, "--child", "poll", "--log", log],
            "  + writer discovery": [sys.executable, me, "--child", "writers", "--log", log],
            "watchtower watch --plain": [sys.executable, "-m", "tui.cli", "watch", "--plain", log],
            "tail -F": ["tail", "-F", log],
        }
        procs = {
            name: subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for name, argv in runs.items()
        }
        try:
            time.sleep(WARMUP_S)  # pacing: interpreters start and read the existing log
            before = {name: cpu_seconds(p.pid) for name, p in procs.items()}
            start = time.monotonic()
            time.sleep(seconds)
            elapsed = time.monotonic() - start
            after = {name: cpu_seconds(p.pid) for name, p in procs.items()}
            dead = [name for name, p in procs.items() if p.poll() is not None]
        finally:
            for p in procs.values():
                p.kill()
                p.wait()
            for pid in [int(x) for x in open(f"/proc/{writer.pid}/task/{writer.pid}/children").read().split()]:
                os.kill(pid, 9)
            writer.kill()
            writer.wait()
    print(f"idle overhead over {elapsed:.0f} s on a quiet log (CPU time, % of one core; clock tick "
          f"{1000 / os.sysconf('SC_CLK_TCK'):.0f} ms)")  # fmt: skip
    for name in runs:
        used = after[name] - before[name]
        print(f"  {name:34} {used:6.2f} s  {100 * used / elapsed:6.2f} %" + ("  (exited early!)" if name in dead else ""))
    print("  target: under 1 % of one core")
    return 1 if dead else 0


if __name__ == "__main__":
    sys.exit(main())
