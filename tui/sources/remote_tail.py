"""Follow a log on another host over SSH, with the local tailer's guarantees.

A small standard-library agent (:mod:`tui.sources.tail_agent`) runs on the remote host as
``python3 -c <program>``: the program is a fixed, base64-wrapped text holding the agent and
the two modules it shares with the local side — the tail algorithm
(:mod:`tui.sources.follow`) and writer discovery (:mod:`tui.sources.procscan`) — so the
remote log is followed by the very code that follows a local one. Its configuration (the
path, the resume state) goes through stdin, never the command line. The agent sleeps on
inotify where the remote kernel has it, else polls (5 ms after a change, backing off to
``poll_max``), and writes framed messages that map one to one onto the log events, plus
its writer discovery's reports (``WritersFound``, ``WriterGone``, ``NoWriter``) and those writers' I/O
counters (``ReadCounters``: the weight load's bytes read there).

After a dropped connection the tailer reconnects with exponential backoff and starts a new
agent in ``resume`` mode with the file identity (device, inode), the offset of the next byte
to deliver and the last bytes delivered: the agent continues that very file at that offset
(found again in its directory if it was rotated meanwhile), so no byte is delivered twice or
skipped; the processes known before are checked again, and the ones that ended meanwhile
are reported gone. Every frame is capped: a hostile host cannot make the client allocate
without bound.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shlex
import time
import zlib
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import asyncssh

from tui.core.events import (
    ConnectionState,
    ReadCounters,
    LogChunk,
    LogGap,
    LogMoved,
    LogRestart,
    LogTruncated,
    LogWaiting,
)
from tui.sources.follow import CHUNK, delivered_ends
from tui.sources.ssh import Backoff, SshError, SshTarget, connection, is_connected, lost_reason, named
from tui.sources.writers import Converter, WriterEvent

RemoteEvent = LogChunk | LogGap | LogRestart | LogTruncated | LogWaiting | LogMoved | ConnectionState | WriterEvent | ReadCounters

_HERE = Path(__file__).parent
_SHARED = ("follow", "procscan")  # the modules the agent imports, shipped with it
_MAGIC = b"WATCHTOWER-TAIL 2\n"
#: What the agent's first line says on a Python too old to run it (it parses on any Python 3).
_OLD_PYTHON = "WATCHTOWER-OLD-PYTHON"
#: The oldest Python the agent runs on (tests/test_ssh_tail.py runs it on 3.6).
AGENT_PYTHON = (3, 6)
_BOOTSTRAP = (
    "import sys\n"
    f"if sys.version_info<{AGENT_PYTHON!r}:sys.stderr.write('{_OLD_PYTHON} %%s\\n'%%sys.version.split()[0]);sys.exit(3)\n"
    "import base64,json,sys,types,zlib\n"
    "src=json.loads(zlib.decompress(base64.b64decode(%r)).decode())\n"
    "pkg=sys.modules.setdefault('tui',types.ModuleType('tui'))\n"
    "sub=sys.modules.setdefault('tui.sources',types.ModuleType('tui.sources'))\n"
    "pkg.sources=sub\n"
    "for name in %r:\n"
    " mod=types.ModuleType('tui.sources.'+name)\n"
    " exec(compile(src[name],name+'.py','exec'),mod.__dict__)\n"
    " sys.modules['tui.sources.'+name]=mod\n"
    " setattr(sub,name,mod)\n"
    "exec(compile(src['tail_agent'],'tail_agent.py','exec'),{'__name__':'__main__'})\n"
)
#: The remote program: the agent and its shared modules, compressed, run as ``__main__``.
_PROGRAM = _BOOTSTRAP % (
    base64.b64encode(
        zlib.compress(
            json.dumps({n: (_HERE / f"{n}.py").read_text() for n in (*_SHARED, "tail_agent")}).encode(), 9
        )
    ).decode(),
    _SHARED,
)
def _python_cause(python: str, status: int | None, problem: str) -> str:
    """`` PROBLEM``, led by the cause where it is the interpreter: none there, or one too old."""
    need = ".".join(map(str, AGENT_PYTHON))
    old = re.search(_OLD_PYTHON + r" (\S+)", problem)
    if old is not None:
        return f": it is Python {old.group(1)} there, older than the {need} the tail agent needs"
    lowered = problem.lower()
    if status == 127 or "not found" in lowered or "no such file" in lowered:
        return f": there is no {python} on that host (the tail agent needs Python {need} or newer there) {problem}"
    return f" {problem}"


#: How often the reader acknowledges the data it took in (the agent's WINDOW is 4 MiB).
ACK_EVERY = 1 << 20
#: Bytes a login script may print before the agent starts, skipped while looking for the magic.
_PREAMBLE_LIMIT = 64 * 1024
#: Caps on what the agent may send: a header line, a chunk of log bytes, a writer report.
MAX_HEADER, MAX_DATA, MAX_REPORT = 64 * 1024, CHUNK, 4 * 2**20


class FrameError(ValueError):
    """The agent sent something that is not a frame (or one over its cap)."""


class _Frames:
    """Bounded reads from the agent's stdout: a line of at most ``limit`` bytes, or exactly n."""

    def __init__(self, reader: asyncssh.SSHReader[bytes]) -> None:
        self._reader = reader
        self._buf = bytearray()

    async def _more(self) -> None:
        piece = await self._reader.read(256 * 1024)
        if not piece:
            raise asyncio.IncompleteReadError(bytes(self._buf), None)
        self._buf += piece

    async def line(self, limit: int = MAX_HEADER) -> bytes:
        start = 0
        while (end := self._buf.find(b"\n", start)) < 0:
            if len(self._buf) > limit:
                raise FrameError(f"a frame header over {limit} bytes from the tail agent")
            start = len(self._buf)
            await self._more()
        if end >= limit:
            raise FrameError(f"a frame header over {limit} bytes from the tail agent")
        out = bytes(self._buf[: end + 1])
        del self._buf[: end + 1]
        return out

    async def exactly(self, size: int, limit: int) -> bytes:
        if not 0 <= size <= limit:
            raise FrameError(f"a frame of {size} bytes from the tail agent (at most {limit})")
        while len(self._buf) < size:
            await self._more()
        out = bytes(self._buf[:size])
        del self._buf[:size]
        return out


