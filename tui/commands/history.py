"""`watchtower history [NAME] [--json]`: the attempts table (v1 ✗ ValueError 5:10, v2 ✓ ready 11:02 …)."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time

from tui.commands import UsageError
from tui.core.lines import clean


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("history", help="list launch attempts and what changed between them", description=__doc__)
    p.add_argument("name", nargs="?", help="only this launch")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def table(attempts) -> list[str]:
    """One line per attempt, then its changes against the previous attempt, indented."""
    lines = []
    name = None
    for a in attempts:
        if a.name != name:
            name = a.name
            lines.append(f"{name}  ({a.host})")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(a.started_at))
        error = f"  {a.first_error}" if a.first_error and a.outcome != "ready" else ""
        exit_text = f"  [{a.exit_text}]" if a.exit_text and not error and a.outcome != "ready" else ""
        lines.append(f"  {a.summary:<28} {when}  {a.log_path}{error}{exit_text}")
        for change in a.changes:
            lines.append(f"      {change}")
    return [clean(line) for line in lines]


def run(args: argparse.Namespace) -> int:
    from tui.history import History

    try:
        history = History()
        attempts = history.attempts(args.name)
    except (OSError, sqlite3.Error) as exc:
        raise UsageError(f"cannot read the history: {exc}") from None
    if history.notice:
        print(f"watchtower: {clean(history.notice)}", file=sys.stderr)
    if args.json:
        json.dump([a.to_json() for a in attempts], sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if not attempts:
        print(f"no attempts recorded{' for ' + args.name if args.name else ''}")
        return 0 if args.name is None else 1
    print("\n".join(table(attempts)))
    return 0
