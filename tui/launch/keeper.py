"""A confirmed stop carried through when Watchtower itself goes (its terminal hung up).

``x``, ``y`` starts SIGINT → SIGTERM → SIGKILL with grace periods; the escalation lives in
Watchtower's event loop. An SSH drop or a killed tmux session sends Watchtower SIGHUP,
which would end it — and the server, in its own session, would never get its SIGTERM or
SIGKILL, while the history still said ``starting``. So on SIGHUP during a stop the
launcher hands the rest of the schedule to this small detached process
(:func:`hand_over`): it sends each remaining signal at its time to the attempt's process
group and the processes seen outside it, waits for them to be gone, and writes the end
into the history ("stopped (SIGKILL after the grace period), carried through after …").

Run as ``python -c … JSON`` (:func:`main`); it needs only psutil and the history.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

#: How long the keeper waits for the processes to go after its SIGKILL.
AFTER_KILL = 10.0
#: What the history's exit text adds after the way the stop ended.
HUNG_UP = "carried through after Watchtower's terminal hung up"


def plan_of(
    *, pgid: int, members: Sequence[int], steps: Sequence[tuple[int, float]], history: str | None, name: str,
    attempt: int, exit_file: str,
) -> dict[str, Any]:
    """What the keeper needs: the group, its members (with start times: a reused pid is not
    ours), the signals still to send and when (epoch seconds), and where to record the end."""
    from tui.launch.proctable import start_time

    return {
        "pgid": pgid,
        "members": [[pid, start_time(pid)] for pid in members],
        "steps": [[int(sig), at] for sig, at in steps],
        "history": history,
        "name": name,
        "attempt": attempt,
        "exit_file": exit_file,
    }


def hand_over(plan: dict[str, Any]) -> int:
    """Start the keeper, detached (its own session, no terminal); its pid."""
    root = str(Path(__file__).resolve().parents[2])
    code = f"import sys; sys.path.insert(0, {root!r}); from tui.launch.keeper import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, json.dumps(plan)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )
    return proc.pid


def _ours(pid: int, ticks: int | None) -> bool:
    from tui.launch.proctable import is_alive, start_time

    return is_alive(pid) and (ticks is None or start_time(pid) == ticks)


def _alive(plan: dict[str, Any]) -> list[int]:
    from tui.launch.proctable import group_members

    pids = set(group_members(plan["pgid"]))
    pids.update(pid for pid, ticks in plan["members"] if _ours(pid, ticks))
    return sorted(pids)


def _send(plan: dict[str, Any], sig: int) -> None:
    try:
        os.killpg(plan["pgid"], sig)
    except OSError:
        pass
    for pid, ticks in plan["members"]:
        if _ours(pid, ticks):
            try:
                os.kill(pid, sig)
            except OSError:
                pass


def _wait_gone(plan: dict[str, Any], until: float) -> bool:
    while _alive(plan):
        if time.time() >= until:
            return False
        time.sleep(0.1)
    return True


def carry_out(plan: dict[str, Any]) -> tuple[bool, int | None]:
    """Send the remaining signals at their times; (gone, the last signal sent)."""
    sent = None
    for sig, at in plan["steps"]:
        if _wait_gone(plan, at):
            return True, sent
        _send(plan, sig)
        sent = sig
    return _wait_gone(plan, time.time() + AFTER_KILL), sent


def record(plan: dict[str, Any], gone: bool, sent: int | None) -> None:
    """The attempt's end, in the history it was recorded in."""
    from tui.core.verdict import STOPPED, describe_exit
    from tui.history import History, HistoryError
    from tui.launch.spec import read_exit

    if not plan.get("history"):
        return
    if gone:
        found = read_exit(plan["exit_file"])  # none after a SIGKILL: it kills the wrapper that writes it
        how = describe_exit(*found, stopped=True) if found is not None else describe_exit(None, sent, stopped=True)
    else:
        left = ", ".join(f"pid {pid}" for pid in _alive(plan))
        how = f"stop incomplete: still alive after SIGKILL: {left}"
    try:
        history = History(plan["history"])
        row = next((r for r in history.attempts(plan["name"]) if r.attempt == plan["attempt"]), None)
        if row is not None:
            history.update(row, outcome=STOPPED if gone else row.outcome, ended_at=time.time(),
                           exit_text=f"{how}, {HUNG_UP}")
    except HistoryError:
        pass  # nobody to tell: the terminal is gone


def main(argv: Sequence[str]) -> int:
    plan = json.loads(argv[0])
    for sig in (signal.SIGHUP, signal.SIGINT):  # ours to finish, whatever else hangs up
        signal.signal(sig, signal.SIG_IGN)
    try:
        gone, sent = carry_out(plan)
    except psutil.Error:
        gone, sent = not _alive(plan), None
    record(plan, gone, sent)
    return 0 if gone else 1
