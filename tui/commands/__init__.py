"""One module per `watchtower` subcommand; each has ``register(subparsers)`` and ``run(args)``.

Exit statuses shared by every command: 0 ready / success, 1 failed, 2 usage error,
3 still starting / incomplete / timed out.
"""

EXIT_READY, EXIT_FAILED, EXIT_USAGE, EXIT_STARTING = 0, 1, 2, 3


class UsageError(Exception):
    """A bad argument or an expected failure (missing file, unreadable log): one line, exit 2."""
