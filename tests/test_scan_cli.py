"""`watchtower scan`: the JSON contract, exit statuses, one-line errors, and fast path == full path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unprivileged import ROOT, as_nobody
from tests.support import run_cli
from tui.commands.scan import scan_file, to_json
from tui.core.lines import LineAssembler
from tui.core.tracker import StartupTracker

FIXTURES = sorted(Path(__file__).parent.joinpath("fixtures").glob("*.log"))


def full_path_state(path: Path):
    """Every line through the tracker, no prefilter: what the fast path must reproduce."""
    tracker = StartupTracker()
    assembler = LineAssembler(progress=False)
    for item in assembler.feed(path.read_bytes()) + assembler.flush():
        tracker.feed(item, None)
    tracker.finish()
    return tracker.state


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fast_path_equals_full_path(path):
    assert to_json(scan_file(str(path))) == to_json(full_path_state(path))


def test_fast_path_equals_full_path_inside_serving_noise(tmp_path):
    """A crash buried after thousands of serving lines: the prefilter must not lose it or its line."""
    noise = b"".join(
        b"[2026-02-22 23:50:%02d TP0] Decode batch, #running-req: %d, #token: 4000, token usage: 0.10, "
        b"cuda graph: True, gen throughput (token/s): 1234.5, #queue-req: 0\n" % (i % 60, i)
        for i in range(20000)
    )
    ready = Path(__file__).parent / "fixtures" / "sglang_eagle3_tp8_ready.log"
    crash = (
        b"[2026-02-23 01:00:00 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        b'  File "/sgl/scheduler.py", line 10, in run\n'
        b"    x = table[key]\n"
        b"KeyError: 'layers.61.mlp'\n"
    )
    log = tmp_path / "serving.log"
    log.write_bytes(ready.read_bytes() + noise + crash)
    state = scan_file(str(log))
    assert to_json(state) == to_json(full_path_state(log))
    assert state.lines == log.read_bytes().count(b"\n")
    (error,) = [e for e in state.errors if e.kind == "KeyError"]
    grep_n = subprocess.run(["grep", "-n", "Scheduler hit an exception", str(log)], capture_output=True, text=True)
    assert error.line == int(grep_n.stdout.split(":")[0])
    assert error.rank == "TP3"


def test_json_contract_and_exit_status_on_a_ready_log():
    proc = run_cli("scan", "--json", str(Path(__file__).parent / "fixtures" / "sglang_eagle3_tp8_ready.log"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"server", "outcome", "ready_line", "phases", "errors", "warnings", "unparsed", "lines",
                        "attempts", "hints", "root_cause", "schema", "profile"}
    assert doc["root_cause"] is None  # a ready log has none
    assert doc["unparsed"] == 0
    assert (doc["server"], doc["outcome"]) == ("sglang", "ready")
    names = [p["name"] for p in doc["phases"]]
    assert {"server_args", "weight_load", "memory_pool", "cuda_graph", "draft_init", "ready"} <= set(names)
    for phase in doc["phases"]:
        assert set(phase) == {"name", "start_line", "end_line", "seconds", "ranks", "slowest_rank", "overlaps"}
    # SGLang 0.5.14+ loads the draft's weights before the pools and graphs: ranks overlap phases
    overlaps = {p["name"]: p["overlaps"] for p in doc["phases"]}
    assert overlaps["draft_init"] == ["memory_pool", "cuda_graph"] and overlaps["server_args"] == []
    weights = next(p for p in doc["phases"] if p["name"] == "weight_load")
    assert weights["ranks"] == 8 and weights["slowest_rank"].startswith("TP")
    assert doc["errors"] == []


def test_exit_status_failed_and_starting(tmp_path):
    fixtures = Path(__file__).parent / "fixtures"
    failed = run_cli("scan", "--json", str(fixtures / "sglang_attributeerror_tp8.log"))
    assert failed.returncode == 1
    first = json.loads(failed.stdout)["errors"][0]
    assert first["kind"] == "AttributeError" and first["rank"].startswith("TP")
    starting = run_cli("scan", str(fixtures / "sglang_silent_death.log"))
    assert starting.returncode == 3 and "STARTING" in starting.stdout


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda d: str(d / "missing.log"), "no such file"),
        (lambda d: str(d), "is a directory"),
        (lambda d: "/dev/zero", "is a device"),  # refused at once, not read for ever
        (lambda d: (d / "noise.log").write_text("hello\nworld\n" * 50) and str(d / "noise.log"), "not an SGLang, vLLM or TensorRT-LLM log"),
    ],
    ids=["missing", "directory", "device", "not-a-log"],
)
def test_expected_failures_are_one_clear_line(tmp_path, make, needle):
    proc = run_cli("scan", make(tmp_path))
    assert proc.returncode == 2
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_a_fifo_and_stdin_are_scanned_like_a_file(tmp_path):
    fixture = Path(__file__).parent / "fixtures" / "sglang_attributeerror_tp8.log"
    expected = run_cli("scan", "--json", str(fixture))
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    scan = subprocess.Popen([sys.executable, "-m", "tui.cli", "scan", "--json", str(fifo)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(fifo, "wb") as writer:  # opens once the scan has it open for reading
        writer.write(fixture.read_bytes())
    out, err = scan.communicate(timeout=60)
    assert (scan.returncode, out) == (expected.returncode, expected.stdout), err
    piped = run_cli("scan", "--json", "-", input=fixture.read_bytes())
    assert (piped.returncode, piped.stdout.decode()) == (expected.returncode, expected.stdout), piped.stderr


def test_unreadable_log_is_one_clear_line():
    """Run as an unprivileged user where we are root (root reads anything)."""
    import shutil
    import tempfile

    cmd = as_nobody([sys.executable, "-m", "tui.cli", "scan"])
    shared = tempfile.mkdtemp(prefix="watchtower-perm-")  # pytest's tmp_path is private to root
    try:
        os.chmod(shared, 0o777)
        log = Path(shared) / "server.log"
        log.write_text("[2026-02-22 23:38:50] server_args=ServerArgs(model_path='m')\n")
        log.chmod(0)
        proc = subprocess.run([*cmd, str(log)], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert proc.returncode == 2, proc.stderr
        assert "permission denied" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    finally:
        shutil.rmtree(shared)


def test_bad_profile_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("this is = = not toml")
    proc = run_cli("scan", "--server", str(bad), str(Path(__file__).parent / "fixtures" / "sglang_old_04.log"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_human_output_names_one_error_raised_by_eight_ranks_once():
    proc = run_cli("scan", str(Path(__file__).parent / "fixtures" / "sglang_attributeerror_tp8.log"))
    rows = [row for row in proc.stdout.splitlines() if "AttributeError" in row]
    assert len(rows) == 1 and "also 7 more rank(s)" in rows[0]
    assert proc.stdout.splitlines()[0].endswith("FAILED")


def test_scan_json_on_a_missing_file_prints_an_error_object(tmp_path):
    missing = tmp_path / "missing.log"
    done = run_cli("scan", "--json", str(missing), timeout=60)
    assert done.returncode == 2
    answer = json.loads(done.stdout)
    assert answer == {"schema": 1, "error": f"{missing}: no such file", "log": str(missing)}


def test_a_scan_builds_no_class_it_does_not_use():
    """`scan`'s start-up is most of a small log's scan (bench/scan.py): a scan imports neither the
    source events (two dozen dataclasses, a tenth of its start-up when it did) nor the command
    options, nor importlib's resource readers (zipfile, threading)."""
    code = (
        "import sys, contextlib, io\n"
        "from tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['scan', '--json', {str(Path(__file__).parent / 'fixtures' / 'sglang_eagle3_tp8_ready.log')!r}])\n"
        "print(' '.join(m for m in ('tui.core.events', 'tui.core.options', 'importlib.readers', 'zipfile') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
