"""Options several commands share, declared once, and their typed form (``tui.core.options``)."""

from __future__ import annotations

import argparse
import math
import os

from tui.core.config import MIN_POLL_S
from tui.core.limits import StallLimits
from tui.core.errors import UsageError
from tui.core.options import LINGER_S, GPU_SOURCES, SMOKE_TIMEOUT_S, GpuOptions, LaunchOptions, MetricsOptions, PlaybackOptions, WatchOptions


#: Why --smoke and --slurm do not go together (yet): said by `run` and `watch` alike.
SLURM_SMOKE = ("--smoke with --slurm: the completion would go to this machine, not to the job's serving node; "
               "use --health http://NODE:PORT/health (the URL names the node)")


def seconds(text: str) -> float:
    """An argparse type: a finite number greater than 0 (``nan``, ``inf``, 0 and below are refused
    at parse, with argparse's usage line and exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number greater than 0, got {text!r}")
    return value


def poll_seconds(text: str) -> float:
    """An argparse type: seconds between polls, at least ``MIN_POLL_S`` (a faster poll spins a core)."""
    value = seconds(text)
    if value < MIN_POLL_S:
        raise argparse.ArgumentTypeError(f"expected at least {MIN_POLL_S:g} seconds (a faster poll would spin a core), got {text!r}")
    return value


def seconds_or_none(text: str) -> float:
    """An argparse type: a finite number of seconds, 0 or more (0: none at all)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number, 0 or more, got {text!r}")
    return value


def add_gpu_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", choices=GPU_SOURCES, default="auto",
                        help="GPU source: auto (NVML here, nvidia-smi with --host), nvml, smi, "
                        "sim (simulated 8 GPUs), none")
    parser.add_argument("--gpu-interval", type=poll_seconds, default=1.0, metavar="S",
                        help="seconds between GPU polls (default 1)")


def add_shm_option(parser: argparse.ArgumentParser) -> None:
    """`check` and `run`: the shared-memory mount the preflight looks at."""
    parser.add_argument("--shm", metavar="PATH", help="the shared-memory mount to check (default /dev/shm)")


def add_theme_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--theme",
        metavar="NAME|PATH",
        help="dashboard theme: dark (default), light, high-contrast, one of yours in "
        "~/.config/watchtower/themes/, or a .toml file",
    )


def stall_limits(text: str) -> StallLimits:
    """``--stall-limit``'s value: ``5m,weight_load=20m,cuda_graph=8m``."""
    try:
        return StallLimits.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--stall-limit: ")) from None


def add_stall_limit_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stall-limit", type=stall_limits, metavar="LIMITS",
        help="log silence that counts as 'stalled?': a default and/or PHASE=DURATION pairs, e.g. "
        "5m,weight_load=20m,cuda_graph=8m (default: history, else the server profile's)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true",
        help="one JSON object per line (NDJSON) for each event instead of the dashboard, the last an "
        "'exit' object; same exit statuses as --plain (see README, 'Scripting and monitoring')",
    )


def metrics_address(text: str) -> str:
    """``--metrics``' value: HOST:PORT (checked at parse: argparse's usage line and exit 2)."""
    from tui.present.metrics import parse_address

    try:
        parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--metrics {text!r}: ")) from None
    return text


def add_metrics_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics", type=metrics_address, metavar="HOST:PORT",
        help="serve the startup as Prometheus metrics at http://HOST:PORT/metrics while watching "
        "(phase durations, current phase, verdict, weight-load bytes and time left, attempt, time to ready; "
        "per node with several)",
    )
    parser.add_argument(
        "--metrics-textfile", metavar="PATH.prom",
        help="write the same metrics to PATH.prom every few seconds (temp file + rename) for node_exporter's "
        "textfile collector; its directory must exist",
    )
    parser.add_argument(
        "--metrics-linger", type=seconds_or_none, metavar="S", default=LINGER_S,
        help="once the run or watch ends, keep serving --metrics until a scrape has read the final state, "
        f"at most S seconds (default {LINGER_S:g}: three 15 s scrape intervals; 0: stop at once)",
    )


def check_textfile(text: str) -> str:
    """``--metrics-textfile PATH``: a ``.prom`` file (node_exporter reads no other) in a directory
    that exists and this user may write to; else one line saying which is not so, exit 2."""
    path = os.path.abspath(os.path.expanduser(text))
    folder = os.path.dirname(path)
    if not path.endswith(".prom"):
        raise UsageError(f"--metrics-textfile {text}: the name must end in .prom (node_exporter's textfile "
                         "collector reads no other)")
    if not os.path.isdir(folder):
        raise UsageError(f"--metrics-textfile {text}: no directory {folder} (node_exporter's "
                         "--collector.textfile.directory, made beforehand)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--metrics-textfile {text}: {folder} is not writable by this user")
    return path


