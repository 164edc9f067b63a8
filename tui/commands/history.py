"""`watchtower history [NAME] [--json]`: the attempts table (v1 ✗ ValueError 5:10, v2 ✓ ready 11:02 …)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sqlite3
import sys
import time
from collections.abc import Iterator

from tui.commands import UsageError
from tui.core.lines import clean
from tui.core.wording import clock


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("history", help="list launch attempts and what changed between them", description=__doc__)
    p.add_argument("name", nargs="?", help="only this launch")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--names", action="store_true", help="only the launches' names, one a line (shell completion reads them)")
    p.set_defaults(func=run)


def task_ids(path: str) -> list[int]:
    """The task ids of the files a Slurm job's per-task log pattern (``…-%t.log``) made, ascending
    (none where the path is no such pattern or no task's log is found)."""
    if "%t" not in path:
        return []
    head, _, tail = path.partition("%t")
    folder, _, prefix = head.rpartition("/")
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return []
    return sorted(int(n[len(prefix):len(n) - len(tail)]) for n in names
                  if n.startswith(prefix) and n.endswith(tail) and n[len(prefix):len(n) - len(tail)].isdigit())


def task_logs(path: str) -> str:
    """A Slurm job's per-task log pattern (``…-%t.log``) as the files it made, the task ids filled
    in (``DIR/sim-v1-7-{0,1}.log``); the pattern as kept where no task's log is found."""
    tasks = task_ids(path)
    if not tasks:
        return path
    head, _, tail = path.partition("%t")
    ids = str(tasks[0]) if len(tasks) == 1 else "{" + ",".join(map(str, tasks)) + "}"
    return f"{head}{ids}{tail}"


def json_row(attempt) -> dict:
    """An attempt as ``--json`` gives it: a Slurm job's tasks' logs also as the files (``task_logs``)."""
    row = attempt.to_json()
    head, _, tail = attempt.log_path.partition("%t")
    if tasks := task_ids(attempt.log_path):
        row["task_logs"] = [f"{head}{task}{tail}" for task in tasks]
    return row


def table(attempts) -> Iterator[str]:
    """Per attempt: its outcome line (and first error, or how it ended), the command it ran, each
    phase's time against the last good attempt before it (``weight load 10:28 (v3: 10:31)``), and
    what changed from the previous attempt (flags, env, the hint whose fix it applied)."""
    name = None
    good = None  # the last attempt of this name that became ready
    for a in attempts:
        lines: list[str] = []
        if a.name != name:
            name, good = a.name, None
            lines.append(f"{name}  ({a.host})")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(a.started_at))
        error = f"  {a.first_error}" if a.first_error and a.outcome != "ready" else ""
        exit_text = f"  [{a.exit_text}]" if a.exit_text and not error and a.outcome != "ready" else ""
        lines.append(f"  {a.summary:<28} {when}  {task_logs(a.log_path)}{error}{exit_text}")
        lines.append(f"      command: {command_text(a)}")
        if a.gpu_source is not None:
            lines.append(f"      GPUs:    {a.gpu_source}")
        phases = phase_line(a, good)
        if phases:
            lines.append(f"      phases:  {phases}")
        if a.applied:
            lines.append(f"      {a.label}: applied {a.applied}")
        diff = a.command_diff + a.env_diff
        if diff:
            lines.append("      changed: " + " · ".join(diff))
        if a.outcome == "ready":
            good = a
        yield from map(clean, lines)


def command_text(record) -> str:
    """The attempt's command line with its environment overrides in front, as recorded (masked)."""
    env = " ".join(f"{k}={_word(v)}" for k, v in (record.env or {}).items())
    return f"{env} {shlex.join(record.command)}".strip()


def _word(value: str) -> str:
    """A shell word; a masked value (``****``) stays as it is."""
    return value if re.fullmatch(r"[\w@%+=:,./*-]*", value) else shlex.quote(value)


def phase_line(record, good) -> str:
    """``server args 0:01 · weight load 10:28 (v3: 10:31) · …``: the attempt's phases in startup
    order, each beside the same phase of ``good`` (the last ready attempt before it) where it had one."""
    from tui.core.state import PHASE_TITLES, PHASES

    parts = []
    for phase in sorted(record.phases, key=lambda p: PHASES.index(p) if p in PHASES else len(PHASES)):
        text = f"{PHASE_TITLES.get(phase, phase)} {clock(record.phases[phase])}"
        if good is not None and phase in good.phases:
            text += f" ({good.label}: {clock(good.phases[phase])})"
        parts.append(text)
    return " · ".join(parts)


def run(args: argparse.Namespace) -> int:
    from tui.history import History

    try:
        history = History()
        if history.notice:
            print(f"watchtower: {clean(history.notice)}", file=sys.stderr)
        if args.names:
            print("\n".join(clean(name) for name in history.names()))
            return 0
        if args.name:  # one launch: its attempts, then where its latest good start's time went
            return _one(args, history.attempts(args.name))
        if args.json:  # streamed: a history of any length in bounded memory
            gap = "["
            for attempt in history.each_attempt():
                sys.stdout.write(gap + "\n  " + json.dumps(json_row(attempt), indent=2, ensure_ascii=False).replace("\n", "\n  "))
                gap = ","
            sys.stdout.write("[]\n" if gap == "[" else "\n]\n")  # (as json.dump(…, indent=2) writes it)
            return 0
        said = False
        for line in table(history.each_attempt()):
            print(line)
            said = True
        if not said:
            print("no attempts recorded")
        return 0
    except BrokenPipeError:  # the reader went away while the rows streamed: the filter's quiet end
        raise
    except (OSError, sqlite3.Error) as exc:
        raise UsageError(f"cannot read the history: {exc}") from None


def _one(args: argparse.Namespace, attempts: list) -> int:
    """`history NAME`: its attempts and its latest good start's profile; 1 when it has none."""
    if args.json:
        json.dump([json_row(a) for a in attempts], sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if not attempts:
        print(f"no attempts recorded for {args.name}")
        return 1
    print("\n".join(table(attempts)))
    from tui.present.startup import history_lines

    profile = history_lines(attempts)
    if profile:
        print("\n" + "\n".join(clean(line) for line in profile))
    return 0
