#!/usr/bin/env python3
"""What watching a start costs, where the server forks as a real one does (issue 37, item 5).

``tests/forking_server.py`` plays a vLLM start whose worker runs helpers by the dozen (and
forks children that keep its title until they execute): the shape that makes writer
discovery and the process panel work. The same start runs three times, each in its own
process tree, each started by a shell that exits (not the watcher's children):

    unwatched      the reference: how long the start takes on its own
    watch --plain  the real CLI following it
    dashboard      the real dashboard (``App.run_test``, headless, 150×45) following it

For each watched run: the watcher's CPU over the start, as a share of one core (and over the
start's second half: the helpers' churn alone, without the first lines' one-time work of
detecting the server and warming the regex engines), and the start's duration against the
unwatched one (the start must not slow). Target (issue 37): under 3 % of a core.

    .venv/bin/python bench/forking_start.py              # 200 helpers (~15 s a start)
    .venv/bin/python bench/forking_start.py --helpers 40 # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
FAKE = os.path.join(ROOT, "tests", "forking_server.py")
#: The watcher runs this long on the empty log before the server starts (its own start-up apart).
WARMUP_S = 4.0


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(log: str, pids: str, helpers: int) -> None:
    """The fake server, started by hand, writing ``log``."""
    subprocess.run(["sh", "-c", f'setsid "$0" "$1" --helpers {helpers} --pid-file "$2" >> "$3" 2>&1 < /dev/null &',
                    sys.executable, FAKE, pids, log], check=True)
    return log, pids


def wait_ready(pids: str, at: float | None = None, then: Callable[[], None] = lambda: None,
               timeout: float = 600.0) -> float:
    """Until the server's ready line (when, monotonic); ``then()`` once, ``at`` s in. The fake marks
    it in a file beside its pid file: opening the log would wake the watcher's writer rescans."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if at is not None and time.monotonic() - began >= at:
            then()
            at = None
        if os.path.exists(pids + ".ready"):
            return time.monotonic()
        time.sleep(0.05)
    raise SystemExit(f"the fake server did not get ready in {timeout:g} s ({pids})")


def stop(pids: str) -> None:
    try:
        with open(pids) as f:
            os.killpg(int(f.read().split()[0]), signal.SIGKILL)
    except (OSError, ValueError):
        pass


async def dashboard(log: str) -> None:
    """The dashboard, headless, until READY (the parent times it and kills it)."""
    from tui.app.dashboard import build_app
    from tui.session import SessionInfo, WatchSession
    from tui.sources.factory import log_tailer, writer_source

    session = WatchSession(log=log_tailer(log, writers=True), info=SessionInfo(log_path=log))
    source = writer_source(log)
    assert source is not None
    session.add_source(source)
    app = build_app(session, gpus_enabled=False)
    async with app.run_test(size=(150, 45)) as pilot:
        while True:
            await pilot.pause(1.0)


def run(kind: str, helpers: int, reference: float | None = None) -> tuple[float, float | None, float | None]:
    """(the start's seconds, the watcher's CPU share of a core over it, and over its second half:
    the helpers' churn alone, the first lines' one-time work — detection, the regex engines — apart)."""
    with tempfile.TemporaryDirectory() as folder:
        log, pids = os.path.join(folder, "server.log"), os.path.join(folder, "server.pids")
        open(log, "w").close()
        watcher = None
        if kind == "plain":
            watcher = subprocess.Popen([sys.executable, "-m", "tui.cli", "watch", "--plain", log, "--gpus", "none"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        elif kind == "dashboard":
            watcher = subprocess.Popen([sys.executable, __file__, "--dashboard", log],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        if watcher is not None:
            time.sleep(WARMUP_S)  # its start-up (imports, first scan) is not the start's cost
        cpu0 = cpu_seconds(watcher.pid) if watcher else 0.0
        began = time.monotonic()
        start(log, pids, helpers)
        half: list[tuple[float, float]] = []
        try:
            if watcher is not None and reference is not None:
                done = wait_ready(pids, reference / 2, lambda: half.append((time.monotonic(), cpu_seconds(watcher.pid))))
            else:
                done = wait_ready(pids)
            took = done - began
            share = (cpu_seconds(watcher.pid) - cpu0) / took if watcher else None
            steady = (cpu_seconds(watcher.pid) - half[0][1]) / (done - half[0][0]) if watcher and half else None
        finally:
            stop(pids)
            if watcher is not None:
                watcher.kill()
                watcher.wait()
        return took, share, steady


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--helpers", type=int, default=200)
    parser.add_argument("--dashboard", metavar="LOG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dashboard:
        asyncio.run(dashboard(args.dashboard))
        return 0
    reference, _, _ = run("unwatched", args.helpers)
    print(f"forking start, {args.helpers} helpers: {reference:.1f} s unwatched (the reference)")
    for kind in ("plain", "dashboard"):
        took, share, steady = run(kind, args.helpers, reference)
        assert share is not None
        later = f"{steady * 100:5.2f} %" if steady is not None else "  n/a"
        print(f"  {kind:<10} watcher CPU {share * 100:5.2f} % of a core over the start, {later} over its second half;"
              f" start ×{took / reference:4.2f} the unwatched one ({took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
