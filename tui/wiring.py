"""The composition root: the one module that puts sources, session, launch and views together.

Commands parse their options into ``tui.core.options`` objects and call one function
here; nothing below this module imports the command line, and no view builds a source.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from tui.core.errors import UsageError
from tui.core.limits import StallLimits
from tui.core.lines import clean
from tui.core.options import ClusterOptions, GpuOptions, LaunchOptions, PlaybackOptions, RecordOptions, WatchOptions
from tui.session import SessionInfo, Subscriber, WatchSession


def load_profile(server: str | None) -> Any:
    """``--server NAME|PATH`` as the tracker's profile; None lets the tracker auto-detect."""
    if not server:
        return None
    from tui.core.profiles import ProfileError, load_profile as load

    try:
        return load(server)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None


# ---------------------------------------------------------------- watch


def watch_dashboard(options: WatchOptions) -> int:
    """`watchtower watch LOG` in the dashboard; returns 0 ready, 1 failed, 3 still starting."""
    from tui.app.dashboard import build_app
    from tui.sources import log_tailer, writer_source
    from tui.sources import make_gpu_source

    from tui.history import WatchedStartups

    gpus = make_gpu_source(options.gpus.kind, options.host, options.gpus.interval)
    session = WatchSession(
        log=log_tailer(options.log, host=options.host, from_end=options.from_end, writers=True),
        gpu=gpus,
        profile=load_profile(options.server),
        info=SessionInfo(server=options.server, host=options.host or "localhost", log_path=str(options.log)),
        stall_limits=options.stall_limits,
    )
    if (writers := writer_source(options.log, host=options.host)) is not None:
        session.add_source(writers)  # the server behind the log (tui.core.events.WritersFound …)
    memory = WatchedStartups()  # phase times of this server, model and TP size: the stall limits
    session.expected = memory.longest
    session.subscribe(lambda update: memory.update(session.state) if "state" in update.topics else None)
    app = build_app(session, theme=options.theme, gpus_enabled=gpus is not None, timeout=options.timeout)
    return int(app.run() or 0)


def watch_plain(options: WatchOptions) -> int:
    """`watchtower watch LOG --plain`: one line per event; the verdict's exit status."""
    from tui.present.plain import PlainWatch

    profile = load_profile(options.server)
    try:
        return asyncio.run(PlainWatch(options, profile).run())
    except KeyboardInterrupt:
        return 130


# ---------------------------------------------------------------- recordings


def replay_session(
    path: str | os.PathLike[str], *, speed: float, title: str | None = None, stall_limits: StallLimits | None = None
) -> tuple[WatchSession, Any]:
    """A session fed by a replay of ``path``: (session, replay). UsageError for a bad file."""
    from tui.sources.local import LocalTailer
    from tui.sources.replay import RecordingError, Replay, load

    try:
        recording = load(path)
        replay = Replay(recording, speed=speed)
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    header = recording.header
    origin = time.time()
    title = title or str(header.get("title") or f"replay: {os.path.basename(str(path))}")
    session = WatchSession(
        log=LocalTailer(replay.log_path),  # (the replay writes the recorded bytes into a file of its own)
        gpu=replay,
        clock=lambda: origin + (time.time() - origin) * speed,  # recording time: silences keep their length
        stall_limits=stall_limits,
        info=SessionInfo(
            server=header.get("server"),
            host=str(header.get("host") or "localhost"),
            log_path=str(header.get("log") or replay.log_path),  # the log recorded, not the replay's own file
            title=title + (" (cut short: valid up to its last record)" if recording.cut else ""),
        ),
    )
    return session, replay


