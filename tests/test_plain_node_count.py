"""`watch --plain` and `--json` say the same things for one node or two (a single log is a node set
of one, and one presenter words both): the verdict, the failing line, the known-failure hint and its
fix, the exit status, a timeout, Ctrl-C. Only where there are several nodes is each line led by its
``[node]`` (a ``node`` field in the JSON), and only there do the barrier and milestone lines come."""

from __future__ import annotations

import asyncio
import ctypes.util
import json
import shutil
import signal

import pytest

from tests.support import start_cli
from tests.test_smoke import fake  # noqa: F401  (a fixture: a real local HTTP server)
from tests.test_json_output import FIXTURES, STAMP, cli
from tests.test_watch_plain import WAIT, lines_of

pytestmark = pytest.mark.timeout(120)

FAILING = "sglang_context_length.log"
HEALTHY = "sglang_eagle3_tp8_ready.log"
HINT = "--context-length 262144 is longer than the model's own context (131072)"
#: The healthy startup cut inside its weight load: a node still starting.
UNDER_WAY = b"".join(lines_of(HEALTHY)[:40])


def watched(tmp_path, nodes: int, last: str | bytes) -> list[str]:
    """The arguments that watch ``nodes`` logs, the last one a copy of fixture ``last`` (or these bytes)."""
    logs = []
    for i in range(nodes):
        logs.append(tmp_path / f"n{i + 1}.log")
        if i < nodes - 1 or isinstance(last, str):
            shutil.copy(FIXTURES / (HEALTHY if i < nodes - 1 else str(last)), logs[-1])
        else:
            logs[-1].write_bytes(last)
    if nodes == 1:
        return [str(logs[0])]
    conf = tmp_path / "nodes.toml"
    conf.write_text("".join(f'[[node]]\nname = "n{i + 1}"\nlog = "{log}"\n\n' for i, log in enumerate(logs)))
    return ["--cluster", str(conf)]


def both_ways(args: list[str], status: int, timeout: str = "30") -> tuple[list[str], list[dict]]:
    """The watch of ``args`` with --plain (what its stamped lines say) and with --json (its records),
    each ending with exit status ``status``."""
    plain = cli("watch", *args, "--plain", "--gpus", "none", "--timeout", timeout)
    assert plain.returncode == status, plain.stdout + plain.stderr
    as_json = cli("watch", *args, "--json", "--gpus", "none", "--timeout", timeout)
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert records[0]["event"] == "start" and records[-1] == {**records[-1], "event": "exit", "exit": status}
    return said(plain.stdout), records


def said(out: str) -> list[str]:
    """What each stamped line says (the stamp cut off); the lines that continue a record are left out."""
    return [line[STAMP.match(line).end():] for line in out.splitlines() if STAMP.match(line)]


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_failure_is_named_with_its_hint_for_one_node_or_two(tmp_path, nodes):
    args = watched(tmp_path, nodes, FAILING)
    plain = cli("watch", *args, "--plain", "--gpus", "none", "--timeout", "30")
    assert plain.returncode == 1, plain.stdout + plain.stderr
    verdict = next(line for line in plain.stdout.splitlines() if "FAILED" in line and "ValueError" in line)
    assert "line 3" in verdict and ("on n2" in verdict) == (nodes == 2)
    assert HINT in plain.stdout and "--context-length 131072" in plain.stdout
    assert "␊" not in plain.stdout  # the hint's link on a line of its own, not a shown control character
    lines = plain.stdout.splitlines()
    hint = next(i for i, line in enumerate(lines) if HINT in line)
    assert lines[hint + 1].strip().startswith("https://"), lines[hint:hint + 2]
    # the link continues its hint, under it (not under the stamp, left of the node's name)
    assert lines[hint + 1].index("https://") == lines[hint].index("hint") + 6, lines[hint:hint + 2]
    assert (f"[n{nodes}] " in lines[hint]) == (nodes == 2)

    as_json = cli("watch", *args, "--json", "--gpus", "none", "--timeout", "30")
    assert as_json.returncode == 1
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    (hint_record,) = [r for r in records if r["event"] == "hint"]
    assert hint_record["id"] and HINT in hint_record["why"] and hint_record["link"].startswith("https://")
    assert records[-1]["event"] == "exit" and records[-1]["exit"] == 1


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_healthy_startup_is_ready_for_one_node_or_two(tmp_path, nodes):
    plain = cli("watch", *watched(tmp_path, nodes, HEALTHY), "--plain", "--gpus", "none", "--timeout", "30")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "READY" in plain.stdout and "hint:" not in plain.stdout


