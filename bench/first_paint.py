#!/usr/bin/env python3
"""First paint of `watchtower watch LOG` in a real terminal (tmux), against a reference.

The reference is the same venv's Python printing one line, launched the same way in a pane
of the same size; the figure is the ratio (target, issue 35: at most 6×). Trials are
interleaved (reference, watch, reference, watch, ...) so that the load other users put on
the machine hits both alike; the best of each is kept. Beside it, with no target: when the same
watch shows its log's line read (the tracker built and primed, the line judged), what the operator
waits for.

    .venv/bin/python bench/first_paint.py              # 5 trials each
    .venv/bin/python bench/first_paint.py --trials 9
    .venv/bin/python bench/first_paint.py --profile    # where the time before the first frame goes

``--profile`` runs the same watch once more with time stamps at the end of its imports and at
the app's compose, mount and first frame, and splits what it took into the interpreter's
start, the imports (shared out between Textual and Rich, Watchtower's own and the rest as
``-X importtime`` of the same imports, run apart, shares them: Textual draws on stderr), the
set-up until the app composes (arguments, the session, Textual's start and stylesheets), the
compose and mount, and the mount until the first frame.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.app_flood import Pane  # noqa: E402


def timed_pane(command: str, pattern: str) -> float:
    pane = Pane(command)
    try:
        return pane.wait_for(pattern)
    finally:
        pane.close()


def timed_paint(command: str) -> tuple[float, float]:
    """Seconds until the pane shows the dashboard's first frame, and until it shows the log read (the
    log's one line counted, after the tracker is built and primed: what the operator waits for)."""
    pane = Pane(command)
    try:
        paint = pane.wait_for(r"WATCHTOWER.*\n.*STARTING")
        return paint, paint + pane.wait_for(r"1 line read")
    finally:
        pane.close()


#: Run in the pane by ``--profile``: the watch, stamped at the app's compose and mount and when its
#: first frame is written (times from this script's first line, after the interpreter's start), as
#: JSON to argv[2]; collection off from the start, as for any dashboard's start.
STAMPED = r"""
import gc, json, sys, time
gc.disable()  # (as the command does for a dashboard's start: tui.cli.run_command)
start = time.perf_counter()
import tui.app.app as app
from tui.cli import main
stamps = {"imports": time.perf_counter() - start}
compose, mount, display = app.WatchtowerApp.compose, app.WatchtowerApp.on_mount, app.WatchtowerApp._display
def stamped_compose(self):
    stamps.setdefault("compose", time.perf_counter() - start)
    yield from compose(self)
def stamped_mount(self):
    stamps["mount"] = time.perf_counter() - start
    mount(self)
def stamped_display(self, screen, renderable):
    display(self, screen, renderable)
    if renderable is not None and "mount" in stamps and "painted" not in stamps:
        stamps["painted"] = time.perf_counter() - start  # the first frame written to the terminal
        with open(sys.argv[2], "w") as out:
            json.dump(stamps, out)
app.WatchtowerApp.compose, app.WatchtowerApp.on_mount = stamped_compose, stamped_mount
app.WatchtowerApp._display = stamped_display
main(["watch", sys.argv[1], "--gpus", "sim"])
"""


def import_times(path: Path) -> dict[str, float]:
    """Seconds of ``-X importtime``'s own times by package group: Textual and Rich, Watchtower, the rest."""
    groups = {"textual+rich": 0.0, "watchtower": 0.0, "other": 0.0}
    for line in path.read_text().splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if found:
            top = found[2].split(".")[0]
            group = "textual+rich" if top in ("textual", "rich") else "watchtower" if top == "tui" else "other"
            groups[group] += int(found[1]) / 1e6
    return groups


def profile(python: str, log: Path, tmp: Path, paint: float, reference: float) -> None:
    """Print where the first paint's time goes (one stamped run, see the module's docstring)."""
    script, stamps_file, imports_file = tmp / "stamped.py", tmp / "stamps.json", tmp / "imports.txt"
    script.write_text(STAMPED)
    with imports_file.open("w") as err:
        subprocess.run([python, "-X", "importtime", "-c", "import tui.app.app, tui.cli"], stderr=err, check=True)
    pane = Pane(f"env TERM=screen-256color {python} {script} {log} {stamps_file}")
    try:
        pane.wait_for(r"WATCHTOWER.*\n.*STARTING")
        deadline = time.monotonic() + 10
        while not (stamps_file.exists() and stamps_file.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.01)  # (the file is written just after the frame the pane showed)
        stamps = json.loads(stamps_file.read_text())
    finally:
        pane.close()
    groups = import_times(imports_file)
    total = sum(groups.values())
    print("profile of one stamped run:")
    print(f"  interpreter start (the reference)       {reference * 1000:6.0f} ms")
    for name, seconds in groups.items():
        print(f"  imports: {name:<31}{seconds / total * stamps['imports'] * 1000:6.0f} ms")
    print(f"  arguments, session, Textual's start     {(stamps['compose'] - stamps['imports']) * 1000:6.0f} ms")
    print(f"  compose and mount                       {(stamps['mount'] - stamps['compose']) * 1000:6.0f} ms")
    print(f"  mount to first frame                    {(stamps['painted'] - stamps['mount']) * 1000:6.0f} ms")
    print(f"  (the best unstamped paint above: {paint * 1000:.0f} ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="then say where the time before the first frame goes")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("bench: needs tmux (scripts/setup --test)")
    python = sys.executable
    references, paints, reads = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        log.write_bytes(b"[2026-03-14 21:04:10] server_args={'model_path': '/models/m', 'tp_size': 8}\n")
        for _ in range(args.trials):
            references.append(timed_pane(f"{python} -c 'print(\"WATCHTOWER\")'", "WATCHTOWER"))
            paint, read = timed_paint(f"env TERM=screen-256color {python} -m tui.cli watch {log} --gpus sim")
            paints.append(paint)
            reads.append(read)
        reference, paint, read = min(references), min(paints), min(reads)
        load = os.getloadavg()[0]
        print(f"first paint of watch, best of {args.trials} interleaved (load average {load:.1f} on {os.cpu_count()} CPUs)")
        print(f"  reference: python printing a line  {reference * 1000:6.0f} ms   (runs: {', '.join(f'{r * 1000:.0f}' for r in references)})")
        print(f"  watch LOG: WATCHTOWER + STARTING    {paint * 1000:6.0f} ms   (runs: {', '.join(f'{p * 1000:.0f}' for p in paints)})")
        print(f"  ratio {paint / reference:.1f}×   (target ≤ 6×)")
        print(f"  watch LOG: its line read            {read * 1000:6.0f} ms   (runs: {', '.join(f'{r * 1000:.0f}' for r in reads)})")
        if args.profile:
            profile(python, log, Path(tmp), paint, reference)
    return 0


if __name__ == "__main__":
    sys.exit(main())
