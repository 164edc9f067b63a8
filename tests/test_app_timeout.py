"""`watch --timeout` in the dashboard: the TIMEOUT verdict, exit status 3 on q; refused when not positive."""

from __future__ import annotations


from tests.app_support import fixed_session
from tests.support import run_cli, until
from tui.app.dashboard import build_app
from tui.app.header import VerdictHeader
from tui.session import WatchSession
from tui.sources.local import LocalTailer

HALF = (
    "[2026-03-14 21:04:10] server_args={'model_path': '/models/m', 'tp_size': 1}\n"
    "[2026-03-14 21:04:13 TP0] Load weight begin. avail mem=139.26 GB\n"
)


async def test_the_dashboard_times_out_and_q_exits_3(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(HALF)
    session = WatchSession(log=LocalTailer(log), timeout=0.5)
    app = build_app(session, output_dir=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: session.limits.timed_out)
        await pilot.pause()
        header = app.query_one(VerdictHeader)
        header.refresh()
        await pilot.pause()
        assert header.verdict.word == "TIMEOUT" and "still starting" in header.verdict.detail
        assert "weight load" in header.verdict.detail
        with log.open("a") as f:  # ready after the deadline: still a timed-out watch, as --plain
            f.write("[2026-03-14 21:05:13] The server is fired up and ready to roll!\n")
        await until(lambda: session.state.outcome == "ready")
        await pilot.press("q")
    assert app.return_value == 3


async def test_no_timeout_once_ready(tmp_path):
    session = fixed_session((HALF + "[2026-03-14 21:05:13] The server is fired up and ready to roll!\n").encode())
    session.limits.timeout = 0.2  # (before it starts: its deadline is set then)
    app = build_app(session, output_dir=tmp_path)  # (started: its deadline runs)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.4)  # past the deadline (time passing is what is tested)
        assert not session.limits.timed_out and session.verdict().word == "READY"
        await pilot.press("q")
    assert app.return_value == 0


def test_a_timeout_that_is_not_positive_is_refused_by_the_dashboard_too(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(HALF)
    done = run_cli("watch", str(log), "--timeout", "0", timeout=30)
    assert done.returncode == 2 and "--timeout: expected a finite number greater than 0" in done.stderr


async def test_the_dashboard_of_several_nodes_times_out_too(tmp_path):
    """The node set keeps its own ``--timeout`` deadline, as one node's session does (the app sets none)."""
    from functools import partial

    from tui.cluster import ClusterSession, NodeSpec, default_session

    specs = []
    for name in ("n1", "n2"):
        (tmp_path / f"{name}.log").write_text(HALF)
        specs.append(NodeSpec(name, str(tmp_path / f"{name}.log"), None, "none"))
    nodes = ClusterSession(specs, make_session=partial(default_session, gpu_interval=0.1))
    nodes.timeout = 0.5
    app = build_app(None, output_dir=tmp_path, nodes=nodes)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: nodes.timed_out)
        await pilot.pause()
        assert app.verdict().word == "TIMEOUT" and "still starting" in app.verdict().detail
        await pilot.press("q")
    assert app.return_value == 3
