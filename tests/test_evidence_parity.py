"""The parity matrix: the same evidence gives the same verdict in every mode.

Each mode is built by the wiring the command uses (``watch``, ``watch --host``, ``run``,
``run --host``, ``run --nodes`` of one node and of two, ``run --slurm``, ``watch --slurm``), in
process: its node sessions are fed the same log lines, GPU samples and ``--health`` answers by
hand, under one made-up clock, and the verdict is asked of what the mode's front end asks (the
session, the launch, the node set). A mode that ignores an input (``--stall-limit``, the bytes of
a weight load still moving, ``--health``) fails here first. The rows whose evidence is found or
sent, not told — a zombie writer, SIGTERM — run real processes, over the loopback sshd for the
``--host`` and ``--nodes`` modes.
"""
from __future__ import annotations

import os
import re
import dataclasses
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support import MemoryRunner
from tui.core.events import GpuInfo, GpuSample, LogChunk, SlurmJobState
from tui.core.limits import StallLimits
from tui.core.options import ClusterOptions, GpuOptions, LaunchOptions, NodeSpec, WatchOptions
from tui.core.verdict import DEAD, LOADING, READY, STALLED, STARTING, STOPPED, Verdict, VerdictKind
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


@dataclass(frozen=True)
class Given:
    """What the user gave beside the evidence: where (``--host``: the loopback sshd's spec) and
    ``--health``'s URL."""

    tmp_path: Path
    clock: Clock
    host: str | None = None
    health: str | None = None


@dataclass
class Mode:
    """One mode, built: its node sessions (fed by the test) and how its front end asks the verdict."""

    verdict: Callable[[], Verdict]
    sessions: list[WatchSession]
    keep: list[Any] = field(default_factory=list)  # (what must outlive the build: a launch)


def _timed(clock: Clock, *things: Any) -> None:
    for thing in things:
        thing.clock = clock


def watch(given: Given) -> Mode:
    from tui.wiring.watch import log_session

    log = given.tmp_path / "n1.log"
    log.touch()
    session = log_session(WatchOptions(log=str(log), host=given.host, stall_limits=LIMITS, health=given.health,
                                       gpus=GpuOptions(kind="none")), live=False)
    _timed(given.clock, session)
    return Mode(session.verdict, [session])


def _spec(given: Given) -> LaunchSpec:
    return LaunchSpec("parity", ["server"], log_dir=given.tmp_path, host=given.host, stall_limit=LIMITS,
                      health_url=given.health)


async def run(given: Given) -> Mode:
    from tui.launch.controller import Launch

    spec = _spec(given)
    session = WatchSession(stall_limits=spec.stall_limit)  # as `run` makes it (tui.wiring.launch.make_launch)
    launch = Launch(spec, history=None, runner=lambda emit: MemoryRunner(emit))
    launch.attach(session)
    await launch.start()
    _timed(given.clock, session, launch)
    return Mode(launch.verdict, [session], [launch])


def _node_set(make: Callable[[NodeSpec], WatchSession], given: Given, count: int,
              job: SlurmJobState | None = None, cluster: Any = None) -> Any:
    from tui.cluster import ClusterSession

    nodes = [NodeSpec(f"n{i + 1}", str(given.tmp_path / f"n{i + 1}.log")) for i in range(count)]
    for node in nodes:
        Path(node.log).touch()
    if cluster is None:
        cluster = ClusterSession(make_session=make)
        cluster.launched = True  # a launch's processes: alive until their runner says not
    cluster.job = job
    for node in nodes:
        cluster.add_node(node)
    cluster.started_at = given.clock.now
    _timed(given.clock, cluster, *cluster.nodes.values())
    return cluster


def _followed(launch: Any, cluster: Any) -> Mode:
    """The node set followed by its launch, as the launch follows each attempt's (``follow_nodes``)."""
    launch.follow_nodes(cluster, 1)
    return Mode(launch.verdict, list(cluster.nodes.values()), [cluster, launch])


