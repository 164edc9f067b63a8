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

from tui.commands.options import add_gpu_options, gpu_options
from tui.core.errors import UsageError
from tui.core.options import RecordOptions

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
    add_gpu_options(parser)
    parser.add_argument("--from-end", action="store_true", help="skip what LOG holds now")
    parser.add_argument("--host", metavar="[USER@]HOST[:PORT]", help="record a log on this host over SSH")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    parser.add_argument("--keep-going", action="store_true", help="do not stop at the verdict")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tui import wiring
    from tui.sources.replay import RecordingError, RecordingWriter

    options = RecordOptions(
        log=args.log, output=args.output, host=args.host, from_end=args.from_end,
        duration=args.duration, keep_going=args.keep_going, gpus=gpu_options(args),
    )
    try:
        writer = RecordingWriter(options.output, host=options.host or "localhost", log=options.log,
                                 title=f"replay: {options.log}")
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    started = time.monotonic()
    try:
        outcome = asyncio.run(wiring.record(options, writer, after_verdict=AFTER_VERDICT))
    except KeyboardInterrupt:
        outcome = "interrupted"
    finally:
        writer.close()
    print(f"watchtower: recorded {writer.records} events in {time.monotonic() - started:.0f} s "
          f"to {options.output} ({outcome})")
    return 0