class _Position:
    """What was delivered so far: enough for a new agent to resume exactly after it."""

    def __init__(self) -> None:
        self.ident: tuple[int, int] | None = None
        self.offset = 0
        self.recent = b""  # the last CHECK bytes delivered
        self.head = b""  # the first CHECK bytes of the file as delivered (a resume's truncation check)


class RemoteTailer:
    """Async producer of one remote log's events, plus ConnectionState events.

    Same event semantics as :class:`tui.sources.local.LocalTailer`; ``from_end=True``
    skips what the file holds when the tailer starts. With ``writers`` the agent also
    reports the processes writing the log (as :class:`tui.sources.writers.WriterSource`
    does locally), and their I/O counters (``ReadCounters``); with ``reads`` only the counters (a
    launch knows its own processes). ``target`` may be a ``--host``
    string (``SshTargetError``, a ValueError, if it is not one). ``source`` defaults to
    ``"host:path"``.
    """

    def __init__(
        self,
        target: SshTarget | str,
        path: str,
        *,
        from_end: bool = False,
        source: str | None = None,
        python: str = "python3",
        poll_max: float = 0.05,
        initial_backoff: float = 0.5,
        max_backoff: float = 30.0,
        writers: bool = False,
        reads: bool = False,
    ) -> None:
        if not path:
            raise ValueError("empty remote path")
        self.target = SshTarget.parse(target) if isinstance(target, str) else target
        self.path = path
        self.source = source if source is not None else f"{target}:{path}"
        self._from_end = from_end
        self._python = python
        self._poll_ms = max(5, int(poll_max * 1000))
        self._backoff = Backoff(initial_backoff, max_backoff)
        self._pos = _Position()
        self._attached = False  # an agent has run: later files are read whole, later runs resume
        #: Set once a remote agent is following the path (or waiting for it to appear).
        self.attached = asyncio.Event()
        self._closed = False
        self._stop = asyncio.Event()
        self._process: asyncssh.SSHClientProcess[bytes] | None = None
        self._writers = writers
        self._reads = reads  # the writers' I/O counters alone (a launch knows its processes itself)
        self._convert = Converter(self.source, str(self.target))

    @property
    def offset(self) -> int:
        """Offset in the current remote file of the next byte to be delivered."""
        return self._pos.offset

    async def close(self) -> None:
        """Stop: ``events()`` ends promptly (the remote agent is stopped too)."""
        self._closed = True
        self._stop.set()
        if self._process is not None:
            self._process.close()

    async def _pause(self, delay: float) -> None:
        """Sleep before retrying; ``close()`` cuts it short."""
        try:
            async with asyncio.timeout(delay):
                await self._stop.wait()
        except asyncio.TimeoutError:
            pass

    def command(self) -> str:
        """The remote command line that starts the agent: a fixed program, nothing else
        (the path and the resume state go through stdin: :meth:`config`)."""
        return shlex.join([self._python, "-c", _PROGRAM])

    def config(self) -> dict[str, Any]:
        """The agent's configuration, sent as one JSON line on its stdin."""
        pos = self._pos
        if pos.ident is not None:
            mode = "resume"
        elif self._from_end and not self._attached:
            mode = "end"
        else:
            mode = "begin"
        config: dict[str, Any] = {"path": self.path, "mode": mode, "poll_ms": self._poll_ms,
                                  "writers": self._writers or self._reads}
        if pos.ident is not None:
            config["resume"] = [pos.ident[0], pos.ident[1], pos.offset, pos.recent.hex() or "-", pos.head.hex() or "-"]
        if self._convert.known:  # a new agent checks them again, and reports those gone meanwhile
            config["known"] = [[pid, info.get("ticks")] for pid, info in self._convert.known.items()]
            config["main"] = self._convert.main
        return config

    async def events(self) -> AsyncIterator[RemoteEvent]:
        host = await named(self.target)  # "n3 (127.0.0.3:2343)": the alias and where it leads
        while not self._closed:
            if not is_connected(self.target):
                yield ConnectionState(host, "connecting")
            try:
                conn = await connection(self.target)
            except SshError as exc:
                if exc.permanent or (exc.unresolved and not self._attached):  # (a name never reached: a typo)
                    delay = self._backoff.cap
                    yield ConnectionState(host, "refused", str(exc), retry_in=delay)
                else:
                    delay = self._backoff.next()
                    yield ConnectionState(host, "retrying", str(exc), retry_in=delay)
                await self._pause(delay)
                continue
            yield ConnectionState(host, "connected")
            problem = None
            async with aclosing(self._follow(conn)) as items:
                async for item in items:
                    if isinstance(item, str):
                        problem = item
                    else:
                        yield item
            if self._closed:
                break
            if problem is None:  # the channel or the connection went away
                await asyncio.sleep(0)  # let the connection's own close callback run first
                why = lost_reason(self.target) if not is_connected(self.target) else "channel closed"
                reason = f"{host}: connection lost" + (f" ({why})" if why.lower() not in ("", "connection lost") else "")
                yield ConnectionState(host, "lost", reason)
                delay = self._backoff.next()
                yield ConnectionState(host, "retrying", reason, retry_in=delay)
            else:  # the agent could not run or failed there (no python3, ...): say so, retry
                yield LogWaiting(self.source, problem)
                delay = self._backoff.next()
            await self._pause(delay)

    async def _follow(self, conn: asyncssh.SSHClientConnection) -> AsyncGenerator[RemoteEvent | str, None]:
        """Run one agent; yields events, and a str if it failed for a reason worth showing."""
        try:
            process = await conn.create_process(self.command(), encoding=None)
        except (asyncssh.Error, OSError):
            return
        self._process = process
        stderr = bytearray()

        async def collect_stderr() -> None:  # read it, or a chatty stderr would stall stdout
            while chunk := await process.stderr.read(4096):
                stderr.extend(chunk)
                del stderr[:-4096]

        errors = asyncio.ensure_future(collect_stderr())
        frames = _Frames(process.stdout)
        try:
            process.stdin.write(json.dumps(self.config()).encode() + b"\n")
            if not await self._skip_preamble(frames):
                if problem := await self._exit_problem(process, errors, stderr):
                    yield f"{self.target}: cannot run the tail agent with {self._python}" + _python_cause(
                        self._python, process.exit_status, problem)
                return
            self._attached = True
            self._backoff.reset()
            taken = acked = 0  # bytes of data taken in (by whoever reads these events), acknowledged
            while not self._closed:
                header = await frames.line()
                events = await self._frame(header, frames)
                self.attached.set()  # the agent's first frame says it has opened or missed the file
                for event in events:
                    yield event
                if header.startswith(b"D "):  # taken in: the consumer handled it before asking for more
                    taken += int(header.split(b" ", 3)[2])
                    if taken - acked >= ACK_EVERY:  # back-pressure: the agent sends WINDOW ahead at most
                        acked = taken
                        process.stdin.write(b"A %d\n" % taken)
        except (asyncio.IncompleteReadError, asyncssh.Error, OSError, ValueError) as exc:
            if isinstance(exc, FrameError):
                yield f"{self.target}: {exc}"
            elif not self._closed and (problem := await self._exit_problem(process, errors, stderr)):
                yield f"{self.target}: the tail agent failed {problem}"
        finally:
            errors.cancel()
            process.close()
            self._process = None

    @staticmethod
    async def _exit_problem(
        process: asyncssh.SSHClientProcess[bytes], errors: asyncio.Future[None], stderr: bytearray
    ) -> str:
        """Why the agent ended, when it exited by itself ("" when the connection went away)."""
        await asyncio.wait({errors}, timeout=2)
        try:
            async with asyncio.timeout(5):
                await process.wait_closed()
        except asyncio.TimeoutError:
            return ""
        text = " ".join(stderr.decode("utf-8", "replace").split())[-300:]
        if process.exit_status is not None:
            how = f"status {process.exit_status}"
        elif process.exit_signal is not None:
            how = f"killed by SIG{process.exit_signal[0]}"
        else:
            return ""
        return f"({how})" + (f": {text}" if text else "")

    @staticmethod
    async def _skip_preamble(frames: _Frames) -> bool:
        skipped = 0
        try:
            while skipped < _PREAMBLE_LIMIT:
                line = await frames.line(_PREAMBLE_LIMIT)
                if line.endswith(_MAGIC):
                    return True
                skipped += len(line)
        except (asyncio.IncompleteReadError, asyncssh.Error, OSError, FrameError):
            pass
        return False

    def _where(self, origin: str | None) -> str:
        return self.source if origin is None else f"{self.target}:{origin}"

    async def _frame(self, header: bytes, frames: _Frames) -> list[RemoteEvent]:
        """The events of one frame (its payload read from ``frames``); FrameError if it is none."""
        try:
            kind, _, rest = header.rstrip(b"\n").decode("ascii").partition(" ")
            return await self._parse(kind, rest, frames)
        except (UnicodeDecodeError, ValueError, TypeError, KeyError, IndexError) as exc:
            if isinstance(exc, FrameError):
                raise
            raise FrameError(f"unexpected frame {header[:40]!r} from the tail agent") from None

    async def _parse(self, kind: str, rest: str, frames: _Frames) -> list[RemoteEvent]:
        pos = self._pos
        if kind == "D":
            offset_text, size_text, *origin = rest.split(" ", 2)
            offset, size = int(offset_text), int(size_text)
            data = await frames.exactly(size, MAX_DATA)
            where = json.loads(origin[0]) if origin else None
            if where is None:
                pos.head, pos.recent = delivered_ends(pos.head, pos.recent, offset, data)
                pos.offset = offset + size
            return [LogChunk(self._where(where), offset, data, time.time())]
        if kind == "I":
            dev, ino, offset_text, recent, head = rest.split()
            pos.ident = (int(dev), int(ino))
            pos.offset = int(offset_text)
            pos.recent = b"" if recent == "-" else bytes.fromhex(recent)
            pos.head = b"" if head == "-" else bytes.fromhex(head)
            return []
        if kind == "G":
            offset_text, size_text, words = rest.split(" ", 2)
            reason, origin = json.loads(words)
            return [LogGap(self._where(origin), int(offset_text), int(size_text), str(reason))]
        if kind == "T":
            size_text, lines = rest.split()
            pos.offset, pos.recent = int(size_text), b""
            if not pos.offset:  # (cut to a smaller size, it kept its first bytes: that is how it was told)
                pos.head = b""
            return [LogTruncated(self.source, int(size_text), int(lines))]
        if kind == "R":
            pos.ident, pos.offset, pos.recent, pos.head = None, 0, b"", b""
            return [LogRestart(self.source, str(json.loads(rest)))]
        if kind == "W":
            return [LogWaiting(self.source, str(json.loads(rest)))]
        if kind == "M":
            moved_to, pids, done = json.loads(rest)
            where = moved_to if moved_to is not None else f"{self.path} (deleted)"
            return [LogMoved(self.source, f"{self.target}:{where}", tuple(int(p) for p in pids), bool(done))]
        if kind == "P":
            items = json.loads(await frames.exactly(int(rest), MAX_REPORT))
            events = self._convert.events(items)
            return list(events) if self._writers else []
        if kind == "C":  # the writers' I/O counters: the weight load's bytes read there
            items = json.loads(await frames.exactly(int(rest), MAX_REPORT))
            counters = tuple((int(pid), int(rchar), int(read)) for pid, rchar, read in items)
            return [ReadCounters(self.source, str(self.target), time.time(), counters)] if counters else []
        raise FrameError(f"unexpected frame {kind[:20]!r} from the tail agent")
