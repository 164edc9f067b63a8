"""tui.core.cluster: the barrier view and the verdict of one startup across nodes (real tracker)."""

from __future__ import annotations

import asyncio
import dataclasses

from tests.support import updates_of
from tui.core.cluster import NodeStatus, barrier, laggard, roles, verdict
from tui.core.lines import LineAssembler
from tui.core.profiles import load_profile
from tui.core.tracker import StartupTracker
from tui.core.verdict import DEAD, READY, STARTING, Verdict

SGLANG = load_profile("sglang")


def node_log(ranks: list[str], *, until: str, second: int = 0, then_raise: bool = False, node_rank: int = 0) -> list[str]:
    """An SGLang multi-node startup of these (global) ranks, up to and including ``until``. As
    SGLang does, only node_rank 0 serves and prints the ready line: a worker's log ends after
    its CUDA graphs."""
    ts = f"2026-02-22 23:39:{second:02d}"
    steps = [
        ("dist_begin", [f"[{ts} {r}] Init torch distributed begin." for r in ranks]),
        ("dist_end", [f"[{ts} {r}] Init torch distributed ends. mem usage=0.1 GB" for r in ranks]),
        ("load_begin", [f"[{ts} {r}] Load weight begin. avail mem=78.12 GB" for r in ranks]),
        ("load_end", [f"[{ts} {r}] Load weight end. elapsed=6.91 s, type=X, avail mem=70.40 GB, mem usage=7.72 GB." for r in ranks]),
        ("pool", [f"[{ts} {r}] Memory pool end. avail mem=19.80 GB" for r in ranks]),
        ("graph_begin", [f"[{ts} {r}] Capture cuda graph begin. This can take up to several minutes." for r in ranks]),
        ("graph_end", [f"[{ts} {r}] Capture cuda graph end. Time elapsed: 9.60 s. mem usage=0.61 GB." for r in ranks]),
        ("ready", [f"[{ts}] The server is fired up and ready to roll!"] if node_rank == 0 else []),
    ]
    lines = [f"[{ts}] server_args=ServerArgs(model_path='/models/m', tp_size=4, nnodes=2, node_rank={node_rank})"]
    for name, block in steps:
        lines += block
        if name == until:
            break
    if then_raise:
        lines += [
            f"[{ts} {ranks[0]}] Scheduler hit an exception: Traceback (most recent call last):",
            f'[{ts} {ranks[0]}]   File "/sgl/srt/managers/scheduler.py", line 2406, in run_scheduler_process',
            f"[{ts} {ranks[0]}] RuntimeError: NCCL error: unhandled system error",
        ]
    return lines


async def wait_outcome(session, wanted: set[str], timeout: float = 60.0):
    """Until a ClusterSession's verdict is one of ``wanted`` (woken by its updates); the verdict."""
    changed = updates_of(session)
    async with asyncio.timeout(timeout):
        while session.verdict().kind not in wanted:
            changed.clear()
            await changed.wait()
    return session.verdict()


def status(name: str, lines: list[str], quiet_for: float | None = 1.0) -> NodeStatus:
    tracker = StartupTracker(SGLANG)
    assembler = LineAssembler()
    for item in assembler.feed(("\n".join(lines) + "\n").encode()):
        tracker.feed(item, 0.0)
    tracker.finish()
    return NodeStatus(name, tracker.state, quiet_for=quiet_for)


def test_node_2_stuck_in_dist_init_is_the_laggard_of_every_milestone():
    nodes = [
        status("n1", node_log(["TP0", "TP1"], until="ready"), quiet_for=0.5),
        status("n2", node_log(["TP2", "TP3"], until="dist_begin"), quiet_for=42.0),
    ]
    rows = barrier(nodes)
    assert [r.milestone for r in rows] == ["dist_init", "weight_load", "memory_pool", "cuda_graph", "ready"]
    first = rows[0]
    assert (first.reached, first.total) == (2, 4)
    assert [m.label for m in first.missing] == ["n2 TP2", "n2 TP3"]
    assert first.missing[0].last_text.endswith("Init torch distributed begin.")
    assert first.missing[0].quiet_for == 42.0
    row, who = laggard(nodes)
    assert (row.milestone, who.label) == ("dist_init", "n2 TP2")
    assert verdict(nodes).text == "STARTING: dist-init done: 2/4 ranks · waiting for n2 TP2"


def test_the_furthest_behind_comes_first_then_the_quietest():
    nodes = [
        status("n1", node_log(["TP0"], until="load_begin"), quiet_for=3.0),
        status("n2", node_log(["TP1"], until="graph_begin"), quiet_for=1.0),
        status("n3", node_log(["TP2"], until="load_begin"), quiet_for=9.0),
    ]
    rows = {r.milestone: r for r in barrier(nodes)}
    assert [m.label for m in rows["weight_load"].missing] == ["n3 TP2", "n1 TP0"]
    assert [m.label for m in rows["cuda_graph"].missing] == ["n3 TP2", "n1 TP0", "n2 TP1"]
    assert rows["memory_pool"].reached == 1


