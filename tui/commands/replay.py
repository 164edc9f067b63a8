"""`watchtower replay FILE`: play a recorded startup back (post-mortems, sharing a failure)."""

from __future__ import annotations

import argparse

from tui.commands import UsageError, add_stall_limit_option


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="play back a recording made with `watchtower record`",
        description="Play a recording back through the real tailer and tracker, in the dashboard "
        "(or as plain text with --plain), at its recorded pace divided by --speed.",
    )
    parser.add_argument("file", help="the recording (.wtrec)")
    add_playback_options(parser)
    parser.set_defaults(func=run)


def add_playback_options(parser: argparse.ArgumentParser) -> None:
    """--speed, --plain and --theme: shared with `demo`, which plays bundled recordings."""
    from tui.app.dashboard import add_theme_option

    parser.add_argument("--speed", type=float, default=1.0, metavar="N", help="play N times faster (default 1)")
    parser.add_argument("--plain", action="store_true", help="print events as text instead of the dashboard")
    add_theme_option(parser)
    add_stall_limit_option(parser)


def play(args: argparse.Namespace, path, title: str | None = None) -> int:
    from tui.app.dashboard import play_recording

    if args.speed <= 0:
        raise UsageError("--speed must be greater than 0")
    return play_recording(path, speed=args.speed, theme=args.theme, plain=args.plain, title=title,
                          stall_limits=args.stall_limit)


def run(args: argparse.Namespace) -> int:
    return play(args, args.file)
