#!/usr/bin/env python3
"""Soak: the real vLLM (CPU) started N times in a row under `watch --plain`, and once unwatched.

For each start: the watcher's false alarms (a FAILED, DEAD or STALLED? line before READY, on a
start that did become ready), the time to the server's own `Application startup complete.`, and the
CPU seconds the watcher used over the start, against the start's own length (share of one core).
Then one start with nobody watching, for its time to ready (watching must not slow the start).
Issue 37: 0 false alarms in 10, the watcher under 3 % of a core.

Needs the real servers (scripts/real_servers/setup). A cold vLLM start takes ~90 s on a quiet
2-core machine: ten take a quarter of an hour.

    .venv/bin/python bench/real_soak.py               # 10 watched starts + 1 unwatched
    .venv/bin/python bench/real_soak.py --starts 3
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.real_servers import VLLM_ENV, HandStarted, alarms, free_port, vllm_command  # noqa: E402

READY = "Application startup complete"
START_LIMIT_S = 900


def wait_ready(server: HandStarted, limit: float = START_LIMIT_S) -> float | None:
    """Seconds from the start to the server's ready line; None if it ended or never said it."""
    began = time.monotonic()
    while time.monotonic() - began < limit:
        if READY in server.log.read_text(errors="replace"):
            return time.monotonic() - began
        if not server.alive():
            return None
        time.sleep(0.2)  # (a bench: the poll's own cost is in neither figure)
    return None


def one_start(folder: Path, index: int, watched: bool) -> dict:
    server = HandStarted(vllm_command(free_port()), folder / f"start-{index}.log", env=VLLM_ENV).start()
    watcher = None
    out = folder / f"watch-{index}.out"
    if watched:
        with out.open("wb") as sink:
            watcher = subprocess.Popen(
                [sys.executable, "-m", "tui.cli", "watch", "--plain", str(server.log), "--gpus", "none", "--timeout",
                 str(START_LIMIT_S)], cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "WATCHTOWER_DATA_DIR": str(folder / "data")},
            )
    try:
        ready_s = wait_ready(server)
        result: dict = {"ready_s": ready_s, "alarms": []}
        if watcher is not None:
            try:
                watcher.wait(60)  # it ends at READY (or at what it took for an ending)
            except subprocess.TimeoutExpired:
                pass
            text = out.read_text(errors="replace")
            result["alarms"] = alarms(text)
            result["watch_ready"] = bool(re.search(r"^(?:\S+\s+\S+\s+)?READY", text, re.MULTILINE))
        return result
    finally:
        if watcher is not None and watcher.poll() is None:
            watcher.send_signal(signal.SIGINT)
            watcher.wait(10)
        server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=10, help="watched starts (default 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="real-soak-") as tmp:
        folder = Path(tmp)
        rows = []
        for index in range(args.starts):
            before = children_cpu()
            row = one_start(folder, index, watched=True)
            row["cpu_s"] = children_cpu() - before  # the watcher's, reaped (the server is not our child)
            rows.append(row)
            share = f"{100 * row['cpu_s'] / row['ready_s']:.1f} % of a core" if row["ready_s"] else "-"
            print(f"start {index + 1}: ready in {fmt(row['ready_s'])}; watcher READY={row.get('watch_ready')}"
                  f" cpu {row['cpu_s']:.2f} s ({share}); false alarms: {len(row['alarms'])}"
                  + "".join(f"\n    {line}" for line in row["alarms"]), flush=True)
        unwatched = one_start(folder, args.starts, watched=False)
        ready = [r for r in rows if r["ready_s"]]
        false = sum(1 for r in ready if r["alarms"])
        print(f"\nwatched starts: {len(rows)}, ready: {len(ready)}, with a false alarm: {false}")
        if ready:
            mean = sum(r["ready_s"] for r in ready) / len(ready)
            cpu = sum(r["cpu_s"] for r in ready) / len(ready)
            print(f"time to ready: watched mean {mean:.1f} s, unwatched {fmt(unwatched['ready_s'])}")
            print(f"watch --plain CPU: mean {cpu:.2f} s per start = {100 * cpu / mean:.1f} % of a core")


def children_cpu() -> float:
    """User + system CPU seconds of this process's reaped children (the watchers, once waited for)."""
    usage = os.times()
    return usage.children_user + usage.children_system


def fmt(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.1f} s"


if __name__ == "__main__":
    main()
