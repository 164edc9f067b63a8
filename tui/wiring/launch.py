"""`run` and `attach` of one launch: the session and the controller, wired, in the dashboard or as plain text."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TextIO

from tui.core.errors import Terminated, UsageError
from tui.core.lines import clean
from tui.core.options import LaunchOptions
from tui.session import SessionInfo, Subscriber, WatchSession
from tui.wiring.watch import ending_status, serving_metrics, stoppable
from tui.wiring.watch import load_profile

if TYPE_CHECKING:
    from tui.app.launcher import LaunchApp
    from tui.launch.controller import Launch
    from tui.launch.spec import LaunchSpec
    from tui.present.metrics import Watched
    from tui.present.plain import LogPresenter

#: How long a failed launch's end waits, once its process is reaped, for its exit to be judged (its log
#: drained to the last line: up to ten times the launch's EXIT_DRAIN, 0.5 s, on a loaded machine).
EXIT_JUDGED_S = 6.0


def make_launch(
    spec: LaunchSpec,
    options: LaunchOptions,
    terminal: Callable[[str], None] | None = None,
    subscribers: Iterable[Subscriber] = (),
    timeout: float | None = None,
) -> tuple[WatchSession, Launch]:
    """The session and the launch controller, wired; ``subscribers`` hear of updates before the launch;
    ``timeout``: a deadline the session keeps itself (the dashboard's; plain output's ending keeps its own)."""
    from tui.history import History, HistoryError
    from tui.launch.controller import Launch
    from tui.sources.factory import make_gpu_source

    info = SessionInfo(host=spec.host_label, title=f"run: {spec.name}")
    session_gpu = make_gpu_source(options.gpus.kind, spec.host, options.gpus.interval)
    session = WatchSession(gpu=session_gpu, profile=load_profile(options.server), info=info,
                           stall_limits=spec.stall_limit, timeout=timeout)  # the limits: given once, here
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
    launch.gpu_source = session_gpu.kind if session_gpu is not None else "none"
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


def adopt_orphans(spec: LaunchSpec) -> None:
    """The `run` / `attach` process adopts its local servers' orphans (``PR_SET_CHILD_SUBREAPER``,
    for the rest of its life: so only the command's own process, never one that merely imports
    the launch code, such as a test run)."""
    if spec.host is None:
        from tui.launch.proctable import become_subreaper

        become_subreaper()


def launch_dashboard(spec: LaunchSpec, options: LaunchOptions) -> int:
    """`watchtower run` / `attach` on one host in the dashboard; returns the verdict's exit status."""
    adopt_orphans(spec)
    session, launch = make_launch(spec, options, timeout=options.timeout)  # the session keeps its own deadline (TIMEOUT, exit 3)
    return run_dashboard(launch, options, launch_metrics(launch, session))


def launch_app(launch: Launch, *, theme: str | None = None, attach_only: bool = False) -> LaunchApp:
    """The launch dashboard of ``launch``: one log's session (``attach``ed), or — across nodes —
    no node until the first attempt's node set (its node rows show each node's GPUs)."""
    from tui.app import themes
    from tui.app.launcher import LaunchApp
    from tui.cluster import ClusterSession

    palettes = themes.discover()
    palette = themes.resolve(theme, palettes)
    if launch.followed:
        return LaunchApp(launch, launch.watched, palettes, palette.name, gpus_enabled=launch.gpu_enabled,
                         attach_only=attach_only)
    assert launch.make_node is not None
    waiting = ClusterSession(make_session=launch.make_node)
    placeholder = WatchSession(info=SessionInfo(title=f"run: {launch.spec.name}"))
    return LaunchApp(launch, placeholder, palettes, palette.name, attach_only=attach_only, nodes=waiting)


def run_dashboard(launch: Launch, options: LaunchOptions, metrics: Watched) -> int:
    """A launch in the launch dashboard — on one host, or across nodes (each attempt's node set
    followed as it starts) —; the exit status. What is left running is named as Watchtower goes.

    One event loop for the whole run: an attempt's sources (a Slurm job's poller, the nodes'
    tailers) are tasks of the loop the dashboard draws in."""
    app = launch_app(launch, theme=options.theme, attach_only=options.attach_only)

    async def served() -> int:
        async with serving_metrics(options.metrics, metrics, {"launch": launch.spec.name}):
            code = int(await app.run_async() or 0)
        run = launch.run
        if run is not None and run.alive and await launch.runner.alive(run):
            print(f"watchtower: left running: {launch.runner.stop_hint(run, launch.spec.name)}")
        return code

    try:
        return asyncio.run(served())
    except KeyboardInterrupt:  # (Ctrl-C outside the dashboard's own keys) what runs keeps running: say how to stop it
        run = launch.run
        if run is not None:
            print(f"watchtower: interrupted; left running: {launch.runner.stop_hint(run, launch.spec.name)}",
                  file=sys.stderr)
        return 130