def test_a_healthy_two_node_sglang_startup_is_ready_though_the_worker_never_prints_ready():
    nodes = [status(f"n{i + 1}", node_log([f"TP{2 * i}", f"TP{2 * i + 1}"], until="ready", node_rank=i)) for i in (0, 1)]
    assert nodes[1].state.ready_line is None and nodes[1].state.outcome == "starting"  # as the real worker's log
    rows = barrier(nodes)
    assert rows and all(r.done for r in rows)
    assert laggard(nodes) is None
    v = verdict(nodes)
    assert (v.kind, v.text) == ("ready", "READY: n1 serving, n2 worker past CUDA graphs")
    assert v.exit_status == 0


def test_ready_waits_for_the_serving_nodes_health_answer_as_one_log_does():
    """Its ready line is half of READY with --health: the serving node's own verdict (waiting for the
    URL to answer) is the attempt's until it answers."""
    nodes = [status(f"n{i + 1}", node_log([f"TP{2 * i}", f"TP{2 * i + 1}"], until="ready", node_rank=i)) for i in (0, 1)]
    waiting = Verdict(STARTING, "ready marker seen; waiting for http://n1:30000/health to answer", ("health check",))
    nodes[0] = dataclasses.replace(nodes[0], verdict=waiting)
    v = verdict(nodes)
    assert (v.kind, v.node) == ("starting", "n1") and "waiting for http://n1:30000/health" in v.text
    nodes[0] = dataclasses.replace(nodes[0], verdict=Verdict(READY, "ready"))
    assert verdict(nodes).text == "READY: n1 serving, n2 worker past CUDA graphs"


def test_ready_waits_for_a_worker_still_capturing_graphs():
    nodes = [status("n1", node_log(["TP0"], until="ready")),
             status("n2", node_log(["TP1"], until="graph_begin", node_rank=1))]
    v = verdict(nodes)
    assert v.kind == "starting" and "n2 still setting up" in v.text
    assert not barrier(nodes)[-1].done


def test_the_node_rank_in_the_log_names_the_serving_node_whatever_the_order():
    worker = status("a", node_log(["TP2"], until="ready", node_rank=1))
    head = status("b", node_log(["TP0"], until="ready"))
    assert roles([worker, head]) == {"a": "worker", "b": "serving"}
    assert verdict([worker, head]).text == "READY: b serving, a worker past CUDA graphs"
    # a declared role (the cluster file) wins over the order when the log names none
    bare = [dataclasses.replace(head, state=dataclasses.replace(head.state, identity={})),
            dataclasses.replace(worker, state=dataclasses.replace(worker.state, identity={}), role="serving")]
    assert roles(bare) == {"b": "worker", "a": "serving"}


def test_a_node_whose_process_is_gone_is_named_even_before_its_log_says_anything():
    nodes = [status("n1", node_log(["TP0"], until="load_begin")),
             dataclasses.replace(status("n2", node_log(["TP1"], until="load_begin", node_rank=1)),
                                 verdict=Verdict(DEAD, "main process pid 42 is gone, exit status unknown"))]
    v = verdict(nodes)
    assert (v.kind, v.node) == ("dead", "n2")
    assert v.text == "DEAD on n2: main process pid 42 is gone, exit status unknown"
    assert v.exit_status == 1


def test_a_node_that_is_out_is_named_as_such_in_the_barrier_not_waited_for():
    from tui.app.nodes import barrier_text
    from tui.app.themes import discover
    from tui.present.plain import barrier_lines

    nodes = [status("n1", node_log(["TP0"], until="load_begin")),
             dataclasses.replace(status("n2", node_log(["TP1"], until="dist_begin", node_rank=1)),
                                 verdict=Verdict(DEAD, "exited with code 127"))]
    row = next(r for r in barrier(nodes) if not r.done)
    assert [(lag.node, lag.out) for lag in row.missing] == [("n2", "dead")]
    later = next(r for r in barrier(nodes) if r.milestone != row.milestone and not r.done)
    assert {lag.node: lag.out for lag in later.missing} == {"n2": "dead", "n1": None}  # n1 may yet get there
    drawn = barrier_text(barrier(nodes), 120, next(iter(discover().values()))).plain
    assert "n2 TP1 dead" in drawn and "waiting: n2" not in drawn
    assert "not yet: n2 TP1 (dead, line " in barrier_lines(barrier(nodes))[0]


def test_the_first_failure_on_any_node_is_the_attempts_failure_node_and_rank_named():
    nodes = [
        status("n1", node_log(["TP0", "TP1"], until="load_begin")),
        status("n2", node_log(["TP2", "TP3"], until="load_begin", then_raise=True)),
    ]
    v = verdict(nodes)
    assert v.kind == "failed" and v.node == "n2"
    assert v.text.startswith("FAILED on n2: TP2 · line ")
    assert "NCCL error" in v.text


def test_a_node_past_dist_init_but_not_yet_loading_is_past_the_milestone():
    nodes = [
        status("n1", node_log(["TP0", "TP1"], until="dist_end")),
        status("n2", node_log(["TP2", "TP3"], until="dist_begin"), quiet_for=30.0),
    ]
    dist = barrier(nodes)[0]
    assert (dist.milestone, dist.reached, dist.total) == ("dist_init", 2, 4)
    assert [m.label for m in dist.missing] == ["n2 TP2", "n2 TP3"]