def run_nodes(count: int) -> Callable[[Given], Mode]:
    def build(given: Given) -> Mode:
        from tui.wiring.cluster import nodes_launch

        hosts = [f"127.0.0.{i + 2}" for i in range(count)]
        launch = nodes_launch(_spec(dataclasses.replace(given, host=None)), hosts, LaunchOptions(gpus=GpuOptions(kind="none")))
        assert launch.make_node is not None
        return _followed(launch, _node_set(launch.make_node, given, count))
    return build


def run_slurm(given: Given) -> Mode:
    from tui.core.slurm import SlurmRequest
    from tui.wiring.cluster import slurm_launch

    launch = slurm_launch(_spec(dataclasses.replace(given, host=None)), SlurmRequest(),
                          LaunchOptions(gpus=GpuOptions(kind="none")))
    assert launch.make_node is not None
    job = SlurmJobState("5", "RUNNING", nodes=("n1", "n2"))
    return _followed(launch, _node_set(launch.make_node, given, 2, job))


def watch_slurm(given: Given) -> Mode:
    from tui.wiring.cluster import make_cluster

    cluster = make_cluster(ClusterOptions(slurm_job="5", stall_limits=LIMITS, health=given.health,
                                          gpus=GpuOptions(kind="none")))
    built = _node_set(cluster.make_session, given, 2, SlurmJobState("5", "RUNNING", nodes=("n1", "n2")), cluster)
    return Mode(built.verdict, list(built.nodes.values()), [built])


MODES: dict[str, Any] = {
    "watch": watch,
    "watch --host": watch,  # (given the loopback sshd's host)
    "run": run,
    "run --host": run,
    "run --nodes (one)": run_nodes(1),
    "run --nodes (two)": run_nodes(2),
    "run --slurm": run_slurm,
    "watch --slurm": watch_slurm,
}
SLURM_MODES = {"run --slurm", "watch --slurm"}
HOST_MODES = {"watch --host", "run --host"}


def _mode_params() -> list[Any]:
    return [pytest.param(m, marks=pytest.mark.ssh) if m in HOST_MODES else m for m in MODES]


async def _built(mode: str, tmp_path: Path, request: Any, clock: Clock, health: str | None = None) -> Mode:
    """``mode`` built as its command builds it, given ``--health`` and, for a --host mode, the
    loopback sshd as its host (the sessions are fed by hand: no SSH traffic is needed)."""
    if mode in SLURM_MODES and (shutil.which("sbatch") is None or shutil.which("squeue") is None):
        pytest.skip("the Slurm client commands are not installed")
    host = request.getfixturevalue("sshd").spec if mode in HOST_MODES else None
    built = MODES[mode](Given(tmp_path, clock, host, health))
    return await built if not isinstance(built, Mode) else built


def _quiet_weight_load(mode: Mode, clock: Clock, seconds: float, gib_per_s: float) -> None:
    """Every node logs its weight load's start, then nothing for ``seconds``; its GPU memory grows
    ``gib_per_s`` meanwhile (a sample each second)."""
    for session in mode.sessions:
        session.gpus.kind = "simulated"  # (a GPU source feeds it)
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
@pytest.mark.parametrize("mode", _mode_params())
async def test_the_same_evidence_gives_the_same_verdict_in_every_mode(mode: str, scenario: str, tmp_path: Path,
                                                                      request) -> None:
    clock = Clock()
    built = await _built(mode, tmp_path, request, clock)
    expected = SCENARIOS[scenario]
    _quiet_weight_load(built, clock, expected.quiet, expected.gib_per_s)
    verdict = built.verdict()
    assert verdict.kind == expected.kind, f"{mode}: {verdict.text}"
    assert expected.says in verdict.detail, f"{mode}: {verdict.text}"
    if len(built.sessions) > 1 or mode in SLURM_MODES or mode.startswith("run --nodes"):
        assert verdict.node == "n1", f"{mode}: the node is named: {verdict.text}"


