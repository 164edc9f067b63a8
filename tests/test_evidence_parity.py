"""The parity matrix: the same evidence gives the same verdict in every mode.

Each mode is built by the wiring the command uses (``watch``, ``run``, ``run --nodes`` of one
node and of two, ``run --slurm``, ``watch --slurm``), in process: its node sessions are fed the
same log lines and GPU samples by hand, under one made-up clock, and the verdict is asked of
what the mode's front end asks (the session, the launch, the node set). A mode that ignores an
input (``--stall-limit``, the bytes of a weight load still moving) fails here first.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support import MemoryRunner
from tui.core.events import GpuInfo, GpuSample, LogChunk, SlurmJobState
from tui.core.limits import StallLimits
from tui.core.options import ClusterOptions, GpuOptions, LaunchOptions, NodeSpec, WatchOptions
from tui.core.verdict import LOADING, STALLED, Verdict, VerdictKind
from tui.launch.spec import LaunchSpec
from tui.session import WatchSession

GIB = 2**30
LIMITS = StallLimits(600.0, {"weight_load": 8.0})  # a quiet weight load is stalled? after 8 s
LOG = (b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=2)\n"
       + b"".join(b"[2026-03-14 21:04:20 TP%d] Load weight begin. avail mem=139.26 GB\n" % r for r in range(2)))


@dataclass
class Clock:
    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Mode:
    """One mode, built: its node sessions (fed by the test) and how its front end asks the verdict."""

    verdict: Callable[[], Verdict]
    sessions: list[WatchSession]
    keep: list[Any] = field(default_factory=list)  # (what must outlive the build: a launch)


def _timed(clock: Clock, *things: Any) -> None:
    for thing in things:
        thing.clock = clock


def watch(tmp_path: Path, clock: Clock) -> Mode:
    from tui.wiring.watch import log_session

    log = tmp_path / "n1.log"
    log.touch()
    session = log_session(WatchOptions(log=str(log), stall_limits=LIMITS, gpus=GpuOptions(kind="none")), live=False)
    _timed(clock, session)
    return Mode(session.verdict, [session])


async def run(tmp_path: Path, clock: Clock) -> Mode:
    from tui.launch.controller import Launch

    spec = LaunchSpec("parity", ["server"], log_dir=tmp_path, stall_limit=LIMITS)
    session = WatchSession(stall_limits=spec.stall_limit)  # as `run` makes it (tui.wiring.launch.make_launch)
    launch = Launch(spec, history=None, runner=lambda emit: MemoryRunner(emit))
    launch.attach(session)
    await launch.start()
    _timed(clock, session, launch)
    return Mode(launch.verdict, [session], [launch])


def _node_set(make: Callable[[NodeSpec], WatchSession], tmp_path: Path, clock: Clock, count: int,
              job: SlurmJobState | None = None, cluster: Any = None) -> Mode:
    from tui.cluster import ClusterSession

    nodes = [NodeSpec(f"n{i + 1}", str(tmp_path / f"n{i + 1}.log")) for i in range(count)]
    for node in nodes:
        Path(node.log).touch()
    if cluster is None:
        cluster = ClusterSession(make_session=make)
        cluster.launched = True  # a launch's processes: alive until their runner says not
    cluster.job = job
    for node in nodes:
        cluster.add_node(node)
    cluster.started_at = clock.now
    _timed(clock, cluster, *cluster.nodes.values())
    return Mode(cluster.verdict, list(cluster.nodes.values()), [cluster])


def run_nodes(count: int) -> Callable[[Path, Clock], Mode]:
    def build(tmp_path: Path, clock: Clock) -> Mode:
        from tui.wiring.cluster import nodes_launch

        spec = LaunchSpec("parity", ["server"], log_dir=tmp_path, stall_limit=LIMITS)
        hosts = [f"127.0.0.{i + 2}" for i in range(count)]
        launch = nodes_launch(spec, hosts, LaunchOptions(gpus=GpuOptions(kind="none")))
        assert launch.make_node is not None
        return _node_set(launch.make_node, tmp_path, clock, count)
    return build


def run_slurm(tmp_path: Path, clock: Clock) -> Mode:
    from tui.core.slurm import SlurmRequest
    from tui.wiring.cluster import slurm_launch

    spec = LaunchSpec("parity", ["server"], log_dir=tmp_path, stall_limit=LIMITS)
    launch = slurm_launch(spec, SlurmRequest(), LaunchOptions(gpus=GpuOptions(kind="none")))
    assert launch.make_node is not None
    return _node_set(launch.make_node, tmp_path, clock, 2, SlurmJobState("5", "RUNNING", nodes=("n1", "n2")))


def watch_slurm(tmp_path: Path, clock: Clock) -> Mode:
    from tui.wiring.cluster import make_cluster

    cluster = make_cluster(ClusterOptions(slurm_job="5", stall_limits=LIMITS, gpus=GpuOptions(kind="none")))
    return _node_set(cluster.make_session, tmp_path, clock, 2, SlurmJobState("5", "RUNNING", nodes=("n1", "n2")), cluster)


MODES: dict[str, Any] = {
    "watch": watch,
    "run": run,
    "run --nodes (one)": run_nodes(1),
    "run --nodes (two)": run_nodes(2),
    "run --slurm": run_slurm,
    "watch --slurm": watch_slurm,
}
SLURM_MODES = {"run --slurm", "watch --slurm"}


def _quiet_weight_load(mode: Mode, clock: Clock, seconds: float, gib_per_s: float) -> None:
    """Every node logs its weight load's start, then nothing for ``seconds``; its GPU memory grows
    ``gib_per_s`` meanwhile (a sample each second)."""
    for session in mode.sessions:
        session.gpu_watched = True
        session.handle(LogChunk("log", 0, LOG, clock.now))
    start = clock.now
    while clock.now - start < seconds:
        clock.now += 1.0
        used = int((10 + gib_per_s * (clock.now - start)) * GIB)
        for session in mode.sessions:
            session.handle(GpuSample("localhost", clock.now, (GpuInfo(0, memory_used=used, utilization=0),)))


@dataclass(frozen=True)
class Scenario:
    quiet: float  # seconds the log stays quiet in weight load
    gib_per_s: float  # how fast GPU memory grows meanwhile
    kind: VerdictKind
    says: str  # what the verdict's words hold


SCENARIOS = {
    # silent past --stall-limit's weight_load=8s, GPUs idle: stalled?, by the limit the user gave
    "stall limit": Scenario(20.0, 0.0, STALLED, "past the limit for weight load (0:08, --stall-limit)"),
    # as quiet, but the checkpoint's bytes still move into GPU memory: loading, not stalled?
    "bytes moving while quiet": Scenario(20.0, 2.0, LOADING, "GPU mem +2.0 GiB/s"),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("mode", list(MODES))
async def test_the_same_evidence_gives_the_same_verdict_in_every_mode(mode: str, scenario: str, tmp_path: Path) -> None:
    if mode in SLURM_MODES and (shutil.which("sbatch") is None or shutil.which("squeue") is None):
        pytest.skip("the Slurm client commands are not installed")
    clock = Clock()
    build = MODES[mode]
    built = build(tmp_path, clock)
    if not isinstance(built, Mode):
        built = await built
    expected = SCENARIOS[scenario]
    _quiet_weight_load(built, clock, expected.quiet, expected.gib_per_s)
    verdict = built.verdict()
    assert verdict.kind == expected.kind, f"{mode}: {verdict.text}"
    assert expected.says in verdict.detail, f"{mode}: {verdict.text}"
    if len(built.sessions) > 1 or mode in SLURM_MODES or mode.startswith("run --nodes"):
        assert verdict.node == "n1", f"{mode}: the node is named: {verdict.text}"


def _job_of_two(clock: Clock) -> Any:
    from tui.cluster import ClusterSession

    cluster = ClusterSession([NodeSpec("n1", "n1.log"), NodeSpec("n2", "n2.log")],
                             make_session=lambda spec: WatchSession(clock=clock), clock=clock)
    cluster.job = SlurmJobState("5", "RUNNING", nodes=("n1", "n2"))
    for session in cluster.nodes.values():
        session.handle(LogChunk("log", 0, LOG, clock.now))
    return cluster


def test_the_first_node_to_fail_by_time_is_named_not_the_first_in_the_list() -> None:
    """srun kills the job's other tasks once one dies (--kill-on-bad-exit): n2's task was killed
    first, n1's went a moment later with SIGTERM (exit code 143). The cause is n2."""
    clock = Clock()
    cluster = _job_of_two(clock)
    cluster.node_died("n2", "task 1: Killed (srun)")
    clock.now += 0.5
    cluster.node_died("n1", "task 0: Exited with exit code 143 (srun)")
    verdict = cluster.verdict()
    assert verdict.text.startswith("DEAD on n2: task 1: Killed"), verdict.text


def test_a_job_that_ended_is_said_in_its_own_word_not_as_a_node_dead() -> None:
    """A job cancelled (by someone else) or out of time: every task dies with it; the verdict is
    Slurm's word for the job, with the first node to go in its words, exit status 1."""
    clock = Clock()
    cluster = _job_of_two(clock)
    cluster.node_died("n2", "task 1: Killed (srun)")
    clock.now += 0.5
    cluster.node_died("n1", "task 0: Killed (srun)")
    cluster.job = SlurmJobState("5", "CANCELLED", nodes=("n1", "n2"))
    verdict = cluster.verdict()
    assert verdict.word == "CANCELLED" and verdict.node is None, verdict.text
    assert verdict.text.startswith("CANCELLED: job 5 CANCELLED · first gone: n2"), verdict.text
    assert verdict.exit_status == 1
    cluster.job = SlurmJobState("5", "TIMEOUT", nodes=("n1", "n2"))
    assert cluster.verdict().word == "TIMEOUT"
