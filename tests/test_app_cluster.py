"""Several nodes in the one dashboard (WatchtowerApp with a ClusterSession) through App.run_test():
the barrier and node rows, the merged log with its node column, `o` one node at a time — and
every key of the one-node dashboard, for one node or two."""

from __future__ import annotations

from functools import partial

import pytest

from tests.support import screen_text, until
from tests.test_cluster_core import node_log
from tui.app.dashboard import build_app
from tui.cluster import ClusterSession, NodeSpec, default_session


def text_of(app, selector: str) -> str:
    return str(app.query_one(selector).render())


def cluster(tmp_path, logs: dict[str, list[str]], gpus: str = "none") -> ClusterSession:
    specs = []
    for name, lines in logs.items():
        path = tmp_path / f"{name}.log"
        path.write_text("\n".join(lines) + "\n")
        specs.append(NodeSpec(name, str(path), gpus=gpus))
    return ClusterSession(specs, make_session=partial(default_session, gpu_interval=0.1))


def log_nodes(app) -> set[str]:
    """The node column of the log lines on screen."""
    view = app.log_view
    entries = (view.entry_at(row) for row in range(view.row_count))
    return {entry.node for entry in entries if entry is not None}


async def test_the_barrier_view_names_the_laggard_and_o_shows_one_node_at_a_time(tmp_path):
    session = cluster(tmp_path, {"n1": node_log(["TP0", "TP1"], until="graph_begin"),
                                 "n2": node_log(["TP2", "TP3"], until="dist_begin", node_rank=1)}, gpus="sim")
    app = build_app(None, nodes=session)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(lambda: "2/4" in text_of(app, "#barrier"), timeout=30, pilot=pilot)
        barrier = text_of(app, "#barrier").splitlines()
        dist = next(line for line in barrier if "dist-init done" in line)
        assert not any(line.lstrip().startswith("✓") for line in barrier)  # no milestone everyone passed yet
        # node 2's ranks began their distributed init and never ended it: each is a pair
        assert "2/4" in dist and "waiting: n2 TP2" in dist and "Init torch distributed begin." in dist, dist
        graphs = next(line for line in barrier if "CUDA graphs done" in line)
        assert "waiting: n2 TP2" in graphs and "also n2 TP3, n1 TP0" in graphs
        await until(lambda: text_of(app, "#nodes").count("GiB") >= 2, timeout=30, pilot=pilot)
        nodes = text_of(app, "#nodes").splitlines()
        assert [line.split()[0].lstrip("▸") for line in nodes[1:3]] == ["n1", "n2"]
        await until(lambda: "waiting for n2 TP2" in screen_text(app), timeout=30, pilot=pilot)
        assert "STARTING" in screen_text(app) and "dist-init done: 2/4 ranks · waiting for n2 TP2" in screen_text(app)
        await until(lambda: log_nodes(app) == {"n1", "n2"}, timeout=30, pilot=pilot)  # the merged log, a node column
        await pilot.press("o")
        assert app.node_filter == "n1" and log_nodes(app) == {""}  # n1's own log: no column needed
        assert app.log_view.session is session.nodes["n1"]
        await pilot.press("o")
        assert app.node_filter == "n2" and app.session is session.nodes["n2"]  # its panels too
        await pilot.press("o")
        assert app.node_filter is None and log_nodes(app) == {"n1", "n2"}