def launch_metrics(launch: Launch, session: WatchSession) -> Watched:
    """What the metrics of a launch read: its verdict as the dashboard has it (the session's judging
    stage, which the launch took over: REFUSED, or judged with the process: DEAD …) and its attempt (vN)."""
    from tui.present.metrics import one_log

    return one_log(session, attempt=lambda: launch.run.attempt if launch.run is not None else None)


def launch_plain(spec: LaunchSpec, options: LaunchOptions, *, json: bool = False) -> int:
    """`run --plain`: SIGTERM (``timeout``, a job scheduler) ends it like Ctrl-C does — the
    server is left running and named, the history writes finish — and exits 143."""
    adopt_orphans(spec)
    try:
        return stoppable(run_plain(spec, options, json=json))
    except Terminated as exc:
        return exc.status


def tty_terminal(out: TextIO, sequence: str) -> None:
    """A launch's bell and window title, written where they mean something: a terminal."""
    if out.isatty():
        out.write(sequence)
        out.flush()


async def run_plain(spec: LaunchSpec, options: LaunchOptions, *, json: bool = False) -> int:
    """`run --plain` of one launch (``--json``: JSON objects, the last an ``exit`` one)."""
    from tui.cluster import ClusterSession
    from tui.present.plain import LogPresenter

    out = sys.stdout
    session, launch = make_launch(spec, options, functools.partial(tty_terminal, out))
    printer = LogPresenter(ClusterSession.of_one(session), out=out, launch=launch, json=json)
    async with serving_metrics(options.metrics, launch_metrics(launch, session), {"launch": spec.name}):
        return await _run_plain(spec, options, session, launch, printer)


async def _run_plain(spec: LaunchSpec, options: LaunchOptions, session: WatchSession, launch: Launch, printer: LogPresenter) -> int:
    from tui.core.verdict import EXIT_FAILED, EXIT_READY, EXIT_STARTING, EXIT_USAGE
    from tui.launch.spec import LaunchError
    from tui.launch.controller import PreflightRefused

    status = 130  # cancelled (Ctrl-C, SIGTERM) before a verdict
    session.start()
    consumer: asyncio.Task[None] | None = None  # started after the start line: what the session heard waits in order
    try:
        try:
            await launch.start(launch=not options.attach_only)
        except PreflightRefused as exc:
            printer.preflight(exc.report)
            refused = launch.refusal()
            if refused is not None:  # the dashboard's header says the same
                printer.note(refused.text, "verdict", verdict=str(refused.kind), detail=refused.detail, final=True)
            printer.note("not launching: a check failed (--no-check launches anyway)")
            status = EXIT_FAILED
            return status
        except LaunchError as exc:
            status = EXIT_USAGE
            raise UsageError(clean(str(exc))) from None
        if launch.preflight_report is not None and not launch.reattached:
            printer.preflight(launch.preflight_report)
        printer.started()
        consumer = asyncio.create_task(printer.consume())
        try:
            async with asyncio.timeout(options.timeout):
                await printer.final.wait()
        except asyncio.TimeoutError:
            printer.drain()
            printer.note(f"timed out after {options.timeout:g} s: {launch.verdict().text}", "verdict",
                         verdict="timeout", detail=launch.verdict().text, final=True)
            printer.left_running()
            status = EXIT_STARTING
            return status
        verdict = launch.verdict_now or launch.verdict()
        await launch.settle()  # let hooks and the history writes finish
        printer.drain()
        if verdict.exit_status == EXIT_READY:
            printer.left_running()
            status = EXIT_READY
            return status
        if launch.run is not None and launch.server_running:
            try:  # a failed server usually exits by itself within moments
                async with asyncio.timeout(5.0):
                    await launch.run.wait()
            except asyncio.TimeoutError:
                printer.note(
                    f"v{launch.run.attempt} (pid {launch.run.shown_pid}) still runs after the failure; stop its group"
                    f" with `kill -INT -- -{launch.run.pgid}`", "left_running", pid=launch.run.shown_pid,
                    attempt=launch.run.attempt, name=spec.name,
                )
        if launch.run is not None and not launch.server_running:  # its last lines judged before the end is said
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(EXIT_JUDGED_S):
                    await launch.exit_judged(launch.run)
        printer.launch_survivors()  # its main process gone, its ranks may still run: last of all
        status = verdict.exit_status
        return status
    except asyncio.CancelledError as cancelled:
        status = ending_status(cancelled)  # (--json's last object: the status the process ends with)
        printer.left_running()
        raise
    finally:
        if consumer is not None:
            consumer.cancel()
        printer.drain()
        printer.exit(status, launch.verdict_now or launch.verdict())
        await launch.close()
        await session.stop()
