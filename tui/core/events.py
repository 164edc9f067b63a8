"""Typed events: the only thing sources hand to the core and the views.

Data flows one way: sources -> events -> state -> views. Sources (tailers, GPU
pollers, the launched process) emit the *source events* below; the tracker turns
log lines into *tracker events* (``tui.core.tracker_events``, named here too). Every event is a small
frozen dataclass so it can be queued, recorded and replayed as-is. The catalogue of every
event is kept in one place, so that a source and a view meet here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from tui.core.tracker_events import (  # the tracker's events, named here too
    ServerDetected as ServerDetected,
    PhaseStarted as PhaseStarted,
    PhaseEnded as PhaseEnded,
    PhaseProgress as PhaseProgress,
    ErrorFound as ErrorFound,
    WarningFound as WarningFound,
    LineUnparsed as LineUnparsed,
    Ready as Ready,
    Stopped as Stopped,
    NewStartup as NewStartup,
    TrackerEvent as TrackerEvent,
)


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
    files: int = 0  # whole files lost unseen (a log re-created faster than read): nbytes unknown


@dataclass(frozen=True, slots=True)
class LogLimited:
    """The log's reader applied one of its limits (how many nodes a log may name), said once in
    ``text``: nothing was lost, but the reading differs from what the log alone would give."""

    source: str
    text: str


@dataclass(frozen=True, slots=True)
class LogRestart:
    """The log was replaced (rotated, truncated, re-created): a new file starts at line 1."""

    source: str
    reason: str  # "rotated", "recreated" (a truncation is a LogTruncated)


@dataclass(frozen=True, slots=True)
class LogTruncated:
    """The log was cut to ``size`` bytes, ``lines`` newlines of which were kept: reading goes
    on from there. A gap in the log, not a new file and not a new startup — line numbers
    continue after the kept lines (``size`` 0: from line 1, as ``grep -n`` counts the file),
    and only a startup marker that follows begins a new attempt. Bytes truncated away before
    they were read come first as a ``LogGap``."""

    source: str
    size: int
    lines: int


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


@dataclass(frozen=True, slots=True)
class LogMoved:
    """The log's file was renamed while a process still writes to it (a plain ``mv``).

    The tailer keeps reading the old file at ``moved_to`` for as long as a writer holds
    it open, and the path (``source``) as well once a new file appears there. Chunks
    read from the old file carry ``source = moved_to`` (byte offsets are that file's);
    chunks of the new file at the path keep the tailer's own ``source``. ``done=True``
    is sent when the old file is finished (no writer left, read to its end).
    """

    source: str
    moved_to: str
    writers: tuple[int, ...] = ()  # pids holding the old file open for writing, when known
    done: bool = False


# ---------------------------------------------------------------- the server behind a log
# Discovered from /proc (tui.sources.writers), locally and by the remote agent: the
# processes that hold the log open for writing, and their process tree. Nothing here
# says "dead" or "stalled": the verdict (tui.core.verdict) does that with these facts.


@dataclass(frozen=True, slots=True)
class ServerProcess:
    """One process of the server behind a log: a writer of the log or a descendant of one.

    ``title`` is the process title (``/proc/PID/comm``, which SGLang and vLLM set:
    ``sglang::scheduler_TP3``, ``VLLM::EngineCore``); ``command`` the command line with
    secret values masked. ``rank`` comes from the title or the command line (``TP3``,
    ``DP0 TP7``, ``Worker_TP1`` …), ``None`` for processes that are not a rank. ``role``
    is one of ``ROLES``. ``started`` is wall-clock time (epoch seconds) the process
    started; with ``pid`` it names one process even after the pid is reused.
    """

    pid: int
    ppid: int
    title: str
    command: str
    started: float | None
    role: str  # one of ROLES
    rank: str | None = None
    writes_log: bool = False  # holds the log open for writing itself (else: a descendant)


#: ``ServerProcess.role`` values. ``main``: the topmost writer of the log (the process
#: the operator started, e.g. ``python -m sglang.launch_server``); ``rank``: one GPU rank's
#: process (``sglang::scheduler_TP3``, ``VllmWorker TP1``); ``engine``: vLLM's
#: ``VLLM::EngineCore``; ``detokenizer``: SGLang's detokenizer; ``child``: anything else.
ROLES = ("main", "rank", "engine", "detokenizer", "child")


@dataclass(frozen=True, slots=True)
class WritersFound:
    """The processes behind the log, as now known: sent when first found and again each
    time the tree changes (a child appeared, a process ended). Each one replaces the
    previous; ``processes`` lists parents before their children, ``main`` first.

    ``via`` says how they were found: ``"fd"`` (they hold the log open for writing),
    ``"pipe"`` (the log is written by ``tee``/``cat``… whose input pipe these processes
    write: the server behind the pipe), ``"file"`` (the log is written by ``tail -f`` of a file
    these processes write: the server behind the follower).
    """

    source: str  # the log (the tailer's source string)
    host: str  # "localhost" or the --host
    processes: tuple[ServerProcess, ...]
    at: float  # wall-clock time of the scan
    via: str = "fd"

    @property
    def main(self) -> ServerProcess | None:
        return next((p for p in self.processes if p.role == "main"), self.processes[0] if self.processes else None)


@dataclass(frozen=True, slots=True)
class WriterGone:
    """A process of the server behind the log has ended (noticed within ~1 s locally, a
    few seconds remotely). ``main`` marks the main process; a rank's process (``process.rank``)
    ending while the main one lives is news too. ``returncode``/``signal`` are set only when
    they are known (``exit_known``): a process Watchtower did not start cannot be waited
    for, so its exit status is honestly unknown. ``remaining`` is how many processes of
    the tree are still alive. A ``WritersFound`` with the new tree follows when some remain.
    """

    source: str
    host: str
    process: ServerProcess
    main: bool
    remaining: int
    at: float
    exit_known: bool = False
    returncode: int | None = None
    signal: int | None = None


class NoWriterReason(StrEnum):
    """Why the server behind a log cannot be named (``NoWriter.reason``)."""

    NOBODY = "nobody"  # no process visible here holds it open for writing
    OTHER_USER = "other_user"  # some processes could not be inspected (other users): it may be one of them
    NETWORK_FS = "network_fs"  # the log is on a network filesystem: the writer may be on another host
    PIPE = "pipe"  # written by tee/cat… from a pipe whose writer cannot be seen
    CONTAINER = "container"  # written by a container runtime (conmon, containerd-shim…): the server is inside
    NO_PROC = "no_proc"  # no /proc to look in (not Linux, or hidden)


@dataclass(frozen=True, slots=True)
class NoWriter:
    """No writer of the log can be discovered; ``detail`` says why in one line for the user.

    Sent once per reason (not repeated while nothing changes); a later ``WritersFound``
    supersedes it. Not sent after the known writers ended (``WriterGone`` said that).
    """

    source: str
    host: str
    reason: NoWriterReason
    detail: str
    at: float


@dataclass(frozen=True, slots=True)
class ReadCounters:
    """The I/O counters of the server's processes (``/proc/PID/io``, about once a second while
    they live): ``counters`` holds ``(pid, rchar, read_bytes)``, cumulative since each process
    began. The weight load's bytes read so far (``tui.core.loading``)."""

    source: str
    host: str
    at: float
    counters: tuple[tuple[int, int, int], ...]