@pytest.mark.parametrize("nodes", [1, 2])
def test_each_line_is_led_by_its_node_and_the_barrier_said_only_for_several(tmp_path, nodes):
    lines, records = both_ways(watched(tmp_path, nodes, HEALTHY), 0)
    phases = [line for line in lines if "weight load started" in line]
    assert len(phases) == nodes
    if nodes == 1:
        assert phases[0].startswith("weight load started")
        assert not any(line.startswith("[") for line in lines), lines
        assert not any(line.startswith("barrier:") for line in lines)
    else:
        assert sorted(line.split(" ", 1)[0] for line in phases) == ["[n1]", "[n2]"]
        assert any(line.startswith("barrier: weight load done on all 16 ranks of 2 nodes") for line in lines), lines

    started = [r for r in records if r["event"] == "phase_started" and r["phase"] == "weight_load"]
    assert sorted(str(r.get("node")) for r in started) == (["None"] if nodes == 1 else ["n1", "n2"])
    assert any(r["event"] == "barrier" for r in records) == (nodes == 2)


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_startup_still_under_way_at_the_timeout_for_one_node_or_two(tmp_path, nodes):
    lines, records = both_ways(watched(tmp_path, nodes, UNDER_WAY), 3, timeout="3")
    timeout = next(line for line in lines if "TIMEOUT after 3.0 s" in line)
    assert "weight load" in timeout or nodes == 2 and "n2" in timeout, timeout
    # who is not there yet: the barrier view, for several nodes only
    missing = [line for line in lines if "ranks; not yet:" in line]
    assert bool(missing) == (nodes == 2), lines
    assert not missing or "not yet: n2 " in missing[0] and not any("n1 " in line for line in missing), missing
    (final,) = [r for r in records if r["event"] == "verdict" and r["verdict"] == "timeout"]
    assert final["final"] is True


@pytest.mark.parametrize("nodes", [1, 2])
async def test_ctrl_c_ends_with_the_verdict_so_far_for_one_node_or_two(tmp_path, nodes):
    proc = await start_cli("watch", *watched(tmp_path, nodes, UNDER_WAY), "--plain", "--gpus", "none",
                           "--timeout", "60", env={"NO_COLOR": "1"})
    assert proc.stdout is not None
    while True:  # the weight load's start read: the watch is under way
        raw = await asyncio.wait_for(proc.stdout.readline(), WAIT)
        assert raw, "the watch ended before its weight load was read"
        if b"weight load started" in raw and (nodes == 1 or b"[n2]" in raw):
            break
    proc.send_signal(signal.SIGINT)
    rest, err = await asyncio.wait_for(proc.communicate(), WAIT)
    assert proc.returncode == 130, err.decode()
    last = said(rest.decode())[-1]
    assert last.startswith("interrupted (Ctrl-C); the verdict so far: "), last
    assert "Traceback" not in err.decode()


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="NVML is here: its GPUs have figures")
@pytest.mark.parametrize("nodes", [1, 2])
def test_a_node_without_gpu_figures_says_why_once_for_one_node_or_two(tmp_path, nodes):
    """No NVML on this machine: each node says so once, led by its node where there are several."""
    plain = cli("watch", *watched(tmp_path, nodes, UNDER_WAY), "--plain", "--gpus", "nvml", "--timeout", "3")
    assert plain.returncode == 3, plain.stdout + plain.stderr
    notes = [line.split("no GPU data: ")[0] for line in said(plain.stdout) if "no GPU data: NVML not found" in line]
    assert sorted(notes) == ([""] if nodes == 1 else ["[n1] ", "[n2] "]), plain.stdout


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_bad_hints_file_is_one_line_and_exit_2_before_anything_for_one_node_or_two(tmp_path, nodes):
    hints = tmp_path / "hints.toml"
    hints.write_text("not [[ toml")
    plain = cli("watch", *watched(tmp_path, nodes, FAILING), "--plain", "--gpus", "none", "--timeout", "30",
                env={"WATCHTOWER_HINTS": str(hints)})
    assert plain.returncode == 2, plain.stdout + plain.stderr
    assert plain.stdout == "" and "Traceback" not in plain.stderr
    assert plain.stderr.count("\n") == 1 and "hints.toml: not valid TOML" in plain.stderr, plain.stderr


