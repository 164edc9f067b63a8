"""`watchtower run -- COMMAND ARGS…`: launch a server and watch it start, as attempt vN.

The dashboard opens on it (keys: x stop, r relaunch, R edit and relaunch, a attempts,
k kill leftover GPU holders); ``--plain`` prints the startup as text instead and exits
like ``watch``: 0 ready (the server keeps running), 1 failed or dead, 3 timed out.
"""

from __future__ import annotations

from collections.abc import Sequence

import argparse
import os
import re
import sys
from pathlib import Path

from tui.commands.options import SLURM_SMOKE, add_launch_options, add_shm_option, launch_options, smoke_timeout
from tui.core.errors import UsageError
from tui.core.files import read_text

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")



def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="launch a server and watch it start (attempts v1…vN, relaunch from the keyboard)",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--host", help="launch on this host over SSH ([user@]host[:port]); detached, survives Watchtower")
    p.add_argument("--name", help="name of this launch (attempts are NAME-v1, NAME-v2, …; default: from the command)")
    p.add_argument("--log-dir", help="where the attempts' logs go (default: the data dir's logs/; remote: ~/watchtower-logs)")
    p.add_argument(
        "--env", action="append", default=[], metavar="K=V|K",
        help="set an environment variable (repeatable); a bare NAME passes on Watchtower's own value,"
        " so a secret never sits on a command line",
    )
    p.add_argument("--env-file", action="append", default=[], metavar="FILE", help="NAME=VALUE lines (repeatable)")
    add_launch_options(p)
    p.add_argument("--no-check", action="store_true",
                   help="launch without the preflight checks (run refuses on a ✗ otherwise; with --nodes: even when one fails)")
    add_shm_option(p)
    slurm = p.add_argument_group("Slurm", "run the server as a Slurm job: one srun task per node")
    slurm.add_argument("--slurm", action="store_true", help="submit a batch job (sbatch) and follow it")
    slurm.add_argument("--partition", metavar="P", help="sbatch --partition")
    slurm.add_argument("--nodes", metavar="N|H1,H2,…",
                       help="with --slurm: how many nodes; else the hosts ([user@]host[:port], node rank order) to run "
                       "the command on over SSH, {node_rank} {nnodes} {master} substituted")
    slurm.add_argument("--gpus-per-node", type=int, metavar="G", help="sbatch --gpus-per-node")
    slurm.add_argument("--time", metavar="T", help="sbatch --time (e.g. 1:00:00)")
    slurm.add_argument("--account", metavar="A", help="sbatch --account")
    p.add_argument("--cluster", metavar="FILE.toml", help="the nodes to run on over SSH, with per-node args (see README)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS", help="the server command line")
    p.set_defaults(func=run)


def parse_env(items: list[str], files: Sequence[str] = ()) -> dict[str, str]:
    """``--env-file`` lines, then ``--env NAME=VALUE`` / ``--env NAME`` (the value we were started with)."""
    from tui.core.secrets import is_secret_name

    env: dict[str, str] = {}
    for path in files:
        env.update(read_env_file(path))
    for item in items:
        key, eq, value = item.partition("=")
        if not ENV_NAME.fullmatch(key):
            raise UsageError(f"--env {key!r}: expected NAME=VALUE or NAME")
        if not eq:
            if key not in os.environ:
                raise UsageError(f"--env {key}: not set in Watchtower's environment (export it, or use --env-file)")
            value = os.environ[key]
        elif value and is_secret_name(key):
            print(f"watchtower: note: --env {key}=… puts a secret on Watchtower's command line (ps shows it);"
                  f" export it and pass --env {key}, or use --env-file", file=sys.stderr)
        env[key] = value
    return env


def read_env_file(path: str) -> dict[str, str]:
    """A .env file, as python-dotenv reads one: ``NAME=VALUE`` per line, ``export`` allowed, quotes
    (escapes inside double ones), ``#`` comments after a value, ``${NAME}`` from earlier lines or the
    environment. Read capped (tui.core.files); a line it cannot parse is named, exit 2."""
    import io

    from dotenv import dotenv_values
    from dotenv.parser import parse_stream

    try:
        text = read_text(path)  # a regular file, capped (tui.core.files)
    except OSError as exc:
        raise UsageError(f"--env-file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--env-file {path}: not a text file") from None
    if "\0" in text:  # (no environment value can hold one: the launch would fail with a traceback)
        raise UsageError(f"--env-file {path}, line {text.count(chr(10), 0, text.index(chr(0))) + 1}: a NUL byte")
    for binding in parse_stream(io.StringIO(text)):
        if binding.error or binding.key is not None and (binding.value is None or not ENV_NAME.fullmatch(binding.key)):
            said = binding.original.string  # blank lines before it are part of it: not the line to name
            line = binding.original.line + said[: len(said) - len(said.lstrip())].count("\n")
            raise UsageError(f"--env-file {path}, line {line}: expected NAME=VALUE")
    return {key: value or "" for key, value in dotenv_values(stream=io.StringIO(text)).items()}


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
    if len(name) > NAME_MAX:  # it names files: NAME-vN.log, its lock, …
        raise UsageError(f"--name is too long ({len(name)} characters; at most {NAME_MAX}): it names the attempts' files")
    return name


