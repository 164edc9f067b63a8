"""nvidia-smi as a GPU source: the query commands, a parser that never raises, and
the streaming reader (used for remote hosts, where NVML cannot reach).

Two long-running queries per host, each printing a CSV batch every interval:

    nvidia-smi --query-gpu=index,name,uuid,memory.used,memory.total,utilization.gpu,
               temperature.gpu,power.draw,power.limit --format=csv,noheader,nounits -lms 1000
    nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory,process_name --format=csv,noheader,nounits -lms 1000

The GPU query prints one row per GPU: a batch ends when the index starts over, or
once it has as many rows as the last complete batch (no waiting for the next
one), or after a short quiet spell. The compute-apps query prints nothing at all
when no process holds a GPU, so processes expire when they have not been listed
for a few intervals.

Lines come from any :data:`tui.sources.gpu.CommandLines` — a local subprocess
(:func:`local_lines`) or the SSH module's remote command — and the pair of
queries is restarted with backoff whenever either stream of GPU rows ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import replace

from tui.core.events import GpuInfo, GpuProcess, GpuSample, GpuUnavailable
from tui.sources.gpu import CommandLines, GpuEvent, GpuSource
from tui.sources.nvml import MISMATCH
from tui.sources.ssh import RemoteCommandError, SshError

GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "memory.used",
    "memory.total",
    "utilization.gpu",
    "temperature.gpu",
    "power.draw",
    "power.limit",
)
APP_FIELDS = ("gpu_uuid", "pid", "used_memory", "process_name")
MIB = 1 << 20
_UNITS = ("MiB", "MB", "%", "W", "C")


def _query(what: str, fields: Sequence[str], interval: float) -> list[str]:
    return [
        "nvidia-smi",
        f"--{what}={','.join(fields)}",
        "--format=csv,noheader,nounits",
        "-lms",
        str(max(1, round(interval * 1000))),
    ]


def gpu_query(interval: float = 1.0) -> list[str]:
    """argv of the long-running per-GPU query."""
    return _query("query-gpu", GPU_FIELDS, interval)


def apps_query(interval: float = 1.0) -> list[str]:
    """argv of the long-running compute-processes query."""
    return _query("query-compute-apps", APP_FIELDS, interval)


# ---------------------------------------------------------------- parsing


def _value(text: str) -> str | None:
    """A cell, or None for the many ways nvidia-smi says "unknown"."""
    text = text.strip()
    if not text or text.startswith("[") or text.upper() in ("N/A", "NA", "UNKNOWN", "ERR!"):
        return None
    return text


def _number(text: str | None, scale: float = 1.0) -> float | None:
    if text is None:
        return None
    for unit in _UNITS:  # tolerate output without `nounits`
        if text.endswith(unit):
            text = text[: -len(unit)].strip()
            break
    try:
        value = float(text) * scale
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _int(text: str | None, scale: float = 1.0) -> int | None:
    value = _number(text, scale)
    return int(value) if value is not None else None


def parse_gpu_line(line: str) -> GpuInfo | None:
    """One ``--query-gpu`` row (fields in ``GPU_FIELDS`` order); None if it is not one.

    Missing or unknown cells (``[N/A]``, ``[Not Supported]``, ``N/A``, garbage) are None.
    """
    cells = [c.strip() for c in line.strip().split(",")]
    index = cells[0] if cells else ""
    if not (index.isascii() and index.isdigit()):
        return None
    cells += [""] * (len(GPU_FIELDS) - len(cells))
    values = [_value(c) for c in cells[: len(GPU_FIELDS)]]
    lost = any("lost" in c.lower() for c in cells[1:] if c.startswith("["))
    return GpuInfo(
        index=int(index),
        name=values[1],
        uuid=values[2],
        memory_used=_int(values[3], MIB),
        memory_total=_int(values[4], MIB),
        utilization=_int(values[5]),
        temperature=_int(values[6]),
        power_w=_number(values[7]),
        power_limit_w=_number(values[8]),
        error="GPU is lost" if lost else None,
    )


def parse_app_line(line: str) -> tuple[str, GpuProcess] | None:
    """One ``--query-compute-apps`` row: (gpu uuid, process); None if it is not one."""
    cells = [c.strip() for c in line.strip().split(",", len(APP_FIELDS) - 1)]
    if len(cells) < 2:
        return None
    uuid, pid = _value(cells[0]), cells[1]
    if uuid is None or not (pid.isascii() and pid.isdigit()):
        return None
    used = _int(_value(cells[2]), MIB) if len(cells) > 2 else None
    name = (_value(cells[3]) or "") if len(cells) > 3 else ""
    return uuid, GpuProcess(int(pid), used, name)


def describe_message(line: str) -> str:
    """What a non-CSV line from nvidia-smi means, in words."""
    text = line.strip()
    if "mismatch" in text.lower():
        return MISMATCH
    return f"nvidia-smi: {text}"


# ---------------------------------------------------------------- batches


class _Batches:
    """GPU rows in, complete batches (one row per GPU) out."""

    def __init__(self) -> None:
        self.rows: list[GpuInfo] = []
        self.size = 0  # rows in the last complete batch (0: not known yet)
        self.known: dict[int, GpuInfo] = {}  # the GPUs seen so far, to mark the silent ones

    def add(self, gpu: GpuInfo, note: str | None = None) -> list[tuple[GpuInfo, ...]]:
        done = []
        if self.rows and gpu.index <= self.rows[-1].index:
            done.append(self.take(note))
        self.rows.append(gpu)
        if self.size and len(self.rows) >= self.size:
            done.append(self.take())
        return done

    def take(self, note: str | None = None) -> tuple[GpuInfo, ...]:
        rows, self.rows = self.rows, []
        if len(rows) >= self.size:
            self.size = len(rows)
        present = {g.index for g in rows}
        for gpu in rows:
            self.known[gpu.index] = gpu
        # A GPU that stopped being listed (nvidia-smi printed an error line instead) is
        # marked, with what it last said, rather than silently dropped from the panel.
        missing = [
            GpuInfo(i, name=g.name, uuid=g.uuid, memory_total=g.memory_total, error=note or "no data from nvidia-smi")
            for i, g in self.known.items()
            if i not in present
        ]
        return tuple(sorted(rows + missing, key=lambda g: g.index))


class _Processes:
    """The compute-apps table; rows expire when nvidia-smi stops listing them."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._rows: dict[tuple[str, int], tuple[GpuProcess, float]] = {}

    def add(self, uuid: str, proc: GpuProcess, now: float) -> None:
        self._rows[(uuid, proc.pid)] = (proc, now)

    def clear(self) -> None:
        self._rows.clear()

    def attach(self, gpus: tuple[GpuInfo, ...], now: float) -> tuple[GpuInfo, ...]:
        self._rows = {k: v for k, v in self._rows.items() if now - v[1] <= self.ttl}
        by_uuid: dict[str, list[GpuProcess]] = {}
        for (uuid, _pid), (proc, _seen) in sorted(self._rows.items(), key=lambda kv: kv[0][1]):
            by_uuid.setdefault(uuid, []).append(proc)
        out = []
        for gpu in gpus:
            procs = by_uuid.get(gpu.uuid or "")
            out.append(replace(gpu, processes=tuple(procs)) if procs else gpu)
        return tuple(out)


