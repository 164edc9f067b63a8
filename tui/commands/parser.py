"""The `watchtower` parser: the top-level options (``--version``, ``--config``) and every
subcommand's, registered by its module (``register(subparsers)``). Here, not in ``tui.cli``, so that
a command (``completion``) can build the whole parser too."""

from __future__ import annotations

import argparse
import importlib

from tui import __version__


#: Subcommand modules under tui.commands, in the order `--help` lists them.
COMMANDS = ("demo", "watch", "scan", "check", "run", "attach", "history", "replay", "record", "config", "completion")


def version_text() -> str:
    """``watchtower 0.1.0``, and ``(git 1a2b3c4)`` when it runs from a git checkout (an editable install)."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]  # the checkout: tui/commands/parser.py
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
