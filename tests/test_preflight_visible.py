"""Issue 20, item 8: the preflight's warnings can be read in the dashboard (c, named on the row
and in the footer); a 20000 open-files limit is no alarm; a `timeout … watchtower run …` wrapper
is not a leftover server."""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
from pathlib import Path

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.test_launch_app import data_dir  # noqa: F401  (data_dir: a private history, autouse)
from tests.support import run_cli, screen_text, until
from tui.app import themes
from tui.app.launcher import LaunchApp
from tui.cli import build_parser
from tui.commands.options import launch_options
from tui.commands.run import build_spec
from tui.core import cmdline
from tui.sources.probe import probe_local
from tui.wiring import make_launch

ROOT = Path(__file__).resolve().parent.parent
SIM = str(ROOT / "tests" / "server_sim.py")


async def test_every_preflight_warning_can_be_read_in_the_dashboard(tmp_path):
    args = build_parser().parse_args(
        ["run", "--name", "warned", "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--stop-grace", "2,2",
         "--", sys.executable, SIM, "--outcome", "hang", "--tp", "2", "--step", "0.01"]
    )
    session, launch = make_launch(build_spec(args), launch_options(args))
    palettes = themes.discover()
    app = LaunchApp(launch, session, palettes, themes.resolve(None, palettes).name, gpus_enabled=False)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: launch.run is not None and session.state.lines > 3, pilot=pilot)
        warned = [c for c in launch.preflight_report.checks if c.status == "warn"]
        assert len(warned) >= 2  # not a server command line; --gpus none
        await until(lambda: " c  Checks " in screen_text(app), pilot=pilot)  # the footer names the key
        row = next(line for line in screen_text(app).splitlines() if "preflight" in line)
        assert "⚠ preflight" in row and "[c]" in row
        assert not app.checks_panel.has_class("-open")
        await pilot.press("c")
        await until(lambda: app.checks_panel.has_class("-open"), pilot=pilot)
        for check in warned:
            assert f"  {check.line}" in app.checks_panel.lines()
        await launch.stop()


def check_with_nofile(limit: int) -> str:
    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    out = run_cli("check", "--gpus", "none", "--", sys.executable, "-c", "pass", preexec_fn=lower)
    return next(line.strip() for line in out.stdout.splitlines() if "open files" in line)


def test_an_open_files_limit_of_20000_is_no_alarm_and_1024_is():
    assert check_with_nofile(20000).startswith("✓ open files: limit 20000 (hard 20000): enough for thousands")
    assert check_with_nofile(1024).startswith("⚠ open files: limit 1024")


def test_a_timeout_wrapper_around_watchtower_run_is_not_a_leftover_server(tmp_path):
    fake = tmp_path / "bin" / "watchtower"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    wrapper = subprocess.Popen(["timeout", "-s", "KILL", "60", str(fake), "run", "--name", "x", "--",
                                "python", "-m", "sglang.launch_server", "--model-path", "/models/m"])
    try:
        facts = asyncio.run(probe_local(cmdline.parse([sys.executable, "-c", "pass"], {})))
        pids = {p["pid"] for p in facts.get("processes") or []}
        assert wrapper.pid not in pids
    finally:
        wrapper.kill()
        wrapper.wait()
