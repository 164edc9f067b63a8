"""`watchtower check [--host H] [--json] -- COMMAND…`: will this server command start? Never runs it.

Reads the command line (SGLang, vLLM, TensorRT-LLM), then checks on the host where it would
run: ports, GPUs (count under CUDA_VISIBLE_DEVICES, free memory, other holders), leftover
server processes, the model and draft (local or in the HF cache, config.json, weights ÷ TP
against memory × fraction, the draft's context against the target's), for EAGLE-3 under
SGLang whether the installed model class has the hook, /dev/shm, cache disks, the open-files
limit and installed versions. Exit 0 all ✓, 1 a ✗, 4 ⚠ only.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from tui.commands.options import add_gpu_options, add_shm_option
from tui.core.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="preflight: would this server command start? (never runs it)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--host", metavar="[USER@]HOST[:PORT]", help="check on this host over SSH")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="an environment variable the launch adds")
    add_gpu_options(p)
    add_shm_option(p)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS", help="the server command line")
    p.set_defaults(func=run)


def parse_command(words: list[str]) -> list[str]:
    argv = words[1:] if words[:1] == ["--"] else words
    if not argv:
        raise UsageError("check needs the server command after --, e.g. watchtower check -- python -m sglang.launch_server …")
    return argv


def run(args: argparse.Namespace) -> int:
    from tui.commands.run import parse_env
    from tui.preflight import preflight_report

    argv = parse_command(args.command)
    report = asyncio.run(preflight_report(argv, parse_env(args.env), host=args.host, gpus=args.gpus, shm=args.shm))
    print(json.dumps(report.to_json(), ensure_ascii=False) if args.json else report.text())
    return report.exit_status
