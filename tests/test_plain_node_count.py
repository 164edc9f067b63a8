"""`watch --plain` and `--json` say the same things for one node or two (a single log is a node set
of one): the verdict, the failing line, the known-failure hint and its fix, the exit status."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.test_json_output import FIXTURES, cli

pytestmark = pytest.mark.timeout(120)

FAILING = "sglang_context_length.log"
HEALTHY = "sglang_eagle3_tp8_ready.log"
HINT = "--context-length 262144 is longer than the model's own context (131072)"


def watched(tmp_path, nodes: int, last: str) -> list[str]:
    """The arguments that watch ``nodes`` logs, the last one a copy of fixture ``last``."""
    names = [HEALTHY] * (nodes - 1) + [last]
    logs = []
    for i, name in enumerate(names):
        logs.append(tmp_path / f"n{i + 1}.log")
        shutil.copy(FIXTURES / name, logs[-1])
    if nodes == 1:
        return [str(logs[0])]
    conf = tmp_path / "nodes.toml"
    conf.write_text("".join(f'[[node]]\nname = "n{i + 1}"\nlog = "{log}"\n\n' for i, log in enumerate(logs)))
    return ["--cluster", str(conf)]


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_failure_is_named_with_its_hint_for_one_node_or_two(tmp_path, nodes):
    args = watched(tmp_path, nodes, FAILING)
    plain = cli("watch", *args, "--plain", "--gpus", "none", "--timeout", "30")
    assert plain.returncode == 1, plain.stdout + plain.stderr
    verdict = next(line for line in plain.stdout.splitlines() if "FAILED" in line and "ValueError" in line)
    assert "line 3" in verdict and ("on n2" in verdict) == (nodes == 2)
    assert HINT in plain.stdout and "--context-length 131072" in plain.stdout
    assert "␊" not in plain.stdout  # the hint's link on a line of its own, not a shown control character

    as_json = cli("watch", *args, "--json", "--gpus", "none", "--timeout", "30")
    assert as_json.returncode == 1
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    (hint,) = [r for r in records if r["event"] == "hint"]
    assert hint["id"] and HINT in hint["why"] and hint["link"].startswith("https://")
    assert records[-1]["event"] == "exit" and records[-1]["exit"] == 1


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_healthy_startup_is_ready_for_one_node_or_two(tmp_path, nodes):
    plain = cli("watch", *watched(tmp_path, nodes, HEALTHY), "--plain", "--gpus", "none", "--timeout", "30")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "READY" in plain.stdout and "hint:" not in plain.stdout
