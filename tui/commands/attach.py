"""`watchtower attach NAME`: follow the running attempt of a launch again (after Watchtower exited).

Finds NAME's latest attempt in the history, checks that its process still runs (pid
file beside the log, locally or over SSH), and opens the dashboard (or ``--plain``)
on it, with the same keys and exit codes as ``run``.
"""

from __future__ import annotations

import argparse
import asyncio

from tui.commands import UsageError, add_stall_limit_option


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("attach", help="follow a launch's running attempt again", description=__doc__.split("\n\n")[0])
    p.add_argument("name", help="the launch's name (see `watchtower history`)")
    p.add_argument("--plain", action="store_true", help="text output; exit 0 ready, 1 failed, 3 timeout")
    p.add_argument("--health", metavar="URL", help="ready also needs this URL to answer 200")
    p.add_argument("--on-ready", metavar="CMD")
    p.add_argument("--on-fail", metavar="CMD")
    p.add_argument("--server", help="force a server profile: sglang, vllm or a TOML file")
    p.add_argument("--gpus", default="auto", choices=["auto", "nvml", "smi", "sim", "none"])
    p.add_argument("--stop-grace", default="15,10", metavar="INT,TERM")
    add_stall_limit_option(p)
    p.add_argument("--timeout", type=float, metavar="S")
    from tui.app.dashboard import add_theme_option

    add_theme_option(p)
    p.set_defaults(func=run)


def spec_from_history(args: argparse.Namespace):
    """The launch spec of NAME's latest attempt (masked command: a relaunch may need secrets again)."""
    from pathlib import Path

    from tui.commands.run import parse_grace
    from tui.history import History
    from tui.launch import LaunchSpec

    latest = History().latest(args.name)
    if latest is None:
        raise UsageError(f"no launch named {args.name!r} in the history (see `watchtower history`)")
    if latest.outcome not in ("starting", "ready"):
        raise UsageError(f"{args.name} v{latest.attempt} is not running ({latest.outcome}); relaunch it with `watchtower run`")
    return LaunchSpec(
        name=args.name,
        command=list(latest.command),
        env={k: v for k, v in latest.env.items()},
        log_dir=Path(latest.log_path).parent,
        host=None if latest.host == "localhost" else latest.host,
        health_url=args.health,
        plan=parse_grace(args.stop_grace),
        stall_limit=args.stall_limit,
        on_ready=args.on_ready,
        on_fail=args.on_fail,
    )


def run(args: argparse.Namespace) -> int:
    from tui.commands.run import run_plain

    spec = spec_from_history(args)
    args.attach_only = True
    if args.plain:
        return asyncio.run(run_plain(spec, args))
    from tui.app.relaunch import run_dashboard

    return run_dashboard(spec, args)
