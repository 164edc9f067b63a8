"""Warm or cold page cache for the weight load, and the advice when the load waited on its storage.

A second load of the same checkpoint is served by the page cache and is much faster than the
first: the startup profile says which a load was where the I/O counters tell (``read_bytes``:
off the storage; ``rchar``: read()), "cannot tell" otherwise, and never sets a warm load beside a
cold one as if equal. A cold load whose block device had I/O in flight nearly the whole time
(``/proc/diskstats`` io_ticks) waited on its storage: speed advice from hints.toml says what helps.
The mountinfo and diskstats texts below are written for these tests; the last test reads a real
file on this machine's disk, cold and then warm, through the real process-tree I/O source.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui.core.loading import Checkpoint, LoadEstimator, LoadFacts, LoadReads, page_cache, page_cache_words
from tui.core.startup_profile import PhaseShare, StartupProfile, evidence, with_load

GB = 10**9


def reads(disk: float, read: float, storage: str | None = "block", busy: float | None = None,
          seconds: float = 60.0) -> LoadReads:
    return LoadReads(int(disk * GB), int(read * GB), seconds, 15 * GB, {"block": "ext4", "network": "nfs4"}.get(storage or ""),
                     storage, busy, "259:1" if storage == "block" else None)


# ---------------------------------------------------------------- what the counters say


def test_cold_warm_and_cannot_tell_from_the_counters() -> None:
    assert page_cache(reads(14.8, 15.1)) == "cold"  # the checkpoint came off the disk
    assert page_cache(reads(14.8, 0.1)) == "cold"  # mapped shards faulted in from disk: read_bytes only
    assert page_cache(reads(0.2, 15.1)) == "warm"  # read() it all, the disk gave almost nothing
    assert page_cache(reads(0.1, 0.2)) is None  # mapped and cached: neither counter moved — cannot tell
    assert page_cache(reads(0.1, 15.1, "network")) is None  # a network filesystem's reads are no disk reads
    assert page_cache(reads(0.1, 15.1, None)) is None  # a filesystem not known to count them
    assert page_cache(reads(3.0, 15.1)) is None  # a fifth off the disk: neither
    words = page_cache_words(reads(0.2, 15.1))
    assert words.startswith("warm: 15.1 GB read, 0.20 GB of it off the storage (ext4)"), words
    assert "network filesystem" in page_cache_words(reads(0.1, 15.1, "network"))
    assert page_cache_words(reads(0.1, 0.2)).startswith("cannot tell: 0.10 GB off the storage, 0.20 GB read()")


def test_a_reading_needs_counters_watched_from_the_loads_start() -> None:
    late = LoadEstimator(Checkpoint("m", 15 * GB, filesystem="ext4", storage="block"))
    late.start(0.0)  # no counters yet: what a process read before the load would count as the load's
    late.reads(1.0, [(7, 15 * GB, 15 * GB)])
    late.reads(2.0, [(7, 15 * GB, 15 * GB)])
    late.end(3.0)
    assert late.reading() is None
    est = LoadEstimator(Checkpoint("m", 15 * GB, filesystem="ext4", storage="block", device="259:1"))
    est.reads(0.0, [(7, 2 * GB, 1 * GB)])  # imports, before the load
    est.start(0.0)
    for t in range(1, 11):
        est.reads(float(t), [(7, 2 * GB + t * 1.5 * GB, 1 * GB + t * 1.5 * GB)])
        est.disk_busy(float(t), 5_000 + 950 * t)  # 95 % of each second in flight
    est.end(10.0)
    got = est.reading()
    assert got is not None and (got.disk, got.read) == (15 * GB, 15 * GB) and got.seconds == 10.0
    assert got.busy is not None and abs(got.busy - 0.95) < 1e-6 and page_cache(got) == "cold"


# ---------------------------------------------------------------- the profile


def _profile(now: LoadReads | None, before: LoadReads | None) -> StartupProfile:
    profile = StartupProfile(total=120.0, phases=(PhaseShare("weight_load", 60.0, 0.5, "TP0", previous=12.0),),
                             previous_total=70.0, server="vllm", previous_attempt=1)
    return with_load(profile, LoadFacts(reads=now, earlier={} if before is None else {1: before}))


def test_the_profile_says_warm_or_cold_and_that_a_warm_load_beside_a_cold_one_is_not_like_for_like() -> None:
    lines = _profile(reads(14.8, 15.1), reads(0.2, 15.1)).lines()
    row = next(line for line in lines if "page cache" in line)
    assert "cold: 14.8 of the 15.0 GB checkpoint came off the storage (ext4)" in row, lines
    assert any("this weight load was cold, the previous attempt's warm: their times are not like for like" in line
               for line in lines), lines
    same = _profile(reads(14.8, 15.1), reads(14.9, 15.1)).lines()
    assert not any("like for like" in line for line in same)
    unknown = _profile(reads(14.8, 15.1), None).lines()
    assert any("the previous attempt's page cache cannot be told" in line for line in unknown), unknown
    blind = _profile(reads(0.1, 0.2), reads(14.9, 15.1)).lines()  # this one cannot be told: nothing claimed
    assert not any("like for like" in line for line in blind)
    assert not any("page cache" in line for line in _profile(None, None).lines())  # nothing watched (scan)
    data = _profile(reads(14.8, 15.1), reads(0.2, 15.1)).to_json()["page_cache"]
    assert data["verdict"] == "cold" and data["previous_verdict"] == "warm"


# ---------------------------------------------------------------- the advice


def test_a_cold_load_that_kept_its_storage_busy_gets_the_storage_advice() -> None:
    from tui.core.hints import knowledge

    profile = _profile(reads(14.8, 15.1, busy=0.97), None)
    (found,) = evidence(profile)
    assert found.name == "weight_load_storage_bound"
    (advice,) = knowledge().speed_advice([found])
    assert advice[0].startswith("the weight load waited on the storage: 14.8 GB came off it (ext4, none from the page "
                                "cache) in 1:00, 0.25 GB/s, and its device had I/O in flight 97% of that time"), advice[0]
    assert "local NVMe" in advice[0] and "--safetensors-load-strategy" in advice[0] and "save" not in advice[0]
    sglang = knowledge().speed_advice([type(found)(found.name, {**found.values, "server": "sglang"})])
    assert "enable_multithread_load" in sglang[0][0] and "--safetensors" not in sglang[0][0]


@pytest.mark.parametrize("case", [
    reads(14.8, 15.1, busy=0.4),  # the device idled most of the load: something else set the pace
    reads(0.2, 15.1, busy=0.99),  # warm: the storage was not read
    reads(14.8, 15.1, busy=None),  # how busy it was not watched
    reads(14.8, 15.1, busy=0.99, seconds=8.0),  # a short load
])
def test_no_storage_advice_without_the_evidence(case: LoadReads) -> None:
    assert evidence(_profile(case, None)) == []


def test_a_load_from_a_network_filesystem_is_said_as_that_not_as_storage_bound() -> None:
    from tui.core.hints import knowledge

    (found,) = evidence(_profile(reads(0.0, 0.1, "network"), None))
    assert found.name == "weight_load_network_filesystem"
    (advice,) = knowledge().speed_advice([found])
    assert advice[0].startswith("the weights lie on a network filesystem (nfs4) and their load took 1:00 (15.0 GB, "
                                "0.25 GB/s on average)"), advice[0]
    assert "not known to have set the pace" in advice[0]


def test_filesystem_kinds_are_data() -> None:
    from tui.core.hints import knowledge

    storage = knowledge().storage
    assert [storage.kind(f) for f in ("ext4", "xfs", "nfs4", "fuse.s3fs", "lustre", "tmpfs", "overlay", None)] == [
        "block", "block", "network", "network", "network", None, None, None]


# ---------------------------------------------------------------- where the checkpoint lies

MOUNTINFO = (
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "27 1 259:2 / / rw,relatime - ext4 /dev/nvme0n1p2 rw\n"
    "40 27 0:51 / /mnt/shared\\040models rw,relatime - nfs4 filer:/models rw,vers=4.2\n"
    "41 27 259:5 / /scratch rw,relatime - xfs /dev/nvme1n1 rw\n"
    "42 41 0:60 / /scratch/fuse rw,relatime - fuse.s3fs s3fs rw\n"
)
DISKSTATS = (
    " 259       0 nvme1n1 100 0 800 10 0 0 0 0 0 4000 10\n"
    " 259       5 nvme1n1p1 4455 12 917504 3000 0 0 0 0 0 123456 3000 0 0 0 0\n"
)


def test_the_mount_says_the_filesystem_and_its_block_device(tmp_path: Path) -> None:
    from tui.sources.diskstats import busy_ms, mount_of

    assert mount_of("/scratch/models/m", MOUNTINFO) == ("xfs", "259:5")
    assert mount_of("/scratch/fuse/m", MOUNTINFO) == ("fuse.s3fs", None)  # the longest mount point above it
    assert mount_of("/mnt/shared models/m", MOUNTINFO) == ("nfs4", None)  # no block device: nothing to watch
    assert mount_of("/home/u/m", MOUNTINFO) == ("ext4", "259:2")
    assert busy_ms("259:5", DISKSTATS) == 123456 and busy_ms("259:9", DISKSTATS) is None


# ---------------------------------------------------------------- the real thing

READER = """
import sys
path = sys.argv[1]
print("ready", flush=True)
for line in sys.stdin:
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass
    print("read", flush=True)
