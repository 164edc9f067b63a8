"""`watchtower attach NAME`: follow the running attempt of a launch again (after Watchtower exited).

Finds NAME's latest attempt in the history, checks that its process still runs (pid
file beside the log, locally or over SSH; for a ``run --slurm`` attempt, the job id the
history keeps, still queued or running), and opens the dashboard (or ``--plain``) on it,
with the same keys and exit codes as ``run``.
"""

from __future__ import annotations

import argparse

from tui.commands.options import add_launch_options, launch_options, smoke_timeout
from tui.core.errors import UsageError
from tui.core.verdict import READY, STARTING


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("attach", help="follow a launch's running attempt again", description=__doc__.split("\n\n")[0])
    p.add_argument("name", help="the launch's name (see `watchtower history`)")
    add_launch_options(p)
    p.set_defaults(func=run)


def latest_running(name: str):
    """NAME's latest attempt in the history, if it may still run; UsageError otherwise."""
    from tui.history import History

    latest = History().latest(name)
    if latest is None:
        raise UsageError(f"no launch named {name!r} in the history (see `watchtower history`)")
    if latest.outcome not in (STARTING, READY):
        raise UsageError(f"{name} v{latest.attempt} is not running ({latest.outcome}); relaunch it with `watchtower run`")
    return latest


def spec_from_history(args: argparse.Namespace, latest=None):
    """The launch spec of NAME's latest attempt (masked command: a relaunch may need secrets again)."""
    from pathlib import Path

    from tui.commands.run import parse_grace
    from tui.launch.spec import LaunchSpec

    latest = latest or latest_running(args.name)
    return LaunchSpec(
        name=args.name,
        command=list(latest.command),
        env={k: v for k, v in latest.env.items()},
        log_dir=Path(latest.log_path).parent,
        host=None if latest.host == "localhost" else latest.host,
        health_url=args.health,
        smoke=bool(getattr(args, "smoke", False)),
        smoke_timeout=smoke_timeout(args),
        plan=parse_grace(args.stop_grace),
        stall_limit=args.stall_limit,
        on_ready=args.on_ready,
        on_fail=args.on_fail,
    )


def run(args: argparse.Namespace) -> int:
    from tui import wiring
    from tui.launch.slurm import SlurmRunner

    latest = latest_running(args.name)
    spec = spec_from_history(args, latest)
    options = launch_options(args, attach_only=True)
    if latest.host == SlurmRunner.host:  # a `run --slurm` attempt: its job id is in the history
        return wiring.slurm_attach(spec, latest, options, plain=args.plain, json=args.json)
    if "," in latest.host:  # a `run --nodes` attempt: its hosts, each with its pid file
        return wiring.nodes_attach(spec, latest, options, plain=args.plain, json=args.json)
    if args.plain or args.json:
        return wiring.launch_plain(spec, options, json=args.json)
    return wiring.launch_dashboard(spec, options)
