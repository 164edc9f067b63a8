"""Recordings of a startup (log bytes and GPU samples with their times) and their replay.

A recording is one gzip'd JSON-lines file: a header object, then one record per
event, each with ``t`` (seconds since the recording started):

    {"format": "watchtower-recording", "version": 1, "host": ..., "log": ..., "title": ...}
    {"t": 0.51, "log": "text appended to the log"}          (valid UTF-8)
    {"t": 0.52, "logb": "base64 of bytes"}                   (anything else)
    {"t": 3.0, "restart": "rotated"}                         (the log was replaced)
    {"t": 3.5, "truncate": 0, "lines": 0}                    (the log was cut to this size)
    {"t": 3.6, "gap": "why", "offset": 0, "bytes": 0, "files": 2}  (bytes or whole files lost unread)
    {"t": 1.0, "gpu": [[index, name, used, total, util, temp, power, limit], ...]}
    {"t": 1.0, "gpu_unavailable": "why"}
    {"t": 95.0, "end": true}

The writer flushes the compressed stream after every record (a zlib sync flush), so a
recording cut short — the recorder killed, the disk full — is still valid up to its last
record: ``load`` reads it and says it was cut (``Recording.cut``).

A replay goes through the same path as live use: :class:`Replay` writes the log
records into a real file (that the real local tailer follows) at the recorded pace
divided by ``speed``, and is itself the GPU source, yielding ``GpuSample`` events.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import io
import json
import os
import tempfile
import time
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from tui.core.events import GpuInfo, GpuSample, GpuUnavailable, LogGap
from tui.core.files import RECORDING_LIMIT, read_bytes
from tui.core.secrets import LogMasker

FORMAT = "watchtower-recording"
VERSION = 1


class RecordingError(Exception):
    """A file that is not a readable Watchtower recording (message is one line)."""


# ---------------------------------------------------------------- writing


def gpu_row(gpu: GpuInfo) -> list[Any]:
    return [
        gpu.index,
        gpu.name,
        gpu.memory_used,
        gpu.memory_total,
        gpu.utilization,
        gpu.temperature,
        gpu.power_w,
        gpu.power_limit_w,
    ]


def gpu_from_row(row: list[Any]) -> GpuInfo:
    index, name, used, total, util, temp, power, limit = (list(row) + [None] * 8)[:8]
    return GpuInfo(
        index=int(index),
        name=name,
        memory_used=used,
        memory_total=total,
        utilization=util,
        temperature=temp,
        power_w=power,
        power_limit_w=limit,
    )


class RecordingWriter:
    """Appends records to a recording file; ``t`` is measured from the first record. Secrets in
    the log (by shape and by name) are stored as ``*`` bytes: offsets and line numbers stay true."""

    def __init__(self, path: str | os.PathLike[str], **header: Any) -> None:
        self.path = Path(path)
        try:
            raw = open(self.path, "wb")
        except OSError as exc:
            raise RecordingError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        # mtime=0: the same recording gives the same bytes (the bundled demos are generated).
        self._raw = raw
        self._file: TextIO = io.TextIOWrapper(gzip.GzipFile(fileobj=raw, mode="wb", mtime=0), encoding="utf-8")
        self._t0: float | None = None
        self.records = 0
        self.bytes_written = 0
        self._masker = LogMasker()
        self._write({"format": FORMAT, "version": VERSION, **header})

    def _t(self, at: float) -> float:
        if self._t0 is None:
            self._t0 = at
        return round(max(0.0, at - self._t0), 4)

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file.flush()  # through gzip's sync flush to the file: a cut recording stays readable
        self.bytes_written = self._raw.tell()

    def log(self, at: float, data: bytes) -> None:
        data = self._masker.feed(data)
        if data:
            self._log(at, data)

    def _log(self, at: float, data: bytes) -> None:
        try:
            record: dict[str, Any] = {"t": self._t(at), "log": data.decode("utf-8")}
        except UnicodeDecodeError:
            record = {"t": self._t(at), "logb": base64.b64encode(data).decode("ascii")}
        self._write(record)
        self.records += 1

    def restart(self, at: float, reason: str) -> None:
        self._flush_log(at)
        self._write({"t": self._t(at), "restart": reason})
        self.records += 1

    def truncate(self, at: float, size: int, lines: int) -> None:
        self._write({"t": self._t(at), "truncate": size, "lines": lines})
        self.records += 1

    def gap(self, at: float, gap: LogGap) -> None:
        """Log bytes or whole files that came and went unread (a log re-created faster than it is
        read): kept, so that a replay says the gap the live watch said, in its place."""
        self._flush_log(at)
        self._write({"t": self._t(at), "gap": gap.reason, "offset": gap.offset, "bytes": gap.nbytes, "files": gap.files})
        self.records += 1

    def gpu(self, at: float, gpus: tuple[GpuInfo, ...], simulated: bool = False) -> None:
        record: dict[str, Any] = {"t": self._t(at), "gpu": [gpu_row(g) for g in gpus]}
        if simulated:  # made up (--gpus sim, the demo): labelled as such when played back
            record["sim"] = True
        self._write(record)
        self.records += 1

    def gpu_unavailable(self, at: float, reason: str) -> None:
        self._write({"t": self._t(at), "gpu_unavailable": reason})
        self.records += 1

    def _flush_log(self, at: float) -> None:
        """The log's open last line, held back by the masker, goes in now."""
        if data := self._masker.flush():
            self._log(at, data)

    def close(self, at: float | None = None) -> None:
        if self._file.closed:
            return
        at = at if at is not None else time.time()
        self._flush_log(at)
        self._write({"t": self._t(at), "end": True})
        self._file.close()
        self._raw.close()


