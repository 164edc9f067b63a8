"""`watchtower run -- COMMAND ARGS…`: launch a server and watch it start, as attempt vN.

The dashboard opens on it (keys: x stop, r relaunch, R edit and relaunch, a attempts,
k kill leftover GPU holders); ``--plain`` prints the startup as text instead and exits
like ``watch``: 0 ready (the server keeps running), 1 failed or dead, 3 timed out.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from pathlib import Path

from tui.commands import EXIT_FAILED, EXIT_READY, EXIT_STARTING, UsageError, add_stall_limit_option

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="launch a server and watch it start (attempts v1…vN, relaunch from the keyboard)",
        description=__doc__.split("\n\n")[0],
    )
    add_launch_options(p)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS", help="the server command line")
    p.set_defaults(func=run)


def add_launch_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", help="launch on this host over SSH ([user@]host[:port]); detached, survives Watchtower")
    p.add_argument("--name", help="name of this launch (attempts are NAME-v1, NAME-v2, …; default: from the command)")
    p.add_argument("--log-dir", help="where the attempts' logs go (default: the data dir's logs/; remote: ~/watchtower-logs)")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="set an environment variable (repeatable)")
    p.add_argument("--health", metavar="URL", help="ready also needs this URL to answer 200 (e.g. http://127.0.0.1:30000/health)")
    p.add_argument("--plain", action="store_true", help="text output instead of the dashboard; exit 0 ready, 1 failed, 3 timeout")
    p.add_argument("--on-ready", metavar="CMD", help="shell command run when ready (verdict in WATCHTOWER_* variables)")
    p.add_argument("--on-fail", metavar="CMD", help="shell command run on failure (verdict in WATCHTOWER_* variables)")
    p.add_argument("--server", help="force a server profile: sglang, vllm or a TOML file")
    p.add_argument("--gpus", default="auto", choices=["auto", "nvml", "smi", "sim", "none"], help="GPU source")
    p.add_argument("--stop-grace", default="15,10", metavar="INT,TERM",
                   help="seconds to wait after SIGINT, then after SIGTERM, before SIGKILL (default 15,10)")
    add_stall_limit_option(p)
    p.add_argument("--timeout", type=float, metavar="S", help="--plain: give up after S seconds (exit 3)")
    from tui.app.dashboard import add_theme_option

    add_theme_option(p)


def parse_env(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not ENV_NAME.fullmatch(key):
            raise UsageError(f"--env {item.split('=')[0]!r}: expected NAME=VALUE")
        env[key] = value
    return env


def default_name(command: list[str]) -> str:
    """``sglang.launch_server`` from ``python -m sglang.launch_server …``; else the program's name."""
    words = list(command)
    name = Path(words[0]).name
    if name.startswith("python") and len(words) > 1:
        if words[1] == "-m" and len(words) > 2:
            name = words[2]
        else:
            name = Path(words[1]).stem
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "server"


def check_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise UsageError(f"invalid --name {name!r}: letters, digits, '.', '_' and '-' only")
    return name


