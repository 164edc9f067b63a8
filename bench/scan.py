"""Benchmark `watchtower scan --json` against `grep -cE` with the same words, on a ~1 GB log.

Prints both wall times, the ratio (target: within 3x of grep) and the scanner's peak RSS
(target: under 100 MB whatever the file size). Usage: python bench/scan.py [--mb 1024] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.gen_log import write_log  # noqa: E402
from tui.core.profiles import builtin_profiles, prefilter_words  # noqa: E402


def timed(argv: list[str], ok: tuple[int, ...]) -> tuple[float, int, bytes]:
    """Wall seconds, peak RSS in bytes and stdout of one run of ``argv``; its exit status must be in ``ok``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        if code not in ok:
            sys.exit(f"{argv[0]} failed ({code}): {err.read().decode(errors='replace')[-500:]}")
        return elapsed, usage.ru_maxrss * 1024, out.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=1024, help="log size in MiB (default 1024)")
    parser.add_argument("--log", help="scan this log instead of generating one")
    parser.add_argument("--runs", type=int, default=3, help="runs of each; the best is kept")
    ns = parser.parse_args()

    tmp = None
    path = ns.log
    if not path:
        tmp = tempfile.mkdtemp(prefix="wt-bench-")
        path = os.path.join(tmp, "serving.log")
        t0 = time.perf_counter()
        size = write_log(path, ns.mb)
        print(f"generated {size / 2**20:.0f} MiB log in {time.perf_counter() - t0:.1f}s: {path}")
    words = prefilter_words(builtin_profiles())
    grep = ["grep", "-cE", "|".join(re.escape(w) for w in words), path]
    scan = [sys.executable, "-m", "tui.cli", "scan", "--json", path]
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    try:
        best_grep = min(timed(grep, (0, 1))[0] for _ in range(ns.runs))
        scans = [timed(scan, (0, 1, 3)) for _ in range(ns.runs)]
        best_scan = min(s[0] for s in scans)
        peak = max(s[1] for s in scans)
        print(f"words in the prefilter: {len(words)}")
        print(f"grep -cE (same words): {best_grep:.2f} s")
        print(f"watchtower scan --json: {best_scan:.2f} s")
        print(f"ratio scan/grep:       {best_scan / best_grep:.2f}x  (target <= 3x)")
        print(f"scan peak RSS:         {peak / 2**20:.0f} MiB  (target < 100 MiB)")
        print(f"scan result (head):    {scans[0][2][:300].decode(errors='replace')}")
    finally:
        if tmp:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
