"""`watchtower demo`: a simulated 8-GPU SGLang + EAGLE-3 startup, played through the real path.

The bundled recordings (tui/data/demo-*.wtrec, made by scripts/make-demo) are replayed
exactly like `watchtower replay`: written into a real log file that the real tailer
follows, GPU samples fed through the GPU source interface. No server, no GPU needed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import tui.data
from tui.commands.options import add_playback_options
from tui.commands.replay import play
from tui.core.limits import StallLimits

SCENARIOS = ("ready", "crash-attr", "crash-context", "oom", "hang")
#: The demo's startup is compressed (~1.5 minutes instead of 10+): so are its silence limits.
STALL_LIMIT = StallLimits(30.0)


def demo_title(scenario: str) -> str:
    """``simulated demo · scenario 'ready'``: the scenario's name, never read as the verdict."""
    return f"simulated demo · scenario '{scenario}'"


def recording_path(scenario: str) -> Path:
    return Path(tui.data.__file__).parent / f"demo-{scenario}.wtrec"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="play a simulated 8-GPU SGLang + EAGLE-3 startup in the dashboard",
        description="Play a simulated 8-GPU SGLang startup with an EAGLE-3 draft model (~1.5 minutes "
        "at speed 1) through the same tailer, tracker and dashboard as a real log.",
    )
    parser.add_argument("--scenario", choices=SCENARIOS, default="ready", help="how the startup ends (default: ready)")
    add_playback_options(parser)
    parser.set_defaults(func=run, stall_limit=STALL_LIMIT)


def run(args: argparse.Namespace) -> int:
    return play(args, recording_path(args.scenario), title=demo_title(args.scenario))
