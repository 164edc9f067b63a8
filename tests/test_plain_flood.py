"""`watch --plain` under a flood prints every event the tracker produced: none is lost.

A writer appends 200k lines/s — noise with a startup's phase lines and thousands of
warnings mixed in — and the watcher's output is counted against `scan --json` of the
same bytes afterwards: every phase started and done, every warning counted, ready.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from tests.test_watch_plain import expect, lines_of, start
from tests.support import run_cli

pytestmark = pytest.mark.timeout(180)

RATE = 200_000  # lines per second
SECONDS = 2.0
WARNINGS = 3000


def flood_lines() -> list[bytes]:
    """The fixture's startup up to its ready line, spread through noise, WARNINGS warnings between its lines."""
    startup = lines_of("sglang_eagle3_tp8_ready.log")
    startup = startup[: next(i for i, line in enumerate(startup) if b"fired up and ready" in line) + 1]
    total = int(RATE * SECONDS)
    every = total // (len(startup) + WARNINGS)
    out: list[bytes] = []
    warnings = 0
    for index, line in enumerate(startup):
        for _ in range(WARNINGS // len(startup) + (1 if index < WARNINGS % len(startup) else 0)):
            out += [b"Decode batch noise %d, #running-req: 0, gen throughput (token/s): 0.00\n" % len(out)] * every
            out.append(b"/sgl/flood.py:%d: UserWarning: flood warning number %d\n" % (len(out), warnings))
            warnings += 1
        out += [b"Decode batch noise %d, #running-req: 0, gen throughput (token/s): 0.00\n" % len(out)] * every
        out.append(line)
    assert warnings == WARNINGS
    return out


def write_paced(path: Path, lines: list[bytes]) -> None:
    """Append ``lines`` at RATE lines a second, in 10 ms slices."""
    per_slice = RATE // 100
    started = time.monotonic()
    with open(path, "ab", buffering=0) as f:
        for slice_no, start_at in enumerate(range(0, len(lines), per_slice)):
            f.write(b"".join(lines[start_at : start_at + per_slice]))
            delay = started + (slice_no + 1) / 100 - time.monotonic()
            if delay > 0:
                time.sleep(delay)


async def test_watch_plain_under_a_flood_prints_every_event_scan_finds(tmp_path):
    log = tmp_path / "flood.log"
    log.write_bytes(b"")
    lines = flood_lines()
    proc = await start(log, "--timeout", "150")
    seen: list[str] = []
    await expect(proc, "watching", seen)
    writer = asyncio.get_running_loop().run_in_executor(None, write_paced, log, lines)
    out, err = await asyncio.wait_for(proc.communicate(), 160)
    await writer
    seen += out.decode("utf-8").splitlines(keepends=True)
    assert proc.returncode == 0, "".join(seen[-20:]) + err.decode()

    scan = run_cli("scan", "--json", str(log), env={"NO_COLOR": "1"})
    found = json.loads(scan.stdout)
    assert found["outcome"] == "ready" and found["warnings"] >= WARNINGS
    text = "".join(seen)
    assert f"{found['warnings']} warnings in all" in text  # every WarningFound reached the printer
    titles = {"server_args": "server args", "weight_load": "weight load", "memory_pool": "memory pool",
              "cuda_graph": "CUDA graphs", "draft_init": "draft init"}
    for phase in found["phases"]:
        if phase["name"] in titles:
            name = titles[phase["name"]]
            assert f"{name} started (line {phase['start_line']})" in text, name
            assert f"{name} done in" in text and f"lines {phase['start_line']}-{phase['end_line']}" in text, name
    assert f"READY (line {found['ready_line']})" in text