def test_lines_are_merged_by_their_timestamps_in_each_servers_format():
    from tui.cluster import MergedScrollback
    from tui.core.events import LogChunk
    from tui.session import WatchSession

    nodes = {"n1": WatchSession(), "n2": WatchSession(), "n3": WatchSession(), "n4": WatchSession()}
    merged = MergedScrollback(nodes)
    nodes["n1"].handle(LogChunk("n1", 0, b"[2026-01-01 10:00:01] a1\n[2026-01-01 10:00:03] a3\n", 0.0))
    nodes["n2"].handle(LogChunk("n2", 0, b"[2026-01-01 10:00:02] b2\ncontinued\n[2026-01-01 10:00:04] b4\n", 0.0))
    assert merged.pull() == 5
    assert [(line.node, line.text.split()[-1]) for line in merged.view()] == [
        ("n1", "a1"), ("n2", "b2"), ("n2", "continued"), ("n1", "a3"), ("n2", "b4"),
    ]
    nodes["n1"].handle(LogChunk("n1", 0, b"[2026-01-01 10:00:00] late\n", 0.0))
    assert merged.pull() == 1  # only what is new; stamped before its node's last line: kept after it (n1's order)
    assert [line.text.split()[-1] for line in merged.view()[-3:]] == ["a3", "late", "b4"] and merged.end_seq == 6
    # vLLM's and TensorRT-LLM's prefixes are timestamps too (the year a vLLM line leaves out: the
    # year it arrived in, or the one before for a date still to come this year)
    nodes["n3"].handle(LogChunk("n3", 0, b"(APIServer pid=9) INFO 12-31 23:59:59 [api.py:1] c1\n", 0.0))
    nodes["n4"].handle(LogChunk("n4", 0, b"[01/01/2020-00:00:00] [TRT-LLM] [I] d0\n", 0.0))
    assert merged.pull() == 2  # older than every line there: on top, by time
    assert [line.text.split()[-1] for line in merged.view()[:3]] == ["d0", "c1", "a1"]


def test_a_nodes_backlog_pulled_after_anothers_goes_where_its_times_put_it():
    """Each node's existing log arrives in its own pull (its own tailer, its own flush): the second
    node's backlog is not a block below the first's, but interleaved by time from the first line. A
    line without a time keeps its place after its node's previous line, even with another node's
    line of the same second between them in arrival; a node's lines before its first time go with
    that time."""
    from tui.cluster import MergedScrollback
    from tui.core.events import LogChunk
    from tui.session import WatchSession

    nodes = {"n1": WatchSession(), "n2": WatchSession()}
    merged = MergedScrollback(nodes)
    nodes["n1"].handle(LogChunk("n1", 0, b"[2026-01-01 10:00:01] a1\n[2026-01-01 10:00:03] a3\n"
                                         b"[2026-01-01 10:00:05] a5\n", 0.0))
    assert merged.pull() == 3
    nodes["n2"].handle(LogChunk("n2", 0, b"banner\n[2026-01-01 10:00:02] b2\n[2026-01-01 10:00:03] b3\n"
                                         b"[2026-01-01 10:00:04] b4\n", 0.0))
    assert merged.pull() == 4
    nodes["n1"].handle(LogChunk("n1", 0, b"Traceback of a5\n", 0.0))
    nodes["n2"].handle(LogChunk("n2", 0, b"[2026-01-01 10:00:05] b5\n", 0.0))
    assert merged.pull() == 2
    nodes["n1"].handle(LogChunk("n1", 0, b"  more of a5's traceback\n", 0.0))  # after n2's b5 came
    assert merged.pull() == 1
    assert [(e.node, e.text.split()[-1]) for e in merged.view()] == [
        ("n1", "a1"), ("n2", "banner"), ("n2", "b2"), ("n1", "a3"), ("n2", "b3"), ("n2", "b4"),
        ("n1", "a5"), ("n1", "a5"), ("n1", "traceback"), ("n2", "b5"),
    ]
    assert [e.seq for e in merged.entries()] == list(range(10))  # read as a Scrollback: seqs in order
    assert merged.widest(merged.end_seq) >= len("  more of a5's traceback")  # measured where it went


async def test_a_log_that_appears_later_is_merged_by_time_from_its_first_line(tmp_path):
    """Real files, each tailed by its own node: n2's log appears (its node reached, its file written
    whole) after n1's lines are shown; n2's lines go among n1's by time, not below them as a block."""
    from tests.support import until

    n1 = [f"[2026-01-01 10:00:{s:02d}] n1 line {s}" for s in range(0, 40, 2)]
    n2 = [f"[2026-01-01 10:00:{s:02d}] n2 line {s}" for s in range(1, 40, 2)]
    session = cluster(tmp_path, {"n1": n1})
    session.add_node(NodeSpec("n2", str(tmp_path / "n2.log"), gpus="none"))
    session.start()
    try:
        await until(lambda: len(session.merged) == 20, timeout=30, seen=lambda: len(session.merged))
        (tmp_path / "n2.log").write_text("\n".join(n2) + "\n")
        await until(lambda: len(session.merged) == 40, timeout=30, seen=lambda: len(session.merged))
        seconds = [int(entry.text.split()[-1]) for entry in session.merged.view()]
        assert seconds == list(range(40))
    finally:
        await session.stop()


