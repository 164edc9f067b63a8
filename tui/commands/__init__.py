"""One module per `watchtower` subcommand; each has ``register(subparsers)`` and ``run(args)``.

Exit statuses shared by every command: 0 ready / success, 1 failed, 2 usage error,
3 still starting / incomplete / timed out.
"""

EXIT_READY, EXIT_FAILED, EXIT_USAGE, EXIT_STARTING = 0, 1, 2, 3


class UsageError(Exception):
    """A bad argument or an expected failure (missing file, unreadable log): one line, exit 2."""


def add_stall_limit_option(parser) -> None:
    """``--stall-limit 5m,weight_load=20m,cuda_graph=8m``: a default and per-phase silence limits."""
    import argparse

    from tui.core.limits import StallLimits

    def limits(text: str) -> StallLimits:
        try:
            return StallLimits.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("--stall-limit: ")) from None

    parser.add_argument(
        "--stall-limit", type=limits, metavar="LIMITS",
        help="log silence that counts as 'stalled?': a default and/or PHASE=DURATION pairs, e.g. "
        "5m,weight_load=20m,cuda_graph=8m (default: history, else the server profile's)",
    )
