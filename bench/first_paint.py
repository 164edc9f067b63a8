#!/usr/bin/env python3
"""First paint of `watchtower watch LOG` in a real terminal (tmux), against a reference.

The reference is the same venv's Python printing one line, launched the same way in a pane
of the same size; the figure is the ratio (target, issue 35: at most 6×). Trials are
interleaved (reference, watch, reference, watch, ...) so that the load other users put on
the machine hits both alike; the best of each is kept.

    .venv/bin/python bench/first_paint.py              # 5 trials each
    .venv/bin/python bench/first_paint.py --trials 9
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.app_flood import Pane  # noqa: E402


def timed_pane(command: str, pattern: str) -> float:
    pane = Pane(command)
    try:
        return pane.wait_for(pattern)
    finally:
        pane.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("bench: needs tmux (scripts/setup --test)")
    python = sys.executable
    references, paints = [], []
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        log.write_bytes(b"[2026-03-14 21:04:10] server_args={'model_path': '/models/m', 'tp_size': 8}\n")
        for _ in range(args.trials):
            references.append(timed_pane(f"{python} -c 'print(\"WATCHTOWER\")'", "WATCHTOWER"))
            paints.append(timed_pane(f"env TERM=screen-256color {python} -m tui.cli watch {log} --gpus sim", r"WATCHTOWER.*\n.*STARTING"))
    reference, paint = min(references), min(paints)
    load = os.getloadavg()[0]
    print(f"first paint of watch, best of {args.trials} interleaved (load average {load:.1f} on {os.cpu_count()} CPUs)")
    print(f"  reference: python printing a line  {reference * 1000:6.0f} ms   (runs: {', '.join(f'{r * 1000:.0f}' for r in references)})")
    print(f"  watch LOG: WATCHTOWER + STARTING    {paint * 1000:6.0f} ms   (runs: {', '.join(f'{p * 1000:.0f}' for p in paints)})")
    print(f"  ratio {paint / reference:.1f}×   (target ≤ 6×)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
