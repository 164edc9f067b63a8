"""LocalTailer against real files that really grow, rotate, get truncated and re-created."""

from __future__ import annotations

import asyncio
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
import threading

import pytest

from tests.tail_support import data_of
from tests.unprivileged import ROOT, as_nobody

from tui.core.events import LogChunk, LogGap, LogRestart, LogTruncated, LogWaiting
from tui.core.lines import LineAssembler
from tui.sources.local import CHUNK, LocalTailer

both_modes = pytest.mark.parametrize("use_inotify", [True, False], ids=["inotify", "poll"])


@pytest.fixture(params=["disk", "tmpfs"])
def logdir(request, tmp_path):
    """A directory on the disk's filesystem (reads from the page cache on the loop, RWF_NOWAIT)
    and one on tmpfs, which lacks RWF_NOWAIT: every read goes through the worker thread."""
    if request.param == "disk":
        return tmp_path
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm (tmpfs) here")
    path = pathlib.Path(tempfile.mkdtemp(prefix="watchtower-test-", dir="/dev/shm"))
    request.addfinalizer(lambda: shutil.rmtree(path, ignore_errors=True))
    return path


class Reader:
    """Pull events from a tailer one at a time, failing (not hanging) if none comes,
    and checking that chunks are contiguous within each file."""

    def __init__(self, tailer: LocalTailer, offset: int | None = 0) -> None:
        self.tailer = tailer
        self.offset = offset  # where the next chunk must start (None: not known yet)
        self._it = tailer.events().__aiter__()

    async def next(self, timeout: float = 10.0):
        event = await asyncio.wait_for(self._it.__anext__(), timeout)
        if isinstance(event, LogChunk):
            assert self.offset is None or event.offset == self.offset, (event.offset, self.offset)
            self.offset = event.offset + len(event.data)
        elif isinstance(event, LogRestart):
            self.offset = 0
        elif isinstance(event, LogTruncated):
            self.offset = event.size
        return event

    async def data(self, nbytes: int) -> bytes:
        """Exactly ``nbytes`` of LogChunk data (any other event fails the test)."""
        return await data_of(self, nbytes)

    async def close(self) -> None:
        await self.tailer.close()
        async for _ in self._it:  # ends promptly after close()
            pass


