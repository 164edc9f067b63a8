"""The several-node options of ``watch``: ``--host N:/log`` (repeated), ``--cluster FILE.toml``
and ``--slurm JOBID``, parsed into ``tui.core.options.ClusterOptions``.

A cluster file names the nodes::

    [[node]]
    name = "n1"                  # shown in the node column; default: the host
    host = "user@10.0.0.1"       # [user@]host[:port] over SSH; absent: this machine
    log = "/var/log/sglang.log"
    gpus = "auto"                # as --gpus (default: the command's --gpus)
    args = ["--dist-init-addr", "10.0.0.1:5000"]   # `run --cluster`: added to this node's command
    role = "serving"             # or "worker"; default: from the log (node_rank, headless), else the first serves

For ``run --cluster`` the nodes are listed in node-rank order and ``log`` is not needed
(each attempt has its own log per node).
"""

from __future__ import annotations

import argparse
import re

from tui.commands.options import SLURM_SMOKE, gpu_options, metrics_options, seconds, smoke_timeout
from tui.core.cluster import ROLES
from tui.core.errors import UsageError
from tui.core.files import read_text
from tui.core.kept import parse_toml
from tui.core.lines import clean
from tui.core.options import ClusterOptions, NodeSpec

#: ``[user@]host[:port]:/path`` — the path starts with / ~ or . (a port is digits only).
_HOST_LOG = re.compile(r"^(?P<host>[^/]+?):(?P<path>[/~.].*)$")


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", metavar="FILE.toml", help="several nodes: names, hosts, logs, GPU sources")
    parser.add_argument("--slurm", metavar="JOBID", help="a Slurm job: its state, then its tasks' output files")
    parser.add_argument("--task-output", metavar="PATTERN",
                        help="with --slurm: the tasks' output files as an srun -o pattern (default: from the job)")
    parser.add_argument("--slurm-interval", type=seconds, default=1.0, metavar="S", help=argparse.SUPPRESS)
    parser.add_argument("--ray", action="store_true", help="LOG is vLLM's head log under Ray: each worker node's "
                        "lines (Ray's '(RayWorkerWrapper pid=N, ip=…)' prefix) are a node of their own")
    parser.set_defaults(host=None)


def cluster_options(args: argparse.Namespace) -> ClusterOptions:
    ray_host, ray_log = one_host(args) if args.ray else (None, None)
    if args.ray and not ray_log:
        raise UsageError("--ray: which log? (the head's: LOG or --host HOST:/path/log)")
    if args.ray and (args.slurm or args.cluster):
        raise UsageError("--ray reads one log: not with --slurm or --cluster")
    smoke = bool(getattr(args, "smoke", False))
    if args.slurm and smoke:
        raise UsageError(SLURM_SMOKE)
    nodes = () if args.slurm or args.ray else tuple(node_specs(args))
    return ClusterOptions(
        ray_log=ray_log,
        ray_host=ray_host,
        nodes=nodes,
        slurm_job=args.slurm,
        task_output=args.task_output,
        slurm_interval=args.slurm_interval,
        server=args.server,
        from_end=args.from_end,
        timeout=args.timeout,
        theme=args.theme,
        gpus=gpu_options(args),
        stall_limits=getattr(args, "stall_limit", None),
        health=getattr(args, "health", None),
        metrics=metrics_options(args),
        smoke=smoke,
        smoke_timeout=smoke_timeout(args),
    )


def wants_cluster(args: argparse.Namespace) -> bool:
    """Several nodes (or a Slurm job) rather than one log."""
    hosts = getattr(args, "hosts", None) or []
    return bool(getattr(args, "slurm", None) or getattr(args, "cluster", None) or getattr(args, "ray", False)
                or len(hosts) > 1)


def one_host(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """(host, log) of a watch of one log: ``--host H LOG`` or ``--host H:/path/log``."""
    host = (args.hosts or [None])[-1]
    match = _HOST_LOG.match(host) if host else None
    if match is not None and not args.log:
        return match.group("host"), match.group("path")
    return host, args.log


def node_specs(args: argparse.Namespace) -> list[NodeSpec]:
    """The nodes a watch names: ``--host N:/log`` each, or the ``--cluster`` file's."""
    gpus = args.gpus
    if args.cluster:
        return cluster_file(args.cluster, gpus)
    specs = []
    for value in args.hosts or []:
        match = _HOST_LOG.match(value)
        if match is None:
            if not args.log:
                raise UsageError(f"--host {value}: with several hosts, each is HOST:/path/to/log")
            host, path = value, args.log
        else:
            host, path = match.group("host"), match.group("path")
        local = host in ("localhost", "local")
        specs.append(NodeSpec(_node_name(host), path, None if local else host, gpus))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise UsageError(f"two nodes with one name: {', '.join(names)} (use a --cluster file to name them)")
    return specs


def cluster_file(path: str, gpus: str = "none", *, logs: bool = True) -> list[NodeSpec]:
    try:
        data = parse_toml(read_text(path))  # a regular file, capped (tui.core.files)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the cluster file: {getattr(exc, 'strerror', None) or exc}") from None
    except ValueError as exc:  # (TOMLDecodeError)
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise UsageError(f"{path}: not valid TOML: nested too deeply") from None
    nodes = data.get("node")
    if not isinstance(nodes, list) or not nodes:
        raise UsageError(f"{path}: no [[node]] tables")
    specs = []
    for index, node in enumerate(nodes, 1):
        if not isinstance(node, dict):
            raise UsageError(f"{path}: node {index}: expected a [[node]] table")
        for key in ("name", "host", "log", "gpus", "role"):
            if key in node and not isinstance(node[key], str):
                raise UsageError(f"{path}: node {index}: {key!r} must be a string, not {type(node[key]).__name__}")
        unknown = set(node) - {"name", "host", "log", "gpus", "args", "role"}
        if unknown:
            raise UsageError(f"{path}: node {index}: unknown key {sorted(unknown)[0]!r} (name, host, log, gpus, args, role)")
        role = node.get("role")
        if role is not None and role not in ROLES:
            raise UsageError(f"{path}: node {index}: 'role' is one of {', '.join(map(repr, ROLES))}, not {role!r}")
        if logs and (not isinstance(node.get("log"), str) or not node["log"]):
            raise UsageError(f"{path}: node {index}: 'log' (the log's path) is required")
        if not logs and not node.get("host"):
            raise UsageError(f"{path}: node {index}: 'host' (where to run it) is required")
        args = node.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise UsageError(f"{path}: node {index}: 'args' must be a list of strings")
        host = node.get("host") or None
        # a name reaches the screen (the plain lines, the node rows, a terminal title): never raw
        name = clean(node.get("name") or _node_name(host or "localhost"))
        specs.append(NodeSpec(name, str(node.get("log") or ""),
                              host, str(node.get("gpus") or gpus), tuple(args), role))
    if len({s.name for s in specs}) != len(specs):
        raise UsageError(f"{path}: two nodes with one name")
    return specs


def _node_name(host: str) -> str:
    """``user@n1.example:2222`` → ``n1.example``: the node column shows the machine."""
    return host.rsplit("@", 1)[-1].rsplit(":", 1)[0] if not host.startswith("[") else host