NAME_MAX = 100


def parse_grace(text: str):
    from tui.launch.spec import StopPlan

    try:
        parts = [float(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--stop-grace {text!r}: expected seconds after SIGINT,SIGTERM (e.g. 15,10)") from None
    if not 1 <= len(parts) <= 2 or any(p < 0 for p in parts):
        raise UsageError(f"--stop-grace {text!r}: expected seconds after SIGINT,SIGTERM (e.g. 15,10)")
    return StopPlan(after_int=parts[0], after_term=parts[-1])


def build_spec(args: argparse.Namespace, command: list[str] | None = None):
    from tui.history import data_dir
    from tui.launch.spec import LaunchSpec

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
        env=parse_env(args.env, args.env_file),
        log_dir=log_dir,
        host=args.host,
        health_url=args.health,
        smoke=bool(getattr(args, "smoke", False)),
        smoke_timeout=smoke_timeout(args),
        plan=parse_grace(args.stop_grace),
        stall_limit=args.stall_limit,
        on_ready=args.on_ready,
        on_fail=args.on_fail,
        cwd=None if args.host else os.getcwd(),
    )


def slurm_request(args: argparse.Namespace):
    from tui.core.slurm import SlurmRequest

    if args.host:
        raise UsageError("--slurm and --host: the job runs where Slurm puts it (submit from a login node)")
    nodes = args.nodes or "1"
    if not nodes.isdigit() or int(nodes) < 1:
        raise UsageError(f"--nodes {nodes!r}: with --slurm, a number of nodes")
    if args.gpus_per_node is not None and args.gpus_per_node < 0:
        raise UsageError("--gpus-per-node must be 0 or more")
    return SlurmRequest(nodes=int(nodes), partition=args.partition, gpus_per_node=args.gpus_per_node,
                        time=args.time, account=args.account)


def node_list(args: argparse.Namespace):
    """The nodes of ``run --nodes H1,H2`` or ``run --cluster FILE``, in node-rank order."""
    from tui.commands.cluster import cluster_file
    from tui.core.options import NodeSpec

    if args.host:
        raise UsageError("--nodes/--cluster and --host: name every host in --nodes")
    if args.cluster:
        nodes = cluster_file(args.cluster, args.gpus, logs=False)
    else:
        hosts = [h.strip() for h in args.nodes.split(",") if h.strip()]
        if args.nodes.isdigit() or not hosts:
            raise UsageError(f"--nodes {args.nodes!r}: the hosts, comma-separated (a number of nodes needs --slurm)")
        nodes = [NodeSpec(h.rsplit("@", 1)[-1].rsplit(":", 1)[0], "", h, args.gpus) for h in hosts]
    if len({n.name for n in nodes}) != len(nodes):
        raise UsageError("two nodes with one name (use a --cluster file to name them)")
    return nodes


def run(args: argparse.Namespace) -> int:
    from tui import wiring

    from tui.core.hints import load_knowledge

    spec = build_spec(args)
    options = launch_options(args)
    load_knowledge()  # a bad hints file is refused now, in one line, not in the middle of a launch
    if args.slurm:
        if spec.smoke:
            raise UsageError(SLURM_SMOKE)
        request = slurm_request(args)
        if not args.log_dir:  # the nodes write there: the submit directory is the one they likely share
            spec.log_dir = Path(os.getcwd()) / "watchtower-logs"
        return wiring.slurm_run(spec, request, options, plain=args.plain, json=args.json)
    if args.nodes or args.cluster:
        if not args.log_dir:  # on each node, under the login's home, as --host does
            spec.log_dir = Path("watchtower-logs")
        spec.cwd = None
        return wiring.nodes_run(spec, node_list(args), options, plain=args.plain, force=args.no_check,
                                json=args.json)
    if any(getattr(args, key) for key in ("partition", "gpus_per_node", "time", "account")):
        raise UsageError("--partition, --nodes, --gpus-per-node, --time and --account go with --slurm")
    if args.plain or args.json:
        return wiring.launch_plain(spec, options, json=args.json)
    return wiring.launch_dashboard(spec, options)
