"""Issue 20, item 1: a `run` its preflight refuses is its own verdict — REFUSED with the first ✗ in
the header, every ✗ and ⚠ readable in the checks panel, F applying the check's fix, exit 1 (the
dashboard and --plain agree)."""

from __future__ import annotations

import subprocess
import sys

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.test_check import free_port, sglang_command, write_model, write_sglang
from tests.test_launch_app import data_dir, screen_text, until  # noqa: F401  (data_dir: a private history, autouse)
from tui.app import themes
from tui.app.header import VerdictHeader
from tui.app.launch_modals import ConfirmScreen, EditScreen
from tui.app.launcher import LaunchApp
from tui.cli import build_parser
from tui.commands.options import launch_options
from tui.commands.run import build_spec
from tui.history import History
from tui.wiring import make_launch

CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


def seed_command(tmp_path) -> tuple[list[str], str]:
    """The seed's v2: the draft's context (131072) is shorter than the target's (262144)."""
    target = write_model(tmp_path / "Qwen3-MoE", "Qwen3MoeForCausalLM", 262144, 547 * 10**9)
    draft = write_model(tmp_path / "eagle3-draft", "LlamaForCausalLMEagle3", 131072, 2 * 10**9)
    site = write_sglang(tmp_path / "site", hook="base")
    return sglang_command(target, draft, free_port()), str(site)


def refused_app(tmp_path) -> LaunchApp:
    command, site = seed_command(tmp_path)
    args = build_parser().parse_args(
        ["run", "--name", "refused", "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--stop-grace", "2,2",
         "--env", f"PYTHONPATH={site}", "--", *command]
    )
    session, launch = make_launch(build_spec(args), launch_options(args))
    palettes = themes.discover()
    return LaunchApp(launch, session, palettes, themes.resolve(None, palettes).name, gpus_enabled=False)


def header(app) -> VerdictHeader:
    return app.query_one(VerdictHeader)


async def test_a_refused_launch_says_refused_lists_every_check_and_f_applies_the_fix(tmp_path):
    app = refused_app(tmp_path)
    launch = app.launch
    async with app.run_test(size=(120, 35)) as pilot:
        await until(pilot, lambda: header(app).verdict is not None and header(app).verdict.word == "REFUSED")
        detail = header(app).verdict.detail
        assert detail.startswith("✗ draft context: the draft's context (131072) is shorter than the target's (262144)")
        assert launch.run is None and History().attempts("refused") == []  # nothing was launched
        report = launch.preflight_report
        not_ok = [c for c in report.checks if c.status != "ok"]
        assert any(c.status == "warn" for c in not_ok)  # --gpus none: the GPU checks cannot tell
        assert app.checks_panel.has_class("-open")  # opened by the refusal, every ✗ and ⚠ in full
        listed = app.checks_panel.lines()
        for check in not_ok:
            assert f"  {check.line}" in listed
        shown = screen_text(app)
        assert "REFUSED" in shown and "✗ draft context" in shown
        assert "x" not in [key for key, _, _ in app.footer_entries()]  # the footer offers no stop: nothing runs
        assert f"set_env {CONTEXT_ENV}=1" in shown and "[F] apply" in shown  # the hint row names the fix
        await pilot.press("F")  # the check's fix, in the editor
        await until(pilot, lambda: isinstance(app.screen, EditScreen))
        assert f"+{CONTEXT_ENV}=1" in str(app.screen.query_one("#fix").render())
        assert f"{CONTEXT_ENV}=1" in app.screen.query_one("#env").text
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")  # checked again, passes, launched as v1
        await until(pilot, lambda: launch.run is not None and launch.run.attempt == 1, timeout=30)
        assert launch.spec.env[CONTEXT_ENV] == "1" and launch.refused is None
        await until(pilot, lambda: header(app).verdict.word != "REFUSED")
    rows = History().attempts("refused")
    assert [r.attempt for r in rows] == [1] and rows[0].applied == "preflight-draft-context"


async def test_quitting_a_refused_launch_exits_1_like_plain(tmp_path):
    app = refused_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: header(app).verdict is not None and header(app).verdict.word == "REFUSED")
        await pilot.press("q")
        await until(pilot, lambda: app.return_value is not None)
    assert app.return_value == 1  # what `run` exits with (App.run returns it)

    command, site = seed_command(tmp_path / "plain")
    plain = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "--plain", "--name", "refused-plain", "--gpus", "none",
         "--log-dir", str(tmp_path / "logs"), "--env", f"PYTHONPATH={site}", "--", *command],
        capture_output=True, text=True, timeout=120,
    )
    assert plain.returncode == 1, plain.stdout + plain.stderr
    assert "REFUSED: ✗ draft context: the draft's context (131072)" in plain.stdout
