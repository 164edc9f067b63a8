"""The cluster dashboard through App.run_test(): barrier view, node rows, merged log, n filter."""

from __future__ import annotations

from functools import partial

from tests.test_cluster_core import node_log
from tui.app.cluster import ClusterApp
from tui.cluster import ClusterSession, NodeSpec, default_session


def text_of(app, selector: str) -> str:
    return str(app.query_one(selector).render())


async def wait_until(pilot, predicate, tries: int = 200) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("the dashboard never showed it")


async def test_the_barrier_view_names_the_laggard_and_n_filters_the_log_by_node(tmp_path):
    n1, n2 = tmp_path / "n1.log", tmp_path / "n2.log"
    n1.write_text("\n".join(node_log(["TP0", "TP1"], until="graph_begin")) + "\n")
    n2.write_text("\n".join(node_log(["TP2", "TP3"], until="dist_begin")) + "\n")
    session = ClusterSession(
        [NodeSpec("n1", str(n1), gpus="sim"), NodeSpec("n2", str(n2), gpus="sim")],
        make_session=partial(default_session, gpu_interval=0.1),
    )
    app = ClusterApp(session)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: "2/4" in text_of(app, "#barrier"))
        barrier = text_of(app, "#barrier").splitlines()
        dist = next(line for line in barrier if "dist-init done" in line)
        # node 2's ranks began their distributed init and never ended it: each is a pair
        assert "2/4" in dist and "waiting: n2 TP2" in dist and "Init torch distributed begin." in dist, dist
        graphs = next(line for line in barrier if "CUDA graphs done" in line)
        assert "waiting: n2 TP2" in graphs and "also n2 TP3, n1 TP0" in graphs
        await wait_until(pilot, lambda: text_of(app, "#nodes").count("GiB") >= 2)
        nodes = text_of(app, "#nodes").splitlines()
        assert [line.split()[0] for line in nodes[1:3]] == ["n1", "n2"]
        assert "STARTING: dist-init done: 2/4 ranks · waiting for n2 TP2" in text_of(app, "#header")
        log = app.query_one("#log")
        await wait_until(pilot, lambda: len(log.lines) == session.merged.total)
        both = {str(line.text).split()[0] for line in log.lines}
        assert both == {"n1", "n2"}
        await pilot.press("n")
        assert app.node_filter == "n1"
        assert {str(line.text).split()[0] for line in log.lines} == {"n1"}
        await pilot.press("n", "n")
        assert app.node_filter is None
        assert {str(line.text).split()[0] for line in log.lines} == {"n1", "n2"}


def test_lines_arriving_together_are_merged_by_their_timestamps():
    from tui.cluster import MergedLog
    from tui.core.events import LogChunk
    from tui.session import WatchSession

    nodes = {"n1": WatchSession(), "n2": WatchSession()}
    nodes["n1"].handle(LogChunk("n1", 0, b"[2026-01-01 10:00:01] a1\n[2026-01-01 10:00:03] a3\n", 0.0))
    nodes["n2"].handle(LogChunk("n2", 0, b"[2026-01-01 10:00:02] b2\ncontinued\n[2026-01-01 10:00:04] b4\n", 0.0))
    merged = MergedLog()
    assert merged.pull(nodes) == 5
    assert [(line.node, line.text.split()[-1]) for line in merged.view()] == [
        ("n1", "a1"), ("n2", "b2"), ("n2", "continued"), ("n1", "a3"), ("n2", "b4"),
    ]
    assert merged.view()[2].ts == "2026-01-01 10:00:02"  # a line without a timestamp keeps its node's
    nodes["n1"].handle(LogChunk("n1", 0, b"[2026-01-01 10:00:00] late\n", 0.0))
    assert merged.pull(nodes) == 1  # only what is new; arrived later, so below
    assert merged.view("n1")[-1].text.endswith("late") and merged.total == 6


def test_each_node_has_its_own_verdict_loading_stalled_dead():
    from tui.cluster import ClusterSession
    from tui.core.events import GpuInfo, GpuSample, LogChunk
    from tui.core.options import NodeSpec
    from tui.session import WatchSession
    from tui.core.limits import StallLimits  # a 5-minute limit (the profile allows weight loading 20)

    now = [1000.0]
    clock = lambda: now[0]  # noqa: E731 (a stopped clock the test moves)
    cluster = ClusterSession(
        [NodeSpec(n, f"/{n}.log") for n in ("n1", "n2", "n3")], make_session=lambda spec: WatchSession(clock=clock, stall_limits=StallLimits(300.0)),
        clock=clock,
    )
    cluster.launched = True  # processes of ours: quiet logs are weighed against the GPUs
    loading = b"[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.12 GB\n"
    for name in cluster.nodes:
        cluster.nodes[name].handle(LogChunk(name, 0, loading, now[0]))
    assert {cluster.node_verdict(n).kind for n in cluster.nodes} == {"starting"}
    for second in range(0, 400, 10):  # n1's GPUs keep filling; n2's stay flat
        now[0] = 1000.0 + second
        for name, used in (("n1", second * 2**28), ("n2", 2**30)):
            gpu = GpuInfo(0, memory_used=used, memory_total=2**40, utilization=0)
            cluster.nodes[name].handle(GpuSample(name, now[0], (gpu,)))
    cluster.node_died("n3", "exited with code 1")
    assert cluster.node_verdict("n1").kind == "loading"
    assert cluster.node_verdict("n2").kind == "stalled?"
    dead = cluster.node_verdict("n3")
    assert (dead.kind, dead.detail) == ("dead", "exited with code 1")
    assert cluster.verdict().text == "DEAD on n3: exited with code 1"
    cluster.launched = False  # servers not launched by us, no process known: the log and the GPUs say it
    stalled = cluster.node_verdict("n2")
    assert stalled.kind == "stalled?" and "its process alive" not in stalled.detail
    assert cluster.node_verdict("n1").kind == "loading"


async def test_a_flood_is_drawn_newest_first_and_says_what_it_left_out(tmp_path):
    from tui.app.cluster import DRAW_AT_ONCE

    n1 = tmp_path / "n1.log"
    n1.write_text("".join(f"[2026-01-01 10:00:00] line {i}\n" for i in range(3000)))
    session = ClusterSession([NodeSpec("n1", str(n1))], make_session=default_session)
    app = ClusterApp(session)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: session.merged.total == 3000)
        await pilot.press("n")  # redraw: the newest lines of n1
        log = app.query_one("#log")
        texts = [str(line.text) for line in log.lines]
        assert len(texts) == DRAW_AT_ONCE + 1
        assert texts[0].startswith(f"… {3000 - DRAW_AT_ONCE} lines not drawn here")
        assert texts[-1].rstrip().endswith("line 2999")
        assert "log: n1 only" in text_of(app, "#header")
