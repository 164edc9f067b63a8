"""The `watchtower` command line: subcommands live in ``tui.commands``."""

from __future__ import annotations

import argparse
import gc
import os
import sys
import warnings

from tui.commands import EXIT_USAGE, UsageError
from tui.core.errors import interruption
from tui.commands.parser import COMMANDS, build_parser

__all__ = ["COMMANDS", "build_parser", "main"]


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


#: Commands whose process ends without the interpreter's teardown once their output is out: they start
#: no thread, connection, server or temporary file that needs it, and freeing what they built (a
#: tracker, the hints) one object at a time was 10 ms of a 180 ms `scan` of 300 MB (issue 35).
QUICK_EXIT = frozenset({"scan"})


def main(argv: list[str] | None = None) -> int:
    """The command line ``argv`` (None: this process's own, and then a ``QUICK_EXIT`` command ends
    the process here); its exit status."""
    words = sys.argv[1:] if argv is None else argv
    status = _run(words)
    if argv is None and command_of(words) in QUICK_EXIT:
        _end_now(status)
    return status


def _end_now(status: int) -> None:
    """End the process with ``status`` once its output is written, skipping the interpreter's teardown."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away: as main says it
        _silence_stdout()
        status = EXIT_BROKEN_PIPE
    try:
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass
    os._exit(status)


def _run(words: list[str]) -> int:
    """The command line ``words`` run: its exit status (a usage error, an interruption or a reader
    gone away each said in one line, or none)."""
    # asyncssh's key modules name cryptography's DSA types, deprecated from cryptography 51: their
    # import would print ten lines of warnings before any command that may use SSH says a word.
    warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh\.")
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
        return run_command(args)
    except UsageError as exc:
        from tui.core.lines import clean

        print(f"watchtower: {clean(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:  # (Ctrl-C, or SIGTERM as ``Terminated``: each its own status)
        return interruption(exc)[1]
    except BrokenPipeError:  # the reader went away (`| head -1`): end quietly, as a filter does
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command. A dashboard starts without the garbage collector, from its imports to
    its first frame (``WatchtowerApp`` turns it back on once drawn, what the start allocated frozen):
    that lives for the whole run, and the collector's passes over it were a tenth of the first paint
    (issue 35).
    Every command runs ``keeping`` what the built-in files compile and parse to, for the next."""
    from tui.sources.hs_cache import keeping

    collecting = gc.isenabled()
    if draws_dashboard(args):
        gc.disable()
    try:
        with keeping():
            return int(args.func(args) or 0)
    finally:
        if collecting:
            gc.enable()


def draws_dashboard(args: argparse.Namespace) -> bool:
    """A command with ``--plain`` draws the dashboard unless asked for text (``--plain``, ``--json``)."""
    return getattr(args, "plain", None) is False and not getattr(args, "json", False)


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