def static_session(path: str | os.PathLike[str], *, upto: float | None = None, title: str | None = None) -> WatchSession:
    """A session holding a recording played instantly up to ``upto`` seconds, on a stopped clock.

    Arrival times are the recorded ones, so elapsed time and silences read as they did
    live; for screenshots and snapshot tests (deterministic), not for watching.
    """
    from tui.core.events import GpuSample, GpuUnavailable, LogChunk, LogRestart, LogTruncated
    from tui.sources.replay import gpu_from_row, load, record_bytes

    recording = load(path)
    header = recording.header
    origin = 1_773_500_000.0  # any fixed instant
    now = [origin]
    host = str(header.get("host") or "localhost")
    session = WatchSession(
        info=SessionInfo(server=header.get("server"), host=host, log_path=str(header.get("log") or path),
                         title=title or str(header.get("title") or "")),
        clock=lambda: now[0],
    )
    for record in recording.records:
        if upto is not None and record["t"] > upto:
            break
        now[0] = origin + float(record["t"])
        data = record_bytes(record)
        if data is not None:
            session.handle(LogChunk(host, 0, data, now[0]))
        elif "restart" in record:
            session.handle(LogRestart(host, str(record["restart"])))
        elif "truncate" in record:
            session.handle(LogTruncated(host, int(record["truncate"]), int(record.get("lines", 0))))
        elif "gpu" in record:
            session.handle(GpuSample(host, now[0], tuple(gpu_from_row(r) for r in record["gpu"])))
        elif "gpu_unavailable" in record:
            session.handle(GpuUnavailable(host, str(record["gpu_unavailable"])))
    now[0] = origin + (upto if upto is not None else recording.duration)
    session.flush()
    return session


def play_recording(path: str | os.PathLike[str], options: PlaybackOptions, *, title: str | None = None) -> int:
    """Replay a recording through the real tailer, in the dashboard or as plain text."""
    if options.speed <= 0:
        raise UsageError("--speed must be greater than 0")
    session, replay = replay_session(path, speed=options.speed, title=title, stall_limits=options.stall_limits)
    try:
        if options.plain:
            return _play_plain(replay, session.info.log_path, options.stall_limits)
        from tui.app.dashboard import build_app

        app = build_app(session, theme=options.theme)
        return int(app.run() or 0)
    finally:
        replay.close()


def _play_plain(replay: Any, recorded: str, stall_limits: StallLimits | None = None) -> int:
    """The plain watcher (`watch --plain`) on the replayed log, with the replay running beside it;
    it names the ``recorded`` log, and ends once the replay has played out."""
    from tui.present.plain import PlainWatch

    async def drain() -> None:
        async for _ in replay.events():
            pass

    async def main() -> int:
        feeder = asyncio.create_task(drain())
        try:
            # the replay plays the GPU samples back itself: no GPU of this machine's is polled
            options = WatchOptions(log=str(replay.log_path), stall_limits=stall_limits, gpus=GpuOptions(kind="none"))
            plain = PlainWatch(options, None, label=f"{recorded} (replayed)", ended=replay.done)
            return int(await plain.run() or 0)
        finally:
            feeder.cancel()

    return asyncio.run(main())


