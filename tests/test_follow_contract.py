"""One contract for both tailers: the local one, and the remote one through the real sshd.

Both run the same follower (``tui.sources.follow``); these tests hold each of them to the
same promises with real files that really rotate, get truncated, re-created and moved
under a real writer process: partial lines, byte-exact delivery, rotation, re-creation,
truncation (a gap, not a restart), logrotate ``create`` and a plain ``mv`` while a process
writes, and a FIFO at the log path.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys

import pytest

from tests.tail_support import Reader
from tests.support import start_cli
from tui.core.events import LogChunk, LogMoved, LogRestart, LogTruncated, LogWaiting
from tui.sources.local import LocalTailer
from tui.sources.remote_tail import RemoteTailer


@pytest.fixture(params=["local", "local-poll", "remote"])
def tail(request):
    """Makes the tailer under test for a path: local with inotify, local polling, or remote."""
    if request.param == "remote":
        target = request.getfixturevalue("target")
        request.getfixturevalue("ssh_connections_closed")
        return lambda path, **kw: RemoteTailer(target, str(path), **kw)
    return lambda path, **kw: LocalTailer(path, use_inotify=request.param == "local", **kw)


def append(path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


# A writer process that holds its log open as a server does, driven line by line from stdin:
# "w N" appends N lines, "reopen" opens the path again (what a server does on SIGHUP after
# logrotate), "q" exits. It answers "ok" after each command, once the bytes are written.
WRITER = r"""
import os, sys
path = sys.argv[1]
f = open(path, "ab", buffering=0)
n = 0
for command in sys.stdin:
    word, *arg = command.split()
    if word == "w":
        for _ in range(int(arg[0])):
            f.write(b"line %03d written by %d %s\n" % (n, os.getpid(), b"." * (n % 17)))
            n += 1
    elif word == "reopen":
        f.close()
        f = open(path, "ab", buffering=0)
    elif word == "q":
        break
    print("ok", flush=True)
"""


class Writer:
    def __init__(self, path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    async def do(self, command: str) -> None:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        assert await asyncio.to_thread(self.proc.stdout.readline) == "ok\n"

    async def quit(self) -> None:
        self.proc.stdin.write("q\n")
        self.proc.stdin.close()
        assert await asyncio.to_thread(self.proc.wait, 10) == 0


class Collected:
    """What a reader delivered, per file: bytes by source, and the events in between."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.files: dict[str, bytearray] = {}  # source -> bytes; the path's file restarts on LogRestart
        self.generations: list[bytearray] = [bytearray()]
        self.others: list[object] = []
        self.moved_offsets: dict[str, int] = {}  # moved file -> its offset when it moved
        self.moved_from: dict[str, int] = {}  # moved file -> its generation at the path

    async def until(self, done, timeout: float = 15.0) -> None:
        async with asyncio.timeout(timeout):
            while not done():
                event = await self.reader.next(timeout)
                if isinstance(event, LogChunk) and event.source == self.reader.tailer.source:
                    assert event.offset == len(self.generations[-1])
                    self.generations[-1] += event.data
                elif isinstance(event, LogChunk):
                    data = self.files.setdefault(event.source, bytearray())
                    assert event.offset == len(data) + self.moved_offsets.get(event.source, 0)
                    data += event.data
                elif isinstance(event, LogRestart):
                    self.generations.append(bytearray())
                    self.others.append(event)
                else:
                    if isinstance(event, LogMoved) and event.moved_to not in self.moved_offsets:
                        # the moved file goes on from where the path's file was
                        self.moved_offsets[event.moved_to] = len(self.generations[-1])
                        self.moved_from[event.moved_to] = len(self.generations) - 1
                    self.others.append(event)

    def old_file(self, source: str) -> bytes:
        """The whole content delivered for a file that was moved away from the path."""
        return bytes(self.generations[self.moved_from[source]]) + bytes(self.files.get(source, b""))


def collect(reader: Reader) -> Collected:
    return Collected(reader)


# ---------------------------------------------------------------- bytes and lines


async def test_partial_lines_and_any_bytes_arrive_exactly_once_in_order(tmp_path, tail):
    log = tmp_path / "server.log"
    rng = random.Random(8)
    blob = bytes(rng.randrange(256) for _ in range(300_000)) + "ünïcödé \r progress\r 🚀\n".encode() * 100
    log.write_bytes(b"first line\nsecond, unfinished")
    reader = Reader(tail(log))
    assert await reader.data(29) == b"first line\nsecond, unfinished"
    written = b"first line\nsecond, unfinished"
    pos = 0
    while pos < len(blob):  # pieces split anywhere: mid-line, mid-UTF-8, between \r and \n
        piece = blob[pos : pos + rng.choice([1, 2, 3, 50, 4096, 70_000])]
        append(log, piece)
        written += piece
        pos += len(piece)
        if rng.random() < 0.2:
            await reader.data(0)
    got = await reader.data(len(written) - 29)
    assert got == written[29:]
    await reader.close()


