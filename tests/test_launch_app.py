"""The launch loop from the keyboard, through Textual's pilot: R edits the env, r relaunches,
x stops (after asking), a lists attempts, q asks only while a launched server runs."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.support import screen_text, until
from tui.app import themes
from tui.app.header import VerdictHeader
from tui.app.launch_modals import ConfirmScreen, EditScreen
from tui.app.launcher import LaunchApp
from tui.cli import build_parser
from tui.commands.options import launch_options
from tui.commands.run import build_spec
from tui.history import History
from tui.launch.proctable import group_members, is_alive
from tui.wiring import make_launch

SIM = str(Path(__file__).with_name("server_sim.py"))
TOKEN = "hf_AppSecretToken987654321"
CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    """A private history; afterwards no server of the test is left running, even when it failed."""
    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path / "data"))
    yield
    for row in History().attempts():
        if row.pid and is_alive(row.pid):
            os.killpg(row.pid, signal.SIGKILL)


def make_app(tmp_path, *command: str) -> LaunchApp:
    args = build_parser().parse_args(
        ["run", "--name", "sim", "--log-dir", str(tmp_path / "logs"), "--env", f"HF_TOKEN={TOKEN}", "--gpus", "none",
         "--stop-grace", "2,2", "--", sys.executable, SIM, "--step", "0.01", "--echo-env", "HF_TOKEN", *command]
    )
    session, launch = make_launch(build_spec(args), launch_options(args))
    palettes = themes.discover()
    return LaunchApp(launch, session, palettes, themes.resolve(None, palettes).name, gpus_enabled=False)


async def until_logging(pilot, app) -> None:
    """Until the launched attempt runs and its log has begun."""
    await until(lambda: app.launch.run is not None and app.session.state.lines > 3, pilot=pilot)


async def test_fail_edit_env_relaunch_ready_stop_and_quit_from_the_keyboard(tmp_path):
    app = make_app(tmp_path, "--outcome", "raise", "--tp", "2")
    launch = app.launch
    async with app.run_test(size=(140, 45)) as pilot:
        await until(lambda: launch.verdict_now is not None and launch.verdict_now.final, pilot=pilot)
        await until(lambda: not launch.server_running, pilot=pilot)
        header = app.query_one(VerdictHeader)
        await until(lambda: header.verdict is not None and header.verdict.word == "FAILED", pilot=pilot)
        assert "ValueError" in header.verdict.detail

        await pilot.press("R")
        await until(lambda: isinstance(app.screen, EditScreen), pilot=pilot)
        env = app.screen.query_one("#env")
        assert env.text.strip() == "HF_TOKEN=****"  # the secret is not shown, even in the editor
        env.text = env.text + f"{CONTEXT_ENV}=1\n"
        await pilot.press("ctrl+s")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)  # what changes, before relaunching
        assert f"+{CONTEXT_ENV}=1" in app.screen.question and TOKEN not in app.screen.question
        await pilot.press("y")
        await until(lambda: launch.run is not None and launch.run.attempt == 2, pilot=pilot)
        await until(lambda: launch.verdict_now is not None and launch.verdict_now.final, pilot=pilot)
        assert launch.verdict_now.kind == "ready"
        assert launch.spec.env == {"HF_TOKEN": TOKEN, CONTEXT_ENV: "1"}  # the real token went to v2
        await until(lambda: header.verdict is not None and header.verdict.word == "READY", pilot=pilot)

        await pilot.press("a")
        await until(lambda: "v2 ✓ ready" in screen_text(app), pilot=pilot)  # the attempts panel is open
        lines = app.attempts_panel.lines()
        assert lines[0].startswith("v1 ✗ ValueError")
        assert lines[1].startswith("v2 ✓ ready") and f"+{CONTEXT_ENV}=1" in lines[1]
        shown = screen_text(app)
        assert "v1 ✗ ValueError" in shown and TOKEN not in shown and "HF_TOKEN=****" in shown
        app.output_dir = tmp_path / "out"
        await pilot.press("w")  # the plain-text report Watchtower writes
        await until(lambda: getattr(app, "last_report", None) is not None, pilot=pilot)
        report = app.last_report.read_text()
        assert TOKEN not in report and "Watchtower report" in report

        pids = group_members(launch.run.pgid)
        assert len(pids) >= 3
        await pilot.press("x")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        await pilot.press("escape")  # asked first: nothing is killed on a cancel
        await until(lambda: not isinstance(app.screen, ConfirmScreen), pilot=pilot)
        await pilot.pause()  # what the answer set off, if anything, has begun
        assert launch.stopping_since is None and launch.server_running and all(is_alive(p) for p in pids)

        await pilot.press("q")  # a launched server is running: q asks
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        await pilot.press("s")  # stop it, then quit
        await until(lambda: not launch.server_running, timeout=15, pilot=pilot)
    assert not any(is_alive(p) for p in pids) and group_members(launch.run.pgid) == []
    assert app.return_code == 0
    rows = History().attempts("sim")
    assert [r.summary.split()[1] for r in rows] == ["✗", "✓"]
    db = (Path(History().path)).read_bytes()
    assert TOKEN.encode() not in db


async def test_relaunch_of_a_running_attempt_asks_and_q_does_not_ask_once_it_is_gone(tmp_path):
    app = make_app(tmp_path, "--outcome", "hang")
    launch = app.launch
    async with app.run_test(size=(120, 40)) as pilot:
        await until_logging(pilot, app)
        first = launch.run
        await pilot.press("r")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        await pilot.press("y")
        await until(lambda: launch.run is not first and launch.run.attempt == 2, timeout=15, pilot=pilot)
        assert not first.alive and first.status.stopped_by_user
        await until(lambda: app.session.info.attempt == 2 and not app._busy, pilot=pilot)  # x waits for the relaunch
        await pilot.press("x")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        await pilot.press("y")
        await until(lambda: not launch.server_running, timeout=15, pilot=pilot)
        await until(lambda: launch.verdict_now is not None and launch.verdict_now.kind == "stopped", pilot=pilot)
        await launch.settle()
        lines = app.attempts_panel.lines()
        assert lines[0].startswith("v1 ■ stopped") and lines[1].startswith("v2 ■ stopped")  # not "✗ KeyboardInterrupt"
        await pilot.press("q")  # nothing left running: quits without asking
        await until(lambda: app.return_code is not None)
    assert app.return_code == 0


async def test_stop_shows_the_escalation_countdown_and_leaves_no_process(tmp_path):
    app = make_app(tmp_path, "--outcome", "hang", "--stubborn", "--tp", "2")
    app.launch.spec.plan = type(app.launch.spec.plan)(after_int=1.5, after_term=1.5)
    launch = app.launch
    async with app.run_test(size=(140, 40)) as pilot:
        await until_logging(pilot, app)
        pids = group_members(launch.run.pgid)
        await pilot.press("x")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        assert "SIGTERM after 1.5 s" in screen_text(app)  # the grace periods are said up front
        await pilot.press("y")
        await until(lambda: "SIGINT sent, SIGTERM in" in app.launch_line.render().plain, pilot=pilot)
        await until(lambda: "SIGTERM sent, SIGKILL in" in app.launch_line.render().plain, pilot=pilot)
        await until(lambda: not launch.server_running, timeout=10, pilot=pilot)
        assert "stopping:" not in app.launch_line.render().plain
        await until(lambda: app.query_one(VerdictHeader).verdict.word == "STOPPED", pilot=pilot)
        detail = app.query_one(VerdictHeader).verdict.detail
        assert detail == "stopped (SIGKILL after the grace period)"  # ours, after the grace: not the OOM killer
        assert "OOM" not in screen_text(app)
    assert not any(is_alive(p) for p in pids) and group_members(launch.run.pgid) == []


async def test_gpu_memory_held_by_others_is_listed_and_killed_with_k(tmp_path):
    import subprocess
    import time

    from tui.app.launch_modals import HoldersScreen
    from tui.core.events import GpuInfo, GpuProcess, GpuSample

    squatter = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    gib = 2**30
    app = make_app(tmp_path, "--outcome", "raise")
    launch = app.launch
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await until(lambda: launch.verdict_now is not None and launch.verdict_now.final, pilot=pilot)
            await until(lambda: not launch.server_running, pilot=pilot)
            app.session.handle(GpuSample("localhost", time.time(), (
                GpuInfo(0, memory_used=30 * gib, memory_total=80 * gib, processes=(GpuProcess(squatter.pid, 30 * gib),)),
            )))
            await pilot.press("r")  # the relaunch finds the GPU occupied and says by whom
            await until(lambda: isinstance(app.screen, HoldersScreen), pilot=pilot)
            shown = screen_text(app)
            assert f"pid {squatter.pid}" in shown and "GPU0 30.0 GiB" in shown and "time.sleep(60)" in shown
            assert launch.run.attempt == 1  # nothing was launched onto the busy GPU
            await pilot.press("k")
            await until(lambda: squatter.poll() is not None, timeout=10, pilot=pilot)
            app.session.handle(GpuSample("localhost", time.time(), (GpuInfo(0, memory_used=0, memory_total=80 * gib),)))
            await pilot.press("r")
            await until(lambda: launch.run.attempt == 2, pilot=pilot)
    finally:
        if squatter.poll() is None:
            squatter.kill()
        squatter.wait()


def test_the_edit_modal_keeps_secrets_the_user_left_masked():
    from tui.app.launch_modals import _unmask_argv, parse_env_lines

    original = ["serve", "--api-key", "sk-real-123456", "--tp", "8"]
    masked = ["serve", "--api-key", "****", "--tp", "8"]
    assert _unmask_argv(masked, original, masked) == original
    assert _unmask_argv(["serve", "--api-key", "****", "--tp", "4"], original, masked) == [
        "serve", "--api-key", "sk-real-123456", "--tp", "4"
    ]
    assert _unmask_argv(["serve", "--api-key", "sk-new-999999"], original, masked)[2] == "sk-new-999999"
    env = parse_env_lines(
        "HF_TOKEN=****\n# a comment\n\nSGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1\nEMPTY=\n", {"HF_TOKEN": TOKEN, "GONE": "x"}
    )
    assert env == {"HF_TOKEN": TOKEN, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "EMPTY": ""}  # GONE removed
    with pytest.raises(ValueError, match="line 1: expected NAME=VALUE"):
        parse_env_lines("no equals sign", {})
    with pytest.raises(ValueError, match="line 2"):
        parse_env_lines("A=1\n1BAD=2", {})


async def test_the_editor_labels_its_fields_keeps_the_command_and_shows_the_diff_first(tmp_path):
    app = make_app(tmp_path, "--outcome", "hang")
    launch = app.launch
    async with app.run_test(size=(140, 45)) as pilot:
        await until_logging(pilot, app)
        first = launch.run
        await pilot.press("R")
        await until(lambda: isinstance(app.screen, EditScreen), pilot=pilot)
        editor = app.screen
        labels = [str(w.render()) for w in editor.query(".label")]
        assert labels[0] == "Command line" and labels[1].startswith("Environment")
        command = editor.query_one("#command")
        assert app.focused is command and command.selection.is_empty
        before = command.value
        await pilot.press("tab")  # into the environment
        await pilot.press("shift+tab")  # back into the command: not selected, so typing adds to it
        assert app.focused is command and command.selection.is_empty
        await pilot.press("end", *" --tp 8")
        assert command.value == before + " --tp 8"
        await pilot.press("tab", "down", *"FOO=bar")
        await pilot.press("ctrl+s")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        question = app.screen.question
        assert "+--tp 8" in question and "+FOO=bar" in question and "HF_TOKEN" not in question
        assert "v1 is still running: it is stopped first" in question
        assert launch.run is first and first.alive  # nothing happened yet
        await pilot.press("e")  # edit again: what was typed is still there
        await until(lambda: isinstance(app.screen, EditScreen), pilot=pilot)
        assert app.screen.query_one("#command").value == before + " --tp 8"
        assert "FOO=bar" in app.screen.query_one("#env").text
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, EditScreen), pilot=pilot)
        await pilot.pause()  # what closing the editor set off, if anything, has begun
        assert launch.run is first and first.alive and launch.stopping_since is None


async def test_k_without_a_gpu_source_says_it_cannot_tell_and_offers_the_leftovers(tmp_path):
    """--gpus none: no all-clear. The attempt died and left its children: those are offered."""
    from tui.app.launch_modals import HoldersScreen

    app = make_app(tmp_path, "--outcome", "sigkill", "--orphans", "--tp", "2")
    launch = app.launch
    async with app.run_test(size=(140, 45)) as pilot:
        await until(lambda: launch.run is not None and not launch.run.alive, pilot=pilot)
        await until(lambda: len(group_members(launch.run.pgid)) == 2, pilot=pilot)
        orphans = group_members(launch.run.pgid)
        await pilot.press("k")
        await until(lambda: isinstance(app.screen, HoldersScreen), pilot=pilot)
        why = app.screen.why
        assert why.startswith("Cannot tell which processes hold GPU memory: there is no GPU source (--gpus none)")
        assert "No other process holds" not in why
        assert {h.pid for h in app.screen.holders} == set(orphans)
        await pilot.press("k")  # kill them
        await until(lambda: group_members(launch.run.pgid) == [], timeout=15, pilot=pilot)
        await pilot.press("k")  # nothing left of ours, still no all-clear
        await until(lambda: any("No process of an earlier attempt" in n.message for n in app._notifications),  # noqa: SLF001
                    pilot=pilot)
        notes = [n.message for n in app._notifications]  # noqa: SLF001
        assert any(m.startswith("Cannot tell which processes hold GPU memory") and "No process of an earlier attempt" in m
                   for m in notes), notes
        assert not any("No other process holds GPU memory" in m for m in notes)


async def test_q_after_the_launched_server_died_offers_to_stop_the_ranks_it_left(tmp_path):
    """Issue 34 item 5 for a launch: the server's main process killed, its ranks (in the attempt's
    process group) keep running; `q` names them and stops them on `s` before quitting."""
    app = make_app(tmp_path, "--outcome", "sigkill", "--orphans", "--pid-file", str(tmp_path / "sim.pids"))
    launch = app.launch
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: launch.verdict_now is not None and launch.verdict_now.final, pilot=pilot)
        ranks = [int(p) for p in (tmp_path / "sim.pids").read_text().split()[1:]]
        assert launch.verdict_now.kind == "dead" and ranks and all(is_alive(p) for p in ranks)
        await pilot.press("q")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        for i, pid in enumerate(ranks):  # named as `watch` names a dead server's ranks
            assert f"pid {pid} [TP{i}] (sglang::scheduler_TP{i} -c" in app.screen.question
        await pilot.press("s")
        await until(lambda: not app.is_running, timeout=15, pilot=pilot)
    assert not any(is_alive(p) for p in ranks)
    assert app.return_value == 1


async def test_the_attempts_panel_shows_a_history_write_that_lands_after_the_verdict(tmp_path):
    """The attempt's row (its outcome, first error) is what the history stored. With another
    program holding the history, the phase-times write waits for the lock and the outcome's write
    waits behind it: both land after the verdict, and the open panel shows them when they land."""
    import sqlite3

    go = tmp_path / "go"  # the server goes on once the test holds the lock
    server = ("import os, sys, time\n"
              "print(\"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/m', tp_size=1)\", flush=True)\n"
              "print('[2026-03-14 21:04:11] Load weight begin. avail mem=78.00 GB', flush=True)\n"
              f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
              "print('[2026-03-14 21:04:20] Load weight end. elapsed=9.01 s, type=LlamaForCausalLM, avail mem=62.10 GB,'\n"
              "      ' mem usage=15.90 GB.', flush=True)\n"
              "time.sleep(0.5)\n"  # (the phase times' write is asked for first, and waits for the lock)
              "print('Traceback (most recent call last):\\n  File \"/srv/x.py\", line 3, in <module>\\n'\n"
              "      'ValueError: the context is too long', flush=True)\n"
              "sys.exit(1)\n")
    args = build_parser().parse_args(["run", "--name", "sim", "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
                                      "--", sys.executable, "-c", server])
    session, launch = make_launch(build_spec(args), launch_options(args))
    palettes = themes.discover()
    app = LaunchApp(launch, session, palettes, themes.resolve(None, palettes).name, gpus_enabled=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("a")
        await until(lambda: launch.record is not None and launch.record.pid is not None and not app._busy, pilot=pilot)
        locker = sqlite3.connect(History().path, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")  # another program holds the history (a `history` in another pane)
        go.touch()
        try:
            await until(lambda: "FAILED" in screen_text(app) and not launch.server_running, pilot=pilot)
            await pilot.pause()
            assert "v1 … starting" in screen_text(app), app.attempts_panel.lines()  # not stored yet: as the history has it
        finally:
            locker.execute("COMMIT")
            locker.close()
        await until(lambda: "v1 ✗ ValueError" in screen_text(app), pilot=pilot)  # the writes landed: redrawn
