"""`watchtower demo`: a simulated 8-GPU SGLang + EAGLE-3 startup, played through the real path.

The bundled recordings (tui/data/demo-*.wtrec, made by scripts/make-demo) are replayed
exactly like `watchtower replay`: written into a real log file that the real tailer
follows, GPU samples fed through the GPU source interface. No server, no GPU needed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import tui.data

SCENARIOS = ("ready", "crash-attr", "crash-context", "oom", "hang")


def recording_path(scenario: str) -> Path:
    return Path(tui.data.__file__).parent / f"demo-{scenario}.wtrec"


def register(subparsers: argparse._SubParsersAction) -> None:
    from tui.app.dashboard import add_theme_option

    parser = subparsers.add_parser(
        "demo",
        help="play a simulated 8-GPU SGLang + EAGLE-3 startup in the dashboard",
        description="Play a simulated 8-GPU SGLang startup with an EAGLE-3 draft model (~1.5 minutes "
        "at speed 1) through the same tailer, tracker and dashboard as a real log.",
    )
    parser.add_argument("--scenario", choices=SCENARIOS, default="ready", help="how the startup ends (default: ready)")
    parser.add_argument("--speed", type=float, default=1.0, metavar="N", help="play N times faster (default 1)")
    parser.add_argument("--plain", action="store_true", help="print events as text instead of the dashboard")
    add_theme_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tui.app.dashboard import play_recording
    from tui.commands import UsageError

    if args.speed <= 0:
        raise UsageError("--speed must be greater than 0")
    return play_recording(
        recording_path(args.scenario),
        speed=args.speed,
        theme=args.theme,
        plain=args.plain,
        title=f"demo: {args.scenario}",
    )
