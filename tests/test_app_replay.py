"""Record and replay, and the demo through the real replay -> tailer -> tracker -> app path."""

from __future__ import annotations

import asyncio
import gzip
import json

import pytest

from tests.support import screen_text, until
from tui.app.dashboard import build_app
from tui.wiring import replay_session
from tui.app.header import VerdictHeader
from tui.commands import UsageError
from tui.commands.demo import SCENARIOS, demo_title, recording_path
from tui.core.events import GpuInfo, GpuSample
from tui.core.state import FAILED, READY, STARTING
from tui.sources.local import LocalTailer
from tui.sources.replay import Recording, RecordingError, RecordingWriter, Replay, load


def test_recording_round_trip_keeps_every_byte(tmp_path):
    path = tmp_path / "r.wtrec"
    writer = RecordingWriter(path, host="h", log="server.log")
    writer.log(100.0, b"first line\n")
    writer.log(100.5, b"bad utf-8 \xff\xfe and NUL \x00\n")
    writer.gpu(101.0, (GpuInfo(index=0, name="H200", memory_used=1 << 30, memory_total=8 << 30),))
    writer.restart(102.0, "truncated")
    writer.log(102.5, b"after restart\n")
    writer.close(103.0)
    recording = load(path)
    assert recording.header["host"] == "h"
    assert [r["t"] for r in recording.records] == [0.0, 0.5, 1.0, 2.0, 2.5, 3.0]
    assert recording.log_bytes() == b"after restart\n"
    assert recording.records[1]["logb"]  # not UTF-8: kept as base64, byte for byte
    first_file = Recording(recording.header, recording.records[:2]).log_bytes()
    assert first_file == b"first line\nbad utf-8 \xff\xfe and NUL \x00\n"


def test_bad_recordings_give_one_line_errors(tmp_path):
    with pytest.raises(RecordingError, match="no such file"):
        load(tmp_path / "missing.wtrec")
    plain = tmp_path / "plain.log"
    plain.write_text("just a log\n")
    with pytest.raises(RecordingError, match="not a Watchtower recording"):
        load(plain)
    other = tmp_path / "other.gz"
    with gzip.open(other, "wt") as f:
        f.write(json.dumps({"something": "else"}) + "\n")
    with pytest.raises(RecordingError, match="no header"):
        load(other)
    with pytest.raises(UsageError, match="not a Watchtower recording"):
        replay_session(plain, speed=1.0)


async def test_replay_writes_a_real_log_that_the_real_tailer_follows():
    recording = load(recording_path("crash-context"))
    replay = Replay(recording, speed=400.0)
    tailer = LocalTailer(replay.log_path)
    received = bytearray()
    samples: list[GpuSample] = []

    async def gpus() -> None:
        async for event in replay.events():
            samples.append(event)

    async def log() -> None:
        async for event in tailer.events():
            data = getattr(event, "data", None)
            if data:
                received.extend(data)
                if len(received) >= len(recording.log_bytes()):
                    return

    try:
        await asyncio.wait_for(asyncio.gather(gpus(), log()), 20)
    finally:
        replay.close()
    assert bytes(received) == recording.log_bytes()
    gpu_samples = [s for s in samples if isinstance(s, GpuSample)]
    assert len(gpu_samples) == sum(1 for r in recording.records if "gpu" in r)
    assert gpu_samples and all(len(s.gpus) == 8 for s in gpu_samples)
    assert samples[-1].reason == "the recording ends here"  # the GPU panel says why the data stops


EXPECTED = {
    "ready": (READY, None),
    "crash-attr": (FAILED, "AttributeError"),
    "crash-context": (FAILED, "context_length"),
    "oom": (FAILED, "CUDA out of memory"),
}


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s != "hang"])
async def test_demo_reaches_its_verdict(scenario):
    session, replay = replay_session(recording_path(scenario), speed=200.0, title=demo_title(scenario))
    app = build_app(session)
    outcome, words = EXPECTED[scenario]
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(lambda: session.state.outcome != STARTING, timeout=20)
            await pilot.pause()
            assert session.state.outcome == outcome
            header = app.query_one(VerdictHeader)  # the stage pushes at the session's next flush
            await until(lambda: header.verdict.kind == outcome, timeout=5, what=f"the header to say {outcome}",
                        seen=lambda: header.verdict)
            if words:
                error = session.state.first_error
                assert error is not None
                assert words in f"{error.kind}: {error.message}"
                assert words in header.verdict.detail
            if scenario == "oom":  # the record a tqdm bar swallowed mid-line still names its rank
                assert session.state.first_error.rank == "TP3"
            await until(lambda: session.gpus.latest is not None)
            assert len(session.gpus.latest.gpus) == 8
    finally:
        replay.close()


