"""Ends that lost the last word (issue 33 item 5), with real processes and real signals.

`watch --json` ended by SIGTERM (``timeout``, a scheduler, ``kill``) or SIGHUP (the SSH session
gone) wrote no final ``exit`` object, though the README promises one always ends it; `watch --plain`
ended by SIGTERM printed no verdict; `record` of a log re-created every few milliseconds lost the
files it never opened in silence: no gap record, so `replay` showed none.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import run_cli, start_cli
from tests.test_watch_plain import lines_of
from tui.sources.replay import load

pytestmark = pytest.mark.timeout(120)
WAIT = 30


async def watch_until_loading(tmp_path: Path, *mode: str) -> asyncio.subprocess.Process:
    """A real `watch` of a startup stopped in its weight load, read until it says so."""
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(lines_of("sglang_eagle3_tp8_ready.log")[:40]))
    proc = await start_cli("watch", str(log), *mode, "--gpus", "none", "--timeout", "600", env={"NO_COLOR": "1"})
    assert proc.stdout is not None
    while b"weight" not in (raw := await asyncio.wait_for(proc.stdout.readline(), WAIT)):
        assert raw, "the watch ended before the weight load"
    return proc


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_json_ended_by_a_signal_still_ends_with_its_exit_object(tmp_path, signum):
    proc = await watch_until_loading(tmp_path, "--json")
    proc.send_signal(signum)
    rest, err = await asyncio.wait_for(proc.communicate(), WAIT)
    objs = [json.loads(line) for line in rest.decode().splitlines()]
    assert proc.returncode == 128 + signum, err.decode()
    assert [o["event"] for o in objs[-2:]] == ["interrupted", "exit"], objs[-3:]
    assert objs[-2]["signal"] == signum.name and objs[-2]["verdict"] == "starting"
    assert objs[-1]["exit"] == 128 + signum


async def test_plain_ended_by_sigterm_prints_its_verdict_so_far(tmp_path):
    proc = await watch_until_loading(tmp_path, "--plain")
    proc.send_signal(signal.SIGTERM)
    rest, err = await asyncio.wait_for(proc.communicate(), WAIT)
    assert proc.returncode == 143, err.decode()
    last = rest.decode().splitlines()[-1]
    assert "interrupted (SIGTERM); the verdict so far: STARTING: weight load" in last, rest.decode()
    assert "Traceback" not in err.decode()


CHURN = """
import os, sys, time
path, count = sys.argv[1], int(sys.argv[2])
for i in range(count + 1):
    with open(path + ".new", "w") as f:
        f.write("[2026-02-26 06:24:00] file %d\\n" % i if i < count else "[2026-02-26 06:24:00] END\\n")
    os.replace(path + ".new", path)
    if i % 20 == 19:
        time.sleep(0.05)  # bursts of 20 files microseconds apart: most of each burst is never opened
"""


def lost_so_far(recording: Path) -> tuple[int, bool]:
    """The files the recording says were lost (its gaps' counts), and whether the last file was read."""
    loaded = load(recording)
    return sum(r["files"] for r in loaded.records if "gap" in r), b"END" in loaded.log_bytes()


def test_record_of_a_log_recreated_in_bursts_keeps_the_lost_files_as_gaps_that_replay_says(tmp_path):
    log, recording = tmp_path / "server.log", tmp_path / "churn.rec"
    log.write_text("[2026-02-26 06:23:59] first\n")
    recorder = subprocess.Popen([sys.executable, "-m", "tui.cli", "record", str(log), "-o", str(recording), "--gpus",
                                 "none"], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent)
    try:
        deadline = time.monotonic() + WAIT
        while not recording.exists() or b"first" not in load(recording).log_bytes():  # it follows the log now
            assert time.monotonic() < deadline, "the recorder never read the log"
            time.sleep(0.1)
        subprocess.run([sys.executable, "-c", CHURN, str(log), "200"], check=True, timeout=60)
        while not all(lost := lost_so_far(recording)):  # some files said lost, the last one read
            assert time.monotonic() < deadline, f"(files said lost, the last read): {lost}"
            time.sleep(0.1)
        recorder.send_signal(signal.SIGTERM)
        assert recorder.wait(WAIT) == 0, recorder.stdout.read()
    finally:
        recorder.kill()
        recorder.wait()
    lost = sum(r["files"] for r in load(recording).records if "gap" in r)
    played = run_cli("replay", str(recording), "--plain", "--speed", "100", env={"NO_COLOR": "1"}, timeout=60)
    said = [line for line in played.stdout.splitlines() if "could not be read" in line]
    assert sum(int(line.split("note: ")[1].split()[0]) for line in said) == lost, played.stdout