# ---------------------------------------------------------------- line sources


class SmiError(Exception):
    """nvidia-smi could not run or stopped; ``str()`` is one line."""


class SmiMissing(SmiError):
    """No nvidia-smi to run (no NVIDIA driver on the host): retrying cannot make one appear."""


#: The shell's exit status for a command it cannot find (a remote ``nvidia-smi`` that is not there).
NOT_FOUND = 127


async def local_lines(argv: Sequence[str]) -> AsyncGenerator[str, None]:
    """Lines of a local command (a :data:`CommandLines`); the process dies with the iterator."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=1 << 20,
            start_new_session=True,  # its own process group: a wrapper script dies with its children
        )
    except FileNotFoundError:
        raise SmiMissing(f"{argv[0]} not found on PATH: no NVIDIA driver on this machine") from None
    except OSError as exc:
        raise SmiError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    stderr: list[str] = []
    assert proc.stdout is not None and proc.stderr is not None  # both piped above

    async def drain_stderr() -> None:  # read it, or a chatty stderr would stall stdout
        assert proc.stderr is not None
        async for raw in proc.stderr:
            stderr.append(raw.decode("utf-8", "replace").strip())
            del stderr[:-5]

    errors = asyncio.ensure_future(drain_stderr())
    try:
        while True:
            try:
                raw = await proc.stdout.readline()
            except ValueError:  # a line over the limit: skip it, it is not a CSV row
                continue
            if not raw:
                break
            yield raw.decode("utf-8", "replace").rstrip("\r\n")
        status = await proc.wait()
        with contextlib.suppress(asyncio.TimeoutError):
            async with asyncio.timeout(1):
                await asyncio.shield(errors)
        if status != 0:
            last = next((s for s in reversed(stderr) if s), "")
            raise SmiError(f"{argv[0]} exited with status {status}" + (f": {last}" if last else ""))
    finally:
        errors.cancel()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.returncode is None:
            with contextlib.suppress(asyncio.CancelledError):
                await proc.wait()


# ---------------------------------------------------------------- the source


class SmiSource(GpuSource):
    """GPU samples from the two nvidia-smi queries, restarted with backoff when they stop."""

    kind = "nvidia-smi"

    def __init__(
        self,
        host: str = "localhost",
        interval: float = 1.0,
        *,
        command_lines: CommandLines = local_lines,
        initial_backoff: float = 1.0,
        max_backoff: float = 30.0,
    ) -> None:
        self.host = host
        self.interval = interval
        self._lines = command_lines
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._closed = asyncio.Event()

    async def close(self) -> None:
        self._closed.set()

    async def samples(self) -> AsyncIterator[GpuEvent]:
        backoff = self._initial_backoff
        while not self._closed.is_set():
            stream = self._stream()
            try:
                async for event in stream:
                    backoff = self._initial_backoff  # it works: the next failure starts over
                    yield event
                reason = "nvidia-smi stopped"
            except asyncio.CancelledError:
                raise
            except SshError as exc:
                if exc.permanent:  # host key, known_hosts, authentication: a setting to fix, not to retry
                    yield GpuUnavailable(self.host, _reason(exc))
                    return
                reason = _reason(exc)
            except SmiMissing as exc:  # said once, as NVML's missing library is: no retry loop
                yield GpuUnavailable(self.host, _reason(exc))
                return
            except RemoteCommandError as exc:
                if exc.status == NOT_FOUND:
                    yield GpuUnavailable(self.host, f"nvidia-smi not found on {self.host}: no NVIDIA driver there")
                    return
                reason = _reason(exc)
            except Exception as exc:  # the line source failed: SSH lost, command missing, ...
                reason = _reason(exc)
            finally:
                await stream.aclose()
            if self._closed.is_set():
                break
            yield GpuUnavailable(self.host, f"{reason} (retrying in {backoff:g} s)")
            try:
                async with asyncio.timeout(backoff):
                    await self._closed.wait()
            except TimeoutError:
                pass
            backoff = min(backoff * 2, self._max_backoff)

    async def _stream(self) -> AsyncGenerator[GpuSample, None]:
        """One run of both queries: samples until the GPU query stops (then returns or raises)."""
        queue: asyncio.Queue[tuple[str, str | BaseException | None]] = asyncio.Queue(maxsize=1024)

        async def pump(kind: str, argv: list[str]) -> None:
            try:
                async with contextlib.aclosing(self._lines(argv)) as lines:
                    async for line in lines:
                        await queue.put((kind, line))
                await queue.put((kind, None))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await queue.put((kind, exc))

        closed = asyncio.ensure_future(self._closed.wait())
        tasks = [
            asyncio.ensure_future(pump("gpu", gpu_query(self.interval))),
            asyncio.ensure_future(pump("apps", apps_query(self.interval))),
        ]
        batches = _Batches()
        procs = _Processes(ttl=max(2.5 * self.interval, self.interval + 1.0))
        message: str | None = None  # the last non-CSV line nvidia-smi printed
        quiet = min(0.25, self.interval / 2)  # a started batch is complete after this long
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait(
                    {getter, closed}, timeout=quiet if batches.rows else None, return_when=asyncio.FIRST_COMPLETED
                )
                if getter not in done:
                    getter.cancel()
                    if closed in done:
                        return
                    yield self._sample(batches.take(message), procs)
                    continue
                kind, item = getter.result()
                if isinstance(item, str):
                    if kind == "gpu":
                        gpu = parse_gpu_line(item)
                        if gpu is None:
                            if item.strip():
                                message = describe_message(item)
                            continue
                        for batch in batches.add(gpu, message):
                            yield self._sample(batch, procs)
                    else:
                        row = parse_app_line(item)
                        if row is not None:
                            procs.add(*row, time.monotonic())
                        elif "no running processes" in item.lower():
                            procs.clear()
                    continue
                if kind == "apps":
                    continue  # processes stay unknown (expire); the GPU rows still count
                if batches.rows:
                    yield self._sample(batches.take(message), procs)
                if isinstance(item, BaseException):
                    if message is not None and isinstance(item, SmiError):
                        raise SmiError(message) from item  # what nvidia-smi said beats its exit status
                    raise item
                if message is not None:
                    raise SmiError(message)
                return
        finally:
            closed.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _sample(self, gpus: tuple[GpuInfo, ...], procs: _Processes) -> GpuSample:
        return GpuSample(self.host, time.time(), procs.attach(gpus, time.monotonic()))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