async def test_demo_hang_reaches_stalled_on_screen():
    """The log goes quiet in weight loading, the GPUs idle: stalled? within the demo's run (its
    compressed startup has compressed limits), naming the ranks that did not finish."""
    from tui.commands.demo import STALL_LIMIT
    from tui.core.verdict import STALLED

    session, replay = replay_session(recording_path("hang"), speed=20.0, stall_limits=STALL_LIMIT)
    app = build_app(session)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(lambda: session.verdict().kind == STALLED, timeout=30)
            assert not replay.done.is_set()  # within the run, while the GPU samples still come
            header = app.query_one(VerdictHeader)
            header.refresh()
            await pilot.pause()
            assert header.verdict.word == "STALLED?", header.verdict
            detail = header.verdict.detail
            assert "past the limit (0:30, --stall-limit)" in detail and "GPUs idle" in detail
            assert "TP0, TP1, TP2, TP3, TP4, TP5, TP6, TP7 not done with weight load" in detail
            assert "STALLED?" in screen_text(app)
            assert session.state.outcome == STARTING and session.state.current_phase.name == "weight_load"
    finally:
        replay.close()


class TellingWriter(RecordingWriter):
    """A recording writer that remembers the log bytes and truncations it was given (to wait on)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.logged: list[bytes] = []
        self.truncated = False

    def log(self, at: float, data: bytes) -> None:
        self.logged.append(data)
        super().log(at, data)

    def truncate(self, at: float, size: int, lines: int) -> None:
        self.truncated = True
        super().truncate(at, size, lines)


async def test_record_then_replay_gives_back_the_same_log(tmp_path, monkeypatch):
    """`watchtower record` on a log being written (with a truncation), then the recording replays it."""
    from tui.core.options import GpuOptions, RecordOptions
    from tui.wiring import record

    log = tmp_path / "server.log"
    out = tmp_path / "session.wtrec"
    options = RecordOptions(log=str(log), output=str(out), gpus=GpuOptions("sim", 0.05), duration=30.0)
    writer = TellingWriter(out, host="localhost", log=str(log))
    task = asyncio.create_task(record(options, writer, after_verdict=0.2))
    first = b"[2026-03-14 21:04:10] server_args={'model_path': '/m'}\nold attempt line\n"
    log.write_bytes(first)
    await until(lambda: b"".join(writer.logged) == first)  # recorded: the first attempt's lines
    # time passing is the point (here and below): gaps in the recording, which the replay at real pace
    # keeps, so that its own tailer reads the old line, then sees the file shrink, before the new lines
    await asyncio.sleep(0.3)
    log.write_bytes(b"")  # truncated: a relaunch writing the same path
    await until(lambda: writer.truncated)
    await asyncio.sleep(0.3)
    second = (b"[2026-03-14 21:05:10] server_args={'model_path': '/m'}\n"
              b"[2026-03-14 21:05:11] The server is fired up and ready to roll!\n")
    with open(log, "ab") as f:
        f.write(second)
    try:
        outcome = await asyncio.wait_for(task, 20)
    finally:
        writer.close()
    assert outcome == READY
    recording = load(out)
    assert any(r.get("truncate") == 0 for r in recording.records)
    assert recording.log_bytes() == second
    assert sum(1 for r in recording.records if "gpu" in r) >= 3
    session, replay = replay_session(out, speed=1.0)  # real pace: the tailer reads before the truncation
    app = build_app(session)
    try:
        async with app.run_test(size=(100, 30)):
            await until(lambda: session.state.outcome == READY)
            texts = [e.text for e in session.scrollback.entries()]
            assert "old attempt line" in texts and any("fired up" in t for t in texts)
    finally:
        replay.close()
