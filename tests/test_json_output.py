"""`--json` (watch, run, attach, replay, demo): one JSON object per line for each event the plain
presenter words, each with the schema version, a timestamp and the line number; the same exit
statuses as `--plain`; secrets masked. The real CLI in a subprocess, and a real shell pipeline."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from tests.launch_helpers import kill_attempts, no_leftover_servers  # noqa: F401  (autouse)
from tests.test_secrets_everywhere import ALL, LOG, assert_no_secret
from tests.test_watch_plain import WAIT, lines_of
from tests.support import run_cli, start_cli
from tui.present.records import SCHEMA

REPO = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
STAMP = re.compile(r"^\d\d:\d\d:\d\d  \+\d\d:\d\d\.\d  ")

pytestmark = pytest.mark.timeout(120)


def cli(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return run_cli(*args, env={"NO_COLOR": "1", **(env or {})}, timeout=timeout)


def ready_line(fixture: str) -> int:
    """The line number of the fixture's ready marker, as grep -n counts."""
    return next(n for n, line in enumerate(lines_of(fixture), 1) if b"ready to roll" in line)


def records(stdout: str) -> list[dict]:
    """Every stdout line is one JSON object with the fields every object has."""
    out = []
    for line in stdout.splitlines():
        obj = json.loads(line)
        assert obj["schema"] == SCHEMA
        assert datetime.fromisoformat(obj["ts"]).tzinfo is not None
        assert isinstance(obj["event"], str) and obj["event"]
        assert "line" in obj and (obj["line"] is None or obj["line"] >= 1)
        out.append(obj)
    return out


@pytest.mark.parametrize("fixture, status", [("sglang_attributeerror_tp8.log", 1), ("sglang_eagle3_tp8_ready.log", 0)])
def test_json_says_what_plain_says_in_the_same_order_with_the_same_exit_status(fixture, status):
    log = str(FIXTURES / fixture)
    plain = cli("watch", log, "--plain", "--gpus", "none", "--timeout", "30")
    as_json = cli("watch", log, "--json", "--gpus", "none", "--timeout", "30")
    assert plain.returncode == as_json.returncode == status, as_json.stdout + as_json.stderr
    objs = records(as_json.stdout)
    assert objs[0]["event"] == "start" and objs[-1] == {**objs[-1], "event": "exit", "exit": status}
    # each object's words are a line plain printed, in plain's order (its stamp aside); what the
    # processes behind the log say comes when their scan does, not at a fixed place among the lines
    # (and, in a loaded moment, the scan of one run may report only after its verdict: then not at all)
    said = [STAMP.sub("", line).strip() for line in plain.stdout.splitlines()]
    # a bar's pace (its rate, the time left) is each run's own clock's, as the two runs read the bars: only
    # its count is the log's (under load one run may see a rate where the other saw none)
    counted = [line.split(" · ")[0] for line in said]
    scanned = any(line.startswith(("no writer found", "server: ", "gone: ")) and "(line " not in line for line in said)
    at = 0
    for obj in objs:
        if "text" not in obj:
            continue
        first = obj["text"].split("\n")[0].strip()
        if obj["event"] in ("no_writer", "writer_found", "writer_gone"):
            assert first in said or not scanned
            continue
        lines = said
        if obj["event"] == "progress":
            first, lines = first.split(" · ")[0], counted
        assert first in lines[at:], f"{first!r} not printed by --plain after line {at}: {said}"
        at = lines.index(first, at)
    events = [o["event"] for o in objs]
    assert {"server", "phase_started", "phase_ended"} <= set(events)
    ended = [o for o in objs if o["event"] == "phase_ended"]
    assert all(o["phase"] and o["start_line"] <= o["end_line"] == o["line"] and o["ranks"] >= 1 for o in ended)
    assert any(o["ranks"] == 8 and o["slowest_rank"].startswith("TP") for o in ended)
    (verdict,) = [o for o in objs if o["event"] == "verdict" and o["final"]]
    if status == 1:
        assert verdict["verdict"] == "failed" and verdict["error"]["rank"] == "TP3"
        assert verdict["error"]["kind"] == "AttributeError" and len(verdict["also_on"]) == 7
        assert any(o["event"] == "hint" and o["id"] and o["link"].startswith("https://") for o in objs)
        assert any(o["event"] == "error" and o["rank"] == "TP3" and o["block_tail"] for o in objs)
    else:
        assert verdict["verdict"] == "ready"
        (ready,) = [o for o in objs if o["event"] == "ready"]
        assert ready["line"] == ready_line(fixture)


