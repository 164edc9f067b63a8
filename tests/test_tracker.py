"""The phase tracker on the fixture logs: phases per rank, draft by count, bars, ready, stop."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from tui.core.events import (
    ErrorFound,
    PhaseEnded,
    PhaseProgress,
    PhaseStarted,
    Ready,
    ServerDetected,
    Stopped,
    WarningFound,
)
from tui.core.lines import LineAssembler, Progress, make_line
from tui.core.profiles import load_profile
from tui.core.state import FAILED, READY, STARTING, STOPPED
from tui.core.tracker import StartupTracker

FIXTURES = Path(__file__).parent / "fixtures"
AT = datetime(2026, 8, 20, 12, 0, 0).timestamp()


def track(name: str, profile=None, chunk: int | None = None, progress: bool = False):
    data = (FIXTURES / name).read_bytes()
    tracker = StartupTracker(load_profile(profile) if profile else None)
    assembler = LineAssembler(progress=progress)
    events = []
    pieces = [data] if chunk is None else [data[i : i + chunk] for i in range(0, len(data), chunk)]
    for piece in pieces:
        for item in assembler.feed(piece):
            events += tracker.feed(item, AT)
    for item in assembler.flush():
        events += tracker.feed(item, AT)
    events += tracker.finish()
    return tracker, events


def phases(tracker):
    return {p.name: p for p in tracker.state.phases}


def test_clean_8_rank_sglang_start_with_eagle3_draft():
    tracker, events = track("sglang_eagle3_tp8_ready.log")
    state = tracker.state
    assert state.server == "sglang" and state.outcome == READY
    assert state.errors == [] and state.first_error is None
    assert state.warnings == 1  # the FutureWarning; amdsmi lines and the config dump are no alarm
    # reported in the order they started: the draft's weights load before any memory pool
    assert [p.name for p in state.phases] == ["server_args", "dist_init", "weight_load", "draft_init", "memory_pool", "cuda_graph", "ready"]
    by = phases(tracker)
    dist = by["dist_init"]  # "Init parallel begin/ends" (0.5.21+) on every rank
    assert (dist.start_line, dist.end_line, len(dist.ranks)) == (13, 28, 8) and dist.done
    wl = by["weight_load"]
    assert (wl.start_line, wl.end_line, len(wl.ranks)) == (29, 45, 8)
    assert wl.slowest_rank == "TP4" and wl.seconds == pytest.approx(98.0)
    assert wl.progress == 1.0
    assert set(wl.ranks) == {f"TP{i}" for i in range(8)}
    # the draft: 2nd Load weight begin on each rank, its pool, and rank 0's draft graphs
    draft = by["draft_init"]
    assert (draft.start_line, draft.end_line, draft.slowest_rank) == (47, 116, "TP0")
    assert len(draft.ranks) == 8
    # memory pool: no begin line; the last Load weight end (TP0's, swallowed by a bar) starts it
    pool = by["memory_pool"]
    assert (pool.start_line, pool.end_line) == (55, 78)
    assert pool.detail == "avail mem=2.91 GB"
    graph = by["cuda_graph"]
    assert (graph.start_line, graph.end_line, len(graph.ranks)) == (95, 111, 8)
    assert graph.seconds == pytest.approx(43.0)
    # ready only on "fired up", not on uvicorn's earlier "Application startup complete."
    assert state.ready_line == 125
    assert by["ready"].start_line == 118
    ready = [e for e in events if isinstance(e, Ready)]
    assert len(ready) == 1 and ready[0].line == 125 and ready[0].seconds == pytest.approx(186.0)
    assert isinstance(events[0], ServerDetected) and events[0].line == 1


def test_events_come_in_a_sensible_order():
    _, events = track("sglang_eagle3_tp8_ready.log")
    started = [e.phase for e in events if isinstance(e, PhaseStarted)]
    ended = [e.phase for e in events if isinstance(e, PhaseEnded)]
    assert started == ["server_args", "dist_init", "weight_load", "draft_init", "memory_pool", "cuda_graph", "ready"]
    assert sorted(ended) == sorted(started)  # each phase ends exactly once
    for name in started:
        s = next(i for i, e in enumerate(events) if isinstance(e, PhaseStarted) and e.phase == name)
        e = next(i for i, e in enumerate(events) if isinstance(e, PhaseEnded) and e.phase == name)
        assert s < e
    end_wl = next(e for e in events if isinstance(e, PhaseEnded) and e.phase == "weight_load")
    assert (end_wl.slowest_rank, end_wl.ranks) == ("TP4", 8)


def test_any_chunking_gives_the_same_state():
    whole, _ = track("sglang_eagle3_tp8_ready.log")
    for chunk in (1, 7, 4096):
        other, _ = track("sglang_eagle3_tp8_ready.log", chunk=chunk, progress=True)
        assert [(p.name, p.start_line, p.end_line, p.seconds) for p in other.state.phases] == [
            (p.name, p.start_line, p.end_line, p.seconds) for p in whole.state.phases
        ]
        assert other.state.ready_line == whole.state.ready_line


def test_live_bar_updates_report_progress_before_the_line_ends():
    tracker = StartupTracker(load_profile("sglang"))
    assembler = LineAssembler()
    for item in assembler.feed(b"[2026-02-22 23:38:59 TP0] Load weight begin. avail mem=78.12 GB\n"):
        tracker.feed(item, AT)
    fractions = []
    for n in range(0, 10):
        chunk = f"\rLoading safetensors checkpoint shards: {n * 10:3d}% Completed | {n}/10 [00:0{n}<00:10,  1.62s/it]"
        for item in assembler.feed(chunk.encode()):
            assert isinstance(item, Progress)
            fractions += [e.fraction for e in tracker.feed(item, AT) if isinstance(e, PhaseProgress)]
    assert fractions == [n / 10 for n in range(0, 10)]  # each refresh as soon as it is written
    assert tracker.state.phase("weight_load").detail == "9/10"


def test_rank_tags_are_an_unordered_token_set():
    tracker = StartupTracker(load_profile("sglang"))
    lines = [
        b"[2026-02-22 23:38:59 DP0 PP1 TP3 EP3] Load weight begin. avail mem=78.12 GB",
        b"[2026-02-22 23:39:59.123 TP3 DP0 EP3 PP1] Load weight end. elapsed=60.00 s, type=X, avail mem=8.00 GB, mem usage=70.12 GB.",
    ]
    for n, raw in enumerate(lines, 1):
        tracker.feed(make_line(n, 0, raw), AT)
    wl = tracker.state.phase("weight_load")
    assert list(wl.ranks) == ["DP0 PP1 TP3 EP3"]
    assert wl.done and wl.seconds == pytest.approx(60.123)


def test_old_sglang_04_with_tp0_at_tp1_and_a_glued_record():
    tracker, events = track("sglang_old_04.log")
    by = phases(tracker)
    assert tracker.state.outcome == READY and tracker.state.ready_line == 22
    assert list(by) == ["server_args", "dist_init", "weight_load", "memory_pool", "cuda_graph", "ready"]
    # 0.4.3 and older print no "Init torch distributed ends": the rank's weight load ends it
    assert (by["dist_init"].start_line, by["dist_init"].end_line) == (2, 3)
    assert by["weight_load"].progress == 1.0 and list(by["weight_load"].ranks) == ["TP0"]
    # the graph bar swallowed "Capture cuda graph end" with no \r in between: still found
    assert (by["cuda_graph"].start_line, by["cuda_graph"].end_line) == (12, 13)
    assert by["cuda_graph"].seconds == pytest.approx(12.0)


def test_vllm_v1_start_with_ansi_tags():
    tracker, events = track("vllm_v1_ready.log")
    state = tracker.state
    by = phases(tracker)
    assert state.server == "vllm" and state.outcome == READY
    assert state.ready_line == 41  # vLLM's ready line is "Application startup complete."
    assert state.errors == [] and state.warnings == 1  # the ulimit WARNING; its "error" words are no alarm
    # each worker's "rank N in world size 2 is assigned as …" (0.8.5-0.11, at INFO) is its dist init
    assert list(by) == ["server_args", "dist_init", "weight_load", "compile", "memory_pool", "cuda_graph", "ready"]
    assert set(by["dist_init"].ranks) == {"Worker_TP0", "Worker_TP1"} and by["dist_init"].done
    # torch.compile is its own phase, between the weights and KV sizing, on each worker
    assert set(by["compile"].ranks) == {"Worker_TP0", "Worker_TP1"} and by["compile"].seconds == pytest.approx(27.51, abs=0.01)  # as the log says
    assert by["memory_pool"].start_line == by["compile"].end_line
    assert set(by["weight_load"].ranks) == {"Worker_TP0", "Worker_TP1"}
    assert by["weight_load"].slowest_rank == "Worker_TP0" and by["weight_load"].progress == 1.0
    assert by["cuda_graph"].progress == 1.0 and by["cuda_graph"].done
    # no year in vLLM timestamps: the year of arrival
    assert datetime.fromtimestamp(by["weight_load"].start_ts).year == 2026
    assert "EngineCore_DP0" in state.ranks and "APIServer" in state.ranks


def test_ready_then_shutdown_is_a_stop_not_a_failure():
    tracker, events = track("sglang_ready_then_sigterm.log")
    state = tracker.state
    assert state.outcome == STOPPED and state.ready_line == 12
    assert "SIGQUIT received" in state.stop_reason
    assert [e.line for e in events if isinstance(e, Stopped)] == [13]
    assert state.first_error is None  # errors after ready are not a failed startup
    assert state.errors and all(not e.fatal for e in state.errors)


def test_silent_death_mid_weight_load_then_the_process_exits():
    tracker, _ = track("sglang_silent_death.log")
    state = tracker.state
    assert state.outcome == STARTING
    wl = state.phase("weight_load")
    assert not wl.done and wl.progress == pytest.approx(0.96) and wl.detail == "48/50"
    events = tracker.process_exited(None, 9, time.time())
    assert state.outcome == FAILED and wl.failed
    error = state.first_error
    assert error.kind == "killed" and "SIGKILL" in error.message and "48/50" in error.message
    assert [type(e) for e in events] == [ErrorFound]


def test_process_exit_after_ready_is_a_stop():
    tracker, _ = track("sglang_old_04.log")
    events = tracker.process_exited(0, None, time.time())
    assert tracker.state.outcome == STOPPED and isinstance(events[-1], Stopped)
    assert tracker.state.first_error is None


def test_process_exit_after_an_error_keeps_the_root_cause():
    tracker, _ = track("sglang_memoryerror.log")
    tracker.process_exited(1, None, time.time())
    assert tracker.state.first_error.kind == "MemoryError"
    assert tracker.state.errors[-1].kind == "exited"


def test_failed_phases_are_marked():
    tracker, _ = track("sglang_cuda_oom_graph.log")
    by = phases(tracker)
    assert tracker.state.outcome == FAILED
    assert by["cuda_graph"].failed and not by["cuda_graph"].done
    assert by["cuda_graph"].progress == pytest.approx(5 / 23)
    assert not by["memory_pool"].failed and by["memory_pool"].end_line == 9  # ended by its last rank


def test_restart_is_a_fresh_attempt():
    tracker, _ = track("sglang_attributeerror_tp8.log")
    assert tracker.state.outcome == FAILED
    old = tracker.state
    tracker.restart()
    assert tracker.state is not old and tracker.state.outcome == STARTING and tracker.state.errors == []
    assert tracker.needs_every_line  # detection starts over
    for n, raw in enumerate((FIXTURES / "sglang_old_04.log").read_bytes().split(b"\n")[:-1], 1):
        tracker.feed(make_line(n, 0, raw), AT)
    assert tracker.state.outcome == READY and tracker.state.server == "sglang"


def test_needs_every_line_until_detected_and_while_a_traceback_is_open():
    tracker = StartupTracker()
    assert tracker.needs_every_line
    tracker.feed(make_line(1, 0, b"[2026-02-22 23:38:50] server_args=ServerArgs(x=1)"), AT)
    assert not tracker.needs_every_line
    tracker.feed(make_line(2, 0, b"[2026-02-22 23:38:51 TP0] Scheduler hit an exception: Traceback (most recent call last):"), AT)
    assert tracker.needs_every_line
    tracker.feed(make_line(3, 0, b'  File "x.py", line 1, in f'), AT)
    tracker.feed(make_line(4, 0, b"    g()"), AT)
    tracker.feed(make_line(5, 0, b"ZeroDivisionError: division by zero"), AT)
    tracker.feed(make_line(6, 0, b"[2026-02-22 23:38:52 TP0] next record"), AT)
    assert not tracker.needs_every_line
    assert tracker.state.first_error.kind == "ZeroDivisionError"


def test_gives_up_detection_but_keeps_classifying_errors():
    tracker = StartupTracker()
    for n in range(1, 6002):
        tracker.feed(make_line(n, 0, b"some unrelated program output"), AT)
    assert tracker.state.server is None and not tracker.needs_every_line
    tracker.feed(make_line(7000, 0, b"Traceback (most recent call last):"), AT)  # line numbers may jump
    tracker.feed(make_line(7001, 0, b'  File "a.py", line 3, in <module>'), AT)
    tracker.feed(make_line(7002, 0, b"    import nonexistent"), AT)
    events = tracker.feed(make_line(7003, 0, b"ModuleNotFoundError: No module named 'nonexistent'"), AT)
    assert [e.error.kind for e in events if isinstance(e, ErrorFound)] == ["ModuleNotFoundError"]
    assert tracker.state.errors[0].line == 7000 and tracker.state.lines == 7003


def test_a_forced_profile_is_announced_on_the_first_line():
    tracker = StartupTracker(load_profile("vllm"))
    assert not tracker.needs_every_line
    events = tracker.feed(make_line(1, 0, b"hello"), AT)
    assert events == [ServerDetected("vllm", 1)]


def test_warnings_never_fail_a_startup():
    tracker = StartupTracker(load_profile("sglang"))
    lines = [
        b"[2026-02-22 23:38:50] server_args=ServerArgs(x=1)",
        b"/usr/lib/python3/site-packages/torch/x.py:12: UserWarning: TypedStorage is deprecated",
        b"  return self.fget.__get__(instance, owner)()",
        b"[2026-02-22 23:38:51] WARNING:  Invalid HTTP request received.",
        b"/x.py:3: DeprecationWarning: pkg_resources is deprecated as an API",
    ]
    events = []
    for n, raw in enumerate(lines, 1):
        events += tracker.feed(make_line(n, 0, raw), AT)
    assert [e.line for e in events if isinstance(e, WarningFound)] == [2, 4, 5]
    assert tracker.state.warnings == 3 and tracker.state.outcome == STARTING and tracker.state.errors == []


@pytest.mark.parametrize(
    ("server", "lines"),
    [
        (  # recent SGLang: "[ts] INFO file.py:NN: msg" mixed with "[ts] msg", milliseconds, a Ray prefix
            "sglang",
            [
                "[2026-02-22 23:38:50.001] INFO server_args.py:703: server_args={'model_path': 'm', 'tp_size': 2}",
                "(SchedulerActor pid=77, ip=10.0.0.2) [2026-02-22 23:38:57.120 TP1] Load weight begin. avail mem=78.12 GB",
                "[2026-02-22 23:38:57.123 TP0] INFO model_runner.py:1274: Load weight begin. avail mem=78.12 GB",
                "[2026-02-22 23:39:07.500 TP0] INFO model_runner.py:1373: Load weight end. elapsed=10.38 s, type=X, avail mem=8.0 GB, mem usage=70.1 GB.",
                "(SchedulerActor pid=77, ip=10.0.0.2) [2026-02-22 23:39:08.000 TP1] Load weight end. elapsed=10.88 s, type=X, avail mem=8.0 GB, mem usage=70.1 GB.",
                "[2026-02-22 23:39:10] The server is fired up and ready to roll!",
            ],
        ),
        (  # vLLM <= 0.7: no "[" before the file, no process tag
            "vllm",
            [
                "INFO 02-22 23:38:50 api_server.py:712] vLLM API server version 0.6.3",
                "INFO 02-22 23:38:55 model_runner.py:1056] Starting to load model m...",
                "INFO 02-22 23:39:05 model_runner.py:1067] Loading model weights took 14.9888 GB",
                "INFO 02-22 23:39:09 api_server.py:232] Starting vLLM API server on http://0.0.0.0:8000",
                "INFO:     Application startup complete.",
            ],
        ),
        (  # vLLM >= 0.31: the tag is part of the format; uvicorn untagged
            "vllm",
            [
                "(APIServer pid=1) INFO 02-22 23:38:50 [startup.py:20] vLLM server version 0.33.0, serving model m",
                "(EngineCore pid=2) INFO 02-22 23:38:55 [gpu_model_runner.py:4979] Starting to load model m...",
                "(EngineCore pid=2) INFO 02-22 23:39:05 [gpu_model_runner.py:5089] Model loading took 15.27 GiB memory and 10.123 seconds",
                "(APIServer pid=1) INFO 02-22 23:39:09 [entry.py:139] Starting vLLM server on http://0.0.0.0:8000",
                "INFO:     Application startup complete.",
            ],
        ),
    ],
)
def test_tolerant_of_other_versions_shapes(server, lines):
    tracker = StartupTracker()
    for n, text in enumerate(lines, 1):
        tracker.feed(make_line(n, 0, text.encode()), AT)
    state = tracker.state
    assert state.server == server and state.outcome == READY and state.ready_line == len(lines)
    wl = state.phase("weight_load")
    assert wl.done and wl.seconds == pytest.approx(10.0, abs=1.0)
    ends = [n for n, text in enumerate(lines, 1) if "Load weight end" in text or "weights took" in text or "loading took" in text]
    assert wl.start_line == 2 and wl.end_line == ends[-1]


def test_sglang_up_to_0_5_10_loads_the_draft_after_the_target_graphs():
    """Target load -> pool -> graph, then the draft's load -> pool -> graph (0.5.10 and older)."""
    log = []
    t = [0]

    def at(rank, msg, step=1):
        t[0] += step
        tag = f" TP{rank}" if rank is not None else ""
        log.append(f"[2026-02-22 10:{t[0] // 60:02d}:{t[0] % 60:02d}{tag}] {msg}")

    at(None, "server_args=ServerArgs(model_path='m', speculative_algorithm='EAGLE', tp_size=2)")
    for r in (1, 0):
        at(r, "Load weight begin. avail mem=78.00 GB")
    for r in (0, 1):
        at(r, "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.00 GB, mem usage=18.00 GB.", 10)
    for r in (0, 1):
        at(r, "KV Cache is allocated. #tokens: 500000, K size: 20.00 GB, V size: 20.00 GB", 2)
        at(r, "Memory pool end. avail mem=18.00 GB")
    for r in (1, 0):
        at(r, "Capture cuda graph begin. This can take up to several minutes. avail mem=17.90 GB")
    log.append("Capturing batches (bs=1 avail_mem=17.00 GB): 100%|██████████| 23/23 [00:10<00:00,  2.30it/s]")
    for r in (0, 1):
        at(r, "Capture cuda graph end. Time elapsed: 10.00 s. mem usage=0.90 GB. avail mem=17.00 GB.", 10)
    for r in (1, 0):  # the draft: nothing in these lines says so
        at(r, "Load weight begin. avail mem=17.00 GB", 2)
    for r in (0, 1):
        at(r, "Load weight end. type=LlamaForCausalLMEagle, dtype=torch.bfloat16, avail mem=16.00 GB, mem usage=1.00 GB.", 3)
        at(r, "KV Cache is allocated. #tokens: 500000, K size: 0.50 GB, V size: 0.50 GB")
        at(r, "Memory pool end. avail mem=15.00 GB")
    for r in (0, 1):
        at(r, "Capture draft cuda graph begin. This can take up to several minutes. avail mem=15.00 GB")
    log.append("Capturing batches (bs=1 avail_mem=14.50 GB): 100%|██████████| 23/23 [00:05<00:00,  4.60it/s]")
    for r in (1, 0):
        at(r, "Capture draft cuda graph end. Time elapsed: 5.00 s. mem usage=0.50 GB. avail mem=14.50 GB.", 5)
    at(0, "max_total_num_tokens=500000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=8192")
    at(None, "The server is fired up and ready to roll!", 5)

    tracker = StartupTracker()
    events = []
    for n, text in enumerate(log, 1):
        events += tracker.feed(make_line(n, 0, text.encode()), AT)
    by = phases(tracker)
    assert list(by) == ["server_args", "weight_load", "memory_pool", "cuda_graph", "draft_init", "ready"]
    assert (by["weight_load"].start_line, by["weight_load"].end_line) == (2, 5)
    assert (by["memory_pool"].start_line, by["memory_pool"].end_line) == (4, 9)
    assert (by["cuda_graph"].start_line, by["cuda_graph"].end_line) == (10, 14)
    assert (by["draft_init"].start_line, by["draft_init"].end_line, by["draft_init"].slowest_rank) == (15, 27, "TP0")
    assert by["draft_init"].progress == 1.0  # the draft's graph bar went to the draft
    ended = [e.phase for e in events if isinstance(e, PhaseEnded)]
    assert sorted(ended) == sorted(by)  # nothing reopened, nothing ended twice
    assert tracker.state.outcome == READY


