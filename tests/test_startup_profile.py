"""The startup profile after READY: where the time went, beside the previous good attempt, and
one speed hint from evidence (a torch.compile cache key that changed: a cold compile). The
fixture (tests/fixtures/make_compile_cache_changed.py) holds two vLLM startups in one log."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import run_cli
from tui.core.hints import parse
from tui.core.profiles import ProfileError
from tui.core.startup_profile import Evidence, evidence, for_state

FIXTURES = Path(__file__).parent / "fixtures"
CHANGED = FIXTURES / "vllm_compile_cache_changed.log"


def scan(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("scan", *extra, str(path))


def test_scan_json_has_the_profile_beside_the_previous_attempt_and_the_speed_hint() -> None:
    out = scan(CHANGED, "--json")
    assert out.returncode == 0, out.stderr
    profile = json.loads(out.stdout)["profile"]
    phases = {p["name"]: p for p in profile["phases"]}
    assert phases["compile"]["seconds"] == pytest.approx(45.0, abs=0.05)
    assert phases["compile"]["previous_seconds"] == pytest.approx(3.0, abs=0.05)
    assert phases["compile"]["share"] == pytest.approx(45 / 79, abs=0.01)
    assert phases["compile"]["slowest_rank"] == "Worker_TP1"
    assert (profile["previous_compile_cache"], profile["compile_cache"]) == ("5c1e1bd1a4", "9d0f3e7a21")
    assert profile["weight_load"]["bytes_per_gpu"] == int(7.652 * 2**30)
    assert [g["seconds"] for g in profile["unaccounted"]] == [10.0]
    (hint,) = profile["speed"]
    assert "5c1e1bd1a4 → 9d0f3e7a21" in hint["why"] and "save about 42.0 s" in hint["why"]


def test_scan_text_shows_the_profile_and_the_advice() -> None:
    out = scan(CHANGED)
    text = out.stdout
    assert "startup profile (to ready: 1:19; the previous good attempt: 37.0 s)" in text
    compile_row = next(line for line in text.splitlines() if line.strip().startswith("compile ") and "%" in line)
    assert "45.0 s" in compile_row and "57%" in compile_row and compile_row.rstrip().endswith("3.0 s")
    assert "faster next time: torch.compile ran cold" in text


def test_no_advice_without_evidence_and_no_profile_before_ready(tmp_path: Path) -> None:
    # the same key twice: the compile was warm both times, nothing to advise
    same = tmp_path / "same.log"
    same.write_text(CHANGED.read_text().replace("9d0f3e7a21", "5c1e1bd1a4"))
    profile = json.loads(scan(same, "--json").stdout)["profile"]
    assert profile["speed"] == [] and profile["compile_cache"] == profile["previous_compile_cache"]
    # one attempt: no previous figures, no advice, but the profile
    one = json.loads(scan(FIXTURES / "vllm_v1_ready.log", "--json").stdout)["profile"]
    assert one["previous_total_s"] is None and one["speed"] == []
    assert one["phases"] and all(p["previous_seconds"] is None for p in one["phases"])
    # still starting: no profile yet
    half = tmp_path / "half.log"
    half.write_text("\n".join(CHANGED.read_text().splitlines()[:40]) + "\n")
    assert json.loads(scan(half, "--json").stdout)["profile"] is None


def test_sglang_weights_from_free_memory() -> None:
    from tui.commands.scan import scan_file

    profile = for_state(scan_file(str(FIXTURES / "sglang_eagle3_tp8_ready.log")))
    assert profile is not None and profile.weight_bytes is not None and profile.weight_bytes > 0
    assert evidence(profile) == []


def test_a_speed_hint_is_data_and_a_bad_one_is_a_one_line_error() -> None:
    text = '''
[[hints]]
id = "my-cold-compile"
kind = "speed"
evidence = "compile_cache_changed"
why = "cold: {before} to {after}, {saving}"
'''
    kb = parse(text, "mine.toml")
    advice = kb.speed_advice([Evidence("compile_cache_changed", {"before": "a", "after": "b", "saving": "3 s"})])
    assert advice == [("cold: a to b, 3 s", "")]
    assert kb.speed_advice([Evidence("compile_cache_changed", {"before": "a"})]) == []  # a figure missing: nothing
    with pytest.raises(ProfileError, match="evidence: expected one of compile_cache_changed"):
        parse(text.replace("compile_cache_changed", "vibes"), "mine.toml")


def test_the_report_and_watch_plain_show_the_profile_after_ready() -> None:
    from tests.app_support import fixed_session
    from tui.present.report import build_report

    session = fixed_session(CHANGED.read_bytes())
    report = build_report(session)
    assert "Startup profile (to ready: 1:19; the previous good attempt: 37.0 s)" in report
    assert "faster next time: torch.compile ran cold" in report
    out = run_cli("watch", "--plain", "--gpus", "none", str(CHANGED), timeout=60)
    assert out.returncode == 0
    assert out.stdout.index("READY (line 56)") < out.stdout.index("startup profile") < out.stdout.index("faster next time")


def test_history_shows_the_latest_good_start_beside_the_one_before() -> None:
    from tui.history.records import AttemptRecord
    from tui.present.startup import history_lines

    def record(n: int, outcome: str, phases: dict[str, float], ready: float | None) -> AttemptRecord:
        return AttemptRecord("qwen", n, "localhost", [], {}, 0.0, f"v{n}.log", phases=phases, outcome=outcome,
                             ready_seconds=ready)

    rows = history_lines([
        record(1, "ready", {"weight_load": 6.0, "compile": 3.0}, 40.0),
        record(2, "failed", {"weight_load": 6.0}, None),
        record(3, "ready", {"weight_load": 6.0, "compile": 45.0}, 80.0),
    ])
    assert rows[0] == "startup profile (to ready: 1:20; the previous good attempt: 40.0 s) of qwen v3, beside v1"
    compile_row = next(r for r in rows if r.strip().startswith("compile"))
    assert "45.0 s" in compile_row and "56%" in compile_row and compile_row.endswith("3.0 s")
    assert history_lines([record(1, "failed", {"weight_load": 6.0}, None)]) == []


# ---------------------------------------------------------------- graph capture's many sizes

def _sglang_log(capture_end: str) -> str:
    """An SGLang startup whose graph capture (36 batch sizes, tqdm's bar) ends at ``capture_end``."""
    return (
        "[2026-03-14 21:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1, port=30000)\n"
        "[2026-03-14 21:00:05 TP0] Load weight begin. avail mem=78.12 GB\n"
        "[2026-03-14 21:00:35 TP0] Load weight end. type=X, avail mem=70.40 GB, mem usage=7.72 GB.\n"
        "[2026-03-14 21:00:36 TP0] Memory pool end. avail mem=19.80 GB\n"
        "[2026-03-14 21:00:36 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=19.60 GB\n"
        "Capturing batches (bs=256 avail_mem=19.50 GB):   0%|          | 0/36 [00:00<?, ?it/s]\r"
        "Capturing batches (bs=1 avail_mem=19.02 GB): 100%|##########| 36/36 [01:00<00:00,  0.60it/s]\n"
        f"[2026-03-14 {capture_end} TP0] Capture cuda graph end. Time elapsed: 60.00 s. mem usage=0.61 GB. avail mem=18.99 GB.\n"
        f"[2026-03-14 {capture_end} TP0] max_total_num_tokens=812345, chunked_prefill_size=8192\n"
        f"[2026-03-14 {capture_end}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        f"[2026-03-14 {capture_end}] The server is fired up and ready to roll!\n"
    )


def test_a_long_graph_capture_of_many_sizes_gets_the_servers_own_advice(tmp_path: Path) -> None:
    log = tmp_path / "slow_capture.log"
    log.write_text(_sglang_log("21:01:36"))
    profile = json.loads(scan(log, "--json").stdout)["profile"]
    assert profile["graph_sizes"] == 36
    (hint,) = profile["speed"]
    assert "CUDA graph capture took 1:00 (62% of the startup) for 36 batch sizes, about 1.7 s each" in hint["why"]
    assert "--cuda-graph-max-bs" in hint["why"] and "18 sizes instead of 36" in hint["why"]
    assert "should save about 30.0 s" in hint["why"]
    short = tmp_path / "quick_capture.log"
    short.write_text(_sglang_log("21:00:46"))  # 10 s of a 46 s start: nothing worth saying
    assert json.loads(scan(short, "--json").stdout)["profile"]["speed"] == []


def test_a_speed_hint_for_one_server_is_not_given_for_another() -> None:
    from tui.core.hints import knowledge

    values = {"capture": "1:00", "share": "62%", "sizes": "36", "per_size": "1.7 s", "half": "18", "saving": "30.0 s"}
    vllm = knowledge().speed_advice([Evidence("graph_capture_many_sizes", {**values, "server": "vllm"})])
    assert len(vllm) == 1 and "max_cudagraph_capture_size" in vllm[0][0] and "--cuda-graph-max-bs" not in vllm[0][0]
    assert knowledge().speed_advice([Evidence("graph_capture_many_sizes", {**values, "server": "tgi"})]) == []


def test_phases_that_ran_at_once_are_said_to_overlap() -> None:
    """SGLang 0.5.18+ commits the weights after graph capture (log-formats.md): the two overlap
    (a fixture written by hand, invented values)."""
    out = scan(FIXTURES / "sglang_weights_overlap_capture.log", "--json")
    profile = json.loads(out.stdout)["profile"]
    assert profile["overlaps"] == [{"seconds": 30.0, "phases": ["weight load", "CUDA graphs"]}]
    text = scan(FIXTURES / "sglang_weights_overlap_capture.log").stdout
    assert "overlap         30.0 s  weight load and CUDA graphs ran at once" in text, text
    single = json.loads(scan(FIXTURES / "vllm_v1_ready.log", "--json").stdout)["profile"]
    assert single["overlaps"] == []


def _node_state(lines: list[str]):
    from tui.core.lines import Line
    from tui.core.profiles import builtin_profiles
    from tui.core.tracker import StartupTracker

    tracker = StartupTracker(profile=next(p for p in builtin_profiles() if p.name == "sglang"))
    for number, text in enumerate(lines, 1):
        tracker.feed(Line(number, 0, (text,)), 0.0)
    tracker.finish()
    return tracker.state


def test_several_nodes_each_phase_is_its_slowest_nodes_with_its_slowest_rank() -> None:
    from tui.core.startup_profile import across_nodes

    def node(ranks: list[str], load_end: dict[str, str], ready: bool) -> list[str]:
        lines = [f"[2026-03-14 21:00:00] server_args=ServerArgs(model_path='/m', tp_size=4, nnodes=2, node_rank={0 if ready else 1})"]
        lines += [f"[2026-03-14 21:00:05 {r}] Load weight begin. avail mem=78.12 GB" for r in ranks]
        lines += [f"[2026-03-14 21:00:{load_end[r]} {r}] Load weight end. type=X, avail mem=70.40 GB, mem usage=7.72 GB."
                  for r in ranks]
        lines += [f"[2026-03-14 21:00:20 {r}] Capture cuda graph begin. This can take up to several minutes." for r in ranks]
        lines += [f"[2026-03-14 21:00:30 {r}] Capture cuda graph end. Time elapsed: 10.00 s. mem usage=0.61 GB." for r in ranks]
        return lines + (["[2026-03-14 21:00:31] The server is fired up and ready to roll!"] if ready else [])

    states = {"n1": _node_state(node(["TP0", "TP1"], {"TP0": "14", "TP1": "15"}, True)),
              "n2": _node_state(node(["TP2", "TP3"], {"TP2": "15", "TP3": "19"}, False))}
    profile = across_nodes(states, "n1")
    assert profile is not None and profile.total == 31.0
    load = next(p for p in profile.phases if p.name == "weight_load")
    assert (load.seconds, load.slowest) == (14.0, "n2 TP3")
    assert load.share == pytest.approx(14 / 31)
    assert across_nodes(states, "n2") is None  # a worker is never ready: the profile is the serving node's
