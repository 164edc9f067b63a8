"""`watchtower replay FILE`: play a recorded startup back (post-mortems, sharing a failure)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from tui.app.dashboard import add_theme_option

    parser = subparsers.add_parser(
        "replay",
        help="play back a recording made with `watchtower record`",
        description="Play a recording back through the real tailer and tracker, in the dashboard "
        "(or as plain text with --plain), at its recorded pace divided by --speed.",
    )
    parser.add_argument("file", help="the recording (.wtrec)")
    parser.add_argument("--speed", type=float, default=1.0, metavar="N", help="play N times faster (default 1)")
    parser.add_argument("--plain", action="store_true", help="print events as text instead of the dashboard")
    add_theme_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tui.app.dashboard import play_recording
    from tui.commands import UsageError

    if args.speed <= 0:
        raise UsageError("--speed must be greater than 0")
    return play_recording(args.file, speed=args.speed, theme=args.theme, plain=args.plain)
