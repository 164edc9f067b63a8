"""What the commands parsed, as small typed objects shared by every front end.

The command line (``tui.commands``) fills these in; the composition root
(``tui.wiring``) and the views read them. Defined once, below every layer that
reads them, so no view has to know about argparse.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui.core.limits import StallLimits

#: ``--gpus`` choices: auto (NVML here, nvidia-smi on a remote host), nvml, smi, sim, none.
GPU_SOURCES = ("auto", "nvml", "smi", "sim", "none")


@dataclass(frozen=True, slots=True)
class GpuOptions:
    kind: str = "auto"
    interval: float = 1.0


#: ``--smoke-timeout``'s default: seconds for each of ``--smoke``'s requests (a first completion
#: may wait for warm-up or a JIT compile).
SMOKE_TIMEOUT_S = 60.0

#: ``--metrics-linger``'s default: three of Prometheus' usual 15 s scrape intervals.
LINGER_S = 45.0


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    """``--metrics HOST:PORT`` and ``--metrics-textfile PATH``: the startup for Prometheus (served,
    or written for node_exporter's textfile collector); false when neither was asked for."""

    address: str | None = None
    textfile: str | None = None
    linger: float = LINGER_S  # seconds the endpoint may outlive the watch, until its final state is scraped

    def __bool__(self) -> bool:
        return bool(self.address or self.textfile)


@dataclass(frozen=True, slots=True)
class WatchOptions:
    """`watch` (and `replay --plain`): one log, here or on ``host``."""

    log: str
    server: str | None = None
    host: str | None = None
    from_end: bool = False
    timeout: float | None = None
    echo: bool = False
    theme: str | None = None
    gpus: GpuOptions = field(default_factory=GpuOptions)
    stall_limits: StallLimits | None = None  # --stall-limit
    health: str | None = None  # --health URL: ready also needs it to answer 200
    metrics: MetricsOptions = field(default_factory=MetricsOptions)
    smoke: bool = False  # --smoke: ready only once one tiny completion answered
    smoke_timeout: float = SMOKE_TIMEOUT_S  # --smoke-timeout: seconds for each of its requests


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """`run` and `attach`, beside the launch spec: how to watch what is launched."""

    server: str | None = None
    gpus: GpuOptions = field(default_factory=GpuOptions)
    theme: str | None = None
    timeout: float | None = None
    attach_only: bool = False  # `attach`: follow the running attempt, never start one
    preflight: bool = True  # check before every launch and relaunch; refuse on a ✗ (`run --no-check`: off)
    shm: str | None = None  # the shared-memory mount the preflight looks at (default /dev/shm)
    metrics: MetricsOptions = field(default_factory=MetricsOptions)


@dataclass(frozen=True, slots=True)
class PlaybackOptions:
    """`replay` and `demo`."""

    speed: float = 1.0
    plain: bool = False
    theme: str | None = None
    stall_limits: StallLimits | None = None  # --stall-limit
    json: bool = False  # --json: JSON objects, one a line, instead of the plain words


@dataclass(frozen=True, slots=True)
class RecordOptions:
    log: str
    output: str
    host: str | None = None
    from_end: bool = False
    duration: float | None = None
    keep_going: bool = False
    gpus: GpuOptions = field(default_factory=GpuOptions)


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node of a multi-node watch: its name, its log and where that log is."""

    name: str
    log: str
    host: str | None = None  # [user@]host[:port] over SSH; None: this machine
    gpus: str = "none"
    args: tuple[str, ...] = ()  # `run --cluster`: words added to this node's command
    role: str | None = None  # "serving" or "worker" (tui.core.cluster); None: from the log, else by order


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """`watch` with several nodes (``--host N:/log`` …, ``--cluster FILE``) or a Slurm job."""

    nodes: tuple[NodeSpec, ...] = ()
    slurm_job: str | None = None
    task_output: str | None = None  # an srun -o pattern for the job's per-task files
    slurm_interval: float = 1.0
    server: str | None = None
    from_end: bool = False
    timeout: float | None = None
    theme: str | None = None
    gpus: GpuOptions = field(default_factory=GpuOptions)
    stall_limits: StallLimits | None = None  # --stall-limit: per node, per phase
    health: str | None = None  # --health URL: the serving node's (asked from its host)
    metrics: MetricsOptions = field(default_factory=MetricsOptions)
    smoke: bool = False  # --smoke: ready once the node whose log says ready answered one completion
    smoke_timeout: float = SMOKE_TIMEOUT_S  # --smoke-timeout: seconds for each of its requests
    ray_log: str | None = None  # --ray: one log (vLLM's head under Ray) holding every node's lines
    ray_host: str | None = None  # where that log is ([user@]host[:port]; None: this machine)
