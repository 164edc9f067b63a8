"""The composition root: the one module that puts sources, session, launch and views together.

Commands parse their options into ``tui.core.options`` objects and call one function
here; nothing below this module imports the command line, and no view builds a source.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from tui.core.errors import UsageError
from tui.core.limits import StallLimits
from tui.core.options import GpuOptions, LaunchOptions, PlaybackOptions, RecordOptions, WatchOptions
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
    from tui.history import History
    from tui.launch import Launch
    from tui.sources import make_gpu_source

    info = SessionInfo(host=spec.host_label, title=f"run: {spec.name}")
    session_gpu = make_gpu_source(options.gpus.kind, spec.host, options.gpus.interval)
    session = WatchSession(gpu=session_gpu, profile=load_profile(options.server), info=info)
    try:
        history = History()
    except Exception as exc:  # an unwritable data dir: keep working, say so once
        print(f"watchtower: history disabled: {exc}", file=sys.stderr)
        history = None
    for subscriber in subscribers:
        session.subscribe(subscriber)
    launch = Launch(spec, history=history, terminal=terminal)
    launch.gpu_enabled = session_gpu is not None
    launch.gpus.pids_real = options.gpus.kind != "sim"  # never offer to kill a simulated GPU's made-up pid
    launch.attach(session)
    return session, launch


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
    from tui.core.verdict import EXIT_READY, EXIT_STARTING
    from tui.launch import LaunchError
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
        except LaunchError as exc:
            raise UsageError(clean(str(exc))) from None
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
        printer.drain()
