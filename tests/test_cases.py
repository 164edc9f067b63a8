"""Issue 19's log shapes: each ``tests/fixtures/case_*.log`` and what ``scan --json`` says of it —
the outcome, the root cause (with its follow-on where a line that is no Python traceback explains
the failure) and the first hint.

The fixtures come from ``tests/fixtures/make_cases.py``; ``test_scan_cli.test_fast_path_equals_full_path``
checks every one of them too, and ``test_hint_rules`` runs the hint rules over them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.commands.scan import scan_with_hints, to_json
from tui.core.state import FAILED, READY, STARTING
from tui.core.verdict import judge

FIXTURES = Path(__file__).parent / "fixtures"

# name: (outcome, root cause (line, kind, rank) or None, follow-on line or None, first hint id or None)
EXPECTED = {
    "case_vllm_oom_at_util_075.log": (FAILED, (7, "OutOfMemoryError", "EngineCore_DP0"), None, "cuda-oom-vllm"),
    "case_vllm_graph_capture_oom.log": (FAILED, (30, "OutOfMemoryError", "EngineCore_DP0"), None, "graph-capture-oom-vllm"),
    "case_sglang_port_from_c10d.log": (FAILED, (4, "port_in_use", None), None, "port-in-use"),
    "case_vllm_ray_gpus_short.log": (FAILED, (4, "ray_gpus_short", "main"), 9, "ray-gpus-short"),
    "case_vllm_ray_placement_wait.log": (STARTING, None, None, "ray-placement"),
    "case_vllm_ray_placement_wait_node_joined.log": (STARTING, None, None, "ray-placement"),
    "case_vllm_ray_placement_group_small.log": (FAILED, (3, "ValueError", None), None, "ray-placement-group-small"),
    "case_vllm_ray_gpus_short_raised.log": (FAILED, (3, "ValueError", None), None, "ray-gpus-short"),
    "case_vllm_ray_placement_timeout.log": (FAILED, (24, "ray_gpus_short", "EngineCore_DP0"), 32, "ray-gpus-short"),
    "case_sglang_deepep_ibgda.log": (FAILED, (19, "nvshmem", None), 20, "nvshmem-ibgda"),
    "case_vllm_peer_gpu_not_accessible.log": (FAILED, (5, "p2p", None), 7, "nvshmem-peer-gpu"),
    "case_sglang_gloo_not_connected.log": (FAILED, (6, "gloo", None), 7, "gloo-not-connected"),
    "case_vllm_nccl_warn_then_error.log": (FAILED, (6, "nccl_warn", None), 8, "nccl-warn-connect"),
    "case_vllm_nccl_warn_benign_ready.log": (READY, None, None, None),
    "case_sglang_slurm_oom_kill.log": (FAILED, (5, "host_oom", None), None, None),
    "case_sglang_cuda_error_glued_to_bar.log": (FAILED, (8, "cuda_error", None), None, None),
    "case_vllm_shm_broadcast_after_worker_error.log": (FAILED, (13, "RuntimeError", "Worker_TP2"), None, "nccl-p2p"),
    "case_vllm_ranks_first_exception.log": (FAILED, (5, "RuntimeError", "rank2"), None, None),
    "case_vllm_sidecar_ready_before_load.log": (FAILED, (9, "OutOfMemoryError", "EngineCore_DP0"), None, "weights-exceed-gpu"),  # a 72B model in bf16 on one 80 GB GPU
    "case_vllm_v2_runner_eagle3_ready.log": (READY, None, None, None),
    "case_sglang_drafter_only_fails.log": (FAILED, (8, "KeyError", "TP0"), None, "draft-weight-names"),
    "case_vllm_drafter_only_fails.log": (FAILED, (7, "KeyError", "EngineCore_DP0"), None, "draft-weight-names"),
    "case_vllm_memory_held_at_start.log": (FAILED, (4, "ValueError", "EngineCore_DP0"), None, "memory-held-at-start"),
    "case_vllm_removeipc_semlock.log": (FAILED, (3, "FileNotFoundError", None), None, "remove-ipc"),
    "case_vllm_unrecognized_argument.log": (FAILED, (3, "bad_argument", None), None, "vllm-old-engine-flags-removed"),
    "case_sglang_missing_libcudart.log": (FAILED, (2, "ImportError", "main"), None, "missing-cuda-library"),
    "case_tgi_two_shards_ready.log": (READY, None, None, None),
    "case_tgi_shard_oom.log": (FAILED, (5, "OutOfMemoryError", None), None, "weights-oom"),
    "case_llamacpp_listen_first_ready.log": (READY, None, None, None),
    "case_llamacpp_load_oom.log": (FAILED, (7, "cuda_oom", "main"), None, "llamacpp-offload-oom"),
    # llama.cpp's and vLLM-on-the-CPU's current shapes (held against real recordings: test_fakes_match_real)
    "case_llamacpp_current_ready.log": (READY, None, None, None),
    "case_llamacpp_embedded_ready.log": (READY, None, None, None),
    "case_llamacpp_current_truncated_gguf.log": (FAILED, (3, "load_failed", "main"), None, "gguf-truncated"),
    "case_vllm_cpu_ready.log": (READY, None, None, None),
    "case_vllm_json_logs.log": (FAILED, (6, "ValueError", "EngineCore_DP0"), None, "kv-too-small"),
    "case_sglang_json_logs.log": (READY, None, None, None),
    "case_sglang_tp8_body_in_one_piece.log": (FAILED, (3, "RuntimeError", "TP2"), None, None),
    "case_vllm_dist_init_every_worker.log": (READY, None, None, None),
    "case_vllm_dist_init_rank0_alone.log": (FAILED, (34, "OutOfMemoryError", "Worker_TP2"), None, "graph-capture-oom-vllm"),
    "case_sglang_weights_overlap_graphs.log": (READY, None, None, None),
    "case_sglang_draft_loads_while_target_captures.log": (READY, None, None, None),
    "case_vllm_tp8_tagged_lines_interleaved.log": (FAILED, (32, "OutOfMemoryError", "Worker_TP6"), None, "weights-oom-as-loaded"),  # TP is 8 already
    "case_sglang_tp8_bodies_interleaved_by_line.log": (FAILED, (15, "OutOfMemoryError", "TP6"), None, "weights-oom-as-loaded"),  # TP is 8 already
    # each new hint class: a fixture where it must fire, and one of the same shape where it must not
    "case_sglang_router_gave_up_while_loading.log": (FAILED, (23, "router_gave_up", None), None, "router-startup-timeout"),
    "case_sglang_router_timeout_after_crash.log": (FAILED, (7, "OutOfMemoryError", "TP1"), None, "weights-exceed-gpu"),  # 405B in FP8 ÷ TP 4 > 80 GB
    "case_vllm_hub_download_silent.log": (STARTING, None, None, "hub-download-silent"),
    "case_vllm_hub_download_done.log": (STARTING, None, None, None),
    "case_vllm_compile_key_changed_on_restart.log": (STARTING, None, None, "compile-cache-changed-on-restart"),
    "case_vllm_compile_same_key_on_restart.log": (STARTING, None, None, "torch-compile-quiet"),
}

# name: [(phase, start_line, end_line)] as scan --json gives them
PHASES = {
    "case_vllm_v2_runner_eagle3_ready.log": [
        ("server_args", 1, 1), ("weight_load", 4, 22), ("draft_init", 22, 23), ("memory_pool", 24, 26),
        ("cuda_graph", 27, 27), ("ready", 29, 30),
    ],
    "case_sglang_drafter_only_fails.log": [("server_args", 1, 1), ("weight_load", 2, 5), ("draft_init", 6, None)],
    "case_vllm_drafter_only_fails.log": [("server_args", 1, 2), ("weight_load", 3, 5), ("draft_init", 5, None)],
    "case_vllm_sidecar_ready_before_load.log": [("server_args", 1, 2), ("weight_load", 7, None)],
    "case_tgi_two_shards_ready.log": [
        ("server_args", 1, 1), ("weight_load", 3, 13), ("ready", 14, 19), ("memory_pool", 15, 17),
    ],
    "case_llamacpp_listen_first_ready.log": [
        # listening at 3, before the load, and again as its main loop starts (22), once loaded (20): ready there
        ("server_args", 1, 1), ("weight_load", 4, 15), ("memory_pool", 16, 19), ("ready", 22, 22),
    ],
    "case_llamacpp_load_oom.log": [("server_args", 1, 1), ("weight_load", 2, None)],
    "case_vllm_json_logs.log": [("server_args", 1, 2), ("weight_load", 3, 5)],
    # SGLang's JSON records carry no rank tag: each scheduler is the process its record names
    "case_sglang_json_logs.log": [
        ("server_args", 1, 1), ("dist_init", 2, 5), ("weight_load", 6, 10), ("memory_pool", 9, 14),
        ("cuda_graph", 15, 19), ("ready", 21, 28),
    ],
    # vLLM 0.8.5-0.11 at INFO: "vLLM is using nccl" begins a worker's part, "rank N in world size 4
    # is assigned as …" ends it; the last worker's line ends the phase
    "case_vllm_dist_init_every_worker.log": [
        ("server_args", 1, 2), ("dist_init", 4, 11), ("weight_load", 12, 28), ("memory_pool", 28, 30),
        ("cuda_graph", 31, 31), ("ready", 33, 34),
    ],
    # rank 0 alone says it is through: a barrier, so the others are too (not open until the failure)
    "case_vllm_dist_init_rank0_alone.log": [
        ("server_args", 1, 2), ("dist_init", 4, 9), ("weight_load", 10, 29), ("memory_pool", 29, 31),
        ("cuda_graph", 32, None),
    ],
    # the weights are committed after the graphs: the load runs beside the pool and the capture
    "case_sglang_weights_overlap_graphs.log": [
        ("server_args", 1, 1), ("dist_init", 2, 5), ("weight_load", 6, 18), ("memory_pool", 8, 11),
        ("cuda_graph", 12, 16), ("ready", 20, 21),
    ],
    # TP0 loads the draft (17) while TP1 still captures the target's graphs (until 19)
    "case_sglang_draft_loads_while_target_captures.log": [
        ("server_args", 1, 1), ("dist_init", 2, 5), ("weight_load", 6, 9), ("memory_pool", 8, 13),
        ("cuda_graph", 14, 19), ("draft_init", 17, 27), ("ready", 29, 30),
    ],
}

# name: (server, ready line)
SERVERS = {
    "case_tgi_two_shards_ready.log": ("tgi", 19),
    "case_tgi_shard_oom.log": ("tgi", None),
    "case_llamacpp_listen_first_ready.log": ("llamacpp", 22),  # listening at 3, loaded at 20, main loop at 22
    "case_llamacpp_load_oom.log": ("llamacpp", None),
    "case_vllm_json_logs.log": ("vllm", None),
    "case_sglang_json_logs.log": ("sglang", 28),
}


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_tgi_llamacpp_and_json_lines_are_read(name):
    doc = to_json(scan_with_hints(str(FIXTURES / name))[0])
    assert (doc["server"], doc["ready_line"]) == SERVERS[name]


@pytest.mark.parametrize(
    ("name", "took", "to_ready"),
    [
        # its uvicorn lines have a header of their own: to ready is not the 0 s between those
        ("case_sglang_json_logs.log", {"dist_init": 2.0, "weight_load": 6.0, "cuda_graph": 10.0}, 25.0),
        # logging's asctime has the year vLLM's own headers lack
        ("case_vllm_json_logs.log", {"weight_load": 5.0}, None),
    ],
)
def test_a_json_records_time_is_its_asctime(name, took, to_ready):
    """A JSON record says when only in its asctime: the phases' times and the time to ready come from it."""
    doc = to_json(scan_with_hints(str(FIXTURES / name))[0])
    seconds = {p["name"]: p["seconds"] for p in doc["phases"]}
    assert {phase: seconds[phase] for phase in took} == took
    assert (doc["profile"] or {}).get("total_s") == to_ready