VLLM = load_profile("vllm")


def vllm_node(node_rank: int, workers: int, *, loading: bool, pid: int) -> list[str]:
    """A vLLM 0.11-shaped node of a TP run across nodes: each worker's distributed init under
    its bare "(Worker pid=N)" tag, then (``loading``) its weight load as Worker_TP<global>."""
    world = 2 * workers
    lines = []
    if node_rank == 0:
        lines += [
            "(APIServer pid=100) INFO 03-18 14:03:50 [api_server.py:1805] vLLM API server version 0.11.0",
            f"(APIServer pid=100) INFO 03-18 14:03:50 [utils.py:233] non-default args: {{'model': '/models/m', 'tensor_parallel_size': {world}, 'nnodes': 2}}",
            "(EngineCore_DP0 pid=143) INFO 03-18 14:03:58 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='/models/m'",
        ]
    ranks = [node_rank * workers + local for local in range(workers)]
    for local, rank in enumerate(ranks):
        lines.append(f"(Worker pid={pid + local}) INFO 03-18 14:04:03 [parallel_state.py:1203] world_size={world} rank={rank} "
                     f"local_rank={local} distributed_init_method=tcp://10.0.0.1:29500 backend=nccl")
    if not loading:
        return lines
    for local, rank in enumerate(ranks):
        lines.append(f"(Worker pid={pid + local}) INFO 03-18 14:04:05 [parallel_state.py:1411] rank {rank} in world size {world} "
                     f"is assigned as DP rank 0, PP rank 0, TP rank {rank}, EP rank {rank}")
    for local, rank in enumerate(ranks):
        lines.append(f"(Worker_TP{rank} pid={pid + local}) INFO 03-18 14:04:06 [gpu_model_runner.py:3562] Starting to load model /models/m...")
    return lines


def vllm_status(name: str, lines: list[str], quiet_for: float = 1.0) -> NodeStatus:
    tracker = StartupTracker(VLLM)
    for item in LineAssembler().feed(("\n".join(lines) + "\n").encode()):
        tracker.feed(item, 0.0)
    tracker.finish()
    return NodeStatus(name, tracker.state, quiet_for=quiet_for)


def test_vllm_workers_across_two_nodes_are_node_worker_pairs_one_per_worker():
    head = vllm_status("n1", vllm_node(0, 2, loading=True, pid=201))
    dist = head.state.phase("dist_init")
    # the worker's early "(Worker pid=201)" lines and its later "(Worker_TP0 pid=201)" are one rank
    assert set(dist.ranks) == {"Worker_TP0", "Worker_TP1"} and dist.done
    assert set(head.state.phase("weight_load").ranks) == {"Worker_TP0", "Worker_TP1"}
    stuck = vllm_status("n2", vllm_node(1, 2, loading=False, pid=201), quiet_for=40.0)  # same pids, other node
    rows = barrier([head, stuck])
    first = rows[0]
    # the API server and the engine core load nothing: not ranks; each node's workers are
    assert (first.milestone, first.reached, first.total) == ("dist_init", 2, 4)
    assert [m.label for m in first.missing] == ["n2 Worker pid=201", "n2 Worker pid=202"]
    assert "world_size=4 rank=3 local_rank=1" in stuck.state.last_text
    loading = vllm_status("n2", vllm_node(1, 2, loading=True, pid=201))
    rows = barrier([head, loading])
    assert rows[0].done and rows[1].total == 4
    assert sorted(m.label for m in rows[1].missing) == ["n1 Worker_TP0", "n1 Worker_TP1", "n2 Worker_TP2", "n2 Worker_TP3"]


def test_a_rank_still_loading_weights_while_it_captures_graphs_has_not_passed_the_weight_load():
    """Phases overlap (SGLang's startup weight load runs on while the graphs capture): a rank that
    began a later phase has not passed one still under way on it."""
    ts = "2026-02-22 23:39:00"
    lines = [f"[{ts}] server_args=ServerArgs(model_path='/models/m', tp_size=2)"]
    for step in ("Load weight begin. avail mem=78.12 GB", "Memory pool end. avail mem=19.80 GB",
                 "Capture target decode CUDA graph begin. backend=fa3, num_tokens_per_req=1, avail mem=19.80 GB"):
        lines += [f"[{ts} TP{r}] {step}" for r in (0, 1)]
    rows = {r.milestone: r for r in barrier([status("n1", lines)])}
    assert [m.label for m in rows["weight_load"].missing] == ["n1 TP0", "n1 TP1"]
    lines += [f"[{ts} TP{r}] Load weight end. Committed real weights after CUDA graph capture in 41.20 s "
              "(capture overlap window 30.10 s, startup overlap total 38.00 s)" for r in (0, 1)]
    rows = {r.milestone: r for r in barrier([status("n1", lines)])}
    assert rows["weight_load"].done and rows["memory_pool"].done and not rows["cuda_graph"].done