# ---------------------------------------------------------------- replaced files


async def test_rotation_finishes_the_old_file_then_restarts(tmp_path, tail):
    log = tmp_path / "log"
    append(log, b"one\n")
    reader = Reader(tail(log))
    assert await reader.data(4) == b"one\n"
    append(log, b"two, written before the rename\n")  # not read yet when the rename happens
    os.rename(log, tmp_path / "log.1")
    append(log, b"new file\n")
    assert await reader.data(31) == b"two, written before the rename\n"
    assert await reader.next() == LogRestart(reader.tailer.source, "rotated")
    assert await reader.data(9) == b"new file\n"
    await reader.close()


async def test_delete_and_recreate_keeps_the_unread_tail(tmp_path, tail):
    log = tmp_path / "log"
    append(log, b"attempt 1 starts\n")
    reader = Reader(tail(log))
    assert await reader.data(17) == b"attempt 1 starts\n"
    append(log, b"attempt 1 dies\n")
    log.unlink()
    append(log, b"attempt 2 starts\n")
    assert await reader.data(15) == b"attempt 1 dies\n"
    event = await reader.next()
    if isinstance(event, LogWaiting):  # the path was seen missing between unlink and create
        assert "removed" in event.reason
        event = await reader.next()
    assert event == LogRestart(reader.tailer.source, "recreated")
    assert await reader.data(17) == b"attempt 2 starts\n"
    await reader.close()


# ---------------------------------------------------------------- truncation: a gap, not a restart


async def test_truncation_to_zero_goes_on_from_line_one_without_a_restart(tmp_path, tail):
    log = tmp_path / "log"
    append(log, b"before\n")
    reader = Reader(tail(log))
    assert await reader.data(7) == b"before\n"
    with open(log, "r+b") as f:  # what `> log` and logrotate's copytruncate do
        f.truncate(0)
    append(log, b"after\n")
    assert await reader.next() == LogTruncated(reader.tailer.source, 0, 0)
    assert await reader.data(6) == b"after\n"
    await reader.close()


async def test_truncation_to_a_smaller_size_delivers_nothing_twice(tmp_path, tail):
    log = tmp_path / "log"
    kept = b"[2026-12-01 09:00:00] server_args=ServerArgs(model_path='m')\n[2026-12-01 09:00:01] Load weight begin\n"
    append(log, kept + b"[startup] line 3, cut away\n")
    reader = Reader(tail(log))
    assert await reader.data(len(kept) + 27) == kept + b"[startup] line 3, cut away\n"
    os.truncate(log, len(kept))
    assert await reader.next() == LogTruncated(reader.tailer.source, len(kept), 2)
    append(log, b"[startup] line 3 again\n")
    assert await reader.data(23) == b"[startup] line 3 again\n"  # the kept lines are not re-delivered
    await reader.close()


async def test_truncated_then_rewritten_past_the_offset_is_still_detected(tmp_path, tail):
    """Size alone cannot tell: the new content is longer than what was read."""
    log = tmp_path / "log"
    append(log, b"old line 1\n")
    reader = Reader(tail(log))
    assert await reader.data(11) == b"old line 1\n"
    new = b"".join(b"new line %d\n" % i for i in range(50))
    with open(log, "r+b") as f:
        f.truncate(0)
        f.write(new)
    assert await reader.next() == LogTruncated(reader.tailer.source, 0, 0)
    assert await reader.data(len(new)) == new
    await reader.close()


# ---------------------------------------------------------------- a writer still on the old file


async def test_logrotate_create_finishes_the_old_file_its_writer_still_holds(tmp_path, tail):
    """``mv log log.1; : > log``, the server writes on into log.1 until it reopens."""
    log = tmp_path / "log"
    writer = Writer(log)
    try:
        await writer.do("w 10")
        reader = Reader(tail(log))
        got = collect(reader)
        await got.until(lambda: got.generations[-1].count(b"\n") == 10)
        os.rename(log, tmp_path / "log.1")
        log.write_bytes(b"")
        await got.until(lambda: len(got.generations) == 2)  # the new file is being read
        await writer.do("w 15")  # still into the old file
        await writer.do("reopen")
        await writer.do("w 5")
        await writer.quit()
        old, new = (tmp_path / "log.1").read_bytes(), log.read_bytes()
        assert old.count(b"\n") == 25 and new.count(b"\n") == 5
        moved = f"{reader.tailer.source.rpartition(str(log))[0]}{tmp_path / 'log.1'}"
        await got.until(lambda: got.generations[-1] == new and LogMoved(reader.tailer.source, moved, (), True) in got.others)
        assert got.old_file(moved) == old, "every byte of the old file, once, in order"
        assert [e for e in got.others if isinstance(e, LogMoved) and not e.done][0].writers == (writer.proc.pid,)
        await reader.close()
    finally:
        writer.proc.kill()
        writer.proc.wait()


