"""A Hugging Face download inside the weight load: "downloading 41/547 GB", not "stalled".

The cache folder alone (``tui.sources.download.cache_state`` over a real folder laid out as
``huggingface_hub`` lays it: ``blobs/<hash>.incomplete``, then ``blobs/<hash>`` linked from
``snapshots/<rev>/``), the estimator preferring the download while it runs and counting the
server's reads afresh after it, and the real thing: a fake server given a repo id whose log
is silent while it "downloads" (a sparse blob growing at a throttled rate) into the cache
named by ``HF_HUB_CACHE``, watched by the real CLI, gets "downloading …" with a time left
within 50 % of the truth.
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
from tui.core.loading import Checkpoint, LoadEstimator
from tui.sources.download import cache_state, repo_folder

GB = 10**9


def _cache(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "hub" / "models--org--name"
    snapshot = repo / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir()
    return repo, snapshot


def test_the_cache_folder_counts_finished_and_incomplete_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, snapshot = _cache(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert repo_folder("org/name") == str(repo)
    assert repo_folder("/models/local") is None and repo_folder(str(tmp_path)) is None
    (repo / "blobs" / "cfg").write_text("{}")
    (snapshot / "config.json").symlink_to("../../blobs/cfg")  # not weights: not counted
    with open(repo / "blobs" / "done1", "wb") as f:
        f.truncate(3000)
    (snapshot / "model-00001-of-00002.safetensors").symlink_to("../../blobs/done1")
    with open(repo / "blobs" / "part2.incomplete", "wb") as f:
        f.truncate(1200)
    assert cache_state(str(repo)) == (4200, True, str(snapshot))
    os.rename(repo / "blobs" / "part2.incomplete", repo / "blobs" / "part2")
    (snapshot / "model-00002-of-00002.safetensors").symlink_to("../../blobs/part2")
    assert cache_state(str(repo))[:2] == (4200, False)


def test_the_download_comes_first_while_it_runs_then_the_reads_count_afresh() -> None:
    est = LoadEstimator(Checkpoint("org/name", 10 * GB))
    est.start(0.0)
    for i in range(1, 6):
        est.reads(float(i), [(7, i * GB // 2, 0)])  # the socket's bytes count in rchar too
        est.download(float(i), i * GB // 2, True)
    during = est.estimate(5.0)
    assert during is not None and during.signal == "download" and during.loaded == 5 * GB // 2
    assert during.words().startswith("downloading 2.5/10.0 GB · 0.50 GB/s · ~0:15 left"), during.words()
    assert "(from the Hugging Face cache growing)" in during.words()
    est.download(6.0, 10 * GB, False)
    est.reads(7.0, [(7, 3 * GB, 0)])
    est.reads(8.0, [(7, 3 * GB + GB // 2, 0)])
    after = est.estimate(8.0)
    assert after is not None and after.signal == "read" and after.loaded == GB  # since the download ended, not its bytes too


# ---------------------------------------------------------------- the real thing

SERVER = r'''
import json, os, sys, time
log_path, hub, rate, size, done_file = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
log = open(log_path, "a", buffering=1)
log.write("[2026-03-14 21:04:10] server_args=ServerArgs(model_path='org/name', tp_size=1, port=30000)\n")
log.write("[2026-03-14 21:04:20 TP0] Load weight begin. avail mem=139.26 GB\n")
repo = os.path.join(hub, "models--org--name")
snapshot = os.path.join(repo, "snapshots", "abc123")
os.makedirs(snapshot)
os.makedirs(os.path.join(repo, "blobs"))
with open(os.path.join(snapshot, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": size}, "weight_map": {}}, f)
blob = os.path.join(repo, "blobs", "f00d")
t0 = time.monotonic()
with open(blob + ".incomplete", "wb") as f:  # sparse: the size grows without touching the disk
    done = 0
    while done < size:
        done = min(size, done + (4 << 20))
        f.truncate(done)
        ahead = done / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
os.rename(blob + ".incomplete", blob)
os.symlink("../../blobs/f00d", os.path.join(snapshot, "model.safetensors"))
with open(done_file + ".tmp", "w") as out:
    out.write(repr(time.time()))
os.rename(done_file + ".tmp", done_file)
log.write("[2026-03-14 21:04:40 TP0] Load weight end. type=X, avail mem=100.00 GB, mem usage=39.26 GB.\n")
log.write("[2026-03-14 21:04:41 TP0] Memory pool end. avail mem=19.80 GB\n")
log.write("[2026-03-14 21:04:42] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n")
log.write("[2026-03-14 21:04:42] The server is fired up and ready to roll!\n")
time.sleep(60)
'''

SIZE = 400 * 2**20
RATE = 100 * 2**20  # a 4-second download


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_silent_download_says_downloading_with_a_time_left_within_half_the_truth(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.touch()
    hub = tmp_path / "hub"
    hub.mkdir()
    done_file = tmp_path / "done"
    script = tmp_path / "fake_server.py"
    script.write_text(SERVER)
    env = {**os.environ, "HF_HUB_CACHE": str(hub)}
    watch = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "watch", "--plain", "--gpus", "none", "--timeout", "30", str(log)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=env,
    )
    server = None
    try:
        assert watch.stdout is not None
        assert "watching" in watch.stdout.readline()
        server = subprocess.Popen([sys.executable, str(script), str(log), str(hub), str(RATE), str(SIZE), str(done_file)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True, env=env)
        deadline = time.monotonic() + 30
        eta_line, eta_at, seen = first_line(
            watch.stdout, lambda line: "downloading" in line and " left" in line and "cannot tell" not in line, 30)
        assert eta_line is not None, "no time left was printed:\n" + "".join(seen)
        assert not done_file.exists(), "the time left came only after the download ended:\n" + "".join(seen)
        assert "/0.42 GB" in eta_line and "Hugging Face cache" in eta_line, eta_line
        while not done_file.exists():
            assert server.poll() is None and time.monotonic() < deadline, "the fake server did not finish"
            time.sleep(0.05)
        truth = float(done_file.read_text()) - eta_at
        said = said_left(eta_line)
        print(f"time left said {said} s, truth {truth:.2f} s: {eta_line.strip()}")
        assert abs(said - truth) <= 0.5 * truth + 0.5, f"said {said} s, truth {truth:.2f} s: {eta_line}"
        rest, _ = watch.communicate(timeout=30)  # READY, then the startup profile
        seen.append(rest)
        assert "stalled" not in "".join(seen).lower()
        row = next((line for line in rest.splitlines() if "downloaded" in line), None)
        assert row is not None and "0.4 GB from the Hugging Face hub during the weight load" in row, rest  # all of it
    finally:
        for proc in (server, watch):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    json.dumps(seen)


def test_a_long_download_gets_the_advice_to_keep_the_cache_or_a_local_copy() -> None:
    from tui.core.hints import knowledge
    from tui.core.startup_profile import PhaseShare, StartupProfile, evidence

    profile = StartupProfile(total=600.0, phases=(PhaseShare("weight_load", 520.0, 0.87, "TP0"),),
                             download=(41 * GB, 390.0))
    (found,) = evidence(profile)
    (advice,) = knowledge().speed_advice([found])
    assert advice[0].startswith("the weights were downloaded during the start (41.0 GB in 6:30, 0.11 GB/s)")
    assert "--local-dir" in advice[0] and "save about 6:30" in advice[0]
    assert evidence(StartupProfile(total=60.0, phases=(), download=(GB, 4.0))) == []  # a short one: no advice
