"""The key map (`[keys]` in the config file) moves every key the dashboard has: the launcher's
(stop, relaunch, the fix, the checks …) and the node view's `o` too; the default key then does
nothing, `?` and the footer show the mapped key, and so do the words that name it. Through the real
app (`App.run_test()`), a real launch of the server simulator, and a real node set."""

from __future__ import annotations

import re

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.test_app_cluster import cluster
from tests.test_cluster_core import node_log
from tests.support import screen_text, until
from tests.test_launch_app import data_dir, until_logging  # noqa: F401  (data_dir: autouse)
from tests.test_launch_app import make_app as sim_app
from tests.test_launch_refused import header, refused_app
from tui.app.app import LogStatus
from tui.app.dashboard import build_app
from tui.app.launch_modals import ConfirmScreen, EditScreen
from tui.commands.config import load
from tui.core.config import Config, activate, active


@pytest.fixture
def key_map(tmp_path):
    """Activate a config file's ``[keys]`` (as the command line does), the config before it afterwards."""
    before = active()

    def use(text: str) -> dict[str, str]:
        path = tmp_path / "config.toml"
        path.write_text(f"[keys]\n{text}")
        config: Config = load(str(path), {})
        activate(config)
        return config.keys

    yield use
    activate(before)


async def settled(pilot) -> None:
    await pilot.pause()
    await pilot.pause()


async def test_the_launchers_keys_follow_the_key_map_in_keys_help_and_words(tmp_path, key_map):
    key_map('apply_fix = "Z"\nchecks = "C"\nstop = "X"\nhelp = "h"\n')
    app = refused_app(tmp_path)  # a launch its preflight refuses: a fix to apply, the checks panel open
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: header(app).verdict is not None and header(app).verdict.word == "REFUSED", pilot=pilot)
        await until(lambda: "[Z] apply" in screen_text(app), pilot=pilot)  # the header offers the mapped key
        shown = screen_text(app)
        assert "[F] apply" not in shown and "Checks (C closes)" in shown
        assert app.checks_panel.lines()[0].endswith("(Z applies a fix, --no-check launches anyway)")
        assert ("Z", "Z", "Apply fix") in app.footer_entries() and "F" not in [e[0] for e in app.footer_entries()]

        await pilot.press("F", "c")  # the default keys: nothing opens, nothing closes
        await settled(pilot)
        assert not isinstance(app.screen, EditScreen) and app.checks_panel.has_class("-open")
        await pilot.press("C")
        await settled(pilot)
        assert not app.checks_panel.has_class("-open")

        await pilot.press("h")
        await settled(pilot)
        rows = dict(app.key_rows())
        assert rows["Z"] == "the relaunch editor with the hint's fix applied" and rows["C"] == "the preflight checks panel"
        assert rows["X"].startswith("stop the server") and rows["r"].startswith("relaunch")  # unmapped: as before
        assert not {"F", "c", "x", "?"} & set(rows)
        help_text = screen_text(app)
        assert re.search(r"│\s*Z\s+the relaunch editor with the hint's fix applied", help_text), help_text
        assert re.search(r"│\s*X\s+stop the server", help_text) and re.search(r"│\s*h\s+this help", help_text)
        await pilot.press("escape")
        await pilot.press("Z")
        await until(lambda: isinstance(app.screen, EditScreen), pilot=pilot)  # the mapped key applies the fix


async def test_stop_moved_to_another_key_stops_the_launched_server(tmp_path, key_map):
    key_map('stop = "X"\nrelaunch = "j"\n')
    app = sim_app(tmp_path, "--outcome", "hang")
    launch = app.launch
    async with app.run_test(size=(140, 40)) as pilot:
        await until_logging(pilot, app)
        await until(lambda: ("X", "X", "Stop server") in app.footer_entries(), pilot=pilot)
        await pilot.press("x", "r")  # no longer the launcher's
        await settled(pilot)
        assert not isinstance(app.screen, ConfirmScreen) and launch.server_running
        await pilot.press("X")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        await pilot.press("y")
        await until(lambda: not launch.server_running, timeout=15, pilot=pilot)
        await until(lambda: launch.verdict_now is not None and launch.verdict_now.kind == "stopped", pilot=pilot)
        assert launch.run.attempt == 1  # r relaunched nothing
        await pilot.press("q")
    assert app.return_code == 0


async def test_the_node_views_key_follows_the_key_map(tmp_path, key_map):
    key_map('next_node = "O"\n')
    session = cluster(tmp_path, {"n1": node_log(["TP0", "TP1"], until="load_begin"),
                                 "n2": node_log(["TP2", "TP3"], until="load_begin", node_rank=1)})
    app = build_app(None, nodes=session)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: len(session.nodes) == 2 and app.selected == "n1", timeout=30, pilot=pilot)
        status = app.query_one(LogStatus)
        assert "all nodes (O: one node)" in str(status.render())
        await pilot.press("o")
        await settled(pilot)
        assert app.node_filter is None
        await pilot.press("O")
        await settled(pilot)
        assert app.node_filter == "n1" and "n1 only (O: next node)" in str(status.render())
        await pilot.press("O")
        await settled(pilot)
        assert app.node_filter == "n2" and app.session is session.nodes["n2"]
        assert ("O", "the log of one node, then the next, then every node's") in app.key_rows()
