#!/usr/bin/env python3
"""Soak: a real server (vLLM on the CPU, or llama.cpp) started N times in a row, each start watched
at once by `watch --plain` and by the dashboard (``App.run_test``, headless, 150×45), then once unwatched.

For each start and each watcher: the false alarms (a FAILED, DEAD or STALLED? verdict on a start
that did become ready), whether it said READY, and the CPU seconds it used over the start (from the
server's spawn to its own ready line, the watcher's interpreter start-up apart: it is up on the
empty log first) against the start's own length: its share of one core. Then one start with nobody
watching, for its time to ready (watching must not slow the start). Issue 37: 0 false alarms in
10, each watcher under 3 % of a core over a real vLLM start.

Needs the real servers (scripts/real_servers/setup). A vLLM start takes ~90 s on a quiet 2-core
machine (minutes on a busy one); llama.cpp's, a second.

    .venv/bin/python bench/real_soak.py                        # vLLM: 10 watched starts + 1 unwatched
    .venv/bin/python bench/real_soak.py --starts 3 --watchers dashboard
    .venv/bin/python bench/real_soak.py --server llamacpp
    .venv/bin/python bench/real_soak.py --launcher run      # 10 starts launched by `run --plain`
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.real_servers import VLLM_ENV, HandStarted, alarms, free_port, llamacpp_command, vllm_command  # noqa: E402

#: Each server's own ready line, and how to start it.
SERVERS = {
    "vllm": ("Application startup complete", lambda port: vllm_command(port), VLLM_ENV),
    "llamacpp": (r"listening on http://", lambda port: llamacpp_command(port), {}),
}
START_LIMIT_S = 900
#: The watcher runs this long on the empty log before the server starts (its own start-up apart).
WARMUP_S = 4.0
DASHBOARD_SIZE = (150, 45)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Watcher:
    """One watcher process over the start's log: its output, and its CPU from the server's spawn."""

    kind: str
    proc: subprocess.Popen[bytes]
    out: Path
    cpu_at_spawn: float = 0.0
    cpu_s: float | None = None
    said: list[str] = field(default_factory=list)

    def reap(self, wait_s: float) -> None:
        """Its CPU over the start, from the kernel's count of the reaped process (it ends at READY, or
        at what it took for an ending; else it is killed after ``wait_s``)."""
        deadline = time.monotonic() + wait_s
        while True:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)  # (Popen.poll would reap it, usage lost)
            if pid:
                break
            if time.monotonic() > deadline:
                self.proc.kill()
                _, status, usage = os.wait4(self.proc.pid, 0)
                break
            time.sleep(0.1)  # (a bench: polling its end costs neither figure)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.cpu_s = usage.ru_utime + usage.ru_stime - self.cpu_at_spawn
        self.said = self.out.read_text(errors="replace").splitlines()


def start_watcher(kind: str, log: Path, folder: Path, index: int) -> Watcher:
    out = folder / f"{kind}-{index}.out"
    if kind == "plain":
        argv = [sys.executable, "-m", "tui.cli", "watch", "--plain", str(log), "--gpus", "none", "--timeout",
                str(START_LIMIT_S)]
    else:
        argv = [sys.executable, __file__, "--dashboard-child", str(log)]
    with out.open("wb") as sink:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, "WATCHTOWER_DATA_DIR": str(folder / "data")})
    return Watcher(kind, proc, out)


def wait_ready(server: HandStarted, ready: str, limit: float = START_LIMIT_S) -> float | None:
    """Seconds from the start to the server's ready line; None if it ended or never said it."""
    began = time.monotonic()
    while time.monotonic() - began < limit:
        if re.search(ready, server.log.read_text(errors="replace")):
            return time.monotonic() - began
        if not server.alive():
            return None
        time.sleep(0.2)  # (a bench: the poll's own cost is in neither figure)
    return None


def one_start(server_name: str, folder: Path, index: int, kinds: list[str]) -> dict:
    ready_line, command, env = SERVERS[server_name]
    log = folder / f"start-{index}.log"
    log.touch()
    watchers = [start_watcher(kind, log, folder, index) for kind in kinds]
    if watchers:
        time.sleep(WARMUP_S)  # their start-up (imports, the first look at the empty log) is not the start's cost
        for watcher in watchers:
            watcher.cpu_at_spawn = cpu_seconds(watcher.proc.pid)
    server = HandStarted(command(free_port()), log, env=env).start()
    try:
        ready_s = wait_ready(server, ready_line)
        for watcher in watchers:
            watcher.reap(60 if ready_s else 1)
        return {"ready_s": ready_s, "watchers": watchers}
    finally:
        for watcher in watchers:
            if watcher.proc.returncode is None and watcher.proc.poll() is None:
                watcher.proc.kill()
                watcher.proc.wait()
        server.kill()


