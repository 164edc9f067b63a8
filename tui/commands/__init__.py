"""One module per `watchtower` subcommand; each has ``register(subparsers)`` and ``run(args)``.

Exit statuses (``tui.core.verdict``): 0 ready / success, 1 failed, 2 usage error,
3 still starting / incomplete / timed out.
"""

from tui.core.errors import UsageError
from tui.core.verdict import EXIT_FAILED, EXIT_READY, EXIT_STARTING, EXIT_USAGE

__all__ = ["EXIT_FAILED", "EXIT_READY", "EXIT_STARTING", "EXIT_USAGE", "UsageError"]
