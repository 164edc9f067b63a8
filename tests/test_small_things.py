"""Issue 20, item 10, the smaller ones: the environment editor adds a new line, the log's line count
is the attempt's, notices name absolute paths, singular words, the demo's title is no verdict."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.app_support import fixed_session, make_app
from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.test_launch_app import data_dir, make_app as launch_app, until_logging  # noqa: F401
from tests.support import screen_text, until
from tests.test_tmux import demo
from tui.app.app import LogStatus
from tui.app.launch_modals import ConfirmScreen, EditScreen

ONE_LINE_ERROR = (b"[2026-03-14 21:04:10] server_args=ServerArgs(tp_size=2)\n"
                  b"[2026-03-14 21:04:21 TP0] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")


async def test_typing_into_the_environment_adds_a_variable_and_glues_nothing(tmp_path):
    app = launch_app(tmp_path, "--outcome", "hang")
    async with app.run_test(size=(120, 40)) as pilot:
        await until_logging(pilot, app)
        await pilot.press("R")
        await until(lambda: isinstance(app.screen, EditScreen), pilot=pilot)
        await pilot.press("tab", *"FOO=bar")  # straight in, no cursor moves
        assert app.screen.query_one("#env").text == "HF_TOKEN=****\nFOO=bar"
        await pilot.press("ctrl+s")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        question = app.screen.question
        assert "+FOO=bar" in question and "HF_TOKEN" not in question  # the token is kept, not replaced
        await pilot.press("escape")
        await app.launch.stop()


async def test_the_log_status_counts_the_attempts_lines_as_its_numbers_do(tmp_path):
    app = launch_app(tmp_path, "--outcome", "raise", "--tp", "2")
    launch = app.launch
    async with app.run_test(size=(140, 40)) as pilot:
        await until(lambda: launch.verdict_now is not None and launch.verdict_now.final and not launch.server_running, pilot=pilot)
        first = app.session.scrollback.end_seq
        await pilot.press("r")
        await until(lambda: launch.attempt == 2 and launch.verdict_now is not None and launch.verdict_now.final
                    and not launch.server_running and app.session.info.attempt == 2, pilot=pilot)
        await pilot.pause()
        scrollback = app.session.scrollback
        last = scrollback.get(scrollback.end_seq - 1).number
        assert last < scrollback.end_seq and scrollback.end_seq > first
        status = app.query_one(LogStatus).render().plain
        assert f" Log {last:,} lines in v2 ({scrollback.end_seq:,} with earlier attempts)" in status, status


async def test_copy_and_report_notices_say_one_line_and_an_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = make_app(fixed_session(ONE_LINE_ERROR), tmp_path=Path("out"))
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.pause()
        await pilot.press("e", "y")
        await until(lambda: any(" 1 line" in n.message for n in app._notifications), pilot=pilot)  # noqa: SLF001
        copied = next(n.message for n in app._notifications if " 1 line" in n.message)  # noqa: SLF001
        assert " 1 line (cuda_oom, line 2)" in copied and "lines" not in copied.split("(")[0], copied
        status = app.query_one(LogStatus).render().plain
        assert "2 lines · 1 error" in status and "1 errors" not in status, status
        await pilot.press("w", "s")
        await until(lambda: app.last_report is not None and app.last_screenshot is not None, pilot=pilot)
        said = [n.message for n in app._notifications]  # noqa: SLF001
        assert f"Report written: {tmp_path / 'out'}/watchtower-report-" in " ".join(said), said
        assert f"Screenshot saved: {tmp_path / 'out'}/watchtower-" in " ".join(said), said


@pytest.mark.tmux
def test_the_demo_header_names_the_scenario_as_a_scenario():
    term = demo(120, 35, "--scenario", "ready", "--speed", "1")
    try:
        screen = term.wait_for("STARTING")
        top = screen.splitlines()[0]
        assert "simulated demo · scenario 'ready'" in top and "demo: ready" not in screen
    finally:
        term.close()


async def test_the_footer_shows_the_keys_that_matter_now(tmp_path):
    """w once the startup failed; k while a process that is not ours holds GPU memory; F and c
    (tests/test_launch_refused.py, tests/test_preflight_visible.py) while they apply."""
    import subprocess
    import time

    from tui.core.events import GpuInfo, GpuProcess, GpuSample

    app = make_app(fixed_session(ONE_LINE_ERROR.split(b"\n")[0] + b"\n"))  # the server args line alone: starting
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.pause()
        assert " w  Report " not in screen_text(app)
    app = make_app(fixed_session(ONE_LINE_ERROR))
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.pause()
        assert app.verdict().kind == "failed" and " w  Report " in screen_text(app)

    squatter = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    app = launch_app(tmp_path, "--outcome", "hang")
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await until_logging(pilot, app)
            assert "Kill GPU leftovers" not in screen_text(app)
            app.session.handle(GpuSample("localhost", time.time(), (GpuInfo(
                0, memory_used=30 << 30, memory_total=80 << 30, processes=(GpuProcess(squatter.pid, 30 << 30),)),)))
            await until(lambda: " k  Kill GPU leftovers " in screen_text(app), pilot=pilot)
            await app.launch.stop()
    finally:
        squatter.kill()
        squatter.wait()
