#!/usr/bin/env python3
"""Remote tailing over SSH: latency and throughput against ``ssh host tail -F`` in the same run.

Starts a throwaway OpenSSH sshd on 127.0.0.1 (as the tests do) and measures:

1. latency: a line is appended at a known instant; time until the reader has it, over
   ``--trials`` trials spaced randomly, for
   - RemoteTailer (the SSH tail agent),
   - the reference ``ssh -p PORT host tail -F -n0 LOG`` read line by line,
   - LocalTailer on the same file (no SSH at all), for scale;
2. throughput: ``--megabytes`` appended in 1 MiB writes; time until all of it arrived, for
   RemoteTailer and the reference ``ssh host cat LOG``;
3. idle cost of the remote agent: its CPU seconds over ``--idle`` seconds of a quiet log.

    .venv/bin/python bench/ssh_tail.py             # 200 trials, 64 MiB, 10 s idle
    .venv/bin/python bench/ssh_tail.py --smoke     # a quick run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import SshServer, running_sshd, sshd_available  # noqa: E402
from tui.core.events import LogChunk  # noqa: E402
from tui.sources import ssh  # noqa: E402
from tui.sources.local import LocalTailer  # noqa: E402
from tui.sources.remote_tail import RemoteTailer  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def ssh_argv(server: SshServer, *command: str) -> list[str]:
    return [
        "ssh", "-p", str(server.port), "-i", str(server.client_key),
        "-o", f"UserKnownHostsFile={server.known_hosts}", "-o", "StrictHostKeyChecking=yes",
        "-o", "BatchMode=yes", f"{server.username}@{server.host}", *command,
    ]  # fmt: skip


def summary(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return f"  {name:<34} median {statistics.median(ms):7.2f} ms   p99 {p99:7.2f} ms   max {ms[-1]:7.2f} ms"


async def chunks_of(tailer) -> asyncio.Queue:
    queue: asyncio.Queue = asyncio.Queue()

    async def pump() -> None:
        async for event in tailer.events():
            if isinstance(event, LogChunk):
                await queue.put(event.data)

    queue.task = asyncio.ensure_future(pump())  # type: ignore[attr-defined]
    return queue


async def latency_tailer(tailer, log: Path, trials: int, rng: random.Random) -> list[float]:
    queue = await chunks_of(tailer)
    if hasattr(tailer, "attached"):
        await tailer.attached.wait()
    await asyncio.sleep(0.3)
    out = []
    with open(log, "ab", buffering=0) as f:
        for i in range(trials):
            line = f"trial {i} The server is fired up and ready to roll!\n".encode()
            start = time.perf_counter()
            f.write(line)
            got = b""
            while line not in got:
                got += await asyncio.wait_for(queue.get(), 10)
            out.append(time.perf_counter() - start)
            await asyncio.sleep(rng.uniform(0.005, 0.03))
    queue.task.cancel()  # type: ignore[attr-defined]
    await tailer.close()
    return out


async def latency_reference(server: SshServer, log: Path, trials: int, rng: random.Random) -> list[float]:
    proc = await asyncio.create_subprocess_exec(
        *ssh_argv(server, "tail", "-F", "-n0", str(log)), stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
    )
    await asyncio.sleep(1.0)  # no event says tail has opened the file
    out = []
    with open(log, "ab", buffering=0) as f:
        for i in range(trials):
            line = f"ref {i} The server is fired up and ready to roll!\n".encode()
            start = time.perf_counter()
            f.write(line)
            while await asyncio.wait_for(proc.stdout.readline(), 10) != line:
                pass
            out.append(time.perf_counter() - start)
            await asyncio.sleep(rng.uniform(0.005, 0.03))
    proc.kill()
    await proc.wait()
    return out


async def throughput(server: SshServer, target: ssh.SshTarget, tmp: Path, megabytes: int) -> tuple[float, float]:
    block = (b"x" * 99 + b"\n") * ((1 << 20) // 100) + b"y" * ((1 << 20) % 100)
    total = len(block) * megabytes
    log = tmp / "flood.log"
    log.write_bytes(b"")
    tailer = RemoteTailer(target, str(log))
    queue = await chunks_of(tailer)
    await tailer.attached.wait()
    start = time.perf_counter()
    with open(log, "ab") as f:
        for _ in range(megabytes):
            f.write(block)
    got = 0
    while got < total:
        got += len(await asyncio.wait_for(queue.get(), 30))
    ours = time.perf_counter() - start
    queue.task.cancel()  # type: ignore[attr-defined]
    await tailer.close()
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *ssh_argv(server, "cat", str(log)), stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
    )
    got = 0
    while chunk := await proc.stdout.read(1 << 20):
        got += len(chunk)
    await proc.wait()
    reference = time.perf_counter() - start
    assert got == total
    return total / ours / 1e6, total / reference / 1e6


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def idle_cost(target: ssh.SshTarget, tmp: Path, seconds: float) -> float:
    log = tmp / "quiet.log"
    log.write_bytes(b"quiet\n")
    writer = subprocess.Popen(["sh", "-c", 'exec sleep 3600 >>"$0"', str(log)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # a quiet writer: discovery keeps watching it
    try:
        tailer = RemoteTailer(target, str(log), writers=True)
        queue = await chunks_of(tailer)
        await tailer.attached.wait()
        await queue.get()
        agent = next(p for p in _pids() if str(log) in _open_files(p) and b"zlib" in _argv(p))
        before = cpu_seconds(agent)
        await asyncio.sleep(seconds)
        used = cpu_seconds(agent) - before
        queue.task.cancel()  # type: ignore[attr-defined]
        await tailer.close()
    finally:
        writer.kill()
        writer.wait()
    return used / seconds


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _open_files(pid: int) -> list[str]:
    try:
        return [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return []


def _argv(pid: int) -> bytes:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return b""


async def main(args: argparse.Namespace) -> None:
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(prefix="wt-bench-ssh-") as tmpdir:
        tmp = Path(tmpdir)
        (tmp / "sshd").mkdir()
        with running_sshd(tmp / "sshd") as server:
            target = ssh.SshTarget.parse(server.spec, identity=(str(server.client_key),), known_hosts=str(server.known_hosts))
            log = tmp / "server.log"
            log.write_bytes(b"")
            print(f"latency: append -> delivered, {args.trials} trials (sshd on 127.0.0.1)")
            reference = await latency_reference(server, log, args.trials, rng)
            remote = await latency_tailer(RemoteTailer(target, str(log), from_end=True), log, args.trials, rng)
            local = await latency_tailer(LocalTailer(log, from_end=True), log, args.trials, rng)
            print(summary("ssh host tail -F (reference)", reference))
            print(summary("RemoteTailer", remote))
            print(summary("LocalTailer (no SSH, for scale)", local))
            print(f"  median ratio RemoteTailer / ssh tail -F: {statistics.median(remote) / statistics.median(reference):.2f}")
            ours, ref = await throughput(server, target, tmp, args.megabytes)
            print(f"throughput, {args.megabytes} MiB appended in 1 MiB writes:")
            print(f"  RemoteTailer {ours:7.1f} MB/s   ssh host cat (reference) {ref:7.1f} MB/s   ratio {ours / ref:.2f}")
            idle = await idle_cost(target, tmp, args.idle)
            print(f"idle remote agent (writer discovery on, a writer alive) on a quiet log over {args.idle:g} s: "
                  f"{idle * 100:.3f}% of one core")
            await ssh.close_all()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--megabytes", type=int, default=64)
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--smoke", action="store_true", help="20 trials, 8 MiB, 2 s idle")
    args = parser.parse_args()
    if args.smoke:
        args.trials, args.megabytes, args.idle = 20, 8, 2.0
    if not sshd_available():
        sys.exit("bench/ssh_tail.py: needs OpenSSH's sshd (scripts/setup --test installs it)")
    asyncio.run(main(args))
