"""Spoofed Ray prefixes (issue 33 item 3): a log naming thousands of "nodes" must not size the watch.

A 600 KB head log with 5,000 made-up ``(RayWorkerWrapper pid=…, ip=…)`` prefixes froze `watch --ray`:
a session per "node", a barrier whose every look cost the square of the ranks, `--timeout` not
firing, Ctrl-C not heard. The split keeps at most ``MAX_NODES`` nodes and says once that it did;
only a line's start is a prefix, also where a line is cut for its length and goes on in a later
read (it made "FAILED on 6.6.6.6").
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import start_cli
from tui.core.cluster import PhaseShape, barrier, set_up_reached
from tui.core.events import LogChunk, LogLimited
from tui.sources.ray import MAX_NODES, MAX_PENDING, RaySplit

pytestmark = pytest.mark.timeout(120)

ARGS = "INFO 02-26 06:24:10 api_server.py:913] args: Namespace(model='/models/m', distributed_executor_backend='ray')"


def spoofed(count: int) -> list[bytes]:
    """``count`` lines, each from an actor on a node of its own, every one starting its weight load."""
    return [f"(RayWorkerWrapper pid={1000 + i}, ip=10.{i // 250}.{i % 250}.1) INFO 02-26 06:24:20 "
            f"model_runner.py:1110] Starting to load model /models/m...".encode() for i in range(count)]


class Chunks:
    """A log source reading the given pieces of a file in turn, as the tailer hands them on."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = pieces

    async def events(self) -> AsyncIterator[Any]:
        offset = 0
        for piece in self.pieces:
            yield LogChunk("log", offset, piece, 1.0)
            offset += len(piece)

    async def close(self) -> None:
        return None


async def split_all(split: RaySplit) -> list[Any]:
    return [event async for event in split.split()]


async def test_a_log_naming_thousands_of_nodes_adds_at_most_the_cap_and_says_so_once():
    added: list[str] = []
    lines = spoofed(5000)
    split = RaySplit(Chunks(b"\n".join(lines[:2500]) + b"\n", b"\n".join(lines[2500:]) + b"\n"), added.append)
    events = await split_all(split)
    assert len(added) == len(split.feeds) == MAX_NODES
    said = [e for e in events if isinstance(e, LogLimited)]
    assert len(said) == 1 and f"more than {MAX_NODES} nodes" in said[0].text and "10.0.64.1" in said[0].text
    head = b"".join(e.data for e in events if isinstance(e, LogChunk))
    assert head.count(b"\n") == 5000 - MAX_NODES  # nothing lost: the rest are the head's lines
    assert head.startswith(lines[MAX_NODES] + b"\n")


async def test_the_rest_of_a_line_cut_for_its_length_is_no_node_whatever_it_starts_with():
    added: list[str] = []
    long = b"ERROR 02-26 06:24:50 worker.py:1] " + b"x" * (MAX_PENDING + 10)
    rest = b" (RayWorkerWrapper pid=9, ip=6.6.6.6) RuntimeError: boom\n"
    split = RaySplit(Chunks(long, rest, b"INFO after\n"), added.append)
    events = await split_all(split)
    assert added == []
    head = b"".join(e.data for e in events if isinstance(e, LogChunk))
    assert head == long + rest + b"INFO after\n"  # one line, as the log has it: no newline put in its cut


async def test_a_cut_line_of_a_node_goes_on_to_that_node():
    added: list[str] = []
    long = b"(RayWorkerWrapper pid=3, ip=10.0.0.2) INFO " + b"y" * (MAX_PENDING + 10)
    split = RaySplit(Chunks(long, b"(RayWorkerWrapper pid=9, ip=6.6.6.6) tail\nINFO head\n"), added.append)
    events = await split_all(split)
    assert added == ["10.0.0.2"]
    assert b"".join(e.data for e in events if isinstance(e, LogChunk)) == b"INFO head\n"


def test_the_barrier_reads_each_phase_once_per_look_not_once_per_rank():
    """The same answers as asking each rank on its own; the shape is found once per node."""
    from tui.core.cluster import NodeStatus
    from tui.core.profiles import load_profile
    from tui.core.tracker import StartupTracker
    from tui.core.lines import LineAssembler

    tracker = StartupTracker(load_profile("vllm"))
    assembler = LineAssembler()
    text = b"\n".join([ARGS.encode(), *spoofed(300)]) + b"\n"
    for line in assembler.feed(text):
        tracker.feed(line)
    state = tracker.state
    shape = PhaseShape.of(state)
    ranks = {rank for phase in state.phases for rank in phase.ranks}
    assert len(ranks) >= 300
    looked = 0
    real_of = PhaseShape.of

    def counted(of_state):  # type: ignore[no-untyped-def]
        nonlocal looked
        looked += 1
        return real_of(of_state)

    PhaseShape.of = staticmethod(counted)  # type: ignore[method-assign]
    try:
        rows = barrier([NodeStatus("head", state)])
    finally:
        PhaseShape.of = real_of  # type: ignore[method-assign]
    assert looked == 1
    assert rows[0].total == len([r for r in ranks if r != "main"])
    assert all(set_up_reached(state, rank, shape) == set_up_reached(state, rank) for rank in ranks)


def spoofed_log(path: Path) -> Path:
    path.write_bytes(b"\n".join([ARGS.encode(), *spoofed(5000)]) + b"\n")
    return path


async def first_line(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    return (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()


async def test_timeout_ends_a_watch_of_a_spoofed_ray_log(tmp_path):
    log = spoofed_log(tmp_path / "head.log")
    started = time.monotonic()
    proc = await start_cli("watch", "--ray", str(log), "--plain", "--gpus", "none", "--timeout", "5",
                           env={"NO_COLOR": "1"})
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    text = out.decode()
    assert proc.returncode == 3, text[-2000:] + err.decode()
    assert time.monotonic() - started < 30, "--timeout 5 fired late"
    assert "TIMEOUT after 5" in text
    assert text.count(f"more than {MAX_NODES} nodes") == 1
    assert "6.6.6.6" not in text and "Traceback" not in err.decode()


async def test_ctrl_c_ends_a_watch_of_a_spoofed_ray_log(tmp_path):
    log = spoofed_log(tmp_path / "head.log")
    proc = await start_cli("watch", "--ray", str(log), "--plain", "--gpus", "none", "--timeout", "600",
                           env={"NO_COLOR": "1"})
    assert "watching" in await first_line(proc)
    os.kill(proc.pid, signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 130, out.decode()[-2000:] + err.decode()
    assert "interrupted (Ctrl-C)" in out.decode()
