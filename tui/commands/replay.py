"""`watchtower replay FILE`: play a recorded startup back (post-mortems, sharing a failure)."""

from __future__ import annotations

import argparse
import os

from tui.commands.options import add_playback_options, playback_options


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


def play(args: argparse.Namespace, path: str | os.PathLike[str], title: str | None = None) -> int:
    from tui import wiring

    return wiring.play_recording(path, playback_options(args), title=title)


def run(args: argparse.Namespace) -> int:
    return play(args, args.file)
