"""The weight load's bytes for a server on another host: its writers' ``/proc/PID/io`` read by
the tail agent over SSH (on Python 3.6 too), the checkpoint measured there by the probe agent,
feeding the same estimator — against the real loopback sshd (the ``sshd`` fixture).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from contextlib import aclosing
from pathlib import Path

import pytest

from tests.conftest import sshd_available
from tests.eta_support import first_line
from tests.test_ssh_tail import _oldest_python3
from tests.test_weight_load import RATE, SERVER, SIZE
from tui.core.events import ReadCounters, WritersFound
from tui.sources.procscan import available as proc_available
from tui.sources.remote_tail import RemoteTailer

pytestmark = [
    pytest.mark.ssh,
    pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed"),
    pytest.mark.skipif(not proc_available(), reason="no /proc to read the writers' I/O counters from"),
]

# A writer that reads 64 MiB of a sparse file, 4 MiB every 50 ms, while it holds the log open.
READER = r'''
import sys, time
with open(sys.argv[1], "ab") as log, open(sys.argv[2], "rb", buffering=0) as f:
    log.write(b"reading\n"); log.flush()
    while f.read(4 << 20):
        time.sleep(0.05)
    time.sleep(60)
'''


@pytest.mark.usefixtures("ssh_connections_closed")
async def test_the_tail_agent_reports_its_writers_reads_on_an_old_python(tmp_path: Path, target) -> None:
    python = _oldest_python3() or "python3"
    log = tmp_path / "server.log"
    log.touch()
    data = tmp_path / "weights"
    with open(data, "wb") as f:
        f.truncate(64 << 20)
    writer = subprocess.Popen([sys.executable, "-c", READER, str(log), str(data)])
    tailer = RemoteTailer(target, str(log), python=python, writers=True)
    seen: list[int] = []
    found = False
    try:
        async with asyncio.timeout(20), aclosing(tailer.events()) as events:
            async for event in events:
                found = found or isinstance(event, WritersFound) and event.main.pid == writer.pid
                if isinstance(event, ReadCounters):
                    seen += [rchar for pid, rchar, _ in event.counters if pid == writer.pid]
                if len(seen) >= 2 and seen[-1] >= 64 << 20:  # reported more than once, to the whole file
                    break
        assert found and seen == sorted(seen), seen  # cumulative counters of the writer the agent found
    finally:
        writer.kill()
        writer.wait()
        await tailer.close()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_watch_host_gets_the_load_progress_and_the_total_measured_there(sshd, tmp_path: Path) -> None:
    """The real CLI, `watch --plain --host`: the fake server of the local test, its reads seen
    through the agent, the checkpoint's 0.42 GB measured on that host: a time left."""
    model = tmp_path / "model"
    model.mkdir()
    with open(model / "model.safetensors", "wb") as f:
        f.truncate(SIZE)
    log = tmp_path / "server.log"
    log.touch()
    done_file = tmp_path / "done"
    script = tmp_path / "fake_server.py"
    script.write_text(SERVER)
    env = dict(os.environ, WATCHTOWER_SSH_KNOWN_HOSTS=str(sshd.known_hosts), WATCHTOWER_SSH_IDENTITY=str(sshd.client_key))
    watch = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "watch", "--plain", "--gpus", "none", "--timeout", "60", "--host", sshd.spec,
         str(log)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=env,
    )
    server = None
    try:
        assert watch.stdout is not None
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("connected" in line for line in seen):
            seen.append(watch.stdout.readline())
        server = subprocess.Popen([sys.executable, str(script), str(log), str(model), str(RATE // 2), str(done_file)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        eta_line, _, more = first_line(
            watch.stdout,
            lambda line: "weight load" in line and "/0.42 GB" in line and " left" in line and "cannot tell" not in line,
            max(1.0, deadline - time.monotonic()))
        seen += more
        assert eta_line is not None, "no progress with a total and a time left:\n" + "".join(seen)
        assert "the server's reads" in eta_line
        assert not done_file.exists(), "it came only after the load ended:\n" + "".join(seen)
    finally:
        for proc in (server, watch):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_run_host_gets_the_load_progress_from_the_launched_servers_reads_there(sshd, tmp_path: Path) -> None:
    """`run --host`: the launch's own log followed by the agent, which reads its writers' counters
    (reported as counters only: the launch knows its processes), the checkpoint measured there."""
    from tests.launch_helpers import kill_attempts

    model = tmp_path / "model"
    model.mkdir()
    with open(model / "model.safetensors", "wb") as f:
        f.truncate(SIZE)
    script = tmp_path / "fake_server.py"
    script.write_text(SERVER)
    env = dict(os.environ, WATCHTOWER_SSH_KNOWN_HOSTS=str(sshd.known_hosts), WATCHTOWER_SSH_IDENTITY=str(sshd.client_key),
               WATCHTOWER_DATA_DIR=str(tmp_path / "data"))
    run = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "run", "--plain", "--name", "rload", "--host", sshd.spec, "--log-dir",
         str(tmp_path / "logs"), "--gpus", "none", "--no-check", "--timeout", "40", "--", sys.executable, str(script),
         "-", str(model), str(RATE // 2), str(tmp_path / "done")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True,
    )
    try:
        assert run.stdout is not None
        line, _, seen = first_line(
            run.stdout, lambda line: "weight load" in line and "/0.42 GB" in line and " left" in line and "cannot tell" not in line,
            60)
        assert line is not None and "the server's reads" in line, "".join(seen)
    finally:
        os.killpg(run.pid, 9)
        run.wait()
        kill_attempts(tmp_path / "logs")