async def record(
    options: RecordOptions,
    writer: Any,
    *,
    after_verdict: float,
    status: Callable[[WatchSession], None] | None = None,
    status_every: float = 5.0,
) -> str:
    """Follow the log (and GPUs) into ``writer`` until ``after_verdict`` s past the verdict, SIGTERM
    or SIGHUP; the outcome. ``status(session)`` is called every ``status_every`` seconds."""
    import signal

    from tui.core.events import GpuSample, GpuUnavailable, LogChunk, LogRestart, LogTruncated
    from tui.core.state import FAILED, READY
    from tui.sources import log_tailer
    from tui.sources import make_gpu_source

    gpus = make_gpu_source(options.gpus.kind, options.host, options.gpus.interval)
    session = WatchSession(log=log_tailer(options.log, host=options.host, from_end=options.from_end), gpu=gpus)
    session.handlers = {
        LogChunk: [lambda e: writer.log(e.at, e.data)],
        LogRestart: [lambda e: writer.restart(time.time(), e.reason)],
        LogTruncated: [lambda e: writer.truncate(time.time(), e.size, e.lines)],
        GpuSample: [lambda e: writer.gpu(e.at, e.gpus)],
        GpuUnavailable: [lambda e: writer.gpu_unavailable(time.time(), e.reason)],
    }
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    armed = False

    def on_update(_update: Any) -> None:
        nonlocal armed
        if not options.keep_going and not armed and session.state.outcome in (READY, FAILED):
            armed = True
            loop.call_later(after_verdict, done.set)

    session.subscribe(on_update)
    stopped_by: list[str] = []

    def stop(signum: int) -> None:
        stopped_by.append(signal.Signals(signum).name)
        done.set()

    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop, signum)

    async def report() -> None:
        while status is not None:
            await asyncio.sleep(status_every)
            status(session)

    reporter = asyncio.create_task(report())
    session.start()
    try:
        try:
            await asyncio.wait_for(done.wait(), timeout=options.duration)
        except TimeoutError:
            return "duration reached"
        return f"stopped by {stopped_by[0]}" if stopped_by else session.state.outcome
    finally:
        reporter.cancel()
        for signum in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(signum)
        await session.stop()


# ---------------------------------------------------------------- launch


def make_launch(
    spec: Any,
    options: LaunchOptions,
    terminal: Callable[[str], None] | None = None,
    subscribers: Iterable[Subscriber] = (),
) -> tuple[WatchSession, Any]:
    """The session and the launch controller, wired; ``subscribers`` hear of updates before the launch."""
    from tui.history import History, HistoryError
    from tui.launch import Launch
    from tui.sources import make_gpu_source

    info = SessionInfo(host=spec.host_label, title=f"run: {spec.name}")
    session_gpu = make_gpu_source(options.gpus.kind, spec.host, options.gpus.interval)
    session = WatchSession(gpu=session_gpu, profile=load_profile(options.server), info=info)
    try:  # before anything is launched: a server nobody records would have no owner
        history = History()
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    if history.notice:
        print(f"watchtower: {clean(history.notice)}", file=sys.stderr)
    for subscriber in subscribers:
        session.subscribe(subscriber)
    launch = Launch(spec, history=history, terminal=terminal)
    launch.gpu_enabled = session_gpu is not None
    launch.gpus.pids_real = options.gpus.kind != "sim"  # never offer to kill a simulated GPU's made-up pid
    if options.preflight:
        launch.preflight = functools.partial(preflight_for, host=spec.host, gpus=options.gpus.kind, shm=options.shm)
    launch.attach(session)
    return session, launch


async def preflight_for(command: Any, env: Any, *, host: str | None, gpus: str, shm: str | None) -> Any:
    """The checks a launch runs first (``Launch.preflight``); ``--gpus sim`` checks against 8 idle simulated GPUs."""
    from tui.preflight import Report, preflight_report

    try:
        return await preflight_report(list(command), dict(env), host=host, gpus=gpus, shm=shm)
    except UsageError as exc:  # the probe cannot run there: say so, never block the launch on it
        return Report.unavailable(list(command), dict(env), host, str(exc))


def launch_dashboard(spec: Any, options: LaunchOptions) -> int:
    """`watchtower run` / `attach` in the dashboard; returns the verdict's exit status."""
    from tui.app import themes
    from tui.app.launcher import LaunchApp

    session, launch = make_launch(spec, options)
    palettes = themes.discover()
    palette = themes.resolve(options.theme, palettes)
    app = LaunchApp(
        launch,
        session,
        palettes,
        palette.name,
        gpus_enabled=launch.gpu_enabled,
        attach_only=options.attach_only,
        timeout=options.timeout,
    )
    return int(app.run() or 0)