HEALTH = "http://127.0.0.1:9/health"
READY_LOG = (b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n"
             b"[2026-03-14 21:04:20] Load weight begin. avail mem=139.26 GB\n"
             b"[2026-03-14 21:04:30] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=64.10 GB\n"
             b"[2026-03-14 21:04:40] The server is fired up and ready to roll!\n")


@pytest.mark.parametrize("mode", _mode_params())
async def test_health_gates_ready_in_every_mode(mode: str, tmp_path: Path, request) -> None:
    """--health: every node's log says ready, but the URL answers 503: not READY until it answers
    200 (in every mode; the serving node's — here the first — is the one asked)."""
    from tui.core.events import HealthStatus

    clock = Clock()
    built = await _built(mode, tmp_path, request, clock, health=HEALTH)
    for session in built.sessions:
        session.handle(LogChunk("log", 0, READY_LOG, clock.now))
    asked = [session for session in built.sessions if session.health is not None]
    assert len(asked) == 1, f"{mode}: --health is asked of the serving node only, once: {len(asked)} asked"
    asked[0].handle(HealthStatus(HEALTH, False, "503 Service Unavailable"))
    verdict = built.verdict()
    assert verdict.kind == STARTING and f"waiting for {HEALTH}: 503" in verdict.text, f"{mode}: {verdict.text}"
    asked[0].handle(HealthStatus(HEALTH, True, "200 OK"))
    assert built.verdict().kind == READY, f"{mode}: {built.verdict().text}"


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


def _ready_job_of_two(clock: Clock) -> Any:
    """A job of two whose server was ready: n1 serving (its ready line), n2 a worker past its weight load."""
    from tui.cluster import ClusterSession

    cluster = ClusterSession([NodeSpec("n1", "n1.log"), NodeSpec("n2", "n2.log")],
                             make_session=lambda spec: WatchSession(clock=clock), clock=clock)
    cluster.job = SlurmJobState("5", "RUNNING", nodes=("n1", "n2"))
    steps = ("Init parallel begin.", "Init parallel ends. elapsed=1.84 s", "Load weight begin. avail mem=78.12 GB",
             "Load weight end. type=LlamaForCausalLM, avail mem=70.40 GB, mem usage=7.72 GB.",
             "Memory pool end. avail mem=19.80 GB", "Capture target decode CUDA graph begin. avail mem=19.60 GB",
             "Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=9.60 s, mem usage=0.61 GB.")
    for node, tp in (("n1", 0), ("n2", 1)):  # each node one rank of TP 2; only the first serves
        text = "[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=2)\n"
        text += "".join(f"[2026-03-14 21:04:2{i} TP{tp}] {step}\n" for i, step in enumerate(steps))
        if tp == 0:
            text += "[2026-03-14 21:04:40] The server is fired up and ready to roll!\n"
        cluster.nodes[node].handle(LogChunk("log", 0, text.encode(), clock.now))
    assert cluster.verdict().kind == READY, cluster.verdict().text
    return cluster


@pytest.mark.parametrize(("state", "kind"), [("FAILED", DEAD), ("NODE_FAIL", DEAD), ("OUT_OF_MEMORY", DEAD),
                                             ("TIMEOUT", DEAD), ("COMPLETED", STOPPED), ("CANCELLED", STOPPED)])
def test_a_job_that_ends_after_ready_is_stopped_only_when_it_ended_politely(state: str, kind: VerdictKind) -> None:
    """As one server after ready: a clean exit or a stop from outside (COMPLETED, CANCELLED) is a
    stop; a task killed, a node lost, the time limit (FAILED, NODE_FAIL, OUT_OF_MEMORY, TIMEOUT) is
    a death after ready, the first node to go named — n2's task was killed, srun then ended n1's."""
    clock = Clock()
    cluster = _ready_job_of_two(clock)
    cluster.node_died("n2", "task 1: Killed (srun)")
    clock.now += 0.5
    cluster.node_died("n1", "task 0: Terminated (srun)")
    cluster.job = SlurmJobState("5", state, nodes=("n1", "n2"), exit_code="0:9" if kind == DEAD else "0:0")
    verdict = cluster.verdict()
    assert verdict.kind == kind, verdict.text
    assert "after ready" in verdict.text and f"job 5 {state}" in verdict.text, verdict.text
    if kind == DEAD:
        assert verdict.node == "n2" and "task 1: Killed" in verdict.text, verdict.text
        assert verdict.exit_status == 1


