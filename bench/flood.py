#!/usr/bin/env python3
"""Flood: a writer process appends 200k lines/s for 10 s; LocalTailer + LineAssembler read it.

Prints lines written / delivered (must be equal, and the bytes' CRC equal), how far
behind the reader fell at worst, CPU time, and peak RSS growth — beside `tail -n +1 -F
LOG | wc -l` reading the same file in the same run.

    .venv/bin/python bench/flood.py            # 200k lines/s for 10 s
    .venv/bin/python bench/flood.py --quick    # 50k lines/s for 1 s, a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# The writer: a separate process, so it does not share our GIL. Every 10 ms it appends the
# lines due by then in one write; lines vary in length and include multi-byte UTF-8.
WRITER = r"""
import os, sys, time, zlib
path, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
words = ["Loading safetensors checkpoint shards", "Capturing batches (bs=512 avail_mem=12.34 GB)",
         "KV Cache is allocated. #tokens: 1234567", "décodage spéculatif — EAGLE-3 ✓", "x"]
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
crc, n, start = 0, 0, time.monotonic()
total = int(rate * seconds)
while n < total:
    due = min(total, int((time.monotonic() - start) * rate) + rate // 100)
    if due > n:
        data = "".join(f"[2026-11-30 08:00:00 TP{i % 8}] {i:09d} {words[i % 5]}\n" for i in range(n, due)).encode()
        os.write(fd, data)
        crc = zlib.crc32(data, crc)
        n = due
    time.sleep(0.01)
os.close(fd)
print(n, crc, time.monotonic() - start, flush=True)
"""


def fdinfo_pos(pid: int, path: str) -> int | None:
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    return int(f.readline().split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def read_all(log: str, writer: subprocess.Popen, tail: subprocess.Popen) -> dict:
    from tui.core.events import LogChunk
    from tui.core.lines import Line, LineAssembler
    from tui.sources.local import LocalTailer

    tailer = LocalTailer(log)
    lines = LineAssembler(progress=False)
    got = {"lines": 0, "crc_read": 0, "max_lag": 0, "delivered": 0, "assembler_cpu": 0.0}
    caught_up = asyncio.Event()
    written: list[int] = []

    async def consume() -> None:
        async for event in tailer.events():
            if not isinstance(event, LogChunk):
                continue
            got["crc_read"] = zlib.crc32(event.data, got["crc_read"])
            got["delivered"] += len(event.data)
            before = time.process_time()
            got["lines"] += sum(1 for item in lines.feed(event.data) if isinstance(item, Line))
            got["assembler_cpu"] += time.process_time() - before
            try:
                got["max_lag"] = max(got["max_lag"], os.stat(log).st_size - got["delivered"])
            except OSError:
                pass
            if written and got["lines"] >= written[0]:
                caught_up.set()

    reader = asyncio.create_task(consume())
    out = (await asyncio.to_thread(writer.communicate))[0].split()
    written.append(int(out[0]))
    got.update(written=int(out[0]), crc=int(out[1]), wall=float(out[2]))
    if got["lines"] < written[0]:
        try:
            await asyncio.wait_for(caught_up.wait(), 120)
        except TimeoutError:
            pass
    await tailer.close()
    await reader
    # tail: wait until it has read the whole file (its file position), then end it
    size = os.path.getsize(log)
    deadline = time.monotonic() + 60
    while (fdinfo_pos(tail.pid, log) or 0) < size and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)  # pacing: let the last bytes pass through the pipe to wc
    got["tail_cpu"] = cpu_seconds(tail.pid)
    tail.terminate()
    return got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=200_000, help="lines per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true", help="50k lines/s for 1 s")
    args = parser.parse_args()
    rate, seconds = (50_000, 1.0) if args.quick else (args.rate, args.seconds)
    with tempfile.TemporaryDirectory(prefix="watchtower-flood-", dir=os.environ.get("TMPDIR", "/tmp")) as workdir:
        log = os.path.join(workdir, "flood.log")
        open(log, "wb").close()
        tail = subprocess.Popen(["tail", "-n", "+1", "-F", log], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        wc = subprocess.Popen(["wc", "-l"], stdin=tail.stdout, stdout=subprocess.PIPE, text=True)
        tail.stdout.close()
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        cpu_before = time.process_time()
        writer = subprocess.Popen([sys.executable, "-c", WRITER, log, str(rate), str(seconds)], stdout=subprocess.PIPE, text=True)
        started = time.monotonic()
        got = asyncio.run(read_all(log, writer, tail))
        elapsed = time.monotonic() - started
        cpu = time.process_time() - cpu_before
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        tail_lines = int(wc.communicate(timeout=30)[0].split()[0])
        size = os.path.getsize(log)
    ok = got["lines"] == got["written"] and got["crc_read"] == got["crc"]
    print(f"flood: {got['written']} lines ({size / 1e6:.0f} MB) written in {got['wall']:.1f} s "
          f"({got['written'] / got['wall'] / 1000:.0f}k lines/s)")  # fmt: skip
    print(f"  LocalTailer+LineAssembler: {got['lines']} lines delivered, bytes CRC {'equal' if ok else 'DIFFERENT'}; "
          f"done {elapsed:.1f} s after the start; CPU {cpu:.1f} s, of which LineAssembler {got['assembler_cpu']:.1f} s")  # fmt: skip
    print(f"  worst lag behind the writer: {got['max_lag'] / 1e6:.1f} MB; "
          f"peak RSS {rss_before / 1024:.0f} -> {rss_after / 1024:.0f} MiB")  # fmt: skip
    print(f"  tail -n +1 -F | wc -l:     {tail_lines} lines; tail CPU {got['tail_cpu']:.1f} s")
    print(f"  verdict: {'nothing lost' if ok else 'LINES LOST OR CHANGED'}; "
          f"CPU ratio watchtower/tail {cpu / max(got['tail_cpu'], 0.01):.1f}x")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