@pytest.mark.parametrize("nodes", [1, 2])
def test_the_ready_line_waits_for_the_health_url_said_by_the_serving_node_for_one_node_or_two(tmp_path, nodes, fake):  # noqa: F811
    """--health: the log's ready line is only half of READY; what the URL answers is said, by the
    serving node's name where there are several."""
    url = f"http://127.0.0.1:{fake(0.0).port}/v1/models"
    lines, records = both_ways([*watched(tmp_path, nodes, HEALTHY), "--health", url], 0)
    marker = next(line for line in lines if "ready marker (line 125)" in line)
    assert marker.startswith("[n1] " if nodes == 2 else "ready marker") and f"waiting for {url} to answer" in marker
    health = [r for r in records if r["event"] == "health"]
    assert health and {r.get("node") for r in health} == {"n1" if nodes == 2 else None}, health
    answers = [line for line in lines if line.split("] ")[-1].startswith(url)]
    assert answers and all(line.startswith("[n1] ") == (nodes == 2) for line in answers), lines


@pytest.mark.parametrize("nodes", [1, 2])
def test_ready_comes_after_the_health_url_answers_for_one_node_or_two(tmp_path, nodes, fake):  # noqa: F811
    url = f"http://127.0.0.1:{fake(0.0).port}/v1/models"
    lines, _ = both_ways([*watched(tmp_path, nodes, HEALTHY), "--health", url], 0)
    answers = next(i for i, line in enumerate(lines) if f"{url} answers: HTTP 200" in line)
    assert any(line.startswith("READY") for line in lines[answers + 1:]), lines


async def watch_live(tmp_path, nodes: int, *output: str):
    """The watch of ``nodes`` logs, the last one still in its weight load, started with ``output``
    (``--plain``, ``--json``); returns the process and the last node's log once its weight load was read."""
    args = watched(tmp_path, nodes, UNDER_WAY)
    proc = await start_cli("watch", *args, *output, "--gpus", "none", "--timeout", "60", env={"NO_COLOR": "1"})
    assert proc.stdout is not None
    while True:
        raw = await asyncio.wait_for(proc.stdout.readline(), WAIT)
        assert raw, "the watch ended before its weight load was read"
        if (b"weight load started" in raw or b'"phase": "weight_load"' in raw) and (nodes == 1 or b"n2" in raw):
            return proc, tmp_path / f"n{nodes}.log"


async def until_line(proc, needle: str) -> str:
    """The watch's output up to its first line holding ``needle``: that line."""
    while True:
        raw = await asyncio.wait_for(proc.stdout.readline(), WAIT)
        assert raw, f"the watch ended before {needle!r}"
        if needle in raw.decode():
            return raw.decode()