def launch_plain(spec: Any, options: LaunchOptions) -> int:
    """`run --plain`: SIGTERM (``timeout``, a job scheduler) ends it like Ctrl-C does — the
    server is left running and named, the history writes finish — and exits 143."""
    import signal

    async def main() -> int:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        terminated = False

        def on_sigterm() -> None:
            nonlocal terminated
            terminated = True
            task.cancel()

        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        try:
            return await run_plain(spec, options)
        except asyncio.CancelledError:
            if terminated:
                return 128 + signal.SIGTERM
            raise
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    return asyncio.run(main())


async def run_plain(spec: Any, options: LaunchOptions) -> int:
    from tui.core.lines import clean
    from tui.core.verdict import EXIT_FAILED, EXIT_READY, EXIT_STARTING
    from tui.launch import LaunchError, PreflightRefused
    from tui.present.plain import PlainPrinter

    out = sys.stdout

    def terminal(seq: str) -> None:
        if out.isatty():
            out.write(seq)
            out.flush()

    session, launch = make_launch(spec, options, terminal)
    printer = PlainPrinter(out, session, launch)
    session.start()
    consumer = asyncio.create_task(printer.consume())
    try:
        try:
            await launch.start(launch=not options.attach_only)
        except PreflightRefused as exc:
            printer.preflight(exc.report)
            printer.say("not launching: a check failed (--no-check launches anyway)")
            return EXIT_FAILED
        except LaunchError as exc:
            raise UsageError(clean(str(exc))) from None
        if launch.preflight_report is not None and not launch.reattached:
            printer.preflight(launch.preflight_report)
        printer.started()
        try:
            await asyncio.wait_for(printer.final.wait(), options.timeout)
        except asyncio.TimeoutError:
            printer.drain()
            printer.say(f"timed out after {options.timeout:g} s: {launch.verdict().text}")
            printer.left_running()
            return EXIT_STARTING
        verdict = launch.verdict_now or launch.verdict()
        await launch.settle()  # let hooks and the history writes finish
        printer.drain()
        if verdict.exit_status == EXIT_READY:
            printer.left_running()
            return EXIT_READY
        if launch.run is not None and launch.server_running:
            try:  # a failed server usually exits by itself within moments
                await asyncio.wait_for(launch.run.wait(), 5.0)
            except asyncio.TimeoutError:
                printer.say(
                    f"v{launch.run.attempt} (pid {launch.run.pid}) still runs after the failure; stop its group"
                    f" with `kill -INT -- -{launch.run.pgid}`"
                )
        return verdict.exit_status
    except asyncio.CancelledError:
        printer.left_running()
        raise
    finally:
        consumer.cancel()
        printer.drain()
        await launch.close()
        await session.stop()


# ---------------------------------------------------------------- several nodes, Slurm


def make_cluster(options: ClusterOptions, *, max_rate: float = 15.0) -> Any:
    """The ClusterSession for ``watch`` with several nodes, or a Slurm job's tasks as its nodes."""
    from functools import partial

    from tui.cluster import ClusterSession, default_session

    make = partial(default_session, profile=load_profile(options.server), from_end=options.from_end,
                   gpu_interval=options.gpus.interval, max_rate=max_rate)
    if options.slurm_job is None:
        return ClusterSession(list(options.nodes), make_session=make)
    from tui.core.options import NodeSpec
    from tui.sources.slurm import SlurmJobSource, missing_clients, task_logs

    missing = missing_clients()
    if missing:
        raise UsageError(f"--slurm needs the Slurm client commands ({', '.join(missing)} not found)")

    async def outputs(job: Any) -> list[NodeSpec]:
        return [NodeSpec(node, path, None, options.gpus.kind) for node, path in await task_logs(job, options.task_output)]

    job = SlurmJobSource(options.slurm_job, interval=options.slurm_interval)
    return ClusterSession(make_session=make, job=job, job_outputs=outputs)


