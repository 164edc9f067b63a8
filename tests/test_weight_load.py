"""Weight-load progress and time left on the first attempt, from bytes (tui.core.loading).

The arithmetic and the estimator alone, the simulated GPUs' memory as the signal, and the
done-when check with real processes: a fake server that reads a sparse checkpoint file at a
throttled rate while its log is silent, watched by the real CLI (`watch --plain`), gets a
progress line whose time left is within 50 % of the truth.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.eta_support import first_line, said_left
from tui.core.events import GpuInfo, GpuSample
from tui.core.loading import Checkpoint, LoadEstimator, checkpoint_size, split_of
from tui.sources.checkpoint import measure
from tui.sources.procscan import available as proc_available
from tui.sources.sim import SimGpuSource

GB = 10**9


# ---------------------------------------------------------------- how much there is to load


def test_index_total_size_wins_over_the_files() -> None:
    index = json.dumps({"metadata": {"total_size": 547 * GB}, "weight_map": {}})
    assert checkpoint_size(index, [("model-00001-of-00002.safetensors", 5)]) == 547 * GB


def test_without_an_index_the_shards_add_up_and_safetensors_beat_bin() -> None:
    files = [("a.safetensors", 3 * GB), ("b.safetensors", 2 * GB), ("pytorch_model.bin", 9 * GB), ("config.json", 700)]
    assert checkpoint_size(None, files) == 5 * GB
    assert checkpoint_size("{not json", [("pytorch_model.bin", 9 * GB)]) == 9 * GB
    assert checkpoint_size(None, [("config.json", 700)]) is None


def test_split_is_tp_times_pp_and_bad_values_count_one() -> None:
    assert split_of("8", "2") == 16
    assert split_of(None, None) == 1
    assert split_of("x", 4) == 4
    assert Checkpoint("m", 547 * GB, 8).per_gpu == 547 * GB // 8


def test_measure_reads_a_folder_and_a_hf_cache_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 1234}}))
    draft = tmp_path / "draft"
    draft.mkdir()
    with open(draft / "model.safetensors", "wb") as f:
        f.truncate(777)
    found = measure(str(folder), 4, str(draft))
    assert (found.total, found.split, found.draft) == (1234, 4, 777)
    # a repo id in the local Hugging Face cache: refs/main names the snapshot
    hub = tmp_path / "hub"
    snap = hub / "models--org--name" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (hub / "models--org--name" / "refs").mkdir()
    (hub / "models--org--name" / "refs" / "main").write_text("abc")
    with open(snap / "model-00001-of-00001.safetensors", "wb") as f:
        f.truncate(4321)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    assert measure("org/name").total == 4321
    missing = measure(str(tmp_path / "nowhere"))
    assert missing.total is None and "no such directory" in missing.detail


# ---------------------------------------------------------------- the estimator


def test_cannot_tell_until_the_rate_is_stable_then_a_range() -> None:
    est = LoadEstimator(Checkpoint("m", 1000 * 2**20))
    est.reads(0.0, [(7, 50 << 20, 0)])  # imports before the load: not counted
    est.start(0.0)
    est.reads(0.5, [(7, (50 + 100) << 20, 0)])
    first = est.estimate()
    assert first is not None and first.left is None
    assert "cannot tell yet" in first.words()
    for i in range(2, 6):
        est.reads(i * 0.5, [(7, (50 + 100 * i) << 20, 0)])
    now = est.estimate()
    assert now is not None and now.left is not None
    assert now.loaded == 500 << 20
    low, high = now.left
    truth = 500 / 200  # 500 MiB left at 200 MiB/s
    assert low <= truth * 1.05 and high >= truth * 0.95
    assert "MiB" not in now.words() and "left" in now.words() and "the server's reads" in now.words()


def test_a_rate_that_changes_is_not_stable() -> None:
    est = LoadEstimator(Checkpoint("m", 10 * GB))
    est.start(0.0)
    for t, v in ((0.5, 0.1), (1.0, 0.2), (1.5, 0.3), (2.0, 1.5), (2.5, 3.0)):
        est.reads(t, [(1, int(v * GB), 0)])
    estimate = est.estimate()
    assert estimate is not None and estimate.left is None


def test_disk_reads_of_all_ranks_add_up_rchar_does_not() -> None:
    est = LoadEstimator(Checkpoint("m", 10 * GB))
    est.start(0.0)
    # eight ranks each read() the whole checkpoint through the page cache: one copy's progress
    est.reads(1.0, [(pid, 2 * GB, 0) for pid in range(8)])
    assert est.estimate().loaded == 2 * GB  # type: ignore[union-attr]
    # ranks that mmap and fault shards from disk, each its own part: the parts add up
    est.reads(2.0, [(pid, 2 * GB, GB) for pid in range(8)])
    assert est.estimate().loaded == 8 * GB  # type: ignore[union-attr]


def test_the_simulated_gpus_memory_is_a_signal_says_simulated_and_gives_no_rate() -> None:
    t = [0.0]
    script = ((0.0, "server_args"), (1.0, "weight_load"), (21.0, "memory_pool"))
    sim = SimGpuSource(8, clock=lambda: t[0], script=script, model_bytes=400 * GB)
    est = LoadEstimator(Checkpoint("m", 400 * GB, 8))
    t[0] = 1.0
    est.start(1.0)
    for step in range(0, 12):  # the first at the start: the baseline
        t[0] = 1.0 + step
        est.gpus(sim.snapshot(), t[0])
    estimate = est.estimate()
    assert estimate is not None and estimate.signal == "gpu" and estimate.simulated
    assert "SIMULATED" in estimate.words() and "no rate" in estimate.words()
    assert estimate.rate is None and estimate.left is None  # made-up bytes feed no rate (issue 34)
    assert estimate.loaded == pytest.approx(11 / 20 * 400 * GB, rel=0.02)  # the skew of the ranks: ≤ 2 %


def test_a_real_gpu_sample_is_not_called_simulated() -> None:
    est = LoadEstimator(Checkpoint("m", 100 * GB))
    est.start(0.0)
    for i in range(5):
        est.gpus(GpuSample("h", 0, (GpuInfo(0, memory_used=GB + i * 5 * GB),)), float(i))
    estimate = est.estimate()
    assert estimate is not None and not estimate.simulated and "SIMULATED" not in estimate.words()


def test_the_loaders_bar_without_a_total_gives_a_fraction_and_time() -> None:
    est = LoadEstimator()
    est.start(0.0)
    for i in range(1, 6):
        est.bar(float(i), i / 10)
    estimate = est.estimate()
    assert estimate is not None and estimate.signal == "log" and estimate.loaded is None
    assert estimate.left is not None and abs(sum(estimate.left) / 2 - 5.0) < 0.5
    assert estimate.words().startswith("50% · ")


# ---------------------------------------------------------------- real processes

# A stand-in for SGLang started by hand: its server_args name the model folder; it says
# "Load weight begin", then reads the (sparse) checkpoint at a throttled rate without a
# word, writes when it finished reading to a file of its own, says "Load weight end".
SERVER = r'''
import os, sys, time
log_path, model, rate, done_file = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
log = sys.stdout if log_path == "-" else open(log_path, "a", buffering=1)  # "-": run's own log
log.write(f"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='{model}', tp_size=1, port=30000)\n")
log.write("[2026-03-14 21:04:20] Load weight begin. avail mem=139.26 GB\n")
log.flush()
t0 = time.monotonic()
chunk = 4 << 20
done = 0
with open(os.path.join(model, "model.safetensors"), "rb", buffering=0) as f:
    while True:
        data = f.read(chunk)
        if not data:
            break
        done += len(data)
        ahead = done / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
with open(done_file + ".part", "w") as out:  # renamed once written: the test never reads it half-written
    out.write(repr(time.time()))
os.replace(done_file + ".part", done_file)
log.flush()
log.write("[2026-03-14 21:04:40] Load weight end. type=X, dtype=torch.bfloat16, avail mem=100.00 GB, mem usage=39.26 GB.\n")
time.sleep(60)
'''

SIZE = 400 * 2**20  # 400 MiB, sparse: read() returns zeros without touching the disk
RATE = 100 * 2**20  # bytes per second: a 4-second load


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.skipif(not proc_available(), reason="no /proc to read the server's I/O counters from")
def test_a_silent_first_load_gets_progress_and_a_time_left_within_half_the_truth(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    with open(model / "model.safetensors", "wb") as f:
        f.truncate(SIZE)
    (model / "config.json").write_text("{}")
    log = tmp_path / "server.log"
    log.touch()
    done_file = tmp_path / "done"
    script = tmp_path / "fake_server.py"
    script.write_text(SERVER)
    watch = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "watch", "--plain", "--gpus", "none", "--timeout", "30", str(log)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
    )
    server = None
    try:
        assert watch.stdout is not None
        first = watch.stdout.readline()  # "watching …": the watch is up before the server starts
        assert "watching" in first
        server = subprocess.Popen([sys.executable, str(script), str(log), str(model), str(RATE), str(done_file)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        eta_line, eta_at, seen = first_line(
            watch.stdout, lambda line: "weight load" in line and " left" in line and "cannot tell" not in line, 30)
        assert eta_line is not None, "no time left was printed:\n" + "".join(seen)
        assert not done_file.exists(), "the time left came only after the load ended:\n" + "".join(seen)
        assert "the server's reads" in eta_line and "/0.42 GB" in eta_line
        while not done_file.exists():
            assert server.poll() is None and time.monotonic() < deadline, "the fake server did not finish reading"
            time.sleep(0.05)
        truth = float(done_file.read_text()) - eta_at
        said = said_left(eta_line)
        print(f"time left said {said} s, truth {truth:.2f} s: {eta_line.strip()}")
        # whole seconds on the screen: half a second of rounding is allowed on top of the 50 %
        assert abs(said - truth) <= 0.5 * truth + 0.5, f"said {said} s, truth {truth:.2f} s: {eta_line}"
    finally:
        for proc in (server, watch):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


# ---------------------------------------------------------------- where the operator looks

LOG = b"""[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=8, port=30000)
[2026-03-14 21:04:20 TP0] Load weight begin. avail mem=139.26 GB
"""


def _loading_session(simulated: bool = False):
    from tui.core.events import CheckpointFound, LogChunk, ReadCounters
    from tui.session import WatchSession

    now = [1000.0]
    session = WatchSession(clock=lambda: now[0])
    session.handle(ReadCounters("log", "localhost", now[0], ((11, 10 << 20, 0),)))
    session.handle(LogChunk("log", 0, LOG, now[0]))
    session.handle(CheckpointFound("/models/m", 547 * GB, 8))
    for step in range(1, 9):
        now[0] += 1.0
        if simulated:
            gpus = tuple(GpuInfo(i, memory_used=GB + step * GB // 8 * 9, memory_total=141 * GB) for i in range(8))
            session.handle(GpuSample("localhost", now[0], gpus, simulated=True))
        else:
            session.handle(ReadCounters("log", "localhost", now[0], ((11, (10 << 20) + step * 9 * GB // 10, 0),)))
    session.flush()
    return session


def test_the_timeline_and_the_verdict_show_the_bytes_the_rate_and_the_time_left() -> None:
    from tui.app.themes import discover
    from tui.app.timeline import render_timeline

    session = _loading_session()
    row = next(line for line in render_timeline(session, 160, discover()["dark"]).plain.splitlines()
               if "weight load" in line)
    assert "7.2/547 GB · 0.90 GB/s · ~10:00 left" in row, row
    assert "weight load 7.2/547 GB" in session.verdict().detail


def test_a_simulated_gpu_reading_is_labelled_on_the_timeline_too() -> None:
    from tui.app.themes import discover
    from tui.app.timeline import render_timeline

    session = _loading_session(simulated=True)
    row = next(line for line in render_timeline(session, 160, discover()["dark"]).plain.splitlines()
               if "weight load" in line)
    assert "simulated" in row and "no rate" in row and "GB/s" not in row, row
    assert "SIMULATED GPU memory" in session.verdict().detail


def test_simulated_gpu_memory_never_overrides_the_loaders_own_bar() -> None:
    """`--gpus sim` on a real start (issue 34): the header said `weight load 0.00/0.00 GB · 68.89 GB/s
    · ~0:00 left (from SIMULATED GPU memory)` while the log's bar was at half. The log's bar is a
    real signal: it wins, its rate is its own, and nothing of the made-up memory shows."""
    from tui.core.events import CheckpointFound, LogChunk
    from tui.session import WatchSession

    now = [1000.0]
    session = WatchSession(clock=lambda: now[0])
    session.handle(LogChunk("log", 0, LOG, now[0]))
    session.handle(CheckpointFound("/models/m", 4 * GB, 8))
    done = 0
    for step in range(1, 9):
        now[0] += 1.0
        gpus = tuple(GpuInfo(i, memory_used=GB + step * 9 * GB, memory_total=141 * GB) for i in range(8))
        session.handle(GpuSample("localhost", now[0], gpus, simulated=True))  # made up: fast and far past the total
        if step % 2 == 0:
            done += 1
            bar = f"Loading safetensors checkpoint shards:  {done * 25 // 2}% Completed | {done}/8 [00:0{step}<00:0{step}, 1.0s/it]\n"
            session.handle(LogChunk("log", 0, bar.encode(), now[0]))
    session.flush()
    estimate = session.weight.estimate()
    assert estimate is not None and estimate.signal == "log" and not estimate.simulated, estimate
    assert estimate.fraction == pytest.approx(0.5)
    detail = session.verdict().detail  # what the header shows
    assert "2.0/4.0 GB · 0.25 GB/s" in detail and "(from the loader's bar)" in detail, detail
    assert "SIMULATED" not in detail
    assert estimate.rate is not None and estimate.rate < 1 * GB  # the bar's ~0.25 GB/s, not the made-up 72 GB/s


def test_a_load_whose_bytes_stopped_is_not_moving() -> None:
    est = LoadEstimator(Checkpoint("m", 10 * GB))
    est.start(0.0)
    for i in range(1, 5):
        est.reads(float(i), [(1, i * GB // 2, 0)])
    for i in range(5, 12):  # the counters stand still: a hang, not a load
        est.reads(float(i), [(1, 2 * GB, 0)])
    assert est.estimate(5.0).moving  # type: ignore[union-attr]
    assert not est.estimate(11.0).moving  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.skipif(not proc_available(), reason="no /proc to read the server's I/O counters from")
def test_run_plain_reads_the_launched_servers_counters_too(tmp_path: Path) -> None:
    """`run` knows its server's pid: the same progress line with a time left, from its tree's reads."""
    model = tmp_path / "model"
    model.mkdir()
    with open(model / "model.safetensors", "wb") as f:
        f.truncate(SIZE)
    script = tmp_path / "fake_server.py"
    script.write_text(SERVER)
    env = {**os.environ, "WATCHTOWER_DATA_DIR": str(tmp_path / "data")}
    run = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "run", "--plain", "--name", "load", "--log-dir", str(tmp_path / "logs"),
         "--gpus", "none", "--no-check", "--timeout", "30", "--", sys.executable, str(script), "-", str(model), str(RATE),
         str(tmp_path / "done")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True,
    )
    seen: list[str] = []
    try:
        assert run.stdout is not None
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            line = run.stdout.readline()
            if not line:
                break
            seen.append(line)
            if "weight load" in line and " left" in line and "cannot tell" not in line:
                break
        assert any("/0.42 GB" in line and "left" in line and "the server's reads" in line for line in seen), "".join(seen)
        print("".join(seen))
    finally:
        os.killpg(run.pid, 9)
        run.wait()
        from tests.launch_helpers import kill_attempts

        kill_attempts(tmp_path / "logs")


def test_the_gpu_signal_counts_the_servers_own_processes_where_it_knows_them() -> None:
    from tui.core.events import GpuProcess

    est = LoadEstimator(Checkpoint("m", 80 * GB))
    est.start(0.0)
    for i in range(6):
        # the server (pid 42) grows 2 GB a second; another job on the same GPU grows 5 GB a second
        procs = (GpuProcess(42, i * 2 * GB), GpuProcess(77, i * 5 * GB))
        est.gpus(GpuSample("h", 0, (GpuInfo(0, memory_used=GB + i * 7 * GB, processes=procs),)), float(i), pids={42})
    estimate = est.estimate(5.0)
    assert estimate is not None and estimate.loaded == 10 * GB and estimate.rate == pytest.approx(2 * GB)


def test_the_time_left_counts_from_now_not_from_the_last_reading() -> None:
    est = LoadEstimator(Checkpoint("m", 10 * GB))
    est.start(0.0)
    for i in range(1, 6):
        est.reads(float(i), [(1, i * GB, 0)])
    at_reading, later = est.estimate(5.0), est.estimate(5.8)
    assert at_reading is not None and later is not None and at_reading.left is not None and later.left is not None
    assert at_reading.left[0] == pytest.approx(5.0) and later.left[0] == pytest.approx(4.2)
