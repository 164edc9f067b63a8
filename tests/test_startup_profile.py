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
    assert all(p["previous_seconds"] is None for p in one["phases"])
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
