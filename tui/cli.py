"""The `watchtower` command line: subcommands live in ``tui.commands``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from tui import __version__
from tui.commands import EXIT_USAGE, UsageError

#: Subcommand modules under tui.commands, in the order `--help` lists them.
COMMANDS = ("demo", "watch", "scan", "check", "run", "attach", "history", "replay", "record", "config", "completion")


def version_text() -> str:
    """``watchtower 0.1.0``, and ``(git 1a2b3c4)`` when it runs from a git checkout (an editable install)."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    text = f"watchtower {__version__}"
    if not (root / ".git").exists():  # a directory, or a worktree's file
        return text
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return text
    commit = done.stdout.strip()
    return f"{text} (git {commit})" if done.returncode == 0 and commit else text


class VersionAction(argparse.Action):
    """``--version``: the git commit is looked up only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(version_text())
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or with ``only`` that one (its imports alone: `scan`
    of a big log should not pay for the dashboard's)."""
    parser = argparse.ArgumentParser(
        prog="watchtower",
        description="Watch an LLM inference server (SGLang, vLLM) start: phases, GPUs, errors.",
    )
    parser.add_argument("--version", action=VersionAction, nargs=0, help="show the version (and the git commit of a checkout) and exit")
    parser.add_argument("--config", metavar="PATH",
                        help="the config file (default: $XDG_CONFIG_HOME/watchtower/config.toml; see `watchtower config`)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"tui.commands.{name}").register(sub)
    return parser


def command_of(argv: list[str]) -> str | None:
    """The subcommand's name: the first word that is not a top-level option (``--config PATH``)."""
    words = iter(argv)
    for word in words:
        if word == "--config":
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def config_path(argv: list[str]) -> str | None:
    """``--config PATH`` (or ``--config=PATH``) before the subcommand."""
    for i, word in enumerate(argv):
        if not word.startswith("-"):
            return None
        if word == "--config" and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--config="):
            return word.split("=", 1)[1]
    return None


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    try:
        from tui.commands.config import apply, load, resolve_names
        from tui.core.config import activate

        parser = build_parser(command_of(words))
        settings = load(config_path(words))  # before parsing: the file's values are the flags' defaults
        apply(parser, settings)
        args = parser.parse_args(words)
        resolve_names(args, settings)
        args.settings = settings
        activate(settings)
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