# ------------------------------------------------------------------ rows with real processes
#
# Where the process evidence is found, not told: ``watch`` and ``watch --host`` find the log's
# writer themselves (``tui.sources.procscan``, over SSH its agent). In the ``run`` modes the launch's
# runner is the server's parent and reaps it (its ProcessExited is the evidence; a zombie cannot
# be left there), so the zombie row is the watch modes'.

def _zombie_server(tmp_path: Path) -> tuple[Path, subprocess.Popen, int]:
    """``server > log 2>&1 & exec tail -f log`` (a container's entrypoint), its server then killed:
    ``tail`` never reaps it, so it stays a zombie whose /proc/PID/stat holds its wait status."""
    from tui.sources import procscan

    log = tmp_path / "server.log"
    script = (f"{sys.executable} -c \"import time; print('[2026-03-14 21:04:10] server_args=ServerArgs(model_path=\\'/m\\')',"
              f" flush=True); time.sleep(600)\" > {log} 2>&1 & sleep 0.5; exec tail -f {log} > /dev/null")
    shell = subprocess.Popen(["sh", "-c", script])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (procscan.process(shell.pid) or {}).get("title") != "tail":
        time.sleep(0.05)  # (a subprocess of our own starting: no event to await)
    server = next(p for p in procscan.children(shell.pid))
    os.kill(server, signal.SIGKILL)
    while time.monotonic() < deadline and (procscan.process(server) or {}).get("state") != "Z":
        time.sleep(0.05)
    assert (procscan.process(server) or {}).get("state") == "Z", "the killed server is a zombie of tail's"
    return log, shell, server


@pytest.mark.parametrize("mode", ["watch", pytest.param("watch --host", marks=pytest.mark.ssh)])
async def test_a_zombie_writer_is_dead_with_the_status_the_kernel_holds(mode: str, tmp_path: Path, request,
                                                                         monkeypatch) -> None:
    """The server killed, its parent not reaping it: DEAD, killed by SIGKILL (/proc/PID/stat, field
    52), not "no writer found … judging by the log alone" until the timeout."""
    from tests.support import until
    from tui.core.verdict import DEAD
    from tui.wiring.watch import log_session

    host = None
    if mode == "watch --host":
        sshd = request.getfixturevalue("sshd")
        monkeypatch.setenv("WATCHTOWER_SSH_KNOWN_HOSTS", str(sshd.known_hosts))
        monkeypatch.setenv("WATCHTOWER_SSH_IDENTITY", str(sshd.client_key))
        host = sshd.spec
    log, shell, server = _zombie_server(tmp_path)
    session = log_session(WatchOptions(log=str(log), host=host, gpus=GpuOptions(kind="none")))
    try:
        session.start()
        verdict = await until(lambda: (v := session.verdict()).kind == DEAD and v, timeout=30,
                              seen=lambda: session.verdict().text, what=f"{mode}: DEAD")
        assert "SIGKILL" in verdict.text and str(server) in verdict.text, f"{mode}: {verdict.text}"
    finally:
        await session.stop()
        shell.kill()
        shell.wait()
        if host is not None:
            from tui.sources import ssh

            await ssh.close_all()  # (the shared connections are the test loop's)