def watch_cluster(options: ClusterOptions, *, plain: bool) -> int:
    """`watch` across nodes: the plain lines or the cluster dashboard; the verdict's exit status."""
    from tui.core.state import FAILED, READY, STOPPED
    from tui.core.verdict import EXIT_FAILED, EXIT_READY, EXIT_STARTING

    session = make_cluster(options)
    title = f"watching Slurm job {options.slurm_job}" if options.slurm_job else ""
    if plain:
        from tui.present.cluster import PlainCluster

        try:
            return asyncio.run(PlainCluster(session, timeout=options.timeout, title=title).run())
        except KeyboardInterrupt:
            return 130
    from tui.app import themes
    from tui.app.cluster import ClusterApp

    ClusterApp(session, palette=themes.resolve(options.theme, themes.discover()), title=title).run()
    outcome = session.verdict().outcome
    return {READY: EXIT_READY, STOPPED: EXIT_READY, FAILED: EXIT_FAILED}.get(outcome, EXIT_STARTING)


def slurm_launch(spec: Any, request: Any, options: LaunchOptions, *, history: Any = None, interval: float = 1.0) -> Any:
    """The Slurm launch of ``spec`` (name, command, env, log dir), its sessions watching each job."""
    from functools import partial

    from tui.cluster import default_session
    from tui.launch.cluster import SlurmLaunch
    from tui.launch.slurm import SlurmRunner
    from tui.sources.slurm import missing_clients

    missing = missing_clients("sbatch", "scancel")
    if missing:
        raise UsageError(f"--slurm needs the Slurm client commands ({', '.join(missing)} not found)")
    make = partial(default_session, profile=load_profile(options.server), gpu_interval=options.gpus.interval)
    return SlurmLaunch(spec.name, spec.command, spec.env, SlurmRunner(request), spec.log_dir, make_session=make,
                       history=history, cwd=spec.cwd, gpus=options.gpus.kind if options.gpus.kind == "sim" else "none",
                       interval=interval)


def _history() -> Any:
    from tui.history import History

    try:
        return History()
    except Exception as exc:  # an unwritable data dir: keep working, say so once
        print(f"watchtower: history disabled: {exc}", file=sys.stderr)
        return None


def slurm_run(spec: Any, request: Any, options: LaunchOptions, *, plain: bool) -> int:
    """`run --slurm`: check, submit vN, follow the job; the dashboard's x cancels it, r resubmits as vN+1."""
    launch = slurm_launch(spec, request, options, history=_history())
    if options.preflight:
        _slurm_preflight(spec, sys.stdout if plain else sys.stderr)
    return _run_cluster_launch(launch, options, plain=plain, title=f"run: {spec.name}")


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


def slurm_attach(spec: Any, record: Any, options: LaunchOptions, *, plain: bool) -> int:
    """`attach NAME` of a `run --slurm` launch: follow the job id its history keeps; x cancels
    it, r resubmits as vN+1 asking Slurm for what the attempt's batch script asked."""
    from tui.core.slurm import SlurmRequest

    from pathlib import Path

    script = Path(spec.log_dir) / f"{spec.name}-v{record.attempt}.sbatch"
    try:
        request = SlurmRequest.from_script(script.read_text())
    except OSError:
        request = SlurmRequest()
    launch = slurm_launch(spec, request, options, history=_history())
    return _run_cluster_launch(launch, options, plain=plain, title=f"attach: {spec.name}",
                               begin=lambda: launch.resume(record))


async def _cluster_plain(launch: Any, options: LaunchOptions, begin: Callable[[], Awaitable[Any]]) -> int:
    """`run --slurm --plain` / `run --nodes … --plain` / `attach`: start (or resume) the attempt
    and print it to its verdict."""
    from tui.core.verdict import EXIT_READY
    from tui.present.cluster import PlainCluster

    presenter: Any = None
    launch.notes.append(lambda text: presenter.say(text) if presenter else print(text, flush=True))
    session = await begin()
    presenter = PlainCluster(session, timeout=options.timeout, title=f"run {launch.name} v{launch.attempt}")
    try:
        code = await presenter.run()
        launch.finish(session)
        if code == EXIT_READY or await launch.alive():
            presenter.say(f"left running: {launch.stop_hint()}")
        return code
    finally:
        await launch.close()


