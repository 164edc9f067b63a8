"""The `watchtower` command line: subcommands live in ``tui.commands``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from tui import __version__
from tui.commands import EXIT_USAGE, UsageError

#: Subcommand modules under tui.commands, in the order `--help` lists them.
COMMANDS = ("demo", "watch", "scan", "check", "run", "attach", "history", "replay", "record")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or with ``only`` that one (its imports alone: `scan`
    of a big log should not pay for the dashboard's)."""
    parser = argparse.ArgumentParser(
        prog="watchtower",
        description="Watch an LLM inference server (SGLang, vLLM) start: phases, GPUs, errors.",
    )
    parser.add_argument("--version", action="version", version=f"watchtower {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"tui.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    first = (sys.argv[1:] if argv is None else argv)[:1]
    args = build_parser(first[0] if first and first[0] in COMMANDS else None).parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        from tui.core.lines import clean

        print(f"watchtower: {clean(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head -1`): end quietly, as a filter does
        _silence_stdout()
        return EXIT_BROKEN_PIPE


EXIT_BROKEN_PIPE = 141  # what a shell reports for a process ended by SIGPIPE (128 + 13)


def _silence_stdout() -> None:
    """Point stdout at /dev/null: the interpreter's last flush must not raise again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
