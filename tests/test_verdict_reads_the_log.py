"""A verdict never outruns the log (issue 22, items 1 and 2): real writer processes, the real CLI.

* A server that writes a large burst, then its traceback, then exits: by the time its process is
  seen gone, most of the log may not have been read. The file is final then: `watch` reads it to
  its end, saying so, before it decides between DEAD and FAILED, and names the exception.
* A log re-created every few milliseconds: what could not be read is reported as a gap with its
  size, never lost silently.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import run_cli, start_cli
from tui.core.evidence import Weighing
from tui.core.verdict import ProcessStatus
from tui.session import WatchSession
from tui.sources.local import LocalTailer
from tui.sources.procscan import available as proc_available

WAIT = 60.0

pytestmark = [pytest.mark.timeout(240), pytest.mark.skipif(not proc_available(), reason="no /proc to find writers in")]

# A server started by hand (detached, not ours): its first lines, then on SIGUSR1 a burst of
# MB megabytes of serving noise, its traceback, and exit 1.
DUMPER = r'''
import os, signal, subprocess, sys, threading, time
path, megabytes, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
go = threading.Event()
signal.signal(signal.SIGUSR1, lambda *_: go.set())
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
rank = None
if mode == "rank":  # a rank process that holds the log too, as SGLang's schedulers do
    rank = subprocess.Popen(["sglang::scheduler_TP1", "3600"], executable="/bin/sleep", stdout=fd, stderr=fd)
os.write(fd, b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n"
             b"[2026-03-14 21:04:20 TP0] Load weight begin. avail mem=139.26 GB\n")
print(os.getpid(), flush=True)
go.wait()
line = b"[2026-03-14 21:05:00 TP0] 127.0.0.1:51234 - \"GET /metrics HTTP/1.1\" 200 OK, nothing to see here\n"
block = line * ((8 << 20) // len(line))
for _ in range(megabytes // 8):
    os.write(fd, block)
os.write(fd, b"[2026-03-14 21:06:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
             b'  File "/sgl/scheduler.py", line 10, in run_scheduler_process\n'
             b"RuntimeError: the real cause, at the very end of the log\n")
os.close(fd)
if rank is None:
    sys.exit(1)
rank.kill()  # the rank dies; the main process lives on
rank.wait()
time.sleep(3600)
'''


def start_dumper(tmp_path: Path, megabytes: int, mode: str = "main") -> tuple[int, Path]:
    script = tmp_path / "dumper.py"
    script.write_text(DUMPER)
    log = tmp_path / "server.log"
    log.touch()
    out = subprocess.run(
        ["bash", "-c", f'setsid {sys.executable} "$0" "$1" "$2" "$3" > "$0.out" 2>&1 < /dev/null & echo $!',
         str(script), str(log), str(megabytes), mode],
        capture_output=True, text=True, check=True,
    )
    pid = int(out.stdout.split()[0])
    output = Path(f"{script}.out")
    deadline = time.monotonic() + WAIT
    while not output.read_text().strip():  # (its own pid, printed once it holds the log)
        assert time.monotonic() < deadline, "the dumper did not start"
        time.sleep(0.05)
    return pid, log


async def expect(proc: asyncio.subprocess.Process, needle: str, seen: list[str]) -> str:
    while True:
        raw = await asyncio.wait_for(proc.stdout.readline(), WAIT)
        if not raw:
            err = (await proc.stderr.read()).decode(errors="replace")
            raise AssertionError(f"watcher ended before {needle!r}: {''.join(seen)} {err}")
        line = raw.decode()
        seen.append(line)
        if needle in line:
            return line


async def test_a_writer_gone_after_a_burst_is_judged_on_the_whole_log(tmp_path):
    pid, log = start_dumper(tmp_path, 256)
    try:
        proc = await start_cli("watch", "--plain", str(log), "--gpus", "none", "--timeout", "200",
                               env={"NO_COLOR": "1"})
        seen: list[str] = []
        await expect(proc, f"server: pid {pid}", seen)
        started = time.monotonic()
        os.kill(pid, signal.SIGUSR1)
        status = await asyncio.wait_for(proc.wait(), 200)
        took = time.monotonic() - started
        rest = (await proc.stdout.read()).decode()
        output = "".join(seen) + rest
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    size = log.stat().st_size
    print(f"{size / 2**20:.0f} MiB burst, writer gone: verdict after {took:.1f} s")
    assert status == 1, output
    final = [line for line in output.splitlines() if re.search(r"\b(DEAD|FAILED)\b", line)]
    assert final, output
    assert "RuntimeError: the real cause, at the very end of the log" in final[-1], output
    assert "DEAD" not in final[-1]
    if "gone: main pid" in output:  # the process was seen gone: it said it was reading the rest meanwhile
        gone_at = output.index("gone: main pid")
        assert re.search(r"reading the rest of the log \(\d[\d.]* [kMG]B\)", output[gone_at:]), output


async def test_a_rank_gone_after_a_burst_is_judged_on_the_whole_log(tmp_path):
    """The same for a rank's process dying while the main one lives: FAILED names the exception
    at the end of the log, not only the rank."""
    pid, log = start_dumper(tmp_path, 256, "rank")
    try:
        proc = await start_cli("watch", "--plain", str(log), "--gpus", "none", "--timeout", "200",
                               env={"NO_COLOR": "1"})
        seen: list[str] = []
        await expect(proc, "rank [TP1]: pid", seen)
        os.kill(pid, signal.SIGUSR1)
        status = await asyncio.wait_for(proc.wait(), 200)
        output = "".join(seen) + (await proc.stdout.read()).decode()
    finally:
        os.killpg(pid, signal.SIGKILL)
    assert status == 1, output
    final = [line for line in output.splitlines() if re.search(r"\bFAILED\b", line)]
    assert final and "RuntimeError: the real cause, at the very end of the log" in final[-1], output


# ---------------------------------------------------------------- item 2: a log re-created every few ms

RECREATOR = r'''
import os, sys, time
path, period, files, per, how = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
n = 0
for i in range(files):
    if how == "unlink":  # rm LOG; write a new LOG
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    else:  # write LOG.tmp, then mv LOG.tmp LOG
        fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for j in range(per):
        os.write(fd, b"line %d of the log\n" % n)
        n += 1
    os.close(fd)
    if how == "rename":
        os.replace(path + ".tmp", path)
    time.sleep(period)
'''


@pytest.mark.parametrize("how", ["unlink", "rename"])
@pytest.mark.parametrize("period", [0.0005, 0.005])
async def test_a_log_recreated_every_few_ms_loses_nothing_unsaid(tmp_path, period, how):
    """Every line written is read, or counted in a gap: lines read + lines of the files reported
    lost == lines written, exactly (each file holds PER lines)."""
    from tui.core.events import LogChunk, LogGap
    from tui.sources.local import LocalTailer

    files, per = 1000, 5
    path = tmp_path / "server.log"
    path.write_bytes(b"")
    tailer = LocalTailer(path)
    seen = {"lines": 0, "files_lost": 0, "bytes_lost": 0}
    settled = asyncio.Event()
    total = files * per

    async def consume() -> None:
        async for event in tailer.events():
            if isinstance(event, LogChunk):
                seen["lines"] += event.data.count(b"\n")
            elif isinstance(event, LogGap):
                seen["files_lost"] += event.files
                seen["bytes_lost"] += event.nbytes
            if seen["lines"] + per * seen["files_lost"] >= total:
                settled.set()

    reader = asyncio.create_task(consume())
    writer = await asyncio.create_subprocess_exec(sys.executable, "-c", RECREATOR, str(path), str(period), str(files), str(per), how)
    try:
        assert await asyncio.wait_for(writer.wait(), 120) == 0
        try:
            await asyncio.wait_for(settled.wait(), 30)
        except TimeoutError:
            pass
    finally:
        reader.cancel()
        await tailer.close()
    print(f"re-created ({how}) every {period * 1000:g} ms: {seen['lines']} of {total} lines read, "
          f"{seen['files_lost']} files ({per * seen['files_lost']} lines) reported lost")
    assert seen["bytes_lost"] == 0  # nothing read in part: a file seen is held and read whole
    assert seen["lines"] + per * seen["files_lost"] == total, seen



def test_a_launched_server_gone_before_its_log_is_read_waits_for_the_log(tmp_path):
    """A server that dies at once (llama.cpp's bind error) is gone before writer discovery finds it:
    its runner's word is the process status. Its file is final then: the verdict waits for the rest
    (seen in the real-server tier under load: `DEAD: exit code 1 · the log is empty`)."""
    log = tmp_path / "server.log"
    log.write_bytes(b"srv    load_model: loading model '/models/m.gguf'\n"
                    b"srv  llama_server: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080\n")
    session = WatchSession(log=LocalTailer(log))
    session.process.launched_as(ProcessStatus(alive=False, returncode=1, pid=4242))
    weighing = session.reading()
    assert isinstance(weighing, Weighing) and weighing.pending is not None, weighing
    assert "reading the rest of the log" in weighing.pending, weighing.pending


# A server launched by `run` that writes a burst, its traceback, and exits 1 at once: its runner sees
# it exit before the log is read, and before writer discovery has found it.
BURST_AND_EXIT = r'''
import os, sys
megabytes = int(sys.argv[1])
os.write(1, b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n")
line = b"[2026-03-14 21:05:00 TP0] 127.0.0.1:51234 - \"GET /metrics HTTP/1.1\" 200 OK, nothing to see here\n"
block = line * ((8 << 20) // len(line))
for _ in range(megabytes // 8):
    os.write(1, block)
os.write(1, b"[2026-03-14 21:06:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            b'  File "/sgl/scheduler.py", line 10, in run_scheduler_process\n'
            b"RuntimeError: the real cause, at the very end of the log\n")
sys.exit(1)
'''


def test_a_launched_server_that_exits_at_once_is_judged_on_the_whole_log(tmp_path):
    """`run`: the exit comes from the runner, not writer discovery; the verdict still waits for the
    log's end (seen in the real-server tier: llama.cpp's bind error, then `DEAD: exit code 1 · the log
    is empty`, under load)."""
    done = run_cli("run", "--plain", "--name", "burst", "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
                   "--timeout", "200", "--", sys.executable, "-c", BURST_AND_EXIT, "64",
                   env={"NO_COLOR": "1", "WATCHTOWER_DATA_DIR": str(tmp_path / "data")}, timeout=200)
    final = [line for line in done.stdout.splitlines() if re.search(r"\b(DEAD|FAILED)\b", line)]
    assert done.returncode == 1 and final, done.stdout + done.stderr
    assert "RuntimeError: the real cause, at the very end of the log" in final[-1], done.stdout
    assert "DEAD" not in final[-1]
