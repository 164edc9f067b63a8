#!/usr/bin/env python3
"""`watchtower check` speed: the whole preflight, locally and over the loopback SSH, against
references measured in the same run (targets: under 1 s locally, under 2 s over SSH).

The seed's command (an 8-GPU EAGLE-3 SGLang launch) against model folders and a fake
installed SGLang written to a temporary directory, 8 simulated GPUs:

1. ``watchtower check`` as a user runs it (a fresh process, cold imports), against the
   reference ``python3 -c pass`` (interpreter start-up alone);
2. the preflight in-process (probe + one GPU sample + judging), as ``run`` pays it;
3. ``check --host`` over a throwaway sshd on 127.0.0.1, against ``ssh host true``.

    .venv/bin/python bench/check.py              # 10 trials each
    .venv/bin/python bench/check.py --trials 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import running_sshd, sshd_available  # noqa: E402
from tests.test_check import sglang_command, write_model, write_sglang  # noqa: E402
from tui.preflight import preflight_report  # noqa: E402

GB = 10**9


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, capture_output=True, env=env, check=False)
    return time.perf_counter() - started


def line(name: str, seconds: list[float], reference: list[float] | None = None) -> str:
    median = statistics.median(seconds)
    ratio = f"   ×{median / statistics.median(reference):5.1f} the reference" if reference else ""
    return f"  {name:<46} median {median * 1000:7.1f} ms   max {max(seconds) * 1000:7.1f} ms{ratio}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        target = write_model(root / "Qwen3-MoE", "Qwen3MoeForCausalLM", 262144, 547 * GB)
        draft = write_model(root / "eagle3", "LlamaForCausalLMEagle3", 131072, 2 * GB)
        site = write_sglang(root / "site", hook="base")
        command = sglang_command(target, draft, 31777)
        env_words = ["--env", f"PYTHONPATH={site}"]
        cli = [sys.executable, "-m", "tui.cli", "check", "--gpus", "sim", *env_words, "--", *command]

        print(f"watchtower check, the seed's command, {args.trials} trials")
        reference = [timed(["python3", "-c", "pass"]) for _ in range(args.trials)]
        print(line("reference: python3 -c pass", reference))
        local = [timed(cli) for _ in range(args.trials)]
        print(line("check (a fresh process)", local, reference))

        async def in_process() -> float:
            started = time.perf_counter()
            await preflight_report(command, {"PYTHONPATH": str(site)}, gpus="sim")
            return time.perf_counter() - started

        inner = [asyncio.run(in_process()) for _ in range(args.trials)]
        print(line("preflight in-process (what run pays)", inner))

        if not sshd_available():
            print("  over SSH: skipped (no OpenSSH sshd)")
            return 0
        (root / "sshd").mkdir()
        with running_sshd(root / "sshd") as server:
            env = dict(os.environ, WATCHTOWER_SSH_KNOWN_HOSTS=str(server.known_hosts),
                       WATCHTOWER_SSH_IDENTITY=str(server.client_key))
            ssh = ["ssh", "-p", str(server.port), "-i", str(server.client_key), "-o",
                   f"UserKnownHostsFile={server.known_hosts}", "-o", "BatchMode=yes",
                   f"{server.username}@{server.host}", "true"]
            ssh_ref = [timed(ssh) for _ in range(args.trials)]
            print(line("reference: ssh host true", ssh_ref))
            remote_cli = [sys.executable, "-m", "tui.cli", "check", "--host", server.spec, "--gpus", "none",
                          *env_words, "--", "python3", *command[1:]]
            remote = [timed(remote_cli, env) for _ in range(args.trials)]
            print(line("check --host (loopback sshd, a fresh process)", remote, ssh_ref))
    return 0


if __name__ == "__main__":
    sys.exit(main())