def append(path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


@both_modes
async def test_waits_for_a_missing_file_then_reads_it(tmp_path, use_inotify):
    log = tmp_path / "server.log"
    reader = Reader(LocalTailer(log, use_inotify=use_inotify))
    waiting = await reader.next()
    assert isinstance(waiting, LogWaiting)
    assert "no such file" in waiting.reason and str(log) in waiting.reason
    append(log, b"first line\nsecond, unfinished")
    assert await reader.data(len(b"first line\nsecond, unfinished")) == b"first line\nsecond, unfinished"
    append(log, b" line\n")
    assert await reader.data(len(b" line\n")) == b" line\n"
    await reader.close()


async def test_waiting_is_reported_once_and_names_a_directory(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    reader = Reader(LocalTailer(log, use_inotify=False))
    event = await reader.next()
    assert isinstance(event, LogWaiting) and "directory" in event.reason
    log.rmdir()
    event = await reader.next()  # the next distinct reason, not a repeat of the first
    assert isinstance(event, LogWaiting) and "no such file" in event.reason
    append(log, b"ok\n")
    assert await reader.data(len(b"ok\n")) == b"ok\n"
    await reader.close()


def test_unreadable_file_waits_with_a_clear_reason_then_reads(tmp_path):
    """Run as an unprivileged user (root reads anything): a child process tails a 0600 file."""
    script = (
        "import asyncio, sys\n"
        "from tui.sources.local import LocalTailer\n"
        "async def main():\n"
        "    async for e in LocalTailer(sys.argv[1]).events():\n"
        "        print(type(e).__name__, getattr(e, 'reason', getattr(e, 'data', b'')), flush=True)\n"
        "        if type(e).__name__ == 'LogChunk': return\n"
        "asyncio.run(main())\n"
    )
    cmd = as_nobody([sys.executable, "-c", script])
    shared = tempfile.mkdtemp(prefix="watchtower-perm-")  # pytest's tmp_path is private to root
    os.chmod(shared, 0o777)
    log = pathlib.Path(shared) / "log"
    log.write_bytes(b"secret\n")
    log.chmod(0o000 if os.geteuid() else 0o600)
    cmd.append(str(log))
    root = str(ROOT)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root)
    watchdog = threading.Timer(20, proc.kill)  # a hang fails the test instead of blocking it
    watchdog.start()
    try:
        first = proc.stdout.readline()
        assert first.startswith("LogWaiting") and "permission denied" in first, first + proc.stderr.read()
        log.chmod(0o644)  # inotify sees the chmod (IN_ATTRIB) and the tailer retries
        second = proc.stdout.readline()
        assert second.startswith("LogChunk") and "secret" in second, second
        assert proc.wait(10) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
        shutil.rmtree(shared)


async def test_truncation_before_reading_reports_the_exact_gap(logdir):
    log = logdir / "log"
    big = bytes(random.Random(1).randrange(256) for _ in range(3 * CHUNK + 1000))
    log.write_bytes(big)
    reader = Reader(LocalTailer(log))
    first = await reader.next()  # the consumer holds back: nothing more is read meanwhile
    assert isinstance(first, LogChunk) and first.data == big[:CHUNK]
    os.truncate(log, 0)
    append(log, b"fresh\n")
    assert await reader.next() == LogGap(str(log), CHUNK, len(big) - CHUNK, "truncated before it was read")
    assert await reader.next() == LogTruncated(str(log), 0, 0)
    assert await reader.data(len(b"fresh\n")) == b"fresh\n"
    await reader.close()


async def test_from_end_skips_existing_content_only_for_the_first_file(tmp_path):
    log = tmp_path / "log"
    append(log, b"x" * 5_000_000 + b"\n")
    reader = Reader(LocalTailer(log, from_end=True), offset=5_000_001)
    append(log, b"new\n")
    assert await reader.data(len(b"new\n")) == b"new\n"
    os.rename(log, tmp_path / "log.1")
    append(log, b"whole\n")
    assert await reader.next() == LogRestart(str(log), "rotated")
    assert await reader.data(len(b"whole\n")) == b"whole\n"
    await reader.close()


async def test_fast_appends_come_in_bounded_chunks_in_order(tmp_path):
    log = tmp_path / "log"
    payload = b"".join(b"line %07d \xe2\x82\xac\n" % i for i in range(400_000))  # ~7 MB
    log.write_bytes(payload)
    reader = Reader(LocalTailer(log))
    got = bytearray()
    while len(got) < len(payload):
        event = await reader.next()
        assert isinstance(event, LogChunk) and event.offset == len(got)
        assert len(event.data) <= CHUNK
        got += event.data
    assert got == payload
    await reader.close()


async def test_close_ends_a_waiting_iterator(tmp_path):
    tailer = LocalTailer(tmp_path / "never")
    seen = []

    async def consume():
        async for event in tailer.events():
            seen.append(event)

    task = asyncio.create_task(consume())
    while not seen:
        await asyncio.sleep(0.001)
    await tailer.close()
    await asyncio.wait_for(task, 5)
    assert [type(e) for e in seen] == [LogWaiting]


# ---------------------------------------------------------------- chaos


class Generation:
    def __init__(self) -> None:
        self.data = bytearray()
        self.ended_by = "end"
        self.synced = True  # the tailer had caught up before it ended


class ChaosWriter(threading.Thread):
    """A real writer thread: random appends split mid-line and mid-UTF-8, rotations,
    deletions + re-creations and truncations (copytruncate, `> log`).

    A tailer cannot deliver a file it never saw, nor tell a truncated file from the
    same file when the new content starts with the very bytes it had read: each
    generation starts with its own header, and before replacing or truncating the
    file the writer waits (on a condition, not a sleep) until the tailer has
    delivered that header. Half of the truncations also wait until everything was
    delivered; the others race the tailer, and may lose a tail nobody could have seen.
    """

    def __init__(self, path, progress: threading.Condition, delivered, steps: int, seed: int) -> None:
        super().__init__(daemon=True)
        self.path = str(path)
        self.progress = progress
        self.delivered = delivered  # [generation index, bytes delivered in it]
        self.steps = steps
        self.rng = random.Random(seed)
        self.gens = [Generation()]
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._line = 0
        self._pending = b""

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self.done.set()

    def _text(self, n: int) -> bytes:
        while len(self._pending) < n:
            self._line += 1
            word = self.rng.choice(["ready", "Loading", "ünïcödé", "€uro", "🚀", "KV", ""])
            self._pending += f"[{self._line:06d}] {word * self.rng.randrange(1, 4)}\n".encode()
        out, self._pending = self._pending[:n], self._pending[n:]
        return out

    def _header(self) -> bytes:
        return b"<generation %06d>\n" % (len(self.gens) - 1)

    def _wait_for(self, need_all: bool) -> None:
        gen = len(self.gens) - 1
        want = len(self.gens[-1].data) if need_all else len(self._header())
        with self.progress:
            ok = self.progress.wait_for(lambda: self.delivered >= [gen, want], 30)
        assert ok, f"tailer did not catch up with generation {gen}"

    def _run(self) -> None:
        f = open(self.path, "ab", buffering=0)
        rotations = 0
        for _ in range(self.steps):
            roll = self.rng.random()
            gen = self.gens[-1]
            header = self._header()
            if len(gen.data) < len(header):  # the header, in one to a few pieces
                data = header[len(gen.data) : len(gen.data) + self.rng.randrange(1, len(header) + 1)]
            elif roll < 0.94:
                data = self._text(self.rng.choice([1, 2, 3, 7, 40, 300, 5000]))
            else:
                data = b""
            if data:
                f.write(data)
                gen.data += data
                if self.rng.random() < 0.05:
                    threading.Event().wait(0.0005)  # pacing only
                continue
            kind = self.rng.choice(["rotated", "recreated", "truncated"])
            synced = kind != "truncated" or self.rng.random() < 0.5
            self._wait_for(need_all=kind == "truncated" and synced)
            gen.ended_by, gen.synced = kind, synced
            if kind == "rotated":
                f.close()
                rotations += 1
                os.rename(self.path, f"{self.path}.{rotations}")
                f = open(self.path, "ab", buffering=0)
            elif kind == "recreated":
                f.close()
                os.unlink(self.path)
                f = open(self.path, "ab", buffering=0)
            else:
                os.truncate(self.path, 0)  # f keeps appending: O_APPEND writes at the new end
            self.gens.append(Generation())
        f.close()


@both_modes
async def test_chaos_every_written_byte_arrives_once_in_order_or_as_a_reported_gap(logdir, use_inotify):
    log = logdir / "chaos.log"
    progress = threading.Condition()
    delivered = [0, 0]
    seed = int(os.environ.get("CHAOS_SEED", "20261130"))  # fixed; vary it to explore
    writer = ChaosWriter(log, progress, delivered, steps=4000, seed=seed)
    # small chunks and a consumer that sometimes dawdles: truncations land mid-file
    tailer = LocalTailer(log, use_inotify=use_inotify, chunk_size=4096)
    got: list[tuple[bytearray, list[tuple[int, int]], str]] = [(bytearray(), [], "")]
    writer.start()

    def caught_up() -> bool:
        return (
            writer.done.is_set()
            and len(got) == len(writer.gens)
            and len(got[-1][0]) == len(writer.gens[-1].data)
        )

    progressed = asyncio.Event()

    async def consume() -> None:
        async for event in tailer.events():
            data, gaps, _ = got[-1]
            if isinstance(event, LogChunk):
                assert event.offset == len(data), "chunks must be contiguous"
                data += event.data
            elif isinstance(event, LogGap):
                assert event.offset == len(data) and event.nbytes > 0
                gaps.append((event.offset, event.nbytes))
                data += b"\0" * event.nbytes  # placeholder: these bytes were reported lost
            elif isinstance(event, LogRestart):
                got.append((bytearray(), [], event.reason))
            elif isinstance(event, LogTruncated):  # the chaos writer truncates to 0 only
                assert (event.size, event.lines) == (0, 0)
                got.append((bytearray(), [], "truncated"))
            else:
                assert isinstance(event, LogWaiting)
            with progress:
                delivered[:] = [len(got) - 1, len(got[-1][0])]
                progress.notify_all()
            progressed.set()
            if random.random() < 0.01:
                await asyncio.sleep(0.002)  # pacing only: a slow consumer

    reader = asyncio.create_task(consume())
    async with asyncio.timeout(60):
        await asyncio.to_thread(writer.join)
        while not (writer.error or caught_up()):
            progressed.clear()
            waiter = asyncio.ensure_future(progressed.wait())
            await asyncio.wait([reader, waiter], return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if reader.done():
                reader.result()  # an assertion inside the consumer fails the test here
    await tailer.close()
    await reader
    assert writer.error is None, writer.error
    assert len(got) == len(writer.gens), "one LogRestart per rotation / re-creation, one LogTruncated per truncation"
    kinds = [g.ended_by for g in writer.gens[:-1]]
    assert [reason for _, _, reason in got[1:]] == kinds
    assert {"rotated", "recreated", "truncated"} <= set(kinds), "the seed must exercise every kind"
    silent_loss = 0
    for i, ((data, gaps, _), gen) in enumerate(zip(got, writer.gens)):
        expected = bytearray(gen.data)
        for offset, nbytes in gaps:
            assert gen.ended_by == "truncated" and offset + nbytes <= len(expected)
            expected[offset : offset + nbytes] = b"\0" * nbytes
        if gen.synced:
            assert data == expected, f"generation {i} ({gen.ended_by}) differs"
        else:  # raced truncation: an exact prefix; the rest was never visible to any reader
            assert data == expected[: len(data)], f"generation {i} differs"
            silent_loss += len(expected) - len(data)
        if not gaps:  # and the same lines, assembled from chunks split anywhere
            lines = [line.text for line in LineAssembler().feed(bytes(data))]
            assert lines == [line.text for line in LineAssembler().feed(bytes(expected[: len(data)]))]
    written = sum(len(g.data) for g in writer.gens)
    reported = sum(n for _, gaps, _ in got for _, n in gaps)
    print(f"chaos: {len(writer.gens)} generations, {written} bytes written, {reported} reported lost, "
          f"{silent_loss} truncated before any reader could see them")


async def test_follows_a_log_whose_directory_appears_later(tmp_path):
    log = tmp_path / "runs" / "attempt-1" / "server.log"
    reader = Reader(LocalTailer(log))
    assert isinstance(await reader.next(), LogWaiting)
    log.parent.mkdir(parents=True)
    append(log, b"hello\n")
    assert await reader.data(6) == b"hello\n"
    append(log, b"more\n")  # inotify now watches the new directory and the file
    assert await reader.data(5) == b"more\n"
    await reader.close()


async def test_follows_through_a_symlink_into_another_directory(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "run-1.log"
    target.write_bytes(b"one\n")
    link = tmp_path / "latest.log"
    link.symlink_to(target)
    reader = Reader(LocalTailer(link))
    assert await reader.data(4) == b"one\n"
    append(target, b"two\n")
    assert await reader.data(4) == b"two\n"  # the file's own inotify watch sees appends in another directory
    second = tmp_path / "real" / "run-2.log"
    second.write_bytes(b"three\n")
    link.unlink()
    link.symlink_to(second)
    assert await reader.next() == LogRestart(str(link), "rotated")
    assert await reader.data(6) == b"three\n"
    await reader.close()


async def test_a_device_at_the_path_is_refused_not_read(tmp_path):
    """/dev/zero would be read for ever: its type is checked (fstat after an O_NONBLOCK open)."""
    log = tmp_path / "log"
    log.symlink_to("/dev/zero")
    reader = Reader(LocalTailer(log))
    event = await reader.next()
    assert isinstance(event, LogWaiting) and "is a device" in event.reason
    log.unlink()
    append(log, b"real\n")
    event = await reader.next()
    if isinstance(event, LogWaiting):  # the path was seen missing for a moment
        event = await reader.next()
    assert event == LogChunk(str(log), 0, b"real\n", event.at)
    await reader.close()