def test_scan_json_carries_the_schema_version():
    out = cli("scan", "--json", str(FIXTURES / "sglang_attributeerror_tp8.log"))
    assert json.loads(out.stdout)["schema"] == SCHEMA
    bad = cli("scan", "--json", str(FIXTURES / "missing.log"))
    assert bad.returncode == 2 and json.loads(bad.stdout)["schema"] == SCHEMA


def test_watch_json_masks_secrets(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(LOG)
    out = cli("watch", str(log), "--json", "--echo", "--gpus", "none", "--timeout", "5")
    assert out.returncode == 1
    objs = records(out.stdout)
    assert_no_secret(out.stdout + out.stderr)
    (verdict,) = [o for o in objs if o["event"] == "verdict"]
    assert verdict["error"]["message"] == "ValueError: the OpenAI key **** was refused"
    assert any(o["event"] == "log" and "api_key='****'" in o["text"] for o in objs)


def test_run_json_is_masked_and_ends_with_its_exit_status(tmp_path):
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + LOG + "EOF\nexit 1\n")
    script.chmod(0o755)
    env = {"WATCHTOWER_DATA_DIR": str(tmp_path / "data"), "OPENAI_API_KEY": ALL[1]}
    try:
        result = cli("run", "--json", "--name", "bad", "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
                     "--no-check", "--env", "OPENAI_API_KEY", "--", str(script), env=env, timeout=90)
    finally:
        kill_attempts(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert_no_secret(result.stdout + result.stderr)
    objs = records(result.stdout)
    assert objs[0]["event"] == "start" and objs[0]["name"] == "bad" and objs[0]["attempt"] == 1
    assert any(o["event"] == "verdict" and o["verdict"] == "failed" for o in objs)
    assert objs[-1]["event"] == "exit" and objs[-1]["exit"] == 1


def test_replay_json_reaches_the_verdict_of_the_recording():
    out = cli("demo", "--json", "--speed", "40", "--scenario", "crash-context", timeout=120)
    assert out.returncode == 1, out.stderr
    objs = records(out.stdout)
    assert objs[-1]["event"] == "exit" and objs[-1]["exit"] == 1 and objs[-1]["verdict"] == "failed"
    assert any(o["event"] == "error" and o["kind"] == "ValueError" for o in objs)


WAIT_FOR_READY = """
import json, sys
for raw in sys.stdin:
    event = json.loads(raw)
    print(event["event"], flush=True)
    if event["event"] == "ready":
        print(f"ready at line {event['line']}", flush=True)
        sys.exit(0)
    if event["event"] == "exit":
        sys.exit(event["exit"] or 3)
sys.exit(3)
"""


async def test_a_script_waits_for_ready_through_a_pipe(tmp_path):
    """`watchtower watch --json LOG | python -c …`: the README's example, in a real shell."""
    log = tmp_path / "server.log"
    pipeline = (f"{sys.executable} -m tui.cli watch --json --gpus none --timeout 60 {log} "
                f"| {sys.executable} -c {shlex.quote(WAIT_FOR_READY)}")
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", pipeline, cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert proc.stdout is not None
    seen: list[str] = []

    async def expect(word: str) -> str:
        while True:
            raw = await asyncio.wait_for(proc.stdout.readline(), WAIT)
            assert raw, f"the script ended before {word!r}: {seen}"
            seen.append(raw.decode())
            if seen[-1].startswith(word):
                return seen[-1]

    await expect("waiting")  # the log does not exist yet: the script has been told so, and waits
    lines = lines_of("sglang_eagle3_tp8_ready.log")
    with open(log, "wb") as f:
        for line in lines:
            f.write(line)
            f.flush()
    said = await expect("ready at line")
    assert said.strip() == f"ready at line {ready_line('sglang_eagle3_tp8_ready.log')}"
    assert await asyncio.wait_for(proc.wait(), WAIT) == 0
    assert "phase_ended\n" in seen and seen.index("phase_ended\n") < seen.index("ready\n")


async def test_watch_json_across_nodes_names_each_objects_node(tmp_path):
    from tests.test_watch_nodes_local import cluster, start_node, stop

    head, head_log = start_node(tmp_path, 0)
    worker, worker_log = start_node(tmp_path, 1)
    try:
        proc = await start_cli("watch", "--cluster", str(cluster(tmp_path, [head_log, worker_log])), "--json",
                               "--gpus", "none", "--timeout", "60")
        out, err = await asyncio.wait_for(proc.communicate(), 90)
    finally:
        stop(head, worker)
    assert proc.returncode == 0, err.decode()
    objs = records(out.decode())
    assert {o.get("node") for o in objs if o["event"] == "phase_ended"} == {"n1", "n2"}
    assert any(o["event"] == "barrier" and o["nodes"] == 2 for o in objs)
    final = [o for o in objs if o["event"] == "verdict" and o["verdict"] == "ready"]
    assert final and objs[-1]["event"] == "exit" and objs[-1]["exit"] == 0


async def test_ctrl_c_still_ends_with_an_exit_object(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(lines_of("sglang_eagle3_tp8_ready.log")[:40]))
    proc = await start_cli("watch", str(log), "--json", "--gpus", "none", "--timeout", "60")
    assert proc.stdout is not None
    while True:  # the weight load's start read: the watch is under way
        raw = await asyncio.wait_for(proc.stdout.readline(), WAIT)
        assert raw
        if json.loads(raw)["event"] == "phase_started" and json.loads(raw)["phase"] == "weight_load":
            break
    proc.send_signal(signal.SIGINT)
    rest, _ = await asyncio.wait_for(proc.communicate(), WAIT)
    objs = records(rest.decode())
    assert proc.returncode == 130
    assert [o["event"] for o in objs[-2:]] == ["interrupted", "exit"] and objs[-1]["exit"] == 130


def test_the_hint_comes_before_the_final_verdict_and_every_record_has_the_schema():
    out = run_cli("watch", "--json", "--gpus", "none", "--timeout", "5",
                  str(FIXTURES / "case_sglang_missing_libcudart.log"), timeout=60)
    records = [json.loads(line) for line in out.stdout.splitlines()]
    events = [r["event"] for r in records]
    final = next(i for i, r in enumerate(records) if r["event"] == "verdict" and r.get("final"))
    assert "hint" in events and max(i for i, e in enumerate(events) if e == "hint") < final, events
    assert all(r["schema"] == SCHEMA for r in records)


def test_the_readme_documents_every_event_the_stream_can_emit():
    """Each event name a presenter emits (``Said("name"`` or a note's event) is a row of the
    README's event table."""
    emitted: set[str] = set()
    for source in (REPO / "tui").rglob("*.py"):
        text = source.read_text()
        emitted |= set(re.findall(r'Said\(\s*"([a-z_]+)"', text))
        emitted |= set(re.findall(r'self\.note\([^\n]*?, "([a-z_]+)"', text))
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("| `event` | fields |"):readme.index("A deploy script that waits")]
    documented = set(re.findall(r"`([a-z_]+)`", "\n".join(row.split("|")[1] for row in table.splitlines()[2:]
                                                         if row.startswith("|"))))
    assert {"preflight", "note", "start", "verdict", "exit"} <= emitted
    assert emitted - documented == set(), emitted - documented
