"""`watchtower record LOG -o FILE`: save a live startup (log bytes and GPU samples, timed) to one file.

The recording is read by the same tailer and GPU sources as `watch`, so it holds exactly
what Watchtower saw; `watchtower replay FILE` plays it back through the same path.
Recording stops on Ctrl-C, SIGTERM or SIGHUP, after --duration, or a few seconds after
the startup's verdict (ready or failed) unless --keep-going. Every record reaches the file
as it comes, so even a recorder killed outright leaves a recording valid up to its last
sample; while it runs, a status line every few seconds says what has been recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from tui.commands.options import add_gpu_options, gpu_options, seconds
from tui.core.errors import UsageError
from tui.core.options import RecordOptions

#: Seconds recorded after the verdict (the tail of a crash: sigquit, Killed, GPU memory freed).
AFTER_VERDICT = 5.0
#: Seconds between two status lines while recording.
STATUS_EVERY = 5.0


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
    parser.add_argument("--duration", type=seconds, metavar="S", help="stop after S seconds")
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
    say(f"recording {options.log}{' on ' + options.host if options.host else ''} to {options.output} "
        "(Ctrl-C, SIGTERM or SIGHUP stops it; the file is valid at every moment)")

    def status(session) -> None:
        print(status_line(session, writer, time.monotonic() - started), flush=True)

    try:
        outcome = asyncio.run(
            wiring.record(options, writer, after_verdict=AFTER_VERDICT, status=status, status_every=STATUS_EVERY)
        )
    except KeyboardInterrupt:
        outcome = "interrupted"
    finally:
        writer.close()
    say(f"recorded {writer.records} events in {time.monotonic() - started:.0f} s to {options.output} ({outcome})")
    return 0


def say(text: str) -> None:
    print(f"watchtower: {text}", flush=True)


def status_line(session, writer, seconds: float) -> str:
    """One line: how long, how much, and where the startup is."""
    from tui.core.state import PHASE_TITLES, STARTING
    from tui.core.wording import clock

    state = session.state
    phase = state.current_phase
    where = f" in {PHASE_TITLES.get(phase.name, phase.name)}" if phase is not None and state.outcome == STARTING else ""
    return (f"  {clock(seconds)}  {state.lines:,} lines, {writer.records} events, "
            f"{writer.bytes_written / 1e6:.1f} MB written · {state.outcome}{where}")
