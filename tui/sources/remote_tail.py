"""Follow a log on another host over SSH, with the local tailer's guarantees.

A small standard-library agent (:mod:`tui.sources.tail_agent`) runs on the remote host as
``python3 -c <program> <args>`` — the program is a fixed, base64-wrapped text and every
argument is shell-quoted, so a path with spaces or quotes is just a path and nothing from a
log or a file name is ever executed. The agent sleeps on inotify where the remote kernel
has it (it wakes within a millisecond of an append and costs nothing while the log is quiet),
else polls (5 ms after a change, backing off to ``poll_max``), and writes framed messages
that map one to one onto LogChunk / LogGap / LogRestart / LogWaiting.

After a dropped connection the tailer reconnects with exponential backoff and starts a new
agent in ``resume`` mode with the file identity (device, inode), the offset of the next byte
to deliver and the last bytes delivered: the agent continues that very file at that offset
(found again in its directory if it was rotated meanwhile), so no byte is delivered twice or
skipped. What the file lost while we were away (truncation, deletion) is reported as the
local tailer reports it.
"""

from __future__ import annotations

import asyncio
import base64
import shlex
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path

import asyncssh

from tui.core.events import ConnectionState, LogChunk, LogGap, LogRestart, LogWaiting
from tui.sources.ssh import Backoff, SshError, SshTarget, connection, is_connected, lost_reason

RemoteEvent = LogChunk | LogGap | LogRestart | LogWaiting | ConnectionState

_AGENT = Path(__file__).with_name("tail_agent.py").read_text()
_MAGIC = b"WATCHTOWER-TAIL 1\n"
#: The remote program: the agent's source, compressed, run as ``__main__``.
_PROGRAM = "import base64,zlib;exec(zlib.decompress(base64.b64decode(%r)))" % (
    base64.b64encode(zlib.compress(_AGENT.encode(), 9)).decode()
)
#: Bytes a login script may print before the agent starts, skipped while looking for the magic.
_PREAMBLE_LIMIT = 64 * 1024


class _Position:
    """What was delivered so far: enough for a new agent to resume exactly after it."""

    def __init__(self) -> None:
        self.ident: tuple[int, int] | None = None
        self.offset = 0
        self.recent = b""

    def args(self) -> list[str]:
        dev, ino = self.ident or (0, 0)
        return [str(dev), str(ino), str(self.offset), self.recent.hex() or "-"]


class RemoteTailer:
    """Async producer of one remote log's events, plus ConnectionState events.

    Same event semantics as :class:`tui.sources.local.LocalTailer`; ``from_end=True``
    skips what the file holds when the tailer starts. ``target`` may be a ``--host``
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
        self._process: asyncssh.SSHClientProcess | None = None

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
            await asyncio.wait_for(self._stop.wait(), delay)
        except asyncio.TimeoutError:
            pass

    def command(self) -> str:
        """The remote command line that starts the agent (every word quoted)."""
        if self._pos.ident is not None:
            mode = "resume"
        elif self._from_end and not self._attached:
            mode = "end"
        else:
            mode = "begin"
        argv = [self._python, "-c", _PROGRAM, self.path, mode, *self._pos.args(), str(self._poll_ms)]
        return shlex.join(argv)

    async def events(self) -> AsyncIterator[RemoteEvent]:
        host = str(self.target)
        while not self._closed:
            if not is_connected(self.target):
                yield ConnectionState(host, "connecting")
            try:
                conn = await connection(self.target)
            except SshError as exc:
                if exc.permanent:
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

    async def _follow(self, conn: asyncssh.SSHClientConnection) -> AsyncIterator[RemoteEvent | str]:
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
        reader = process.stdout
        try:
            if not await self._skip_preamble(reader):
                if problem := await self._exit_problem(process, errors, stderr):
                    yield f"{self.target}: cannot run the tail agent with {self._python} {problem}"
                return
            self._attached = True
            self._backoff.reset()
            while not self._closed:
                header = await reader.readuntil(b"\n")
                event = await self._frame(header, reader)
                self.attached.set()  # the agent's first frame says it has opened or missed the file
                if event is not None:
                    yield event
        except (asyncio.IncompleteReadError, asyncssh.Error, OSError, ValueError):
            if not self._closed and (problem := await self._exit_problem(process, errors, stderr)):
                yield f"{self.target}: the tail agent failed {problem}"
        finally:
            errors.cancel()
            process.close()
            self._process = None

    @staticmethod
    async def _exit_problem(process: asyncssh.SSHClientProcess, errors: asyncio.Future, stderr: bytearray) -> str:
        """Why the agent ended, when it exited by itself ("" when the connection went away)."""
        await asyncio.wait({errors}, timeout=2)
        try:
            await asyncio.wait_for(process.wait_closed(), 5)
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

    async def _skip_preamble(self, reader: asyncssh.SSHReader) -> bool:
        skipped = 0
        try:
            while skipped < _PREAMBLE_LIMIT:
                line = await reader.readuntil(b"\n")
                if line.endswith(_MAGIC):
                    return True
                skipped += len(line)
        except (asyncio.IncompleteReadError, asyncssh.Error, OSError):
            pass
        return False

    async def _frame(self, header: bytes, reader: asyncssh.SSHReader) -> RemoteEvent | None:
        kind, _, rest = header.rstrip(b"\n").decode("utf-8", "replace").partition(" ")
        pos = self._pos
        if kind == "D":
            offset, size = map(int, rest.split())
            data = await reader.readexactly(size)
            pos.offset = offset + size
            pos.recent = (pos.recent + data[-64:])[-64:]
            return LogChunk(self.source, offset, data, time.time())
        if kind == "I":
            dev, ino, offset, recent = rest.split()
            pos.ident = (int(dev), int(ino))
            pos.offset = int(offset)
            pos.recent = b"" if recent == "-" else bytes.fromhex(recent)
            return None
        if kind == "G":
            offset, size, reason = rest.split(" ", 2)
            return LogGap(self.source, int(offset), int(size), reason)
        if kind == "R":
            pos.offset, pos.recent = 0, b""
            return LogRestart(self.source, rest)
        if kind == "W":
            return LogWaiting(self.source, rest)
        raise ValueError(f"unexpected frame {header[:40]!r} from the tail agent")
