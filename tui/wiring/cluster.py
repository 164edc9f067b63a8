"""Several nodes and Slurm jobs: `watch` across nodes, `run --slurm`, `run --nodes`, `attach` of a Slurm launch."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from functools import partial
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tui.core.errors import UsageError, interruption
from tui.core.options import ClusterOptions, LaunchOptions
from tui.launch.spec import LaunchError
from tui.session import WatchSession
from tui.wiring.launch import run_dashboard, tty_terminal
from tui.wiring.watch import ended_by, ending_status, load_profile, remembered, serving_metrics, stoppable


if TYPE_CHECKING:
    from tui.cluster import ClusterSession
    from tui.core.options import NodeSpec
    from tui.core.slurm import SlurmRequest
    from tui.history import AttemptRecord, History
    from tui.launch.controller import Launch
    from tui.launch.nodes import NodesRunner
    from tui.launch.spec import LaunchSpec
    from tui.present.metrics import Watched

def remembering(make: Callable[..., WatchSession]) -> Callable[..., WatchSession]:
    """``make`` (a node's session), each node remembering its startups' phase times as one log's
    watch does (``remembered``): the stall limits of the next watch, for each node as for one log."""
    def node(*args: Any, **kwargs: Any) -> WatchSession:
        session = make(*args, **kwargs)
        remembered(session)
        return session
    return node


def make_cluster(options: ClusterOptions, *, max_rate: float = 15.0) -> ClusterSession:
    """The ClusterSession for ``watch`` with several nodes, or a Slurm job's tasks as its nodes."""
    from tui.cluster import ClusterSession, default_session

    if options.ray_log is not None:  # vLLM over Ray: one log, each node's lines split out (vLLM's unless --server)
        from tui.cluster import ray_cluster

        shared = remembering(partial(default_session, profile=load_profile(options.server or "vllm"),
                                     gpu_interval=options.gpus.interval, max_rate=max_rate,
                                     stall_limits=options.stall_limits))
        cluster = ray_cluster(options.ray_log, options.ray_host, shared, gpus=options.gpus.kind, from_end=options.from_end)
        if options.health:
            cluster.nodes["head"].probe_health(options.health, options.ray_host)
        return cluster
    make = remembering(partial(default_session, profile=load_profile(options.server), from_end=options.from_end,
                               gpu_interval=options.gpus.interval, max_rate=max_rate, writers=True,
                               stall_limits=options.stall_limits, smoke=options.smoke,
                               smoke_timeout=options.smoke_timeout))
    if options.slurm_job is None:
        session = ClusterSession(list(options.nodes), make_session=make)
        if options.health:
            session.probe_health(options.health)
        return session
    from tui.core.options import NodeSpec
    from tui.sources.slurm import SlurmJobSource, missing_clients, task_logs

    missing = missing_clients()
    if missing:
        raise UsageError(f"--slurm needs the Slurm client commands ({', '.join(missing)} not found)")

    async def outputs(job: Any) -> list[NodeSpec]:
        return [NodeSpec(node, path, None, options.gpus.kind) for node, path in await task_logs(job, options.task_output)]

    job = SlurmJobSource(options.slurm_job, interval=options.slurm_interval)
    session = ClusterSession(make_session=make, job=job, job_outputs=outputs)
    if options.health:  # the job's serving task, once the tasks are known
        session.probe_health(options.health)
    return session


def known_job(job_id: str) -> None:
    """A job Slurm does not know is a mistyped id: said once, exit 2 (not a verdict, not twice)."""
    from tui.core.slurm import GONE
    from tui.sources.slurm import SlurmJobSource

    first = asyncio.run(SlurmJobSource(job_id).details())
    if first.state == GONE:
        raise UsageError(f"--slurm {job_id}: Slurm does not know this job ({first.reason}); `squeue --me` lists yours")


def watch_cluster(options: ClusterOptions, *, plain: bool, json: bool = False) -> int:
    """`watch` across nodes: the plain lines or the cluster dashboard; the verdict's exit status."""
    from tui.present.metrics import node_set

    session = make_cluster(options)
    if options.slurm_job:
        known_job(options.slurm_job)
    title = f"watching Slurm job {options.slurm_job}" if options.slurm_job else ""
    watched = node_set(lambda: session)
    labels = {"slurm_job": options.slurm_job} if options.slurm_job else {"nodes": ",".join(session.nodes)}
    if plain or json:
        from tui.present.plain import NodesPresenter

        presenter = NodesPresenter(session, timeout=options.timeout, title=title, json=json)

        async def plain_lines() -> int:
            async with serving_metrics(options.metrics, watched, labels):
                return await presenter.run()

        try:
            return stoppable(plain_lines())
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM: the verdict so far, as a last line (as for one log)
            return presenter.interrupted(*interruption(exc))
    from tui.app.dashboard import build_app

    session.timeout = options.timeout  # --timeout: the session keeps its own deadline
    app = build_app(None, theme=options.theme, nodes=session)
    if not options.metrics:
        ended = app.run()  # (q: the verdict's exit status; SIGTERM: 143)
        return session.verdict().exit_status if ended is None else int(ended)

    async def dashboard() -> int:
        async with serving_metrics(options.metrics, watched, labels):
            ended = await app.run_async()
        return session.verdict().exit_status if ended is None else int(ended)

    return asyncio.run(dashboard())


def slurm_launch(spec: LaunchSpec, request: SlurmRequest, options: LaunchOptions, *, history: History | None = None,
                 interval: float = 1.0) -> Launch:
    """The launch of ``spec`` whose attempts are Slurm jobs (the Slurm runner), each followed as its tasks' node set."""
    from tui.cluster import default_session
    from tui.launch.controller import Launch
    from tui.launch.slurm import SlurmRunner
    from tui.sources.slurm import missing_clients

    missing = missing_clients("sbatch", "scancel")
    if missing:
        raise UsageError(f"--slurm needs the Slurm client commands ({', '.join(missing)} not found)")
    make = remembering(partial(default_session, profile=load_profile(options.server), gpu_interval=options.gpus.interval,
                               stall_limits=spec.stall_limit))  # --stall-limit and history's phase times, per node
    gpus = options.gpus.kind if options.gpus.kind == "sim" else "none"
    return Launch(spec, history=history, make_node=make,
                  runner=lambda emit: SlurmRunner(request, emit, interval=interval, gpus=gpus))


def _history() -> Any:
    from tui.history import History

    try:
        return History()
    except Exception as exc:  # an unwritable data dir: keep working, say so once
        print(f"watchtower: history disabled: {exc}", file=sys.stderr)
        return None


def slurm_run(spec: LaunchSpec, request: SlurmRequest, options: LaunchOptions, *, plain: bool, json: bool = False) -> int:
    """`run --slurm`: check, submit vN, follow the job; the dashboard's x cancels it, r resubmits as vN+1."""
    launch = slurm_launch(spec, request, options, history=_history())
    if options.preflight:
        _slurm_preflight(spec, sys.stdout if plain and not json else sys.stderr)
    return _run_cluster_launch(launch, options, plain=plain, json=json)


def _slurm_preflight(spec: Any, out: Any) -> None:
    """`watchtower check` of a Slurm job's command on the submitting host: the checks that hold
    wherever the job runs (model, draft, contexts, EAGLE-3 hook, versions; the nodes share the
    files). The machine's own (ports, GPUs, /dev/shm…) are left to the job's nodes, said once;
    a ✗ refuses the submission. A probe that cannot run here is skipped with its reason."""
    from tui.core.preflight import portable
    from tui.preflight import preflight_report

    try:
        report = asyncio.run(preflight_report(list(spec.command), dict(spec.env), gpus="none"))
    except UsageError as exc:
        print(f"check: skipped on this host ({exc}): the job's nodes are not checked before it starts", file=out, flush=True)
        return
    report = dataclasses.replace(report, checks=portable(report.checks))
    for line in report.text().splitlines():
        print(f"check: {line.strip()}", file=out, flush=True)
    print("check: ports, GPUs, /dev/shm and leftover servers are the job's nodes' own: not checked from here",
          file=out, flush=True)
    if report.failed:
        raise UsageError(f"{len(report.failed)} check(s) failed (✗ above): fix them, or --no-check to submit anyway")


def slurm_attach(spec: LaunchSpec, record: AttemptRecord, options: LaunchOptions, *, plain: bool, json: bool = False) -> int:
    """`attach NAME` of a `run --slurm` launch: follow the job id its history keeps; x cancels
    it, r resubmits as vN+1 asking Slurm for what the attempt's batch script asked."""
    from tui.core.slurm import SlurmRequest

    from pathlib import Path

    script = Path(spec.log_dir) / f"{spec.name}-v{record.attempt}.sbatch"
    try:
        request = SlurmRequest.from_script(script.read_text())
    except OSError:
        request = SlurmRequest()
    launch = slurm_launch(dataclasses.replace(spec, host=None), request, options, history=_history())
    return _run_cluster_launch(launch, options, plain=plain, json=json)


async def _cluster_plain(launch: Launch, options: LaunchOptions, json: bool = False) -> int:
    """`run --slurm --plain` / `run --nodes … --plain` / `attach`: start (or follow again) the
    attempt and print its node set to its verdict."""
    from tui.core.verdict import EXIT_READY
    from tui.launch.events import Note
    from tui.present.plain import NodesPresenter
    from tui.present.records import JsonLines, Said

    presenter: NodesPresenter | None = None
    early = JsonLines() if json else None  # a note before the presenter exists

    def note(event: object) -> None:
        if not isinstance(event, Note):
            return
        if presenter is not None:
            presenter.emit(Said("note", event.text))
        elif early is not None:
            early.write(Said("note", event.text))
            early.flush()
        else:
            print(event.text, flush=True)

    launch.subscribe(note)
    launch.terminal = partial(tty_terminal, sys.stdout)
    try:
        try:
            await launch.start(launch=not options.attach_only)
        except LaunchError as exc:
            raise UsageError(str(exc)) from None
        run = launch.run
        assert run is not None
        presenter = NodesPresenter(launch.nodes, timeout=options.timeout, title=f"run {launch.spec.name} v{run.attempt}",
                                   json=json)
        async with serving_metrics(options.metrics, launch_metrics(launch), {"launch": launch.spec.name}):
            code = await presenter.run()
        launch.evaluate()
        await launch.settle()  # let hooks and the history writes finish (and say how they went)
        if code == EXIT_READY or run.alive and await launch.runner.alive(run):
            presenter.emit(Said("left_running", f"left running: {launch.runner.stop_hint(run, launch.spec.name)}",
                                fields={"name": launch.spec.name, "attempt": run.attempt}))
        return code
    except asyncio.CancelledError as cancelled:  # Ctrl-C, SIGTERM: what runs keeps running, said with how to stop it
        run = launch.run
        if run is not None and run.alive:
            name = launch.spec.name
            said = Said("left_running", f"interrupted ({ended_by(cancelled)}): v{run.attempt} keeps running: "
                        f"{launch.runner.stop_hint(run, name)}",
                        fields={"name": name, "attempt": run.attempt, "exit": ending_status(cancelled)})
            if presenter is not None:
                presenter.emit(said)
                presenter.flush()
            elif early is not None:
                early.write(said)
                early.flush()
            else:
                print(said.text, flush=True)
        raise
    finally:
        await launch.close()


async def _node_preflights(spec: LaunchSpec, runner: NodesRunner, gpus: str) -> list[tuple[str, Any]]:
    """`watchtower check` of each node's own command, on that node, all at once: (node, report or why not)."""
    from tui.preflight import preflight_report

    async def one(node: str, host: str, argv: list[str]) -> tuple[str, Any]:
        try:
            return node, await preflight_report(argv, dict(spec.env), host=host, gpus=gpus)
        except UsageError as exc:
            return node, f"cannot probe {host}: {exc}"

    commands = runner.commands(spec.command)
    return list(await asyncio.gather(*(one(n, h, commands[n]) for n, h in zip(runner.names, runner.hosts))))


def nodes_launch(spec: LaunchSpec, hosts: list[str], options: LaunchOptions, *, names: list[str] | None = None,
                 extra: dict[int, Any] | None = None) -> Launch:
    """The launch of ``spec``'s command on these hosts over SSH (the node-set runner), each attempt
    followed as its nodes' node set."""
    from tui.cluster import default_session
    from tui.launch.controller import Launch
    from tui.launch.nodes import NodesRunner

    make = remembering(partial(default_session, profile=load_profile(options.server), gpu_interval=options.gpus.interval,
                               smoke=spec.smoke, smoke_timeout=spec.smoke_timeout,
                               stall_limits=spec.stall_limit))  # --stall-limit, history: per node
    return Launch(spec, history=_history(), make_node=make,
                  runner=lambda emit: NodesRunner(hosts, emit, names=names, extra=extra, gpus=options.gpus.kind))


def nodes_attach(spec: LaunchSpec, record: AttemptRecord, options: LaunchOptions, *, plain: bool, json: bool = False) -> int:
    """`attach NAME` of a `run --nodes` launch: follow its attempt on every node again (each node's
    pid file); x stops it on every node, r relaunches as vN+1."""
    launch = nodes_launch(dataclasses.replace(spec, host=None), record.host.split(","), options)
    return _run_cluster_launch(launch, options, plain=plain, json=json)


def nodes_run(spec: LaunchSpec, nodes: list[NodeSpec], options: LaunchOptions, *, plain: bool, force: bool,
              json: bool = False) -> int:
    """`run --nodes H1,H2 -- CMD` (or `--cluster FILE`): the command on every node over SSH."""
    from tui.core.multinode import agreement
    from tui.core.preflight import FAIL
    from tui.launch.nodes import NodesRunner

    hosts = [n.host for n in nodes if n.host is not None]
    assert len(hosts) == len(nodes)  # (the command's node list requires each node's host)
    launch = nodes_launch(spec, hosts, options, names=[n.name for n in nodes],
                          extra={i: n.args for i, n in enumerate(nodes) if n.args})
    out = sys.stdout if plain and not json else sys.stderr  # --json: stdout holds JSON objects alone
    runner = launch.runner
    assert isinstance(runner, NodesRunner)
    asyncio.run(runner.resolve_master())  # {master}: node 0's address, as its ssh config resolves it
    checks = agreement(runner.commands(spec.command), spec.env)
    for check in checks:
        print(f"check: {check.line}", file=out, flush=True)
    failed = [c for c in checks if c.status == FAIL]
    for node, report in asyncio.run(_node_preflights(spec, runner, options.gpus.kind)):
        lines = report.text().splitlines() if not isinstance(report, str) else [f"preflight: {report}"]
        for line in lines:
            print(f"check [{node}]: {line.strip()}", file=out, flush=True)
        failed += [] if isinstance(report, str) else report.failed
    if failed and not force:
        raise UsageError(f"{len(failed)} check(s) failed (✗ above): fix them, or --no-check to launch anyway")
    return _run_cluster_launch(launch, options, plain=plain, json=json)


def _run_cluster_launch(launch: Launch, options: LaunchOptions, *, plain: bool, json: bool = False) -> int:
    """A launch across nodes in the launch dashboard (x stops it on every node or cancels the job,
    r relaunches as vN+1 …) or as plain text; the verdict's exit status (``attach``: options'
    ``attach_only``, the latest attempt followed again, none started)."""
    launch.timeout = options.timeout
    if plain or json:
        return stoppable(_cluster_plain(launch, options, json))  # (SIGTERM: Terminated, exit 143)
    return run_dashboard(launch, options, launch_metrics(launch))


def launch_metrics(launch: Launch) -> Watched:
    """What the metrics of a launch across nodes read: its attempt of now (a relaunch makes
    another node set), each node's metrics and verdict, the attempt's verdict and number."""
    from tui.present.metrics import node_set

    return node_set(lambda: launch.nodes if launch.followed else None, lambda: launch.attempt or None)


