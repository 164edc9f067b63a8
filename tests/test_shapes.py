"""Issue 10's log shapes: each ``tests/fixtures/shape_*.log`` and what ``scan --json`` says of it,
as a person reading the log would (outcome, phases with ``compile``, the first error and its kind).

The fixtures come from ``tests/fixtures/make_shapes.py``; every one of them is also checked by
``test_scan_cli.test_fast_path_equals_full_path`` (the prefilter loses nothing).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.support import run_cli
from tui.commands.scan import scan_file, scan_with_hints, to_json
from tui.core.lines import Line
from tui.core.profiles import Evidence, builtin_profiles, detect_server, load_profile
from tui.core.scan import Prefilter
from tui.core.state import FAILED, READY, STARTING
from tui.core.tracker import StartupTracker

FIXTURES = Path(__file__).parent / "fixtures"

# name: (server, outcome, ready_line, [(phase, start_line, end_line)], first error (line, kind, rank) or None)
EXPECTED = {
    "shape_vllm_compile_eagle_tp2.log": (
        "vllm", READY, 45,
        [("server_args", 1, 2), ("weight_load", 4, 16), ("draft_init", 14, 18), ("compile", 19, 32),
         ("memory_pool", 32, 34), ("cuda_graph", 36, 38), ("ready", 41, 45)],
        None,
    ),
    "shape_vllm_compile_stall.log": (
        "vllm", STARTING, None,
        [("server_args", 1, 1), ("weight_load", 4, 6), ("compile", 7, None)],
        None,
    ),
    "shape_vllm_v0_061_ready.log": (
        "vllm", READY, 21,
        [("server_args", 1, 2), ("weight_load", 5, 12), ("memory_pool", 12, 13), ("cuda_graph", 14, 17), ("ready", 21, 21)],
        None,
    ),
    "shape_vllm_031_compile_oom.log": (
        "vllm", FAILED, None,
        [("server_args", 1, 1), ("weight_load", 4, 5), ("compile", 6, None)],
        (9, "OutOfMemoryError", "EngineCore"),
    ),
    "shape_vllm_fa_error_then_ready.log": (
        "vllm", READY, 12,
        [("server_args", 1, 2), ("weight_load", 6, 7), ("memory_pool", 7, 9), ("ready", 11, 12)],
        None,
    ),
    "shape_vllm_sigterm_during_start.log": (
        "vllm", FAILED, None,
        [("server_args", 1, 2), ("weight_load", 3, None)],
        (45, "KeyboardInterrupt", "APIServer"),
    ),
    "shape_sglang_rocm_vllm_first_line.log": (
        "sglang", READY, 26,
        [("server_args", 2, 2), ("dist_init", 3, 7), ("weight_load", 6, 11), ("memory_pool", 10, 15), ("cuda_graph", 16, 20), ("ready", 22, 26)],
        None,
    ),
    "shape_sglang_deepgemm_dp_ep.log": (
        "sglang", READY, 43,
        [("server_args", 1, 1), ("weight_load", 2, 9), ("memory_pool", 6, 17), ("cuda_graph", 18, 39),
         ("compile", 22, 39), ("ready", 41, 43)],
        None,
    ),
    "shape_sglang_piecewise_compile.log": (
        "sglang", READY, 17,
        [("server_args", 1, 1), ("weight_load", 2, 3), ("memory_pool", 3, 5), ("compile", 6, 7),
         ("cuda_graph", 7, 14), ("ready", 16, 17)],
        None,
    ),
    "shape_sglang_multinode_mamba.log": (
        "sglang", STARTING, None,
        [("server_args", 1, 1), ("dist_init", 2, 24), ("weight_load", 11, 33), ("memory_pool", 26, 57), ("cuda_graph", 58, 73)],
        None,
    ),
    "shape_sglang_carry_on_silent_death.log": (
        "sglang", STARTING, None,
        [("server_args", 1, 1), ("weight_load", 9, None)],
        None,
    ),
    "shape_sglang_ray_sigterm.log": (
        "sglang", FAILED, None,
        [("server_args", 1, 1), ("weight_load", 2, None)],
        (4, "terminated", None),
    ),
    "shape_trtllm_serve_ready.log": (
        "trtllm", READY, 48,
        [("server_args", 3, 8), ("weight_load", 10, 13), ("memory_pool", 13, 35), ("compile", 20, 39),
         ("cuda_graph", 24, 45), ("ready", 46, 48)],
        None,
    ),
    "shape_trtllm_executor_oom.log": (
        "trtllm", FAILED, None,
        [("server_args", 2, 2), ("weight_load", 3, 6), ("memory_pool", 7, None)],
        (9, "cuda_oom", "RANK1"),
    ),
    "shape_bare_raise.log": (None, FAILED, None, [], (1, "Boom", None)),
    "shape_exception_group.log": ("sglang", FAILED, None, [("server_args", 1, 1)], (2, "ExceptionGroup", None)),
    "shape_pydantic_validation.log": ("vllm", FAILED, None, [("server_args", 1, 2)], (3, "ValidationError", "APIServer")),
    "shape_ansi_traceback_313.log": ("sglang", FAILED, None, [("server_args", 1, 1)], (2, "KeyError", None)),
}


def test_every_shape_fixture_has_an_expectation():
    assert sorted(p.name for p in FIXTURES.glob("shape_*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scan_reads_the_shape_as_a_person_would(name):
    server, outcome, ready_line, phases, first = EXPECTED[name]
    state = scan_file(str(FIXTURES / name))
    got = to_json(state)
    assert (got["server"], got["outcome"], got["ready_line"]) == (server, outcome, ready_line)
    assert [(p["name"], p["start_line"], p["end_line"]) for p in got["phases"]] == phases
    error = state.first_error
    assert (None if error is None else (error.line, error.kind, error.rank)) == first
    if first is None:  # nothing alarming: no error that fails a start
        assert not any(e.fatal for e in state.errors)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_command_prints_the_same_and_nothing_on_stderr(name):
    """The real command: one JSON object, the same as scan_file's; no engine noise on stderr
    (RE2 says "DFA out of memory" there when a pattern's automaton grows too big)."""
    done = run_cli("scan", "--json", str(FIXTURES / name), timeout=60)
    assert done.stderr == ""
    assert json.loads(done.stdout) == to_json(*scan_with_hints(str(FIXTURES / name)))


def test_compile_is_its_own_phase_with_the_seconds_the_log_says():
    state = scan_file(str(FIXTURES / "shape_vllm_compile_eagle_tp2.log"))
    compile_ = state.phase("compile")
    assert set(compile_.ranks) == {"Worker_TP0", "Worker_TP1"}
    assert compile_.seconds == pytest.approx(53.0, abs=1.0)  # target, then the EAGLE head (a cache hit)
    assert state.phase("cuda_graph").start_line > compile_.end_line
    # a line that says how long it took, without a timestamp of its own
    trt = scan_file(str(FIXTURES / "shape_trtllm_serve_ready.log"))
    assert trt.phase("weight_load").seconds == pytest.approx(48.2)
    piecewise = scan_file(str(FIXTURES / "shape_sglang_piecewise_compile.log"))
    assert piecewise.phase("compile").seconds == pytest.approx(18.62, abs=0.01)
    assert piecewise.phase("compile").end_line < piecewise.phase("cuda_graph").end_line


def test_a_stall_while_compiling_says_compile_not_graphs():
    state = scan_file(str(FIXTURES / "shape_vllm_compile_stall.log"))
    assert state.current_phase.name == "compile" and state.phase("cuda_graph") is None


def test_deepgemm_inside_capture_is_compile_and_the_capture_goes_on():
    state = scan_file(str(FIXTURES / "shape_sglang_deepgemm_dp_ep.log"))
    compile_, graphs = state.phase("compile"), state.phase("cuda_graph")
    assert compile_.progress == 1.0  # the DeepGEMM warmup bar
    assert compile_.start_line > graphs.start_line and compile_.end_line == graphs.end_line
    assert set(graphs.ranks) == {"DP0 TP0 EP0", "DP0 TP1 EP1", "DP1 TP2 EP2", "DP1 TP3 EP3"}


def test_wrapper_errors_point_at_the_root_cause():
    state = scan_file(str(FIXTURES / "shape_vllm_031_compile_oom.log"))
    kinds = {e.line: (e.kind, e.secondary) for e in state.errors}
    assert kinds[8] == ("engine_failed", True)  # "EngineCore failed to start." is a consequence
    assert kinds[26] == ("RuntimeError", True)  # "… See root cause above"
    assert state.first_error.category == "cuda_oom"  # InductorError: OutOfMemoryError: HIP out of memory
    assert "HIP out of memory" in state.first_error.message


def test_a_message_that_goes_on_over_indented_lines_is_kept_whole():
    error = scan_file(str(FIXTURES / "shape_pydantic_validation.log")).first_error
    assert error.message.startswith("ValidationError: 1 validation error for ModelConfig")
    assert "User-specified max_model_len (300000)" in error.message and "errors.pydantic.dev" in error.message
    assert error.end_line == 10


def test_carry_on_lines_and_ignored_exceptions_are_warnings():
    state = scan_file(str(FIXTURES / "shape_sglang_carry_on_silent_death.log"))
    assert state.errors == [] and state.warnings == 3  # hf "… Proceeding without", a retry, the __del__
    assert state.outcome == STARTING and state.last_line == 10  # a silent death, not "FAILED: hf_access"


def test_an_exception_group_is_one_error_of_its_class():
    (error,) = scan_file(str(FIXTURES / "shape_exception_group.log")).errors
    assert error.kind == "ExceptionGroup" and error.end_line == 12


# ------------------------------------------------------------ detection by evidence


def feed_all(tracker: StartupTracker, lines: list[str]) -> None:
    for number, text in enumerate(lines, 1):
        tracker.feed(Line(number, 0, (text,)), None)
    tracker.finish()


def test_a_definitive_marker_overrides_a_weak_first_guess_and_rereads_the_lines():
    lines = (FIXTURES / "shape_sglang_rocm_vllm_first_line.log").read_text().splitlines()
    evidence = Evidence(builtin_profiles())
    assert not evidence.weigh(lines[0]) and evidence.best.name == "vllm"  # the shape says vLLM…
    assert evidence.weigh(lines[1]) and evidence.best.name == "sglang"  # …server_args= says SGLang
    assert detect_server(lines[:1]).name == "vllm" and detect_server(lines).name == "sglang"


def test_shape_alone_switches_when_most_lines_say_another_server():
    vllm_line = "INFO 02-26 06:24:24 [__init__.py:241] Automatically detected platform rocm."
    sgl_lines = [f"[2026-02-26 06:24:{n:02d} TP0] Init torch distributed begin." for n in range(30, 33)]
    assert detect_server([vllm_line, *sgl_lines]).name == "sglang"


def test_a_definitive_marker_after_the_detection_window_still_names_the_server():
    noise = [f"step {n}: warming caches" for n in range(6000)]
    tracker = StartupTracker()
    feed_all(tracker, [*noise, "[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/m', tp_size=1)",
                       "[2026-02-22 23:38:59] Load weight begin. avail mem=78.12 GB"])
    assert tracker.state.server == "sglang" and tracker.state.phase("weight_load").start_line == 6002


def test_trtllm_is_known_by_its_own_lines():
    text = (FIXTURES / "shape_trtllm_serve_ready.log").read_text().splitlines()
    assert detect_server(text[:1]).name == "sglang"  # a library's line of SGLang's shape…
    assert detect_server(text[:2]).name == "trtllm"  # …then the version banner settles it
    assert load_profile("trtllm").timestamp == "%m/%d/%Y-%H:%M:%S"


def test_every_identify_pattern_line_holds_a_prefilter_word():
    """A definitive marker past the detection window reaches the tracker only through the
    prefilter: each profile's identify patterns must match only lines with one of its words."""
    for profile in builtin_profiles():
        for example in profile.examples:
            if any(p.search(example) for p in profile.identify):
                assert any(w in example for w in profile.prefilter), (profile.name, example)


# ------------------------------------------------------------ the prefilter's engines


def test_prefilter_engines_find_the_same_lines():
    words = ("Traceback", "Load weight", "[W", "fired up", "KV Cache")
    rng = random.Random(7)
    pieces = ["Decode batch, #running-req: 3", "Load weight begin", "x[W1122 warn", "KV Cach", "ok fired up", "", "Trace"]
    data = "\n".join(" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 4))) for _ in range(3000)).encode()
    expected, pos = [], 0
    for raw in data.split(b"\n"):
        if any(w.encode() in raw for w in words):
            expected.append(pos)
        pos += len(raw) + 1
    for engine in (Prefilter(words), Prefilter(words, hyperscan=False)):
        hits = engine.positions(data)
        starts = [data.rfind(b"\n", 0, h) + 1 for h in hits]
        assert starts == expected
        middle = len(data) // 2
        part = engine.positions(data, middle, len(data) - 5)
        assert part and all(middle <= h < len(data) - 5 for h in part)


def test_killed_from_outside_says_so():
    vllm = scan_file(str(FIXTURES / "shape_vllm_sigterm_during_start.log")).first_error
    assert (vllm.kind, vllm.category) == ("KeyboardInterrupt", "terminated")
    ray = scan_file(str(FIXTURES / "shape_sglang_ray_sigterm.log")).first_error
    assert ray.kind == ray.category == "terminated" and ray.secondary


# ------------------------------------------------------------ the views know compile


def test_timeline_and_rank_grid_show_compile_only_when_the_log_had_one():
    from tests.app_support import fixed_session
    from tui.app.themes import discover
    from tui.app.timeline import render_ranks, render_timeline

    palette = discover()["dark"]
    compiled = fixed_session((FIXTURES / "shape_vllm_compile_eagle_tp2.log").read_bytes())
    timeline = render_timeline(compiled, 120, palette).plain
    row = next(line for line in timeline.splitlines() if line[3:].startswith("compile"))
    assert row.lstrip().startswith("✓") and "0:53" in row
    header = next(line for line in render_ranks(compiled, 100, palette).plain.splitlines() if "rank" in line)
    assert header.split() == ["rank", "weights", "compile", "pool", "graphs", "draft"]
    plain = fixed_session((FIXTURES / "shape_sglang_rocm_vllm_first_line.log").read_bytes())
    assert "compile" not in render_timeline(plain, 120, palette).plain
    assert "compile" not in render_ranks(plain, 100, palette).plain


def test_system_exit_with_the_signal_number_is_killed_from_outside():
    tracker = StartupTracker()
    feed_all(tracker, [
        "[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/m', tp_size=1)",
        "Traceback (most recent call last):",
        '  File "/opt/serve/launch.py", line 9, in handler',
        "    sys.exit(signum)",
        "SystemExit: 15",
    ])
    (error,) = tracker.state.errors
    assert (error.kind, error.category, error.line) == ("SystemExit", "terminated", 2)


def test_the_live_session_switches_servers_like_scan():
    from tests.app_support import fixed_session

    session = fixed_session((FIXTURES / "shape_sglang_rocm_vllm_first_line.log").read_bytes())
    assert to_json(session.state)["phases"] == to_json(scan_file(str(FIXTURES / "shape_sglang_rocm_vllm_first_line.log")))["phases"]
    assert session.state.server == "sglang" and session.state.outcome == READY


def test_dist_init_is_a_phase_of_the_views_and_scan_only_when_the_log_printed_one():
    from tests.app_support import fixed_session
    from tui.app.themes import discover
    from tui.app.timeline import render_ranks, render_timeline

    palette = discover()["dark"]
    path = FIXTURES / "shape_sglang_rocm_vllm_first_line.log"
    session = fixed_session(path.read_bytes())
    row = next(line for line in render_timeline(session, 120, palette).plain.splitlines() if line[3:].startswith("dist init"))
    assert row.lstrip().startswith("✓") and "0:02" in row  # 06:24:35 → 06:24:37, its last rank
    header = next(line for line in render_ranks(session, 100, palette).plain.splitlines() if "rank" in line)
    assert header.split() == ["rank", "dist", "weights", "pool", "graphs", "draft"]
    phases = to_json(scan_file(str(path)))["phases"]
    assert phases[1] == {**phases[1], "name": "dist_init", "start_line": 3, "end_line": 7, "ranks": 2, "slowest_rank": "TP1"}
    none = fixed_session((FIXTURES / "shape_vllm_compile_eagle_tp2.log").read_bytes())
    assert "dist" not in render_timeline(none, 120, palette).plain
    assert "dist" not in render_ranks(none, 100, palette).plain