async def _node_preflights(launch: Any, gpus: str) -> list[tuple[str, Any]]:
    """`watchtower check` of each node's own command, on that node, all at once: (node, report or why not)."""
    from tui.preflight import preflight_report

    async def one(node: str, host: str, argv: list[str]) -> tuple[str, Any]:
        try:
            return node, await preflight_report(argv, dict(launch.env), host=host, gpus=gpus)
        except UsageError as exc:
            return node, f"cannot probe {host}: {exc}"

    commands = launch.commands()
    return list(await asyncio.gather(*(one(n, h, commands[n]) for n, h in zip(launch.names, launch.hosts))))


def nodes_run(spec: Any, nodes: list[Any], options: LaunchOptions, *, plain: bool, force: bool) -> int:
    """`run --nodes H1,H2 -- CMD` (or `--cluster FILE`): the command on every node over SSH."""
    from functools import partial

    from tui.cluster import default_session
    from tui.core.multinode import agreement
    from tui.core.preflight import FAIL
    from tui.launch.cluster import NodesLaunch

    make = partial(default_session, profile=load_profile(options.server), gpu_interval=options.gpus.interval)
    launch = NodesLaunch(
        spec.name, spec.command, spec.env, [n.host for n in nodes], spec.log_dir, names=[n.name for n in nodes],
        extra={i: n.args for i, n in enumerate(nodes) if n.args}, plan=spec.plan, make_session=make,
        history=_history(), gpus=options.gpus.kind,
    )
    out = sys.stdout if plain else sys.stderr
    checks = agreement(launch.commands())
    for check in checks:
        print(f"check: {check.line}", file=out, flush=True)
    failed = [c for c in checks if c.status == FAIL]
    for node, report in asyncio.run(_node_preflights(launch, options.gpus.kind)):
        lines = report.text().splitlines() if not isinstance(report, str) else [f"preflight: {report}"]
        for line in lines:
            print(f"check [{node}]: {line.strip()}", file=out, flush=True)
        failed += [] if isinstance(report, str) else report.failed
    if failed and not force:
        raise UsageError(f"{len(failed)} check(s) failed (✗ above): fix them, or --no-check to launch anyway")
    return _run_cluster_launch(launch, options, plain=plain, title=f"run: {spec.name} on {len(nodes)} nodes")


def _run_cluster_launch(launch: Any, options: LaunchOptions, *, plain: bool, title: str,
                        begin: Callable[[], Awaitable[Any]] | None = None) -> int:
    """A ClusterLaunch in the dashboard (x stop, r relaunch) or as plain text; the verdict's exit
    status. ``begin`` makes the first attempt's session (default: start the next attempt)."""
    from tui.core.state import FAILED, READY, STOPPED
    from tui.core.verdict import EXIT_FAILED, EXIT_READY, EXIT_STARTING

    begin = begin or launch.start
    if plain:
        return asyncio.run(_cluster_plain(launch, options, begin))
    from tui.app import themes
    from tui.app.cluster import ClusterApp

    async def first() -> Any:
        return await begin()

    session = asyncio.run(first())
    app = ClusterApp(session, palette=themes.resolve(options.theme, themes.discover()), title=title,
                     actions={"x": ("Stop", launch.stop), "r": ("Relaunch", launch.relaunch)})
    launch.notes.append(lambda text: app.notify(text, timeout=4))
    app.run()
    launch.finish(app.session)

    async def last_word() -> bool:
        try:
            return await launch.alive()
        finally:
            await launch.close()

    if asyncio.run(last_word()):
        print(f"watchtower: left running: {launch.stop_hint()}")
    outcome = app.session.verdict().outcome
    return {READY: EXIT_READY, STOPPED: EXIT_READY, FAILED: EXIT_FAILED}.get(outcome, EXIT_STARTING)