def metrics_options(args: argparse.Namespace) -> MetricsOptions:
    """``--metrics`` and ``--metrics-textfile`` (a .prom file in a directory there is: else one line, exit 2)."""
    textfile = getattr(args, "metrics_textfile", None)
    return MetricsOptions(getattr(args, "metrics", None), check_textfile(textfile) if textfile is not None else None,
                          getattr(args, "metrics_linger", LINGER_S))


SMOKE_HELP = ("after the ready line, send one tiny completion (/v1/completions, max_tokens 1) to the port the "
              "log names: ready only once it answers (a streamed answer: its first chunk); the time to the first "
              "token is shown")


def add_smoke_options(parser: argparse.ArgumentParser) -> None:
    """--smoke and --smoke-timeout: `watch`, `run` and `attach`."""
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    parser.add_argument("--smoke-timeout", type=seconds, metavar="S",
                        help=f"with --smoke: seconds each of its requests may take (default {SMOKE_TIMEOUT_S:g})")


def smoke_timeout(args: argparse.Namespace) -> float:
    """``--smoke-timeout``'s seconds (its default when not given); refused without ``--smoke``,
    where it would change nothing."""
    given = getattr(args, "smoke_timeout", None)
    if given is not None and not getattr(args, "smoke", False):
        raise UsageError("--smoke-timeout without --smoke: no request is sent to time")
    return SMOKE_TIMEOUT_S if given is None else given


def add_launch_options(parser: argparse.ArgumentParser) -> None:
    """How `run` and `attach` watch an attempt (run adds what starts one: --host, --name, --env …)."""
    parser.add_argument("--health", metavar="URL", help="ready also needs this URL to answer 200 (e.g. http://127.0.0.1:30000/health)")
    add_smoke_options(parser)
    parser.add_argument("--plain", action="store_true", help="text output instead of the dashboard; exit 0 ready, 1 failed, 3 timeout")
    add_json_option(parser)
    add_metrics_option(parser)
    parser.add_argument("--on-ready", metavar="CMD", help="shell command run when ready (verdict in WATCHTOWER_* variables)")
    parser.add_argument("--on-fail", metavar="CMD", help="shell command run on failure (verdict in WATCHTOWER_* variables)")
    parser.add_argument("--server", help="force a server profile: sglang, vllm or a TOML file")
    add_gpu_options(parser)
    parser.add_argument("--stop-grace", default="15,10", metavar="INT,TERM",
                        help="seconds to wait after SIGINT, then after SIGTERM, before SIGKILL (default 15,10)")
    add_stall_limit_option(parser)
    parser.add_argument("--timeout", type=seconds, metavar="S", help="give up after S seconds: exit 3 (the dashboard shows TIMEOUT; q exits 3)")
    add_theme_option(parser)


def add_playback_options(parser: argparse.ArgumentParser) -> None:
    """--speed, --plain and --theme: `replay`, and `demo`, which plays bundled recordings."""
    parser.add_argument("--speed", type=seconds, default=1.0, metavar="N", help="play N times faster (default 1)")
    parser.add_argument("--plain", action="store_true", help="print events as text instead of the dashboard")
    add_json_option(parser)
    add_theme_option(parser)
    add_stall_limit_option(parser)


def gpu_options(args: argparse.Namespace) -> GpuOptions:
    return GpuOptions(kind=args.gpus, interval=args.gpu_interval)


def watch_options(args: argparse.Namespace) -> WatchOptions:
    return WatchOptions(
        log=args.log,
        server=args.server,
        host=args.host,
        from_end=args.from_end,
        timeout=args.timeout,
        echo=args.echo,
        theme=args.theme,
        gpus=gpu_options(args),
        stall_limits=args.stall_limit,
        health=getattr(args, "health", None),
        metrics=metrics_options(args),
        smoke=bool(getattr(args, "smoke", False)),
        smoke_timeout=smoke_timeout(args),
    )


def launch_options(args: argparse.Namespace, *, attach_only: bool = False) -> LaunchOptions:
    return LaunchOptions(
        server=args.server, gpus=gpu_options(args), theme=args.theme, timeout=args.timeout, attach_only=attach_only,
        preflight=not getattr(args, "no_check", False), shm=getattr(args, "shm", None),
        metrics=metrics_options(args),
    )


def playback_options(args: argparse.Namespace) -> PlaybackOptions:
    return PlaybackOptions(speed=args.speed, plain=args.plain, theme=args.theme, stall_limits=args.stall_limit,
                           json=args.json)
