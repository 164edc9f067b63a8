"""Typed events: the only thing sources hand to the core and the views.

Data flows one way: sources -> events -> state -> views. Sources (tailers, GPU
pollers, the launched process) emit the *source events* below; the tracker turns
log lines into *tracker events* (see ``tui.core.tracker``). Every event is a small
frozen dataclass so it can be queued, recorded and replayed as-is.
"""

from __future__ import annotations

from dataclasses import dataclass, field


# ---------------------------------------------------------------- log sources


@dataclass(frozen=True, slots=True)
class LogChunk:
    """Bytes read from a log, in order. ``offset`` is the file offset of ``data[0]``."""

    source: str
    offset: int
    data: bytes
    at: float  # wall-clock time (time.time()) the bytes were read


@dataclass(frozen=True, slots=True)
class LogGap:
    """Bytes that existed but could not be read (truncated away first): never a silent loss."""

    source: str
    offset: int
    nbytes: int
    reason: str


@dataclass(frozen=True, slots=True)
class LogRestart:
    """The log was replaced (rotated, truncated, re-created): a new file starts at line 1."""

    source: str
    reason: str  # "rotated", "truncated", "recreated"


@dataclass(frozen=True, slots=True)
class LogWaiting:
    """The log does not exist (yet) or cannot be read; the tailer keeps waiting."""

    source: str
    reason: str


@dataclass(frozen=True, slots=True)
class ConnectionState:
    """State of a remote connection: connecting, connected, lost, retrying, refused."""

    host: str
    state: str
    detail: str = ""
    retry_in: float | None = None


# ---------------------------------------------------------------- GPU sources


@dataclass(frozen=True, slots=True)
class GpuProcess:
    pid: int
    used_bytes: int | None
    name: str = ""


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """One GPU at one instant. Any field may be ``None``: unknown / not supported (shown N/A)."""

    index: int
    name: str | None = None
    uuid: str | None = None
    memory_used: int | None = None  # bytes
    memory_total: int | None = None  # bytes
    utilization: int | None = None  # percent
    temperature: int | None = None  # degrees C
    power_w: float | None = None
    power_limit_w: float | None = None
    processes: tuple[GpuProcess, ...] = ()
    error: str | None = None  # e.g. "GPU is lost": marks this GPU alone


@dataclass(frozen=True, slots=True)
class GpuSample:
    host: str
    at: float
    gpus: tuple[GpuInfo, ...]


@dataclass(frozen=True, slots=True)
class GpuUnavailable:
    """No GPU data for this host, and why, in words (NVML missing, driver mismatch, ...)."""

    host: str
    reason: str


# ---------------------------------------------------------------- launched process


@dataclass(frozen=True, slots=True)
class ProcessStarted:
    attempt: int
    pid: int
    command: tuple[str, ...]
    log_path: str
    host: str = "localhost"
    at: float = 0.0


@dataclass(frozen=True, slots=True)
class ProcessExited:
    """The launched server exited: ``returncode`` >= 0, or ``signal`` set when it was killed."""

    attempt: int
    pid: int
    returncode: int | None
    signal: int | None = None
    at: float = 0.0
    detail: str = field(default="")


@dataclass(frozen=True, slots=True)
class ProcessStopping:
    """A stop is under way: ``signal`` was sent to the process group; the next escalation
    (SIGTERM, then SIGKILL) follows ``grace`` seconds after ``at`` unless the group is gone."""

    attempt: int
    pid: int
    signal: int
    grace: float
    at: float = 0.0


SourceEvent = (
    LogChunk
    | LogGap
    | LogRestart
    | LogWaiting
    | ConnectionState
    | GpuSample
    | GpuUnavailable
    | ProcessStarted
    | ProcessExited
    | ProcessStopping
)


# ---------------------------------------------------------------- tracker events
# What the core tracker reports as it reads lines (tui.core.tracker.StartupTracker.feed).
# The plain watcher prints them; the app updates its views from them.


@dataclass(frozen=True, slots=True)
class ServerDetected:
    server: str  # profile name, e.g. "sglang"
    line: int


@dataclass(frozen=True, slots=True)
class PhaseStarted:
    phase: str
    line: int
    ts: float | None


@dataclass(frozen=True, slots=True)
class PhaseEnded:
    phase: str
    line: int
    ts: float | None
    seconds: float | None
    slowest_rank: str | None
    ranks: int


@dataclass(frozen=True, slots=True)
class PhaseProgress:
    phase: str
    line: int
    fraction: float | None
    detail: str


@dataclass(frozen=True, slots=True)
class ErrorFound:
    """A fatal error was classified; ``error`` is the ``tui.core.state.ErrorReport``."""

    error: object


@dataclass(frozen=True, slots=True)
class WarningFound:
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class Ready:
    line: int
    ts: float | None
    seconds: float | None  # from the first line's timestamp


@dataclass(frozen=True, slots=True)
class Stopped:
    """A ready server shut down (e.g. SIGQUIT after SIGTERM): a stop, not a failed startup."""

    line: int
    text: str


@dataclass(frozen=True, slots=True)
class NewStartup:
    """The log holds a new startup (a ``server_args=`` / vLLM banner line after an earlier one
    was ready, failed or stopped): from ``line`` on, a fresh attempt (``attempt`` 2, 3 … in
    this log). ``previous`` is the earlier one's ``tui.core.state.AttemptSummary``."""

    line: int
    attempt: int
    previous: object


TrackerEvent = (
    ServerDetected | PhaseStarted | PhaseEnded | PhaseProgress | ErrorFound | WarningFound | Ready | Stopped
    | NewStartup
)
