#!/usr/bin/env python3
"""Dashboard under a log flood, in a real terminal (tmux): responsiveness, loss, memory, idle CPU.

Runs `watchtower watch LOG --gpus sim` in a private tmux server and measures, from the
outside, what a user would see:

1. first paint: launch -> "WATCHTOWER" on the pane, against a reference (the same
   Python interpreter printing one line, launched the same way);
2. key latency during the flood: ``--rate`` lines/s appended by another process for
   ``--seconds``; every half second `f` is pressed and the time until the log status
   line shows (or stops showing) the filter is measured on the pane;
3. nothing lost: after the flood the status line's line count equals the lines written
   (the scrollback keeps the newest 100k and says how many older ones it dropped);
4. memory: the app's RSS before and after the flood;
5. idle CPU with 8 simulated GPUs at 1 Hz: CPU seconds per wall second over ``--idle``;
6. the app's CPU seconds for the flood (to caught up): on a shared machine the latencies swing
   with the neighbours' load, what the dashboard itself needs does not.

    .venv/bin/python bench/app_flood.py                 # the full figures (100k lines/s, 10 s)
    .venv/bin/python bench/app_flood.py --smoke         # a quick run (20k lines/s, 2 s)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


class Pane:
    def __init__(self, command: str, width: int = 160, height: int = 48) -> None:
        self.socket = f"wt-bench-{uuid.uuid4().hex[:8]}"
        self.run("new-session", "-d", "-s", "b", "-x", str(width), "-y", str(height),
                 f"cd {ROOT} && {command}; sleep 600")

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "b")

    def wait_for(self, pattern: str, timeout: float = 30.0, interval: float = 0.002) -> float:
        start = time.monotonic()
        while not re.search(pattern, self.screen()):
            if time.monotonic() - start > timeout:
                raise SystemExit(f"bench: {pattern!r} did not appear within {timeout}s:\n{self.screen()}")
            time.sleep(interval)
        return time.monotonic() - start

    def app_pid(self) -> int:
        shell = int(self.run("display", "-p", "-t", "b", "#{pane_pid}").strip())
        for _ in range(200):
            children = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True).stdout.split()
            for child in children:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes()
                if b"tui.cli" in cmd:
                    return int(child)
                grand = subprocess.run(["pgrep", "-P", child], capture_output=True, text=True).stdout.split()
                for g in grand:
                    if b"tui.cli" in Path(f"/proc/{g}/cmdline").read_bytes():
                        return int(g)
            time.sleep(0.05)
        raise SystemExit("bench: cannot find the watchtower process")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


WRITER = r"""
import sys, time
path, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
batch = max(1, rate // 100)  # 100 writes a second
block = b"".join(b"[2026-03-14 21:05:00 TP%d] Decode batch. #running-req: %d, #token: %d, token usage: 0.12, "
                 b"gen throughput (token/s): 1234.5\n" % (i % 8, i, i * 7) for i in range(batch))
n = 0
start = time.monotonic()
with open(path, "ab", buffering=0) as f:
    while time.monotonic() - start < seconds:
        f.write(block)
        n += batch
        delay = start + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
print(n)
"""

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=100_000, help="lines per second (default 100000)")
    parser.add_argument("--seconds", type=float, default=10.0, help="flood duration (default 10)")
    parser.add_argument("--idle", type=float, default=10.0, help="idle CPU measurement (default 10 s)")
    parser.add_argument("--smoke", action="store_true", help="a quick run: 20k lines/s for 2 s, 3 s idle")
    args = parser.parse_args()
    if args.smoke:
        args.rate, args.seconds, args.idle = 20_000, 2.0, 3.0
    if shutil.which("tmux") is None:
        raise SystemExit("bench: needs tmux (scripts/setup --test)")

    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        log.write_bytes(b"[2026-03-14 21:04:10] server_args={'model_path': '/models/m', 'tp_size': 8}\n")

        ref = Pane(f"{python} -c 'print(\"WATCHTOWER\")'")
        try:
            reference = ref.wait_for("WATCHTOWER")
        finally:
            ref.close()

        pane = Pane(f"env TERM=screen-256color {python} -m tui.cli watch {log} --gpus sim")
        try:
            first_paint = pane.wait_for(r"WATCHTOWER.*\n.*STARTING")
            pane.wait_for(r"GPUs", timeout=10)
            pid = pane.app_pid()
            rss_before = rss_mib(pid)

            flood_cpu0 = cpu_seconds(pid)
            writer = subprocess.Popen([python, "-c", WRITER, str(log), str(args.rate), str(args.seconds)],
                                      stdout=subprocess.PIPE, text=True)
            latencies = []
            filtered = False
            start = time.monotonic()
            while writer.poll() is None and time.monotonic() - start < args.seconds + 5:
                time.sleep(0.5)
                pane.run("send-keys", "-t", "b", "f")
                filtered = not filtered
                pattern = r"filter: errors \+ phases" if filtered else r"(?s)^(?!.*filter: errors \+ phases)"
                latencies.append(pane.wait_for(pattern, timeout=10, interval=0.005) * 1000)
            written = int(writer.communicate()[0].strip()) + 1
            if filtered:
                pane.run("send-keys", "-t", "b", "f")
                pane.wait_for(r"(?s)^(?!.*filter: errors \+ phases)", timeout=10)
            caught_up = pane.wait_for(rf"{written:,} lines", timeout=120)
            flood_cpu = cpu_seconds(pid) - flood_cpu0
            status = next(line for line in pane.screen().splitlines() if " lines" in line and "Log" in line)
            rss_after = rss_mib(pid)

            cpu0, wall0 = cpu_seconds(pid), time.monotonic()
            time.sleep(args.idle)
            idle_cpu = (cpu_seconds(pid) - cpu0) / (time.monotonic() - wall0) * 100
        finally:
            pane.close()

    lat = sorted(latencies)
    p95 = lat[min(len(lat) - 1, int(len(lat) * 0.95))] if lat else float("nan")
    print(f"first paint            {first_paint * 1000:7.0f} ms   (reference: python printing a line {reference * 1000:.0f} ms; "
          f"ratio {first_paint / reference:.1f}x)")
    print(f"flood                  {written:,} lines at {args.rate:,}/s for {args.seconds:.0f} s")
    print(f"key -> screen latency  median {statistics.median(lat):.0f} ms, p95 {p95:.0f} ms, max {lat[-1]:.0f} ms "
          f"over {len(lat)} presses (target < 100 ms)")
    print(f"caught up              {caught_up:.1f} s after the flood ended; status: {status.strip()}")
    print(f"CPU for the flood      {flood_cpu:.1f} s ({flood_cpu / written * 1e6:.1f} us a line, "
          f"{flood_cpu / args.seconds * 100:.0f} % of one core over the flood's {args.seconds:.0f} s)")
    print(f"memory (RSS)           {rss_before:.0f} MiB before, {rss_after:.0f} MiB after {written:,} lines")
    print(f"idle CPU, 8 GPUs @1 Hz {idle_cpu:.1f} % of one core over {args.idle:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