"""


def checkpoint_off_the_cache(shard: Path, mib: int) -> str:
    """A shard of ``mib`` MiB on this machine's disk, not in the page cache (its first read is cold);
    the type of its filesystem, a block device's (the test is skipped elsewhere: its reads would not
    show as disk reads)."""
    from tui.core.hints import knowledge
    from tui.sources.diskstats import mount_of

    mount = mount_of(str(shard.parent))
    if mount is None or knowledge().storage.kind(mount[0]) != "block":
        pytest.skip(f"{shard.parent} is on {mount}: its reads do not show as disk reads")
    with open(shard, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return mount[0]


@pytest.mark.timeout(60)
def test_a_real_file_read_cold_then_warm_is_told_apart(tmp_path: Path) -> None:
    """A process reads a 192 MB checkpoint on this machine's disk, first dropped from the page
    cache and then again: its counters, read by the real process-tree source, say cold then warm."""
    from tui.sources.writers import ProcessTreeIO

    shard = tmp_path / "model-00001-of-00001.safetensors"
    filesystem = checkpoint_off_the_cache(shard, 192)
    size = shard.stat().st_size
    reader = subprocess.Popen([sys.executable, "-c", READER, str(shard)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    # its own start-up (an interpreter read cold from disk: megabytes on a fresh machine) is over
    # before the base is taken, so the bytes measured are the checkpoint's alone
    assert reader.stdout is not None and reader.stdout.readline() == "ready\n"

    async def load(est: LoadEstimator) -> None:
        source = ProcessTreeIO(reader.pid, interval=0.05)
        events = source.events()
        at = 0.0
        first = await anext(events)  # counters before the load: the base
        est.reads(at, first.counters)
        est.start(at)
        assert reader.stdin is not None and reader.stdout is not None
        reader.stdin.write("go\n")
        reader.stdin.flush()
        done = asyncio.ensure_future(asyncio.to_thread(reader.stdout.readline))
        while True:
            event = await anext(events)
            at += 1.0
            est.reads(at, event.counters)
            if done.done():
                event = await anext(events)
                est.reads(at + 1.0, event.counters)
                est.end(at + 1.0)
                break
        await source.close()

    try:
        checkpoint = Checkpoint("m", size, filesystem=filesystem, storage="block")
        cold, warm = LoadEstimator(checkpoint), LoadEstimator(checkpoint)
        asyncio.run(load(cold))
        asyncio.run(load(warm))
    finally:
        reader.kill()
        reader.wait()
    print(cold.reading(), warm.reading())
    # the bytes measured are the file's (issue 29): a tree counted twice would read 2x. The disk may
    # fetch a few MiB more than the file (a CI run saw exactly 4 MiB more; the cause is not pinned down)
    cold_reads, warm_reads = cold.reading(), warm.reading()
    assert cold_reads is not None and warm_reads is not None
    assert size <= cold_reads.disk <= size * 1.05 and size <= cold_reads.read <= size * 1.02, (size, cold_reads)
    assert size <= warm_reads.read <= size * 1.02, (size, warm_reads)
    assert page_cache(cold.reading()) == "cold", cold.reading()
    assert page_cache(warm.reading()) == "warm", warm.reading()


def test_the_session_puts_the_watched_reads_and_the_device_in_the_profile_and_its_advice() -> None:
    """A session sees the log, the checkpoint's measure (on ext4, a block device), the load's I/O
    counters and the device's busy time: after READY the profile says cold, with the advice."""
    from tui.core.events import CheckpointFound, DiskBusy, LogChunk, ReadCounters
    from tui.present.startup import profile_lines
    from tui.session import WatchSession

    now = [1000.0]
    session = WatchSession(clock=lambda: now[0])
    session.handle(CheckpointFound("/models/m", 30 * GB, 1, filesystem="ext4", device="259:1"))
    head = ("[2026-03-14 21:04:00] server_args=ServerArgs(model_path='/models/m', tp_size=1, port=30000)\n"
            "[2026-03-14 21:04:01 TP0] Load weight begin. avail mem=139.26 GB\n")
    session.handle(ReadCounters("launch", "localhost", now[0], ((7, 3 * GB, GB),)))
    session.handle(LogChunk("log", 0, head.encode(), now[0]))
    session.flush()
    for t in range(1, 61):  # 60 s at 0.5 GB/s off the disk, the device in flight 98 % of the time
        now[0] += 1
        session.handle(ReadCounters("launch", "localhost", now[0], ((7, 3 * GB + t * GB // 2, GB + t * GB // 2),)))
        session.handle(DiskBusy("259:1", 980 * t, now[0]))
    tail = ("[2026-03-14 21:05:01 TP0] Load weight end. type=LlamaForCausalLM, avail mem=109.26 GB, mem usage=30.00 GB.\n"
            "[2026-03-14 21:05:03] The server is fired up and ready to roll!\n")
    session.handle(LogChunk("log", len(head), tail.encode(), now[0]))
    session.flush()
    lines = profile_lines(session.state, session.weight.facts())
    text = "\n".join(lines)
    assert "cold: 30.0 of the 30.0 GB checkpoint came off the storage (ext4)" in text, text
    assert "faster next time: the weight load waited on the storage: 30.0 GB came off it" in text, text
    assert "enable_multithread_load" in text  # SGLang's own way to read with several threads


def test_history_keeps_each_attempts_page_cache_and_its_profile_flags_unlike_loads(tmp_path: Path, monkeypatch) -> None:
    """`run` relaunches: v1 loaded cold, v2 warm; `history`'s profile of v2 beside v1 says so."""
    from tui.history import History
    from tui.present.startup import history_lines

    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path / "data"))
    history = History()
    cmd = ["vllm", "serve", "/models/m"]
    v1 = history.start("m", command=cmd, env={}, host="gpu1", log_path="/l/v1.log", started_at=100.0)
    history.update(v1, outcome="ready", phases={"weight_load": 190.0, "compile": 40.0}, ready_seconds=260.0, page_cache="cold")
    v2 = history.start("m", command=cmd, env={}, host="gpu1", log_path="/l/v2.log", started_at=400.0)
    history.update(v2, outcome="ready", phases={"weight_load": 21.0, "compile": 40.0}, ready_seconds=90.0, page_cache="warm")
    rows = history.attempts("m")
    assert [r.page_cache for r in rows] == ["cold", "warm"]
    lines = history_lines(rows)
    assert any("this weight load was warm, the previous attempt's cold: their times are not like for like" in line
               for line in lines), lines
    v3 = history.start("m", command=cmd, env={}, host="gpu1", log_path="/l/v3.log", started_at=600.0)
    history.update(v3, outcome="ready", phases={"weight_load": 20.0, "compile": 40.0}, ready_seconds=88.0, page_cache="warm")
    assert not any("like for like" in line for line in history_lines(history.attempts("m")))


# A stand-in for SGLang started by hand: it names its model folder, reads the checkpoint at a
# throttled rate while its log is silent, and says ready.
SERVER = r'''
import os, sys, time
log_path, model, rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
log = open(log_path, "a", buffering=1)
log.write(f"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='{model}', tp_size=1, port=30000)\n")
time.sleep(1.5)  # the watch finds this writer and reads its counters before the load begins
log.write("[2026-03-14 21:04:20] Load weight begin. avail mem=139.26 GB\n")
t0, done = time.monotonic(), 0
with open(os.path.join(model, "model.safetensors"), "rb", buffering=0) as f:
    while data := f.read(4 << 20):
        done += len(data)
        time.sleep(max(0.0, done / rate - (time.monotonic() - t0)))
log.write("[2026-03-14 21:04:25] Load weight end. type=X, dtype=torch.bfloat16, avail mem=100.00 GB, mem usage=39.26 GB.\n")
time.sleep(1.5)
log.write("[2026-03-14 21:04:27] The server is fired up and ready to roll!\n")
time.sleep(2)
'''


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_watch_says_the_first_load_was_cold_and_the_second_warm(tmp_path: Path) -> None:
    """The real CLI (`watch --plain`) over a server that reads its checkpoint off this machine's
    disk twice: the first profile says cold, the second warm."""
    model = tmp_path / "model"
    model.mkdir()
    checkpoint_off_the_cache(model / "model.safetensors", 128)
    (model / "config.json").write_text("{}")
    script = tmp_path / "fake_server.py"
    script.write_text(SERVER)
    said = []
    for run in ("first", "second"):
        log = tmp_path / f"{run}.log"
        log.touch()
        watch = subprocess.Popen([sys.executable, "-m", "tui.cli", "watch", "--plain", "--gpus", "none", "--timeout", "40",
                                  str(log)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert watch.stdout is not None and "watching" in watch.stdout.readline()
            subprocess.run([sys.executable, str(script), str(log), str(model), str(64 << 20)], check=True, timeout=40)
            out, _ = watch.communicate(timeout=40)
        finally:
            if watch.poll() is None:
                watch.kill()
                watch.wait()
        said.append(next((line for line in out.splitlines() if "page cache" in line), out))
    assert "cold: " in said[0] and "of the 0.13 GB checkpoint came off the storage (" in said[0], said
    assert "warm: " in said[1] and "the checkpoint was in the page cache" in said[1], said