def test_every_case_fixture_has_an_expectation():
    assert sorted(p.name for p in FIXTURES.glob("case_*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scan_json_names_the_root_cause_and_its_follow_on(name):
    outcome, cause, follow_on, hint = EXPECTED[name]
    state, hints = scan_with_hints(str(FIXTURES / name))
    doc = to_json(state, hints)
    assert doc["outcome"] == outcome
    root = doc["root_cause"]
    if cause is None:
        assert root is None and doc["errors"] == []
    else:
        assert (root["line"], root["kind"], root["rank"]) == cause
        assert (root["follow_on"] or {}).get("line") == follow_on
        # the attempt row and the header name the same root cause
        assert doc["attempts"][-1]["first_error"].endswith(root["message"][-40:])
        assert f"line {root['line']}" in judge(state).text
    assert (doc["hints"][0]["id"] if doc["hints"] else None) == hint


@pytest.mark.parametrize("name", sorted(PHASES))
def test_phases_belong_to_the_servers_own_lines(name):
    """Another program's ready line does not end a vLLM start; a V2-runner drafter is draft_init;
    a failing drafter leaves the target's weight load done."""
    doc = to_json(scan_with_hints(str(FIXTURES / name))[0])
    assert [(p["name"], p["start_line"], p["end_line"]) for p in doc["phases"]] == PHASES[name]


def test_the_follow_on_is_told_in_the_header():
    state, _ = scan_with_hints(str(FIXTURES / "case_sglang_deepep_ibgda.log"))
    text = judge(state).text
    assert "init failed for transport: IBGDA" in text and "then line 20: RuntimeError" in text


def test_a_line_that_explains_nothing_is_no_error():
    """NCCL WARN lines of a start that goes on to ready are warnings, never errors."""
    state, hints = scan_with_hints(str(FIXTURES / "case_vllm_nccl_warn_benign_ready.log"))
    assert state.outcome == READY and state.errors == [] and state.warnings >= 2 and hints == []


@pytest.mark.parametrize("name", ["case_vllm_shm_broadcast_after_worker_error.log", "case_vllm_removeipc_semlock.log"])
def test_shm_broadcast_waits_are_noise_after_a_workers_error(name):
    state, hints = scan_with_hints(str(FIXTURES / name))
    assert state.first_error is not None and state.first_error.line < 15
    assert all("shared memory broadcast" not in e.message for e in state.errors)
    assert "shm-broadcast-wait" not in [h.id for h in hints]


def test_hints_give_this_runs_numbers():
    _, hints = scan_with_hints(str(FIXTURES / "case_vllm_memory_held_at_start.log"))
    assert "held 26.89 GiB" in hints[0].why and [a.text for a in hints[0].fix] == [
        "kill_gpu_holders", "set_flag --gpu-memory-utilization 0.65"]  # 52.30/79.19 = 0.66, 1 % below
    _, hints = scan_with_hints(str(FIXTURES / "case_vllm_unrecognized_argument.log"))
    assert "vLLM no longer has --num-scheduler-steps" in hints[0].why


def test_each_sglang_rank_keeps_its_own_exception():
    state, _ = scan_with_hints(str(FIXTURES / "case_sglang_tp8_body_in_one_piece.log"))
    got = {e.rank: e.message[-10:] for e in state.errors if e.kind == "RuntimeError"}
    assert got == {f"TP{r}": f"(device {r})" for r in range(8)}


def test_each_ranks_exception_stays_with_its_own_traceback():
    state, _ = scan_with_hints(str(FIXTURES / "case_vllm_ranks_first_exception.log"))
    assert sorted((e.rank, e.message[-8:]) for e in state.errors) == [("rank2", "(rank 2)"), ("rank5", "(rank 5)")]


def test_a_barrier_one_rank_is_through_is_one_every_rank_is_through():
    """Every worker that began dist init ends it when rank 0 says it is through, none is left
    open or marked failed; a worker whose line comes after rank 0's ends at its own line."""
    state, _ = scan_with_hints(str(FIXTURES / "case_vllm_dist_init_rank0_alone.log"))
    dist = state.phase("dist_init")
    assert dist is not None and dist.done and not dist.failed
    assert sorted(dist.ranks) == [f"Worker_TP{r}" for r in range(4)]
    assert all(entry.end_line is not None for entry in dist.ranks.values())
    state, _ = scan_with_hints(str(FIXTURES / "case_vllm_dist_init_every_worker.log"))
    ends = {rank: entry.end_line for rank, entry in state.phase("dist_init").ranks.items()}
    assert ends == {"Worker_TP1": 8, "Worker_TP0": 9, "Worker_TP3": 10, "Worker_TP2": 11}


@pytest.mark.parametrize(("name", "phase", "beside"), [
    ("case_sglang_weights_overlap_graphs.log", "weight_load", ["memory_pool", "cuda_graph"]),
    ("case_sglang_weights_overlap_graphs.log", "cuda_graph", ["weight_load"]),
    ("case_sglang_draft_loads_while_target_captures.log", "draft_init", ["cuda_graph"]),
    ("case_vllm_dist_init_every_worker.log", "weight_load", []),  # back to back is no overlap
])
def test_scan_json_says_which_phases_ran_at_the_same_time(name, phase, beside):
    doc = to_json(scan_with_hints(str(FIXTURES / name))[0])
    assert next(p for p in doc["phases"] if p["name"] == phase)["overlaps"] == beside


@pytest.mark.parametrize(("name", "prefix"), [
    ("case_vllm_tp8_tagged_lines_interleaved.log", "Worker_TP"),
    ("case_sglang_tp8_bodies_interleaved_by_line.log", "TP"),
])
def test_eight_tracebacks_interleaved_line_by_line_stay_apart(name, prefix):
    """Each rank's exception stays with its own traceback, its lines are its own (every other line
    of the file belongs to another rank), and the first failure is the rank whose exception came
    first (TP6), not the first header seen (TP5)."""
    state, _ = scan_with_hints(str(FIXTURES / name))
    text = (FIXTURES / name).read_text().split("\n")
    blocks = [e for e in state.errors if e.kind in ("OutOfMemoryError", "RuntimeError", "DistBackendError")]
    assert sorted(e.rank for e in blocks) == sorted(f"{prefix}{r}" for r in range(8))
    for error in blocks:
        rank = error.rank[len(prefix):]
        assert error.message.endswith(f"(rank {rank})") or (rank == "6" and "GPU 6" in error.message)
        lines = [n for first, last in error.spans for n in range(first, last + 1)]
        assert len(lines) == (6 if rank == "6" else 10)  # the Traceback line, its frames, its exception
        if prefix == "Worker_TP":  # every line tagged: each one the block's own rank's
            assert all(text[n - 1].startswith(f"({prefix}{rank} pid=") for n in lines)
        else:  # the tagged header is its own, the exception line too
            assert f" {prefix}{rank}] Scheduler hit an exception" in text[lines[0] - 1]
            assert lines[-1] == error.exc_line and text[lines[-1] - 1].endswith(error.message.split(": ", 1)[1])
    first = state.first_error
    assert first is not None and first.rank == f"{prefix}6" and first.exc_line < min(e.exc_line for e in blocks if e is not first)


# hint id: (the fixture where it must fire, the fixtures of the same shape where it must not)
FIRES = {
    "router-startup-timeout": (["case_sglang_router_gave_up_while_loading.log"], ["case_sglang_router_timeout_after_crash.log"]),
    "hub-download-silent": (["case_vllm_hub_download_silent.log"], ["case_vllm_hub_download_done.log"]),
    "compile-cache-changed-on-restart": (
        ["case_vllm_compile_key_changed_on_restart.log"], ["case_vllm_compile_same_key_on_restart.log", "vllm_compile_cache_changed.log"]),
    # vLLM logs its compile at INFO: a start quiet after a compile line is compiling; one quiet
    # after it moved on (KV sizing, graphs), or that failed or got ready, is not
    "torch-compile-quiet": (
        ["shape_vllm_compile_stall.log", "case_vllm_compile_key_changed_on_restart.log", "case_vllm_compile_same_key_on_restart.log"],
        ["shape_vllm_031_compile_oom.log", "vllm_v1_ready.log"]),
}


@pytest.mark.parametrize("hint_id", sorted(FIRES))
def test_a_hint_fires_on_its_evidence_and_nowhere_else(hint_id):
    """The router's timeout is the cause only when nothing failed before it; a download is silent
    only while nothing came after its first line; a restart compiles cold only when its cache key
    changed (a ready start with a changed key has the speed hint of its profile instead)."""
    fires, quiet = FIRES[hint_id]
    for name in fires:
        assert hint_id in [h.id for h in scan_with_hints(str(FIXTURES / name))[1]], name
    for name in quiet:
        assert hint_id not in [h.id for h in scan_with_hints(str(FIXTURES / name))[1]], name
    for name in sorted(p.name for p in FIXTURES.glob("*.log")):  # and no other fixture has its evidence
        if name not in (*fires, *quiet):
            assert hint_id not in [h.id for h in scan_with_hints(str(FIXTURES / name))[1]], name


def test_the_router_hint_names_the_flag_and_the_seconds_of_its_own_line():
    _, hints = scan_with_hints(str(FIXTURES / "case_sglang_router_gave_up_while_loading.log"))
    assert "after 300 s" in hints[0].why and hints[0].why.endswith("a larger --router-worker-startup-timeout-secs")