#: A header line of each server's at second ``s`` of 2026-01-01 10:00 (vLLM's without its year),
#: from rank ``r``: the timestamps as each server prints them.
HEADER = {
    "sglang": "[2026-01-01 10:00:{s:02d} TP{r}] {msg}",
    "vllm": "(Worker_TP{r} pid=10{r}) INFO 01-01 10:00:{s:02d} [gpu_model_runner.py:1] {msg}",
    "trtllm": "[01/01/2026-10:00:{s:02d}] [TRT-LLM] [RANK {r}] [I] {msg}",
}


def merged_nodes(logs: dict[str, list[str]], arrived: float):
    """Nodes whose logs arrive in one batch each (at ``arrived``), merged."""
    from tui.cluster import MergedScrollback
    from tui.core.events import LogChunk
    from tui.session import WatchSession

    nodes = {name: WatchSession(clock=lambda: arrived) for name in logs}
    for name, lines in logs.items():
        nodes[name].handle(LogChunk(name, 0, "".join(f"{line}\n" for line in lines).encode(), arrived))
    merged = MergedScrollback(nodes)
    merged.pull()
    return merged


@pytest.mark.parametrize("server", sorted(HEADER))
def test_two_nodes_lines_arriving_in_one_batch_interleave_by_time_and_a_traceback_stays_with_its_header(server):
    from datetime import datetime

    line = HEADER[server].format
    merged = merged_nodes({
        "a": [line(s=1, r=0, msg="a1"), line(s=3, r=0, msg="a3"),
              "Traceback (most recent call last):", '  File "/srv/engine.py", line 7, in run',
              "RuntimeError: the lease taken at 2026-01-01 10:00:59 ran out"],  # a date, but no header's
        "b": [line(s=2, r=1, msg="b2"), line(s=4, r=1, msg="b4"), line(s=5, r=1, msg="b5")],
    }, arrived=datetime(2026, 1, 1, 10, 1).timestamp())
    assert [(entry.node, entry.text.split()[-1]) for entry in merged.view()] == [
        ("a", "a1"), ("b", "b2"), ("a", "a3"), ("a", "last):"), ("a", "run"), ("a", "out"),
        ("b", "b4"), ("b", "b5"),
    ]


def test_a_yearless_vllm_line_from_december_read_in_january_sorts_before_new_years_lines():
    from datetime import datetime

    merged = merged_nodes({
        "sglang": ["[2021-01-01 00:00:01 TP0] Load weight begin."],
        "vllm": ["(EngineCore pid=8) INFO 12-31 23:59:58 [core.py:1] old year", "(EngineCore pid=8) INFO 01-01 00:00:02 [core.py:1] new year"],
    }, arrived=datetime(2021, 1, 1, 0, 0, 5).timestamp())  # the year the lines arrived in, not the clock's
    assert [entry.text.split()[-1] for entry in merged.view()] == ["year", "begin.", "year"]
    assert merged.view()[0].text.endswith("old year")