@pytest.mark.parametrize("nodes", [1, 2])
async def test_a_log_replaced_mid_watch_is_said_led_by_its_node_for_one_node_or_two(tmp_path, nodes):
    """The operator relaunched the last node's server: a new file at its log's path is a new attempt,
    said as such (by that node's name where there are several), and its READY follows."""
    proc, log = await watch_live(tmp_path, nodes, "--plain")
    replacement = log.with_suffix(".new")
    shutil.copy(FIXTURES / HEALTHY, replacement)
    replacement.replace(log)
    notice = said(await until_line(proc, "a new attempt starts at line 1"))[0]
    assert notice.startswith("[n2] the log was " if nodes == 2 else "the log was "), notice
    out, err = await asyncio.wait_for(proc.communicate(), WAIT)
    assert proc.returncode == 0, out.decode() + err.decode()
    assert any(line.startswith("READY") for line in said(out.decode())), out.decode()


@pytest.mark.parametrize("nodes", [1, 2])
async def test_a_log_truncated_mid_watch_is_a_record_with_its_node_for_one_node_or_two(tmp_path, nodes):
    """copytruncate on the last node's log: a ``log_truncated`` record, with its ``node`` where there
    are several; the watch goes on (Ctrl-C ends it with the verdict so far)."""
    proc, log = await watch_live(tmp_path, nodes, "--json")
    kept = b"".join(lines_of(HEALTHY)[:20])
    with log.open("r+b") as f:
        f.truncate(len(kept))
    record = json.loads(await until_line(proc, '"log_truncated"'))
    assert record.get("node") == ("n2" if nodes == 2 else None), record
    assert record["size"] == len(kept) and record["line"] == 21, record
    assert record["text"] == f"note: the log was truncated to {len(kept)} bytes: following on from line 21", record
    proc.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), WAIT)
    assert proc.returncode == 130, err.decode()


@pytest.mark.parametrize("nodes", [1, 2])
async def test_a_log_not_there_yet_is_waited_for_led_by_its_node_for_one_node_or_two(tmp_path, nodes):
    """The last node's server has not made its log yet: the watch says it waits for it, and why (a
    node of several too: its verdict would say so only at the end), then follows it to READY."""
    args = watched(tmp_path, nodes, HEALTHY)
    log = tmp_path / f"n{nodes}.log"
    log.unlink()
    proc = await start_cli("watch", *args, "--plain", "--gpus", "none", "--timeout", "60", env={"NO_COLOR": "1"})
    waiting = said(await until_line(proc, "waiting for the log"))[0]
    assert waiting.startswith("[n2] waiting for the log: " if nodes == 2 else "waiting for the log: "), waiting
    assert str(log) in waiting, waiting
    shutil.copy(FIXTURES / HEALTHY, log)
    out, err = await asyncio.wait_for(proc.communicate(), WAIT)
    assert proc.returncode == 0, out.decode() + err.decode()
    assert "waiting for the log" not in out.decode()  # said once
    assert any(line.startswith("READY") for line in said(out.decode())), out.decode()


@pytest.mark.parametrize("nodes", [1, 2])
def test_the_startup_is_remembered_for_the_next_watch_though_the_watch_ends_at_ready(tmp_path, nodes):
    """`--plain` ends at the verdict: the phase times of the startup it saw (the serving node's, with
    several) are in the history by then, for the next watch's stall limits."""
    from tui.commands.scan import scan_with_hints
    from tui.history import History
    from tui.history.watched import log_key

    data = tmp_path / "data"
    plain = cli("watch", *watched(tmp_path, nodes, HEALTHY), "--plain", "--gpus", "none", "--timeout", "30",
                env={"WATCHTOWER_DATA_DIR": str(data)})
    assert plain.returncode == 0, plain.stdout + plain.stderr
    key = log_key(scan_with_hints(str(FIXTURES / HEALTHY))[0])
    assert key is not None and History(data / "history.sqlite3").log_phase_longest(key)
