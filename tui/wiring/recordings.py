"""`record`, `replay` and the static sessions of screenshots: a recording played through a session."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

from tui.core.errors import UsageError
from tui.core.limits import StallLimits
from tui.core.options import GpuOptions, PlaybackOptions, RecordOptions, WatchOptions
from tui.session import SessionInfo, WatchSession


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
    from tui.sources.replay import gap_of, gpu_from_row, load, record_bytes

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
        elif "gap" in record:
            session.handle(gap_of(host, record))
        elif "gpu" in record:
            session.handle(GpuSample(host, now[0], tuple(gpu_from_row(r) for r in record["gpu"]),
                                     simulated=bool(record.get("sim"))))
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
        if options.plain or options.json:
            return _play_plain(replay, session.info.log_path, options.stall_limits, json=options.json)
        from tui.app.dashboard import build_app

        app = build_app(session, theme=options.theme)
        return int(app.run() or 0)
    finally:
        replay.close()


def _play_plain(replay: Any, recorded: str, stall_limits: StallLimits | None = None, json: bool = False) -> int:
    """The plain watcher (`watch --plain`) on the replayed log, with the replay running beside it;
    it names the ``recorded`` log, and ends once the replay has played out."""
    from tui.cluster import ClusterSession
    from tui.present.plain import LogPresenter
    from tui.wiring.watch import log_session, remembered

    from tui.core.events import LogGap

    async def drain(session: WatchSession) -> None:
        async for event in replay.events():
            if isinstance(event, LogGap):  # what the live watch said was lost, said in its place
                session.handle(event)

    async def main() -> int:
        # the replay plays the GPU samples back itself: no GPU of this machine's is polled
        options = WatchOptions(log=str(replay.log_path), stall_limits=stall_limits, gpus=GpuOptions(kind="none"))
        session = log_session(options, live=False, scrollback=10)  # (its writer is the replay)
        feeder = asyncio.create_task(drain(session))
        remembered(session)  # (its writes finish as the presenter stops the session)
        try:
            plain = LogPresenter(ClusterSession.of_one(session), title=f"watching {recorded} (replayed)",
                                   ended=replay.done, json=json)
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

    from tui.core.events import GpuSample, GpuUnavailable, LogChunk, LogGap, LogRestart, LogTruncated
    from tui.core.state import FAILED, READY
    from tui.sources.factory import log_tailer
    from tui.sources.factory import make_gpu_source

    gpus = make_gpu_source(options.gpus.kind, options.host, options.gpus.interval)
    session = WatchSession(log=log_tailer(options.log, host=options.host, from_end=options.from_end), gpu=gpus)
    session.handlers = {
        LogChunk: [lambda e: writer.log(e.at, e.data)],
        LogRestart: [lambda e: writer.restart(time.time(), e.reason)],
        LogTruncated: [lambda e: writer.truncate(time.time(), e.size, e.lines)],
        LogGap: [lambda e: writer.gap(time.time(), e)],
        GpuSample: [lambda e: writer.gpu(e.at, e.gpus, e.simulated)],
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
            async with asyncio.timeout(options.duration):
                await done.wait()
        except TimeoutError:
            return "duration reached"
        return f"stopped by {stopped_by[0]}" if stopped_by else session.state.outcome
    finally:
        reporter.cancel()
        for signum in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(signum)
        await session.stop()