# ---------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class Recording:
    header: dict[str, Any]
    records: tuple[dict[str, Any], ...]
    cut: bool = False  # the file ends before the recording's end: valid up to its last record

    @property
    def duration(self) -> float:
        return float(self.records[-1]["t"]) if self.records else 0.0

    def log_bytes(self) -> bytes:
        """Every log byte of the recording's final file (after its last restart, as truncated)."""
        out = bytearray()
        for record in self.records:
            if "restart" in record:
                out.clear()
            elif "truncate" in record:
                del out[int(record["truncate"]) :]
            else:
                data = record_bytes(record)
                if data is not None:
                    out += data
        return bytes(out)


def gap_of(host: str, record: dict[str, Any]) -> LogGap:
    """A recorded gap record as the tailer said it live."""
    return LogGap(host, int(record.get("offset", 0)), int(record.get("bytes", 0)), str(record["gap"]),
                  files=int(record.get("files", 0)))


def record_bytes(record: dict[str, Any]) -> bytes | None:
    if "log" in record:
        return str(record["log"]).encode("utf-8")
    if "logb" in record:
        return base64.b64decode(record["logb"])
    return None


def load(path: str | os.PathLike[str]) -> Recording:
    """Read a recording; a clear one-line RecordingError for anything that is not one."""
    path = Path(path)
    try:
        raw = read_bytes(path, RECORDING_LIMIT)  # a regular file: not /dev/zero, not a FIFO
    except FileNotFoundError:
        raise RecordingError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise RecordingError(f"{path}: is a directory") from None
    except PermissionError:
        raise RecordingError(f"{path}: permission denied") from None
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    text, cut = _gunzip(path, raw)
    del raw
    lines = text.splitlines()
    if cut and lines and not text.endswith("\n"):
        lines.pop()  # the record the cut went through
    parsed = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise RecordingError(f"{path}: damaged recording (line {number}: {exc.msg})") from None
        except RecursionError:
            raise RecordingError(f"{path}: damaged recording (line {number}: nested too deeply)") from None
    if not parsed or not isinstance(parsed[0], dict) or parsed[0].get("format") != FORMAT:
        raise RecordingError(f"{path}: not a Watchtower recording (no header)")
    if int(parsed[0].get("version", 0)) > VERSION:
        raise RecordingError(f"{path}: recording format version {parsed[0]['version']} is newer than this watchtower")
    records = tuple(r for r in parsed[1:] if isinstance(r, dict) and "t" in r)
    for number, record in enumerate(records, 2):
        problem = _invalid(record)
        if problem:
            raise RecordingError(f"{path}: damaged recording (record {number}: {problem})")
    cut = cut or not any("end" in r for r in records[-1:])
    return Recording(parsed[0], records, cut)


