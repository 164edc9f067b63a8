"""Issue 20, item 7: `history` shows, per attempt, the command, what changed, the outcome and first
error, each phase's time against the last good attempt, and the hint applied."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.test_launch_cli import TOKEN, env, run_sim, watchtower  # noqa: F401  (env: a fixture)
from tui.launch.proctable import group_members, is_alive

CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


def test_history_shows_command_phases_against_the_last_good_attempt_and_changes(tmp_path, env):  # noqa: F811
    assert run_sim(env, tmp_path, "--outcome", "raise", "--tp", "2").returncode == 1
    ready = run_sim(env, tmp_path, "--outcome", "raise", "--tp", "2", extra=("--env", f"{CONTEXT_ENV}=1"))
    assert ready.returncode == 0, ready.stdout + ready.stderr
    pid = json.loads(watchtower(env, "history", "sim", "--json").stdout)[1]["pid"]
    os.killpg(pid, signal.SIGKILL)  # v2 served; it goes, and v3 starts afresh
    deadline = time.monotonic() + 10
    while is_alive(pid) or group_members(pid):  # the kernel's table is the only witness here
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert run_sim(env, tmp_path, "--outcome", "raise", "--tp", "4").returncode == 1

    out = watchtower(env, "history", "sim").stdout
    blocks = re.split(r"\n(?=  v\d )", out)
    v1, v2, v3 = blocks[1:4]
    assert v1.startswith("  v1 ✗ ValueError") and "User-specified context_length" in v1
    for block in (v1, v2, v3):
        assert "command: HF_TOKEN=**** " in block and f" {sys.executable} " in block and "--outcome raise" in block
        assert TOKEN not in block
    assert re.search(r"phases:  server args \d+:\d\d · dist init \d+:\d\d", v1)
    assert "(v" not in v1 and "(v" not in v2  # no good attempt before them to compare with
    assert f"changed: +{CONTEXT_ENV}=1" in v2 and v2.startswith("  v2 ✓ ready")
    # v3 against v2, the last good attempt: each phase both had
    assert re.search(r"server args \d+:\d\d \(v2: \d+:\d\d\) · dist init \d+:\d\d \(v2: \d+:\d\d\)", v3), v3
    assert f"changed: ---tp 2 · +--tp 4 · -{CONTEXT_ENV}\n" in v3