@pytest.mark.slurm
async def test_a_zombie_writer_in_a_slurm_job_is_dead_with_the_status_the_kernel_holds(tmp_path: Path, request) -> None:
    """``watch --slurm``: the job's task is ``server > log 2>&1 & exec tail -f log`` (its output file,
    the node's log, is what ``tail`` copies), the server then killed and left a zombie of ``tail``'s:
    the node is DEAD, killed by SIGKILL, its pid named, as ``watch`` says of one log — not a task
    that runs on because ``tail`` does."""
    from tests.support import until
    from tui.core.options import ClusterOptions
    from tui.core.verdict import DEAD
    from tui.sources import procscan
    from tui.wiring.cluster import make_cluster

    slurm = request.getfixturevalue("slurm_env")
    server = tmp_path / "server.py"
    server.write_text("import os, sys, time\n"
                      f"open({str(tmp_path / 'server.pid')!r}, 'w').write(str(os.getpid()))\n"
                      "print(\"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/m')\", flush=True)\n"
                      "time.sleep(600)\n")
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nsrun -o {tmp_path}/wt-%j-%t.out sh -c "
                      f"'{sys.executable} {server} > {tmp_path}/server.log 2>&1 & sleep 0.5; exec tail -f {tmp_path}/server.log'\n")
    job = slurm.run("sbatch", "--parsable", "-N", "1", "-o", f"{tmp_path}/batch-%j.out", str(script)).stdout.strip()
    pid_file = tmp_path / "server.pid"
    await until(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=30, what="the server started")
    pid = int(pid_file.read_text())
    parent = lambda: procscan.process((procscan.process(pid) or {}).get("ppid", 0)) or {}  # noqa: E731
    await until(lambda: parent().get("title") == "tail", timeout=30, what="its parent is tail (exec'd)")
    os.kill(pid, signal.SIGKILL)
    await until(lambda: (procscan.process(pid) or {}).get("state") == "Z", timeout=30, what="a zombie of tail's")
    cluster = make_cluster(ClusterOptions(slurm_job=job, slurm_interval=0.2, gpus=GpuOptions(kind="none")))
    try:
        cluster.start()
        verdict = await until(lambda: (v := cluster.verdict()).kind == DEAD and v, timeout=30,
                              seen=lambda: cluster.verdict().text, what="watch --slurm: DEAD")
        assert "SIGKILL" in verdict.text and str(pid) in verdict.text, verdict.text
    finally:
        await cluster.stop()


# ------------------------------------------------------------------ SIGTERM: how a scheduler ends a watch
#
# `timeout`, a job scheduler or systemd stop Watchtower with SIGTERM: in every mode it ends as
# Ctrl-C does — the verdict so far (a launch: what keeps running, and how to follow it again) as
# its last line, exit status 143 (128 + SIGTERM), no traceback, the server left alone.

SIM = str(Path(__file__).with_name("server_sim.py"))
UNDER_WAY = (b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n"
             b"[2026-03-14 21:04:20] Load weight begin. avail mem=139.26 GB\n")
SIGTERM_MODES = {  # mode -> (its arguments after `watchtower`, given tmp_path and the SSH hosts; a launch?)
    "watch": (lambda tmp, hosts: ["watch", str(tmp / "n1.log")], False),
    "watch --host": (lambda tmp, hosts: ["watch", "--host", hosts[0], str(tmp / "n1.log")], False),
    "watch (two nodes)": (lambda tmp, hosts: ["watch", "--cluster", str(tmp / "nodes.toml")], False),
    "run": (lambda tmp, hosts: ["run", "--name", "term", "--log-dir", str(tmp / "logs"), "--", sys.executable, SIM,
                                "--outcome", "hang"], True),
    "run --host": (lambda tmp, hosts: ["run", "--host", hosts[0], "--name", "term", "--log-dir", str(tmp / "logs"),
                                       "--", sys.executable, SIM, "--outcome", "hang"], True),
    "run --nodes (one)": (lambda tmp, hosts: ["run", "--nodes", hosts[1], "--name", "term",
                                              "--log-dir", str(tmp / "logs"), "--no-check", "--", sys.executable, SIM,
                                              "--outcome", "hang"], True),
    "run --slurm": (lambda tmp, hosts: ["run", "--slurm", "--nodes", "2", "--name", "term", "--log-dir", str(tmp / "logs"),
                                        "--no-check", "--", sys.executable, SIM, "--tp", "2", "--node-rank", "{node_rank}",
                                        "--outcome", "hang"], True),
    "watch --slurm": (lambda tmp, hosts: ["watch", "--slurm", (tmp / "job").read_text().strip(),
                                          "--slurm-interval", "0.2"], False),
}
SSH_SIGTERM_MODES = {"watch --host", "run --host", "run --nodes (one)"}
#: The real test cluster's (``tests/slurm_cluster.py``): ``watch --slurm`` follows a job submitted
#: first (its id in ``tmp/job``), whose tasks hang in their weight load.
SLURM_SIGTERM_MODES = {"run --slurm", "watch --slurm"}