def test_a_crash_after_the_graphs_ended_on_every_rank_leaves_them_ended():
    lines = [
        "[2026-02-22 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2)",
        "[2026-02-22 10:00:01 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=17.90 GB",
        "[2026-02-22 10:00:01 TP1] Capture cuda graph begin. This can take up to several minutes. avail mem=17.90 GB",
        "[2026-02-22 10:00:11 TP1] Capture cuda graph end. Time elapsed: 10.00 s. mem usage=0.90 GB. avail mem=17.00 GB.",
        "[2026-02-22 10:00:12 TP0] Capture cuda graph end. Time elapsed: 11.00 s. mem usage=0.90 GB. avail mem=17.00 GB.",
        "[2026-02-22 10:00:13 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "scheduler.py", line 1, in run',
        "    warmup()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    tracker = StartupTracker()
    for n, text in enumerate(lines, 1):
        tracker.feed(make_line(n, 0, text.encode()), AT)
    graph = tracker.state.phase("cuda_graph")
    assert graph.done and not graph.failed and (graph.end_line, graph.slowest_rank) == (5, "TP0")
    assert tracker.state.first_error.category == "cuda_error"


def test_memory_stays_bounded_however_many_errors_a_log_holds(monkeypatch):
    import tui.core.tracker as tracker_module

    monkeypatch.setattr(tracker_module, "MAX_ERRORS", 5)
    tracker = StartupTracker(load_profile("sglang"))
    tracker.feed(make_line(1, 0, b"[2026-02-22 23:38:50] server_args=ServerArgs(x=1)"), AT)
    for n in range(2, 62, 3):  # apart: adjacent lines of one failure would be one error with its lines
        tracker.feed(make_line(n, 0, b"RuntimeError: NCCL error in: foo.cpp:12, unhandled system error"), AT)
    state = tracker.state
    assert len(state.errors) == 5 and state.errors_dropped == 15
    assert state.first_error.line == 2 and state.outcome == FAILED


def _outline(tracker):
    s = tracker.state
    return (
        s.server, s.outcome, s.ready_line, s.warnings,
        [(p.name, p.start_line, p.end_line, p.seconds, len(p.ranks), p.slowest_rank, p.failed) for p in s.phases],
        [(e.line, e.kind, e.message, e.rank, e.fatal, e.secondary) for e in s.errors],
    )


@pytest.mark.parametrize("log", sorted(p.name for p in FIXTURES.glob("*.log")))
def test_every_fixture_gives_the_same_state_whatever_the_chunking(log):
    whole, _ = track(log)
    for chunk in (3, 61):
        pieces, _ = track(log, chunk=chunk, progress=True)
        assert _outline(pieces) == _outline(whole)
