"""The timeline and rank grid as drawn from real tracker state (plain text of the rendering)."""

from __future__ import annotations

from tests.app_support import demo_session, fixed_session
from tui.app.themes import discover
from tui.app.timeline import render_ranks, render_timeline

PALETTE = discover()["dark"]

# P10 of the log-format reference: SGLang 0.5.23, TP=2, no draft model.
NO_DRAFT = b"""[2026-02-22 23:38:50] server_args={'model_path': 'meta-llama/x', 'tp_size': 2}
[2026-02-22 23:38:57 TP0] Init parallel begin.
[2026-02-22 23:38:57 TP1] Init parallel begin.
[2026-02-22 23:38:59 TP0] Init parallel ends. elapsed=1.84 s
[2026-02-22 23:38:59 TP0] Load weight begin. avail mem=78.12 GB
[2026-02-22 23:38:59 TP1] Load weight begin. avail mem=78.12 GB
Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:06<00:00,  1.55s/it]
[2026-02-22 23:39:06 TP0] Load weight end. elapsed=6.91 s, type=LlamaForCausalLM, avail mem=70.40 GB, mem usage=7.72 GB.
[2026-02-22 23:39:06 TP1] Load weight end. elapsed=6.95 s, type=LlamaForCausalLM, avail mem=70.40 GB, mem usage=7.72 GB.
[2026-02-22 23:39:07 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 812345, K size: 24.79 GB, V size: 24.79 GB
[2026-02-22 23:39:07 TP1] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 812345, K size: 24.79 GB, V size: 24.79 GB
[2026-02-22 23:39:07 TP0] Memory pool end. avail mem=19.80 GB
[2026-02-22 23:39:07 TP1] Memory pool end. avail mem=19.80 GB
[2026-02-22 23:39:08 TP0] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=19.60 GB
[2026-02-22 23:39:08 TP1] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=19.60 GB
Capturing batches (bs=1 avail_mem=19.02 GB): 100%|##########| 36/36 [00:09<00:00,  3.90it/s]
[2026-02-22 23:39:18 TP0] Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=9.60 s, mem usage=0.61 GB, avail mem=18.99 GB.
[2026-02-22 23:39:18 TP1] Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=9.60 s, mem usage=0.61 GB, avail mem=18.99 GB.
[2026-02-22 23:39:19] INFO:     Application startup complete.
[2026-02-22 23:39:21] The server is fired up and ready to roll!
"""


def rows(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines()[1:]:
        for title in ("server args", "weight load", "memory pool", "CUDA graphs", "draft init", "ready", "failed",
                      "log quiet"):
            if line[3:].startswith(title) or line[1:].startswith(title):
                out[title] = line
    return out


def test_a_phase_the_server_does_not_have_is_skipped():
    session = fixed_session(NO_DRAFT)
    assert session.state.outcome == "ready"
    drawn = rows(render_timeline(session, 100, PALETTE).plain)
    assert "skipped" in drawn["draft init"] and drawn["draft init"].lstrip().startswith("–")
    assert drawn["weight load"].lstrip().startswith("✓") and "0:07" in drawn["weight load"]
    assert drawn["ready"].lstrip().startswith("✓")


def test_a_phase_not_reached_yet_is_pending_even_when_a_later_one_started():
    """Newer SGLang loads the draft's weights before any graph: graphs are not skipped then."""
    session = demo_session("ready", upto=40.0)
    state = session.state
    assert state.phase("draft_init") is not None and state.phase("cuda_graph") is None
    drawn = rows(render_timeline(session, 140, PALETTE).plain)
    assert drawn["CUDA graphs"].lstrip().startswith("·") and "skipped" not in drawn["CUDA graphs"]


def test_running_phase_shows_its_progress_and_failure_is_placed():
    loading = rows(render_timeline(demo_session("ready", upto=22.0), 140, PALETTE).plain)
    assert loading["weight load"].lstrip().startswith("▶") and "56%" in loading["weight load"]
    assert "■" in loading["weight load"]  # the gauge on the running bar
    assert loading["memory pool"].lstrip().startswith("·")  # not reached yet, not "skipped"
    failed = rows(render_timeline(demo_session("crash-context"), 140, PALETTE).plain)
    assert "✖" in failed["failed"] and "ValueError on TP3" in failed["failed"]


def test_silence_is_drawn_as_a_gap():
    drawn = rows(render_timeline(demo_session("hang"), 120, PALETTE).plain)
    assert "1:00" in drawn["log quiet"] and "░" in drawn["log quiet"]
    assert "▒" in drawn["weight load"]  # the running phase's silent stretch is shaded


def test_rank_grid_names_behind_and_dead_ranks():
    grid = render_ranks(demo_session("oom"), 80, PALETTE).plain.splitlines()
    tp3 = next(line for line in grid if line.strip().startswith("TP3"))
    tp0 = next(line for line in grid if line.strip().startswith("TP0"))
    assert "✖" in tp3 and "✖" not in tp0
    assert len([line for line in grid if line.strip().startswith("TP")]) == 8
    single = render_ranks(fixed_session(b"[2026-02-22 23:38:50] server_args={'model_path': 'm'}\n"), 80, PALETTE).plain
    assert "no per-rank lines" in single
