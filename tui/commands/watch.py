"""`watchtower watch LOG`: follow a server's log as it starts; a verdict when it is ready or failed.

Without ``--plain`` it opens the dashboard. With ``--plain`` it prints one line per
event — wall-clock time, time since the watch began, what happened — and exits 0
once ready, 1 on failure, 3 on ``--timeout``. It is the operator's old bash loop
(tail, grep a list of error words, sleep 15) done right: event-driven, every
exception type, a clear verdict.
"""

from __future__ import annotations

import argparse
import errno
import os

from tui.commands.cluster import add_cluster_options, cluster_options, one_host, wants_cluster
from tui.commands.options import (
    add_gpu_options, add_smoke_options, add_json_option, add_metrics_option, add_stall_limit_option, add_theme_option, seconds,
    watch_options,
)
from tui.core.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("watch", help="follow a log while the server starts: phases, errors, verdict")
    p.add_argument("log", nargs="?", help="the server's log file (it may not exist yet)")
    p.add_argument("--server", help="sglang, vllm, or a profile .toml (default: detect)")
    p.add_argument("--plain", action="store_true", help="print one line per event instead of the dashboard")
    p.add_argument("--timeout", type=seconds, metavar="S", help="give up after S seconds: exit 3 (the dashboard shows TIMEOUT; q exits 3)")
    p.add_argument("--echo", action="store_true", help="also print each log line (with --plain or --json)")
    add_json_option(p)
    add_metrics_option(p)
    p.add_argument("--from-end", action="store_true", help="skip what the log already holds")
    p.add_argument("--health", metavar="URL", help="ready also needs this URL to answer 200, asked from the log's "
                   "host (several nodes: the serving node's), e.g. http://127.0.0.1:30000/health")
    add_smoke_options(p)
    p.add_argument("--host", metavar="[USER@]HOST[:PORT][:/LOG]", action="append", dest="hosts",
                   help="read the log on this host over SSH; repeat as HOST:/path/log for several nodes")
    add_cluster_options(p)
    add_theme_option(p)
    add_gpu_options(p)
    add_stall_limit_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tui import wiring

    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if wants_cluster(args):
        return wiring.watch_cluster(cluster_options(args), plain=args.plain, json=args.json)
    args.host, args.log = one_host(args)
    if not args.log:
        raise UsageError("watch: which log? (LOG, --host HOST:/path/log, --cluster FILE or --slurm JOBID)")
    options = watch_options(args)
    if not options.host:
        refuse_unreadable(options.log)
    if not args.plain and not args.json:
        return wiring.watch_dashboard(options)
    return wiring.watch_plain(options, json=args.json)


def refuse_unreadable(path: str) -> None:
    """A log that exists but cannot be read is a usage error now (exit 2), not a wait until the
    timeout; one that does not exist yet may still appear."""
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory, not a log file")
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))  # non-blocking: a FIFO opens at once
    except FileNotFoundError:
        return
    except PermissionError:
        raise UsageError(f"{path}: permission denied (cannot read the log)") from None
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            raise UsageError(f"{path}: a part of the path is not a directory") from None