MAX_TIME = 366 * 86400.0  # a record's ``t``: a year into the recording at most
MAX_EXPANDED = 256 << 20  # a recording's JSON once uncompressed: more is a gzip bomb, not a startup


def _invalid(record: dict[str, Any]) -> str | None:
    """What is wrong with one record (its time, a truncation size, a GPU row), or None."""
    t = record["t"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= MAX_TIME:  # nan fails too
        return f"time {t!r} is not a number of seconds between 0 and {MAX_TIME:.0f}"
    if "truncate" in record:
        size = record["truncate"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            return f"truncate {size!r} is not a size in bytes"
    if "gap" in record:
        sizes = [record.get(key, 0) for key in ("offset", "bytes", "files")]
        if not isinstance(record["gap"], str) or any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in sizes):
            return "gap is not a reason with an offset, bytes and files"
    if "gpu" in record:
        rows = record["gpu"]
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            return "gpu is not a list of rows"
        try:
            for row in rows:
                gpu_from_row(row)
        except (TypeError, ValueError, OverflowError):
            return "a gpu row is not [index, name, used, total, util, temp, power, limit]"
    for key in ("log", "logb"):
        if key in record and not isinstance(record[key], str):
            return f"{key} is not a string"
    return None


_PIECE = 16 << 20  # bytes inflated at a time


def _gunzip(path: Path, raw: bytes) -> tuple[str, bool]:
    """The text of a gzip'd recording, and whether the stream was cut short; refused past
    ``MAX_EXPANDED`` bytes uncompressed (decompressed with that cap: a bomb never inflates)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = bytearray()  # grown a piece at a time: never zlib's doubling of one huge buffer
        pending = raw
        while True:
            data += inflater.decompress(pending, _PIECE)
            if len(data) > MAX_EXPANDED:
                raise RecordingError(
                    f"{path}: expands past {MAX_EXPANDED >> 20} MiB uncompressed: refused (a gzip bomb, or not a startup's recording)"
                )
            pending = inflater.unconsumed_tail
            if not pending:
                break
        data += inflater.flush()
        text = data.decode("utf-8", errors="strict" if inflater.eof else "ignore")
    except (zlib.error, UnicodeDecodeError) as exc:
        raise RecordingError(f"{path}: not a Watchtower recording (gzip'd JSON lines): {exc}") from None
    return text, not inflater.eof


# ---------------------------------------------------------------- replaying


class Replay:
    """Plays a recording: writes its log into ``log_path`` and yields its GPU samples.

    Use ``events()`` as the session's GPU source and a real ``LocalTailer(log_path)``
    as its log source. ``speed`` divides every delay (``speed=100`` plays a
    90-second startup in under a second). ``done`` is set once everything is written.
    """

    def __init__(
        self,
        recording: Recording,
        speed: float = 1.0,
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if speed <= 0:
            raise RecordingError("--speed must be greater than 0")
        self.recording = recording
        self.speed = speed
        self.host = str(recording.header.get("host") or "localhost")
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        if log_path is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="watchtower-replay-")
            name = Path(str(recording.header.get("log") or "server.log")).name or "server.log"
            log_path = Path(self._tempdir.name) / name
        self.log_path = Path(log_path)
        self.done = asyncio.Event()

    async def events(self) -> AsyncIterator[GpuSample | GpuUnavailable | LogGap]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        log = open(self.log_path, "ab", buffering=0)
        try:
            for record in self.recording.records:
                due = start + float(record["t"]) / self.speed
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                data = record_bytes(record)
                if data is not None:
                    log.write(data)
                elif "restart" in record:
                    log.close()
                    log = open(self.log_path, "wb", buffering=0)  # a real truncation
                elif "truncate" in record:
                    os.truncate(self.log_path, int(record["truncate"]))  # O_APPEND writes go on at the end
                elif "gap" in record:
                    yield gap_of(self.host, record)
                elif "gpu" in record:
                    gpus = tuple(gpu_from_row(row) for row in record["gpu"])
                    yield GpuSample(self.host, time.time(), gpus, simulated=bool(record.get("sim")))
                elif "gpu_unavailable" in record:
                    yield GpuUnavailable(self.host, str(record["gpu_unavailable"]))
            yield GpuUnavailable(self.host, "the recording ends here")
        finally:
            log.close()
            self.done.set()

    def close(self) -> None:
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None