def test_a_servers_own_timestamp_format_from_its_profile_orders_the_merged_log(tmp_path):
    """A user's profile for a server that prints Go's ``2026/01/02 15:04:05``: no built-in reads it."""
    from tui.cluster import MergedScrollback
    from tui.core.events import LogChunk
    from tui.core.profiles import load_profile
    from tui.session import WatchSession

    (tmp_path / "goserver.toml").write_text(
        'name = "goserver"\ntitle = "a Go server"\n[prefix]\n'
        "headers = ['^(?P<ts>\\d{4}/\\d{2}/\\d{2} \\d{2}:\\d{2}:\\d{2}) (?P<msg>.*)$']\n"
        'timestamp = "%Y/%m/%d %H:%M:%S"\n'
    )
    profile = load_profile(tmp_path / "goserver.toml")
    nodes = {name: WatchSession(profile=profile) for name in ("g1", "g2")}
    nodes["g1"].handle(LogChunk("g1", 0, b"2026/01/01 10:00:01 g1 first\n2026/01/01 10:00:03 g1 second\n", 0.0))
    nodes["g2"].handle(LogChunk("g2", 0, b"2026/01/01 10:00:02 g2 first\n", 0.0))
    merged = MergedScrollback(nodes)
    merged.pull()
    assert [entry.text.split(maxsplit=2)[-1] for entry in merged.view()] == ["g1 first", "g2 first", "g1 second"]


def test_each_node_has_its_own_verdict_loading_stalled_dead():
    from tui.core.events import GpuInfo, GpuSample, LogChunk
    from tui.core.limits import StallLimits  # a 5-minute limit (the profile allows weight loading 20)
    from tui.session import WatchSession

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


@pytest.mark.parametrize("count", [1, 2])
async def test_every_key_works_the_same_for_one_node_or_two(tmp_path, count):
    """e lands on the failure (on whichever node), / and n find, f filters, y copies the block,
    w and s write their files, t changes the theme, ? helps: as on the one-log dashboard."""
    logs = {"n1": node_log(["TP0", "TP1"], until="load_begin", then_raise=count == 1)}
    if count == 2:
        logs["n2"] = node_log(["TP2", "TP3"], until="load_begin", then_raise=True, node_rank=1)
    session = cluster(tmp_path, logs)
    app = build_app(None, nodes=session, output_dir=tmp_path)
    failing = "n1" if count == 1 else "n2"
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: app.verdict().kind == "failed", timeout=30, pilot=pilot)
        await until(lambda: "FAILED" in screen_text(app) and f"on {failing}" in screen_text(app), timeout=30, pilot=pilot)
        await pilot.press("e")
        entry = app.log_view.current_entry()
        assert entry is not None and entry.style == "error" and "RuntimeError: NCCL error" in entry.text  # the exception line
        assert entry.node == (failing if count == 2 else "n1")
        await pilot.press("y")
        await until(lambda: any("3 lines" in n.message for n in app._notifications), timeout=30, pilot=pilot)
        await pilot.press("slash", *"Load weight", "enter")
        found = app.log_view.current_entry()
        assert found is not None and "Load weight begin" in found.text
        await pilot.press("f")
        rows = [app.log_view.entry_at(r) for r in range(app.log_view.row_count)]
        assert rows and all(r.style in ("error", "phase", "mark") for r in rows if r is not None)
        await pilot.press("w")
        await until(lambda: app.last_report is not None, timeout=30, pilot=pilot)
        report = app.last_report.read_text()
        assert "FAILED" in report and "NCCL error" in report
        await pilot.press("s", "t")
        assert list(tmp_path.glob("watchtower-*.svg")) and app.palette.name != "dark"
        await pilot.press("question_mark")
        assert "next error" in screen_text(app)


async def test_each_node_remembers_its_startups_phase_times_as_one_logs_watch_does(tmp_path, monkeypatch):
    """The stall limits of the next watch come from the phase times of earlier ones (same server,
    model and TP size): for each node of a `watch --cluster` as for one log's watch."""
    from tui.core.options import ClusterOptions, GpuOptions
    from tui.history import History
    from tui.history.watched import log_key
    from tui.wiring import make_cluster

    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path / "data"))
    logs = {f"n{i + 1}": node_log([f"TP{2 * i}", f"TP{2 * i + 1}"], until="ready", node_rank=i) for i in (0, 1)}
    specs = []
    for name, lines in logs.items():
        (tmp_path / f"{name}.log").write_text("\n".join(lines) + "\n")
        specs.append(NodeSpec(name, str(tmp_path / f"{name}.log")))
    options = ClusterOptions(nodes=tuple(specs), gpus=GpuOptions(kind="none"))

    first = make_cluster(options)
    first.start()
    history = History(tmp_path / "data" / "history.sqlite3")
    try:  # the serving node's startup ended READY: it is recorded (a worker's never ends, as a real worker's)
        await until(lambda: first.nodes["n1"].state.outcome == "ready")
        key = log_key(first.nodes["n1"].state)
        await until(lambda: history.log_phase_longest(key), what="a recorded startup")
    finally:
        await first.stop()
    second = make_cluster(options)
    second.start()
    try:
        await until(lambda: all("weight_load" in node.limits.expected for node in second.nodes.values()),
                    what="each node's expected phase times", seen=lambda: {n: s.limits.expected for n, s in second.nodes.items()})
    finally:
        await second.stop()