def one_run(server_name: str, folder: Path, index: int) -> dict:
    """A start launched by `watchtower run --plain` (``--launcher run``: the launch is its own watcher,
    its CPU counted from its own start, preflight included); it ends at READY, leaving the server
    running, which is then stopped (SIGTERM to its group, as `x` would, SIGKILL after 30 s)."""
    _, command, env = SERVERS[server_name]
    name, data = f"soak{index}", folder / "data"
    argv = [sys.executable, "-m", "tui.cli", "run", "--plain", "--gpus", "none", "--timeout", str(START_LIMIT_S),
            "--name", name, "--log-dir", str(folder), "--", *command(free_port())]
    out = folder / f"run-{index}.out"
    began = time.monotonic()
    with out.open("wb") as sink:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **env, "WATCHTOWER_DATA_DIR": str(data)})
    watcher = Watcher("run", proc, out)
    try:
        watcher.reap(START_LIMIT_S)
        return {"ready_s": time.monotonic() - began if said_ready(watcher.said) else None, "watchers": [watcher]}
    finally:
        history = subprocess.run([sys.executable, "-m", "tui.cli", "history", name, "--json"], cwd=ROOT,
                                 capture_output=True, text=True, env={**os.environ, "WATCHTOWER_DATA_DIR": str(data)})
        for row in json.loads(history.stdout or "[]"):
            stop_group(row.get("pid"))


def stop_group(pgid: int | None) -> None:
    """SIGTERM to a process group left running, SIGKILL if it is still there after 30 s."""
    if not pgid:
        return
    for sig, grace in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)  # (a bench, between starts)


def said_ready(lines: list[str]) -> bool:
    return any(re.match(r"^(?:\S+\s+){0,2}READY", line) for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=sorted(SERVERS), default="vllm")
    parser.add_argument("--starts", type=int, default=10, help="watched starts (default 10)")
    parser.add_argument("--watchers", default="plain,dashboard", help="plain, dashboard or both (default)")
    parser.add_argument("--launcher", choices=("hand", "run"), default="hand",
                        help="hand: started by hand, followed by the watchers (default); run: launched by `run --plain`")
    parser.add_argument("--dashboard-child", metavar="LOG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dashboard_child:
        sys.exit(asyncio.run(dashboard(args.dashboard_child)))
    kinds = [kind for kind in args.watchers.split(",") if kind]
    if not kinds or set(kinds) - {"plain", "dashboard"}:
        parser.error("--watchers: plain, dashboard or plain,dashboard")
    with tempfile.TemporaryDirectory(prefix="real-soak-") as tmp:
        folder = Path(tmp)
        rows = []
        if args.launcher == "run":
            kinds = ["run"]
        for index in range(args.starts):
            row = one_run(args.server, folder, index) if args.launcher == "run" else one_start(args.server, folder, index, kinds)
            rows.append(row)
            print(f"start {index + 1}: ready in {fmt(row['ready_s'])}", flush=True)
            for watcher in row["watchers"]:
                found = alarms("\n".join(watcher.said))
                share = f" = {100 * watcher.cpu_s / row['ready_s']:.2f} % of a core" if row["ready_s"] and watcher.cpu_s else ""
                cpu = "?" if watcher.cpu_s is None else f"{watcher.cpu_s:.2f}"
                print(f"  {watcher.kind:9} READY={said_ready(watcher.said)} cpu {cpu} s{share}; false alarms: "
                      f"{len(found)}" + "".join(f"\n      {line}" for line in found), flush=True)
        unwatched = one_start(args.server, folder, args.starts, []) if args.launcher == "hand" else {}
        ready = [r for r in rows if r["ready_s"]]
        print(f"\n{args.server}: watched starts {len(rows)}, ready {len(ready)}")
        if not ready:
            return
        mean = sum(r["ready_s"] for r in ready) / len(ready)
        alone = f", unwatched {fmt(unwatched['ready_s'])}" if args.launcher == "hand" else ""
        print(f"time to ready: watched mean {mean:.1f} s (min {min(r['ready_s'] for r in ready):.1f}, max "
              f"{max(r['ready_s'] for r in ready):.1f}){alone}")
        for kind in kinds:
            mine = [(r["ready_s"], w) for r in ready for w in r["watchers"] if w.kind == kind]
            false = sum(1 for _, w in mine if alarms("\n".join(w.said)))
            missed = sum(1 for _, w in mine if not said_ready(w.said))
            cpu = [w.cpu_s / s for s, w in mine if w.cpu_s is not None]
            figure = f"{100 * sum(cpu) / len(cpu):.2f} % of a core (max {100 * max(cpu):.2f})" if cpu else "?"
            print(f"{kind:9}: starts with a false alarm {false}, without READY {missed}; CPU over the start: mean {figure}")


async def dashboard(log: str) -> int:
    """The dashboard of `watch LOG --gpus none` (the same session and app as the CLI's), headless;
    each verdict it comes to is printed as `--plain` would word it, and it ends at a final one."""
    from tui.app.dashboard import build_app
    from tui.core.options import GpuOptions, WatchOptions
    from tui.wiring.watch import log_session, remembered

    session = log_session(WatchOptions(log=log, gpus=GpuOptions(kind="none"), timeout=START_LIMIT_S))
    remembered(session)
    session.timeout = START_LIMIT_S
    app = build_app(session, gpus_enabled=False)
    ended = asyncio.Event()

    def said(change) -> None:
        if change.previous is None or change.verdict.kind != change.previous.kind:
            print(f"{time.strftime('%H:%M:%S')} {change.verdict.text}", flush=True)
        if change.verdict.final:
            ended.set()

    async with app.run_test(size=DASHBOARD_SIZE):
        app.judging.subscribe(said)
        await ended.wait()
    return 0


def fmt(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.1f} s"


if __name__ == "__main__":
    main()
