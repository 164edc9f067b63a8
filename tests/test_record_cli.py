"""`watchtower record` cut short: SIGTERM / SIGHUP end it cleanly, SIGKILL leaves a recording
valid up to its last record; it says what it records while it runs; a replay names the recorded log."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import run_cli
from tui.wiring import replay_session
from tui.sources.replay import load

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
HALF = (FIXTURES / "sglang_eagle3_tp8_ready.log").read_bytes().split(b"Capturing batches")[0]


def start_record(log: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-u", "-m", "tui.cli", "record", str(log), "-o", str(out), "--gpus", "sim", "--gpu-interval", "0.1"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def wait_for_records(out: Path, proc: subprocess.Popen, at_least: int, timeout: float = 20.0) -> int:
    """Until the file on disk holds ``at_least`` readable records (it is written as it goes)."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, proc.communicate()
        try:
            count = len(load(out).records)
        except Exception:  # noqa: BLE001 - not even its header yet
            count = 0
        if count >= at_least:
            return count
        if time.monotonic() > deadline:
            raise AssertionError(f"only {count} records in {out}")
        time.sleep(0.1)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_the_recording_cleanly(tmp_path, signum):
    log = tmp_path / "server.log"
    log.write_bytes(HALF)
    out = tmp_path / "cut.wtrec"
    proc = start_record(log, out)
    try:
        seen = wait_for_records(out, proc, 5)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert f"recording {log} to {out}" in stdout
    assert f"stopped by {signal.Signals(signum).name}" in stdout
    recording = load(out)
    assert not recording.cut and "end" in recording.records[-1]
    assert len(recording.records) >= seen and recording.log_bytes() == HALF


def test_a_killed_recorder_leaves_a_recording_valid_up_to_its_last_record(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(HALF)
    out = tmp_path / "killed.wtrec"
    proc = start_record(log, out)
    try:
        wait_for_records(out, proc, 8)
        proc.kill()
        proc.communicate(timeout=20)
    finally:
        proc.kill()
    recording = load(out)
    assert recording.cut and recording.log_bytes() == HALF
    assert sum(1 for r in recording.records if "gpu" in r) >= 3
    session, replay = replay_session(out, speed=100)
    try:
        assert "cut short" in session.info.title
    finally:
        replay.close()


def test_record_prints_what_it_has_recorded_while_it_runs(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(HALF)
    out = tmp_path / "live.wtrec"
    proc = start_record(log, out)
    try:
        first = proc.stdout.readline()
        assert first.startswith(f"watchtower: recording {log} to {out}")
        status = proc.stdout.readline()  # the first status line, a few seconds in
        lines = HALF.count(b"\n")
        assert f"{lines:,} lines" in status and "events" in status and "MB written" in status
        assert "starting in" in status  # where the startup is
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        proc.kill()


def test_a_replay_names_the_recorded_log_not_its_own_file(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(HALF)
    out = tmp_path / "named.wtrec"
    proc = start_record(log, out)
    try:
        wait_for_records(out, proc, 3)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        proc.kill()
    session, replay = replay_session(out, speed=100)
    try:
        assert session.info.log_path == str(log) and str(replay.log_path) != str(log)
    finally:
        replay.close()
    plain = run_cli("replay", "--plain", "--speed", "100", str(out), timeout=60)
    assert f"watching {log} (replayed)" in plain.stdout
    assert "watchtower-replay-" not in plain.stdout