def test_the_elapsed_time_never_goes_back_when_lines_come_late():
    """Lines written while the node was out of reach arrive together after the reconnect: the
    clock read from them must not set the elapsed time back."""
    from datetime import datetime

    from tui.core.events import LogChunk
    from tui.session import WatchSession

    start = datetime(2026, 1, 1, 10, 0, 0).timestamp()
    now = [start]
    session = WatchSession(clock=lambda: now[0])
    session.handle(LogChunk("n1", 0, b"[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.12 GB\n", now[0]))
    now[0] = start + 30  # out of reach for 30 s: the clock goes on
    before = session.startup_elapsed()
    assert before == 30
    session.handle(LogChunk("n1", 0, b"[2026-01-01 10:00:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.0 GB, mem usage=18.1 GB.\n", now[0]))
    assert session.startup_elapsed() >= before


def test_the_headers_elapsed_time_is_the_attempts_whichever_node_is_shown():
    from datetime import datetime

    from tui.core.events import LogChunk
    from tui.session import WatchSession

    start = datetime(2026, 1, 1, 10, 0, 0).timestamp()
    clock = lambda: start + 100  # noqa: E731 (a stopped clock)
    attempt = ClusterSession([NodeSpec(n, f"/{n}.log") for n in ("n1", "n2")],
                             make_session=lambda spec: WatchSession(clock=clock), clock=clock)
    end = b" Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.0 GB, mem usage=18.1 GB.\n"
    attempt.nodes["n1"].handle(LogChunk("n1", 0, b"[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.12 GB\n"
                                              b"[2026-01-01 10:01:40 TP0]" + end, start))
    attempt.nodes["n2"].handle(LogChunk("n2", 0, b"[2026-01-01 10:01:00 TP1] Load weight begin. avail mem=78.12 GB\n"
                                              b"[2026-01-01 10:01:40 TP1]" + end, start))
    assert attempt.startup_elapsed() == attempt.nodes["n1"].startup_elapsed() > attempt.nodes["n2"].startup_elapsed()


END = " Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.0 GB, mem usage=18.1 GB."


async def test_the_header_shows_the_attempts_elapsed_time_with_the_second_node_selected(tmp_path):
    from tests.support import until

    n1 = ["[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.12 GB", f"[2026-01-01 10:05:00 TP0]{END}"]
    n2 = ["[2026-01-01 10:04:00 TP1] Load weight begin. avail mem=78.12 GB", f"[2026-01-01 10:05:00 TP1]{END}"]
    session = cluster(tmp_path, {"n1": n1, "n2": n2})
    app = build_app(None, nodes=session)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: len(session.merged) == 4, timeout=30, pilot=pilot)
        await pilot.press("o", "o")  # n2's own log and panels
        assert app.selected == "n2"
        app.query_one("#header").refresh()
        await pilot.pause()
        header = text_of(app, "#header")
        assert "elapsed 5:0" in header, header  # n1 began the attempt 5 minutes ago in log time; n2 1 minute


