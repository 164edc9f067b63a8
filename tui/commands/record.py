"""`watchtower record LOG -o FILE`: save a live startup (log bytes and GPU samples, timed) to one file.

The recording is read by the same tailer and GPU sources as `watch`, so it holds exactly
what Watchtower saw; `watchtower replay FILE` plays it back through the same path.
Recording stops on Ctrl-C, after --duration, or a few seconds after the startup's
verdict (ready or failed) unless --keep-going.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from tui.core.events import GpuSample, GpuUnavailable, LogChunk, LogRestart, LogTruncated

#: Seconds recorded after the verdict (the tail of a crash: sigquit, Killed, GPU memory freed).
AFTER_VERDICT = 5.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "record",
        help="record a live startup (log and GPU samples) to a file for `watchtower replay`",
        description="Follow LOG (and the GPUs) and save everything with its timing to one file.",
    )
    parser.add_argument("log", help="the server's log file (it may not exist yet)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the recording to write (.wtrec)")
    from tui.app.dashboard import add_gpu_options

    add_gpu_options(parser)
    parser.add_argument("--from-end", action="store_true", help="skip what LOG holds now")
    parser.add_argument("--host", metavar="[USER@]HOST[:PORT]", help="record a log on this host over SSH")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    parser.add_argument("--keep-going", action="store_true", help="do not stop at the verdict")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tui.commands import UsageError
    from tui.sources.replay import RecordingError, RecordingWriter

    try:
        writer = RecordingWriter(args.output, host=args.host or "localhost", log=args.log, title=f"replay: {args.log}")
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    started = time.monotonic()
    try:
        outcome = asyncio.run(_record(args, writer))
    except KeyboardInterrupt:
        outcome = "interrupted"
    finally:
        writer.close()
    print(f"watchtower: recorded {writer.records} events in {time.monotonic() - started:.0f} s "
          f"to {args.output} ({outcome})")
    return 0


async def _record(args: argparse.Namespace, writer) -> str:
    from tui.core.state import FAILED, READY
    from tui.session import WatchSession
    from tui.sources import log_tailer
    from tui.sources.gpu import make_gpu_source

    gpus = make_gpu_source(args.gpus, args.host, args.gpu_interval)
    session = WatchSession(log=log_tailer(args.log, host=args.host, from_end=args.from_end), gpu=gpus)
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

    def on_update(_update) -> None:
        nonlocal armed
        if not args.keep_going and not armed and session.state.outcome in (READY, FAILED):
            armed = True
            loop.call_later(AFTER_VERDICT, done.set)

    session.subscribe(on_update)
    session.start()
    try:
        try:
            await asyncio.wait_for(done.wait(), timeout=args.duration)
        except TimeoutError:
            return "duration reached"
        return session.state.outcome
    finally:
        await session.stop()