def _sigterm_param(mode: str) -> Any:
    if mode in SSH_SIGTERM_MODES:
        return pytest.param(mode, marks=pytest.mark.ssh)
    if mode in SLURM_SIGTERM_MODES:
        return pytest.param(mode, marks=pytest.mark.slurm)
    return mode


def _hanging_job(tmp_path: Path) -> str:
    """A two-node job whose tasks start as SGLang does and hang in their weight load, one output
    file per task (as ``watch --slurm`` reads them); its id."""
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nsrun -o {tmp_path}/wt-%j-%t.out {sys.executable} {SIM} --tp 2 "
                      "--node-rank $SLURM_NODEID --outcome hang\n")
    job = subprocess.run(["sbatch", "--parsable", "-N", "2", "-o", f"{tmp_path}/batch-%j.out", str(script)],
                         capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    (tmp_path / "job").write_text(job)
    return job


@pytest.mark.parametrize("mode", [_sigterm_param(m) for m in SIGTERM_MODES])
def test_sigterm_ends_every_mode_as_ctrl_c_does_with_exit_143(mode: str, tmp_path: Path, request) -> None:
    import json
    import select

    from tests.support import run_cli
    from tui.launch.proctable import is_alive

    if mode in SLURM_SIGTERM_MODES:
        request.getfixturevalue("slurm_env")  # (SLURM_CONF set for the CLI; its jobs cancelled after)
    env = {**os.environ, "WATCHTOWER_DATA_DIR": str(tmp_path / "data"), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    hosts: list[str] = []
    if mode in SSH_SIGTERM_MODES:
        sshd = request.getfixturevalue("sshd")
        nodes = request.getfixturevalue("sshd_nodes")
        hosts = [sshd.spec, nodes[0].spec]
        env.update(WATCHTOWER_SSH_KNOWN_HOSTS=str(sshd.known_hosts if mode != "run --nodes (one)" else nodes[0].known_hosts),
                   WATCHTOWER_SSH_IDENTITY=str(sshd.client_key if mode != "run --nodes (one)" else nodes[0].client_key))
    for name in ("n1", "n2"):
        (tmp_path / f"{name}.log").write_bytes(UNDER_WAY)
    (tmp_path / "nodes.toml").write_text("".join(f'[[node]]\nname = "{n}"\nlog = "{tmp_path / n}.log"\n\n'
                                                 for n in ("n1", "n2")))
    if mode == "watch --slurm":
        _hanging_job(tmp_path)
    args, launched = SIGTERM_MODES[mode]
    argv = args(tmp_path, hosts)
    proc = subprocess.Popen([sys.executable, "-m", "tui.cli", argv[0], "--plain", "--gpus", "none", *argv[1:]],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    try:
        seen = ""
        while "weight load" not in seen:  # under way: then the scheduler's SIGTERM
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            assert ready, seen
            data = os.read(proc.stdout.fileno(), 65536)  # (unbuffered: what select saw is what is read)
            assert data, seen + proc.stderr.read().decode()
            seen += data.decode()
        proc.send_signal(signal.SIGTERM)
        out_bytes, err_bytes = proc.communicate(timeout=60)
        out, err = out_bytes.decode(), err_bytes.decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    try:
        assert proc.returncode == 143, f"{mode}: exit {proc.returncode}\n{seen + out}\n{err}"
        assert "Traceback" not in err, f"{mode}: {err}"
        last = (seen + out).strip().splitlines()[-1]
        if launched:
            assert "keeps running" in seen + out and "watchtower attach term" in seen + out, f"{mode}: {seen + out}"
            assert "Ctrl-C" not in seen + out, f"{mode}: SIGTERM is not called Ctrl-C: {seen + out}"
        else:
            assert "SIGTERM" in last and "the verdict so far: STARTING" in last, f"{mode}: {last}"
    finally:
        if launched and mode not in SLURM_SIGTERM_MODES:  # (a job's id is no process: slurm_env cancels the jobs)
            rows = json.loads(run_cli("history", "term", "--json", env=env).stdout or "[]")
            for row in rows:
                if row.get("pid") and is_alive(row["pid"]):
                    os.killpg(row["pid"], signal.SIGKILL)


DASHBOARD_SIGTERM_MODES = {  # the dashboards: the same ending, and the terminal given back
    "watch (dashboard)": (lambda tmp: f"watch --gpus none {tmp / 'n1.log'}", False),
    "watch two nodes (dashboard)": (lambda tmp: f"watch --gpus none --cluster {tmp / 'nodes.toml'}", False),
    "run (dashboard)": (lambda tmp: f"run --name term --gpus none --log-dir {tmp / 'logs'} -- {sys.executable} {SIM}"
                                    " --outcome hang", True),
}


@pytest.mark.tmux
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/setup --test)")
@pytest.mark.parametrize("mode", list(DASHBOARD_SIGTERM_MODES))
def test_sigterm_ends_every_dashboard_with_exit_143_and_the_terminal_given_back(mode: str, tmp_path: Path) -> None:
    import json

    from tests.support import run_cli
    from tests.test_tmux import Tmux
    from tui.launch.proctable import is_alive

    for name in ("n1", "n2"):
        (tmp_path / f"{name}.log").write_bytes(UNDER_WAY)
    (tmp_path / "nodes.toml").write_text("".join(f'[[node]]\nname = "{n}"\nlog = "{tmp_path / n}.log"\n\n'
                                                 for n in ("n1", "n2")))
    args, launched = DASHBOARD_SIGTERM_MODES[mode]
    env = {"WATCHTOWER_DATA_DIR": str(tmp_path / "data"), "TERM": "screen-256color"}
    pid_file = tmp_path / "pid"
    pane = Tmux(100, 30, f"sh -c 'echo $$ > {pid_file}; exec {sys.executable} -m tui.cli {args(tmp_path)}'", env)
    try:
        pane.wait_for(r"Load weight begin")  # in the log view: under way
        os.kill(int(pid_file.read_text()), signal.SIGTERM)
        screen = pane.wait_for(r"WATCHTOWER-EXITED-\d+")
        assert "WATCHTOWER-EXITED-143" in screen, f"{mode}:\n{screen}"
        assert pane.tmux("display", "-p", "-t", "t", "#{alternate_on} #{mouse_any_flag}").split() == ["0", "0"], mode
        said = pane.tmux("capture-pane", "-p", "-J", "-t", "t")
        assert "interrupted (SIGTERM); the verdict so far: STARTING" in said, f"{mode}:\n{said}"
        assert "Traceback" not in said, said
        if launched:
            assert re.search(r"left running: v1 \(pid \d+; kill -INT -- -\d+ stops it, or `watchtower attach term`",
                             said), said
    finally:
        pane.close()
        if launched:
            rows = json.loads(run_cli("history", "term", "--json", env=env).stdout or "[]")
            assert rows and all(row["pid"] and is_alive(row["pid"]) for row in rows), rows  # left alone ...
            for row in rows:
                os.killpg(row["pid"], signal.SIGKILL)  # ... until now