async def test_mv_while_writing_follows_the_moved_file_and_the_new_path(tmp_path, tail):
    """A plain ``mv`` of a log a process still writes, then another file at the path:
    both are followed, each chunk says which file it is from, nothing is lost."""
    log = tmp_path / "server.log"
    writer = Writer(log)
    try:
        await writer.do("w 10")
        reader = Reader(tail(log))
        got = collect(reader)
        await got.until(lambda: got.generations[-1].count(b"\n") == 10)
        os.rename(log, tmp_path / "moved.log")
        moved = f"{reader.tailer.source.rpartition(str(log))[0]}{tmp_path / 'moved.log'}"
        await writer.do("w 12")
        await got.until(lambda: any(isinstance(e, LogMoved) for e in got.others))
        append(log, b"another writer's first line\n")
        await writer.do("w 28")
        append(log, b"another writer's second line\n")
        await writer.quit()
        await got.until(lambda: LogMoved(reader.tailer.source, moved, (), True) in got.others
                        and got.generations[-1] == log.read_bytes())
        assert got.old_file(moved) == (tmp_path / "moved.log").read_bytes()
        assert got.old_file(moved).count(b"\n") == 50
        assert got.generations[-1] == b"another writer's first line\nanother writer's second line\n"
        await reader.close()
    finally:
        writer.proc.kill()
        writer.proc.wait()


# ---------------------------------------------------------------- a FIFO at the path


async def test_a_fifo_is_opened_once_and_read_without_hurting_its_writer(tmp_path, tail):
    log = tmp_path / "log.fifo"
    os.mkfifo(log)
    reader = Reader(tail(log))
    await reader.attached() if isinstance(reader.tailer, RemoteTailer) else await asyncio.sleep(0)
    # the tailer holds the read end: a writer opens without blocking and never sees EPIPE
    script = (
        "import os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)\n"
        "for i in range(40):\n"
        "    os.write(fd, b'fifo line %02d\\n' % i)\n"
        "    time.sleep(0.01)\n"
    )
    for _ in range(200):  # until the tailer has opened it (ENXIO before)
        done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", script, str(log)], capture_output=True)
        if b"ENXIO" not in done.stderr and b"No such device" not in done.stderr:
            break
        await asyncio.sleep(0.05)
    assert done.returncode == 0, done.stderr.decode()
    expected = b"".join(b"fifo line %02d\n" % i for i in range(40))
    assert await reader.data(len(expected)) == expected
    await reader.close()



# ---------------------------------------------------------------- end to end


async def test_watch_plain_echoes_every_line_written_through_an_mv(tmp_path):
    """The user's case: `watch --plain --echo` on a log a process writes, `mv` of the log,
    then another file at the path: every line of both files is echoed, once, in order."""
    log = tmp_path / "server.log"
    writer = Writer(log)
    watcher = await start_cli("watch", str(log), "--plain", "--echo", "--timeout", "120", env={"NO_COLOR": "1"})
    echoed: list[bytes] = []
    said: list[bytes] = []

    async def until(count: int, saying: bytes = b"") -> None:
        async with asyncio.timeout(20):
            while len(echoed) < count or not any(saying in line for line in said):
                raw = await watcher.stdout.readline()
                assert raw, (await watcher.stderr.read()).decode()
                _, bar, text = raw.partition(b"  | ")
                (echoed if bar else said).append(text if bar else raw)

    try:
        await writer.do("w 10")
        await until(10)
        os.rename(log, tmp_path / "moved.log")
        await writer.do("w 12")
        await until(22, saying=b"moved to " + str(tmp_path / "moved.log").encode())
        append(log, b"another writer's first line\n")
        await writer.do("w 28")
        append(log, b"another writer's second line\n")
        await writer.quit()
        await until(52, saying=b"finished the moved log")
    finally:
        writer.proc.kill()
        writer.proc.wait()
        watcher.send_signal(2)
        await watcher.wait()
    moved = (tmp_path / "moved.log").read_bytes().splitlines(keepends=True)
    new = log.read_bytes().splitlines(keepends=True)
    assert len(moved) == 50 and len(new) == 2
    assert [line for line in echoed if line in moved] == moved, "every line of the moved file, once, in order"
    assert [line for line in echoed if line in new] == new
