"""Opening the dashboard from the command line: sources -> session -> app.

``run_dashboard(args)`` serves `watchtower watch` (without ``--plain``), with watch's
options; ``play_recording`` serves `replay` and `demo`. Both return the exit status of
the verdict when the user quits.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterable
from typing import Any

from tui.commands import UsageError
from tui.session import SessionInfo, WatchSession


def add_dashboard_options(parser: argparse.ArgumentParser) -> None:
    """The dashboard's options for a command that opens it (skipping any the command has already)."""
    if "--theme" not in parser._option_string_actions:  # noqa: SLF001 - argparse has no "has option"
        add_theme_option(parser)
    add_gpu_options(parser)


def add_gpu_options(parser: argparse.ArgumentParser) -> None:
    have = parser._option_string_actions  # noqa: SLF001
    if "--gpus" not in have:
        parser.add_argument("--gpus", choices=("auto", "nvml", "smi", "sim", "none"), default="auto",
                            help="GPU source: auto (NVML here, nvidia-smi with --host), nvml, smi, "
                            "sim (simulated 8 GPUs), none")
    if "--gpu-interval" not in have:
        parser.add_argument("--gpu-interval", type=float, default=1.0, metavar="S",
                            help="seconds between GPU polls (default 1)")


def add_theme_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--theme",
        metavar="NAME|PATH",
        help="dashboard theme: dark (default), light, high-contrast, one of yours in "
        "~/.config/watchtower/themes/, or a .toml file",
    )


def build_app(
    session: WatchSession,
    *,
    theme: str | None = None,
    gpus_enabled: bool = True,
    panels: Iterable[Any] = (),
    output_dir: str | os.PathLike[str] = ".",
    autostart: bool = True,
):
    """The app for ``session`` with the chosen theme (UsageError for an unknown one)."""
    from tui.app import themes
    from tui.app.app import WatchtowerApp

    palettes = themes.discover()
    palette = themes.resolve(theme, palettes)
    return WatchtowerApp(
        session,
        palettes,
        palette.name,
        gpus_enabled=gpus_enabled,
        panels=panels,
        output_dir=output_dir,
        autostart=autostart,
    )


def load_profile(server: str | None) -> Any:
    """``--server NAME|PATH`` as the tracker's profile; None lets the tracker auto-detect."""
    if not server:
        return None
    from tui.core.profiles import ProfileError, load_profile as load

    try:
        return load(server)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None


def run_dashboard(args: argparse.Namespace) -> int:
    """`watchtower watch LOG` in the dashboard; returns 0 ready, 1 failed, 3 still starting."""
    from tui.sources import log_tailer
    from tui.sources.gpu import make_gpu_source

    from tui.history import WatchedStartups

    gpus = make_gpu_source(args.gpus, args.host, args.gpu_interval)
    session = WatchSession(
        log=log_tailer(args.log, host=args.host, from_end=args.from_end),
        gpu=gpus,
        profile=load_profile(args.server),
        info=SessionInfo(server=args.server, host=args.host or "localhost", log_path=str(args.log)),
        stall_limits=args.stall_limit,
    )
    memory = WatchedStartups()  # phase times of this server, model and TP size: the stall limits
    session.expected = memory.longest
    session.subscribe(lambda update: memory.update(session.state) if "state" in update.topics else None)
    app = build_app(session, theme=args.theme, gpus_enabled=gpus is not None)
    return int(app.run() or 0)


def replay_session(path: str | os.PathLike[str], *, speed: float, title: str | None = None, stall_limits: Any = None):
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
    session = WatchSession(
        log=LocalTailer(replay.log_path),
        gpu=replay,
        clock=lambda: origin + (time.time() - origin) * speed,  # recording time: silences keep their length
        stall_limits=stall_limits,
        info=SessionInfo(
            server=header.get("server"),
            host=str(header.get("host") or "localhost"),
            log_path=str(replay.log_path),
            title=title or str(header.get("title") or f"replay: {os.path.basename(str(path))}"),
        ),
    )
    return session, replay


def static_session(path: str | os.PathLike[str], *, upto: float | None = None, title: str | None = None) -> WatchSession:
    """A session holding a recording played instantly up to ``upto`` seconds, on a stopped clock.

    Arrival times are the recorded ones, so elapsed time and silences read as they did
    live; for screenshots and snapshot tests (deterministic), not for watching.
    """
    from tui.core.events import GpuSample, GpuUnavailable, LogChunk, LogRestart
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
        elif "gpu" in record:
            session.handle(GpuSample(host, now[0], tuple(gpu_from_row(r) for r in record["gpu"])))
        elif "gpu_unavailable" in record:
            session.handle(GpuUnavailable(host, str(record["gpu_unavailable"])))
    now[0] = origin + (upto if upto is not None else recording.duration)
    session.flush()
    return session


def play_recording(
    path: str | os.PathLike[str],
    *,
    speed: float,
    theme: str | None,
    plain: bool,
    title: str | None = None,
    stall_limits: Any = None,
) -> int:
    """Replay a recording through the real tailer, in the dashboard or as plain text."""
    session, replay = replay_session(path, speed=speed, title=title, stall_limits=stall_limits)
    try:
        if plain:
            return _play_plain(replay, stall_limits)
        app = build_app(session, theme=theme)
        return int(app.run() or 0)
    finally:
        replay.close()


def _play_plain(replay, stall_limits: Any = None) -> int:
    """The plain watcher (`watch --plain`) on the replayed log, with the replay running beside it."""
    import asyncio

    from tui.cli import build_parser
    from tui.commands.watch import PlainWatch

    async def main() -> int:
        feeder = asyncio.create_task(_drain(replay))
        try:
            args = build_parser().parse_args(["watch", "--plain", str(replay.log_path)])  # watch's defaults
            args.stall_limit = stall_limits
            return int(await PlainWatch(args, None).run() or 0)
        finally:
            feeder.cancel()

    return asyncio.run(main())


async def _drain(replay) -> None:
    async for _ in replay.events():
        pass