@dataclass(frozen=True, slots=True)
class DiskBusy:
    """The block device the checkpoint lies on (``tui.sources.diskstats``): ``busy_ms`` the
    milliseconds it has had I/O in flight since boot (``/proc/diskstats`` io_ticks), about once a
    second: near 1000 a second, whatever reads it waits on the storage."""

    device: str
    busy_ms: int
    at: float


@dataclass(frozen=True, slots=True)
class CacheGrowth:
    """A Hugging Face download seen from the cache folder (``tui.sources.download``): ``on_disk``
    bytes of the repo's weights there now (finished files and those still coming), ``downloading``
    while some are incomplete."""

    model: str
    on_disk: int
    downloading: bool
    at: float


@dataclass(frozen=True, slots=True)
class CheckpointFound:
    """The checkpoint the server was given, measured where it lies (``tui.sources.checkpoint``):
    ``total`` bytes of weights (None, with ``detail`` saying why, when they could not be told),
    ``draft`` the draft model's, ``split`` the GPUs one copy is spread over (TP × PP)."""

    model: str
    total: int | None
    split: int = 1
    draft: int = 0
    detail: str = ""
    filesystem: str | None = None  # the type of the filesystem it lies on (ext4, nfs4, …)
    device: str | None = None  # that filesystem's block device (``major:minor``; None: it has none)


@dataclass(frozen=True, slots=True)
class SmokeAnswered:
    """``--smoke``: what one tiny completion sent after the ready line got (``tui.sources.smoke``).
    ``ok`` when it answered with a completion; ``ttft`` the seconds from sending it to the answer
    (``max_tokens`` 1: the time to the first token); else ``status`` (None: no answer) and
    ``detail`` name the failure in the server's own words."""

    url: str
    ok: bool
    status: int | None
    model: str | None
    ttft: float | None
    detail: str
    at: float


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
    simulated: bool = False  # made up (--gpus sim): labelled wherever shown, never passes a check


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


# ---------------------------------------------------------------- Slurm jobs


@dataclass(frozen=True, slots=True)
class SlurmJobState:
    """A Slurm job's state as ``scontrol show job`` reports it (``tui.core.slurm`` words it)."""

    job_id: str
    state: str  # PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, TIMEOUT, … or GONE
    reason: str = ""  # why it is pending (Resources, Priority, …) or failed
    nodes: tuple[str, ...] = ()
    exit_code: str = ""  # "status:signal", e.g. "0:9"
    tasks: int | None = None
    stdout: str = ""
    workdir: str = ""
    name: str = ""
    partition: str = ""
    ahead: int | None = None  # pending jobs ahead of it in its partition
    cancelled_by: str | None = None  # who cancelled it, when known
    task_failures: tuple[str, ...] = ()  # srun's words for tasks that died: "n2 task 1: Killed"
    at: float = 0.0


@dataclass(frozen=True, slots=True)
class HealthStatus:
    """The ``--health URL`` probe: ``ok`` once it answered 200; ``detail`` says what it got last."""

    url: str
    ok: bool = False
    detail: str = "not checked yet"


@dataclass(frozen=True, slots=True)
class SlurmTaskEnded:
    """A running job's task on ``node`` is gone, as Slurm's own step state shows it (the job runs
    on: no ``--kill-on-bad-exit``, and srun said nothing); ``node`` None: a task of the job's step,
    on a node Slurm does not name from here."""

    job_id: str
    node: str | None
    detail: str  # how Slurm shows it: "Slurm has no process of job 5 left on n2 (scontrol listpids)"


SourceEvent = (
    LogChunk
    | LogGap
    | LogLimited
    | LogRestart
    | LogTruncated
    | LogWaiting
    | LogMoved
    | ConnectionState
    | WritersFound
    | WriterGone
    | NoWriter
    | ReadCounters
    | CheckpointFound
    | SmokeAnswered
    | GpuSample
    | GpuUnavailable
    | ProcessStarted
    | ProcessExited
    | ProcessStopping
    | SlurmJobState
    | HealthStatus
    | CacheGrowth
    | DiskBusy
    | SlurmTaskEnded
)