async def test_the_panels_follow_the_node_in_trouble_until_the_operator_picks_one(tmp_path):
    """n2 fails while n1 (listed first) is fine: its timeline, ranks and GPUs are shown without a
    key; once the operator picks a node with `o`, the panels stay on it."""
    from tests.support import until

    session = cluster(tmp_path, {"n1": node_log(["TP0", "TP1"], until="load_begin"),
                                 "n2": node_log(["TP2", "TP3"], until="load_begin", then_raise=True, node_rank=1)})
    app = build_app(None, nodes=session)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: app.verdict().kind == "failed", timeout=30, pilot=pilot)
        await until(lambda: app.selected == "n2", timeout=30, pilot=pilot, seen=lambda: app.selected)
        assert app.query_one("#timeline").session is session.nodes["n2"]
        await pilot.press("o")  # the operator picks n1
        assert app.selected == "n1" and app.node_chosen
        session.judging.last = None  # the verdict pushed again (as each new decision is)
        session.judging.evaluate()
        await pilot.pause()
        assert app.selected == "n1"


async def test_the_line_under_the_cursor_stays_in_view_when_a_backlog_goes_above_it(tmp_path):
    """The operator scrolled up and put the cursor on one of n1's lines (a search); n2's log then
    appears, its lines older by time: they go above and between the lines on screen. The line under
    the cursor is still that line, on the same row of the screen, and the lines above it on screen
    are still lines that came before it (not a view shifted down by what was put above)."""
    n1 = [f"[2026-01-01 10:{s // 60:02d}:{s % 60:02d}] n1 line {s}" for s in range(0, 240, 2)]
    n2 = [f"[2026-01-01 10:{s // 60:02d}:{s % 60:02d}] n2 line {s}" for s in range(1, 240, 2)]
    session = cluster(tmp_path, {"n1": n1})
    session.add_node(NodeSpec("n2", str(tmp_path / "n2.log"), gpus="none"))
    app = build_app(None, nodes=session)
    async with app.run_test(size=(120, 35)) as pilot:
        view = app.log_view
        await until(lambda: len(session.merged) == 120, timeout=30, pilot=pilot)
        await pilot.press("slash", *"n1 line 100", "enter")
        await until(lambda: view.current_entry() is not None, pilot=pilot)
        looked_at = view.current_entry()
        assert looked_at.text.endswith("n1 line 100") and not view.follow
        screen_row = view.row_of(view.cursor) - round(view.scroll_y)
        (tmp_path / "n2.log").write_text("\n".join(n2) + "\n")
        await until(lambda: len(session.merged) == 240, timeout=30, pilot=pilot)
        await pilot.pause()
        entry = view.current_entry()
        assert entry is not None and entry.text == looked_at.text, entry
        assert view.row_of(view.cursor) - round(view.scroll_y) == screen_row  # on the same row of the screen
        assert not view.follow
        top = view.entry_at(round(view.scroll_y))
        assert top is not None and int(top.text.split()[-1]) < 100, top  # what is above it came before it


async def test_a_quiet_cluster_dashboard_reads_its_nodes_once_a_second_for_the_verdict_and_the_panels(tmp_path):
    """At rest the dashboard's clock judges the attempt and draws the barrier and node rows from one
    reading of the nodes each second; the node set's own clock, which read them again, stands down
    (issue 35: an 8-node dashboard at rest read every node twice a second)."""
    session = cluster(tmp_path, {"n1": node_log(["TP0", "TP1"], until="graph_begin"),
                                 "n2": node_log(["TP2", "TP3"], until="dist_begin", node_rank=1)})
    app = build_app(None, nodes=session)
    async with app.run_test(size=(140, 40)) as pilot:
        await until(lambda: "2/4" in text_of(app, "#barrier"), timeout=30, pilot=pilot)
        reads, at_ticks = [0], []
        read_nodes, tick = session._log_statuses, session.tick

        def counted_read():
            reads[0] += 1
            return read_nodes()

        def counted_tick():
            at_ticks.append(reads[0])  # the reads before this second's
            tick()

        session._log_statuses, session.tick = counted_read, counted_tick
        await until(lambda: len(at_ticks) >= 4, timeout=30, pilot=pilot)
        per_second = [b - a for a, b in zip(at_ticks[1:], at_ticks[2:])]
        assert per_second == [1] * len(per_second), at_ticks
        assert "waiting for n2 TP2" in screen_text(app)  # (judged all the same)
        # the node set's own clock has ended: nothing of it wakes each second any more
        assert all(task.done() for task in session._tasks if task.get_coro().__name__ == "_tick")