def parse_grace(text: str):
    from tui.sources.process import StopPlan

    try:
        parts = [float(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--stop-grace {text!r}: expected seconds after SIGINT,SIGTERM (e.g. 15,10)") from None
    if not 1 <= len(parts) <= 2 or any(p < 0 for p in parts):
        raise UsageError(f"--stop-grace {text!r}: expected seconds after SIGINT,SIGTERM (e.g. 15,10)")
    return StopPlan(after_int=parts[0], after_term=parts[-1])


def build_spec(args: argparse.Namespace, command: list[str] | None = None):
    from tui.history import data_dir
    from tui.launch import LaunchSpec

    command = list(args.command if command is None else command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("no server command: watchtower run [options] -- COMMAND ARGS…")
    if args.host:
        from tui.sources.ssh import SshTarget, SshTargetError

        try:
            SshTarget.parse(args.host)
        except SshTargetError as exc:
            raise UsageError(str(exc)) from None
    name = check_name(args.name or default_name(command))
    if args.log_dir:
        log_dir = Path(args.log_dir) if args.host else Path(args.log_dir).expanduser().resolve()
    else:
        log_dir = Path("watchtower-logs") if args.host else data_dir() / "logs"
    if args.health and not re.match(r"https?://", args.health):
        raise UsageError(f"--health {args.health!r}: expected an http:// or https:// URL")
    return LaunchSpec(
        name=name,
        command=command,
        env=parse_env(args.env),
        log_dir=log_dir,
        host=args.host,
        health_url=args.health,
        plan=parse_grace(args.stop_grace),
        stall_limit=args.stall_limit,
        on_ready=args.on_ready,
        on_fail=args.on_fail,
        cwd=None if args.host else os.getcwd(),
    )


def load_profile(server: str | None):
    if not server:
        return None
    from tui.core.profiles import ProfileError, load_profile as load

    try:
        return load(server)
    except ProfileError as exc:
        raise UsageError(f"--server {server}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    spec = build_spec(args)
    if args.plain:
        return asyncio.run(run_plain(spec, args))
    from tui.app.relaunch import run_dashboard

    return run_dashboard(spec, args)


def make_launch(spec, args, terminal=None, subscribers=()):
    """The session and the launch controller, wired; ``subscribers`` hear of updates before the launch."""
    from tui.history import History
    from tui.launch import Launch
    from tui.session import SessionInfo, WatchSession

    info = SessionInfo(host=spec.host_label, title=f"run: {spec.name}")
    from tui.sources.gpu import make_gpu_source

    session_gpu = make_gpu_source(args.gpus, spec.host)
    session = WatchSession(gpu=session_gpu, profile=load_profile(args.server), info=info)
    try:
        history = History()
    except Exception as exc:  # an unwritable data dir: keep working, say so once
        print(f"watchtower: history disabled: {exc}", file=sys.stderr)
        history = None
    for subscriber in subscribers:
        session.subscribe(subscriber)
    launch = Launch(spec, history=history, terminal=terminal)
    launch.gpu_enabled = session_gpu is not None
    launch.gpu_pids_real = args.gpus != "sim"  # never offer to kill a simulated GPU's made-up pid
    launch.attach(session)
    return session, launch


async def run_plain(spec, args: argparse.Namespace) -> int:
    from tui.core.lines import clean
    from tui.launch import LaunchError

    out = sys.stdout

    def terminal(seq: str) -> None:
        if out.isatty():
            out.write(seq)
            out.flush()

    printer = PlainPrinter(out)
    session, launch = make_launch(spec, args, terminal, subscribers=[printer.update])
    printer.launch = launch
    launch.listeners.append(printer.verdict)
    launch.notes.append(lambda text: printer.say(f"  {text}"))
    session.start()
    try:
        try:
            await launch.start(launch=not getattr(args, "attach_only", False))
        except LaunchError as exc:
            raise UsageError(clean(str(exc))) from None
        printer.started()
        try:
            await asyncio.wait_for(printer.final.wait(), args.timeout)
        except asyncio.TimeoutError:
            printer.say(f"timed out after {args.timeout:g} s: {launch.verdict().text}")
            printer.left_running()
            return EXIT_STARTING
        verdict = launch.verdict_now
        await launch.settle()  # let hooks and the history writes finish
        if verdict is not None and verdict.kind == "ready":
            printer.left_running()
            return EXIT_READY
        if launch.run is not None and launch.server_running:
            try:  # a failed server usually exits by itself within moments
                await asyncio.wait_for(launch.run.wait(), 5.0)
            except asyncio.TimeoutError:
                printer.say(
                    f"v{launch.run.attempt} (pid {launch.run.pid}) still runs after the failure; stop its group"
                    f" with `kill -INT -- -{launch.run.pgid}`"
                )
        return EXIT_FAILED
    except asyncio.CancelledError:
        printer.left_running()
        raise
    finally:
        await launch.close()
        await session.stop()


class PlainPrinter:
    """Text mode: one line per phase, error and verdict change, masked and control-free."""

    def __init__(self, out, launch=None) -> None:
        from tui.core.verdict import STARTING

        self.launch = launch
        self.out = out
        self.final = asyncio.Event()
        self._last_kind = STARTING

    def say(self, text: str) -> None:
        from tui.core.lines import clean

        self.out.write(clean(self.launch.masker.text(text)) + "\n")
        self.out.flush()

    def started(self) -> None:
        run = self.launch.run
        where = "" if self.launch.spec.host is None else f" on {self.launch.spec.host}"
        how = "reattached to the running" if self.launch.reattached else "started"
        self.say(f"v{run.attempt} {how}{where}: pid {run.pid}, log {run.log_path}")
        self.say(f"  {self.launch.command_text}")

    def update(self, update) -> None:
        from tui.core.events import ErrorFound, PhaseEnded, PhaseStarted, Ready, WarningFound
        from tui.core.state import PHASE_TITLES
        from tui.core.verdict import EXIT_KINDS
        from tui.core.wording import clock

        for event in update.events:
            if isinstance(event, PhaseStarted):
                self.say(f"  {PHASE_TITLES.get(event.phase, event.phase)} started (line {event.line})")
            elif isinstance(event, PhaseEnded):
                slow = f", slowest {event.slowest_rank}" if event.slowest_rank and event.ranks > 1 else ""
                took = f" in {clock(event.seconds)}" if event.seconds is not None else ""
                self.say(f"  {PHASE_TITLES.get(event.phase, event.phase)} done{took}{slow}")
            elif isinstance(event, ErrorFound):
                err = event.error
                if err.kind in EXIT_KINDS or getattr(err, "secondary", False):
                    continue  # the exit is in the verdict; consequences are in the log
                rank = f" ({err.rank})" if getattr(err, "rank", None) else ""
                self.say(f"  error at line {err.line}{rank}: {err.title}")
            elif isinstance(event, WarningFound):
                pass
            elif isinstance(event, Ready):
                self.say(f"  ready marker at line {event.line}")

    def verdict(self, verdict, previous) -> None:
        from tui.core.verdict import LOADING, STALLED

        if verdict.kind != self._last_kind or verdict.kind in (LOADING, STALLED) and previous is not None and (
            previous.kind != verdict.kind
        ):
            self.say(verdict.text)
        self._last_kind = verdict.kind
        if verdict.final:
            self.final.set()

    def left_running(self) -> None:
        launch = self.launch
        if launch.server_running:
            self.say(
                f"v{launch.run.attempt} keeps running (pid {launch.run.pid}); follow it again with"
                f" `watchtower attach {launch.spec.name}`"
            )
