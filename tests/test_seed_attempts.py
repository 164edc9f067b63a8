"""The seed's evening as a test: four attempts, each failure's hint where the operator looks,
and F producing v3 and v4 with the right change; `run` refusing what `check` catches."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.test_check import sglang_command, write_model, write_sglang
from tests.test_launch_app import data_dir  # noqa: F401  (data_dir: a private history, autouse)
from tests.support import run_cli, until
from tui.app import themes
from tui.app.header import VerdictHeader
from textual.widgets import Static

from tui.app.launch_modals import ConfirmScreen, EditScreen
from tui.app.launcher import LaunchApp
from tui.cli import build_parser
from tui.commands.options import launch_options
from tui.commands.run import build_spec
from tui.history import History
from tui.wiring import make_launch, preflight_for

SIM = str(Path(__file__).with_name("server_sim.py"))
CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
HOOK = "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n        pass\n"


def header_hint(app) -> str:
    header = app.query_one(VerdictHeader)
    return header.hints[0].text if header.hints else ""


async def test_four_attempts_hints_and_the_f_key(tmp_path):
    hook_file = tmp_path / "qwen3_moe.py"
    hook_file.write_text("class Qwen3MoeForCausalLM:\n    pass\n")
    args = build_parser().parse_args(
        ["run", "--no-check", "--name", "seed", "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
         "--stop-grace", "2,2", "--", sys.executable, SIM, "--outcome", "seed", "--hook-file", str(hook_file),
         "--tp", "2", "--step", "0.01"]
    )
    session, launch = make_launch(build_spec(args), launch_options(args))
    palettes = themes.discover()
    app = LaunchApp(launch, session, palettes, themes.resolve(None, palettes).name, gpus_enabled=False)

    def failed(attempt: int) -> bool:
        v = launch.verdict_now
        return launch.attempt == attempt and v is not None and v.final and not launch.server_running and bool(header_hint(app))

    async with app.run_test(size=(160, 50)) as pilot:
        # v1: the model class lacks the EAGLE-3 hook; the hint says so, and there is no fix to apply
        await until(lambda: failed(1), pilot=pilot)
        assert "Qwen3MoeForCausalLM has no set_eagle3_layers_to_capture" in header_hint(app)
        await pilot.press("F")
        await until(lambda: any("No known fix" in n.message for n in app._notifications), pilot=pilot)  # noqa: SLF001
        assert not isinstance(app.screen, EditScreen)
        # the operator upgrades SGLang (the class now has the hook) and relaunches
        hook_file.write_text("class Qwen3MoeForCausalLM:\n" + HOOK)
        await pilot.press("r")
        # v2: the draft's context is shorter than the target's
        await until(lambda: failed(2), pilot=pilot)
        assert "the draft's context (131072) is shorter than the target's (262144)" in header_hint(app)
        assert f"set_env {CONTEXT_ENV}=1" in header_hint(app)
        # F: the editor opens with the fix applied and highlighted; ctrl+s confirms
        await pilot.press("F")
        await until(lambda: isinstance(app.screen, EditScreen), pilot=pilot)
        fix = str(app.screen.query_one("#fix").render())
        assert "context-length-override" in fix and f"+{CONTEXT_ENV}=1" in fix
        assert f"{CONTEXT_ENV}=1" in app.screen.query_one("#env").text
        await pilot.press("ctrl+s")
        # the confirmation says what changes; nothing is relaunched before y
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        assert f"+{CONTEXT_ENV}=1" in str(app.screen.query_one(Static).render()) and launch.attempt == 2
        await pilot.press("y")
        # v3: the env is in; now NCCL's watchdog fires while the weights load
        await until(lambda: failed(3), pilot=pilot)
        assert launch.spec.env == {CONTEXT_ENV: "1"}
        assert "a collective waited longer than the timeout" in header_hint(app)
        await pilot.press("F")
        await until(lambda: isinstance(app.screen, EditScreen), pilot=pilot)
        assert "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=1800" in app.screen.query_one("#env").text
        assert "--dist-timeout 3600" in app.screen.query_one("#command").value
        await pilot.press("ctrl+s")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        await pilot.press("y")
        # v4: ready
        await until(lambda: launch.attempt == 4 and launch.verdict_now is not None
                    and launch.verdict_now.kind == "ready", pilot=pilot)
        assert launch.spec.env == {CONTEXT_ENV: "1", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "1800"}
        await launch.settle()
        await launch.stop()

    rows = {a.attempt: a for a in History().attempts("seed")}
    assert [rows[n].applied for n in (1, 2, 3, 4)] == [None, None, "context-length-override", "collective-timeout"]
    assert rows[3].env_diff == [f"+{CONTEXT_ENV}=1"]
    table = run_cli("history", "seed").stdout
    assert "v3: applied context-length-override" in table and "v4: applied collective-timeout" in table


def test_run_plain_refuses_what_check_catches_and_no_check_shows_the_hint(tmp_path):
    target = write_model(tmp_path / "Qwen3-MoE", "Qwen3MoeForCausalLM", 262144, 547 * 10**9)
    draft = write_model(tmp_path / "eagle3-draft", "LlamaForCausalLMEagle3", 131072, 2 * 10**9)
    site = write_sglang(tmp_path / "site", hook="none")
    command = sglang_command(target, draft, 31999)
    base = [sys.executable, "-m", "tui.cli", "run", "--plain", "--name", "seedcli", "--gpus", "sim",
            "--log-dir", str(tmp_path / "logs"), "--env", f"PYTHONPATH={site}", "--timeout", "60"]
    refused = subprocess.run([*base, "--", *command], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    out = refused.stdout
    assert out.startswith("preflight ✓") and "✗ EAGLE-3 hook: Qwen3MoeForCausalLM" in out
    assert "✗ draft context: the draft's context (131072) is shorter than the target's (262144)" in out
    assert "not launching" in out
    assert History().attempts("seedcli") == []  # nothing started

    hook_file = tmp_path / "hook.py"
    hook_file.write_text("class Qwen3MoeForCausalLM:\n" + HOOK)
    sim = [sys.executable, SIM, "--outcome", "seed", "--hook-file", str(hook_file), "--tp", "2", "--step", "0.01"]
    launched = subprocess.run([*base, "--no-check", "--", *sim], capture_output=True, text=True, timeout=120)
    assert launched.returncode == 1, launched.stdout + launched.stderr
    lines = launched.stdout.splitlines()
    failed = next(i for i, line in enumerate(lines) if line.startswith("FAILED"))
    hint = next(i for i, line in enumerate(lines) if line.lstrip().startswith("hint: the draft's context (131072) is shorter than the target's (262144)"))
    assert hint < failed  # the hint comes before the final verdict, which is the last word
    assert "preflight" not in launched.stdout
    data = json.loads(run_cli("history", "--json", "seedcli").stdout)
    assert [a["outcome"] for a in data] == ["failed"] and data[0]["applied"] is None


async def test_a_relaunch_checks_again_and_the_timeline_shows_phase_zero(tmp_path):
    hook_file = tmp_path / "qwen3_moe.py"
    hook_file.write_text("class Qwen3MoeForCausalLM:\n    pass\n")
    args = build_parser().parse_args(
        ["run", "--name", "again", "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--stop-grace", "2,2",
         "--", sys.executable, SIM, "--outcome", "seed", "--hook-file", str(hook_file), "--tp", "2", "--step", "0.01"]
    )
    session, launch = make_launch(build_spec(args), launch_options(args))
    palettes = themes.discover()
    app = LaunchApp(launch, session, palettes, themes.resolve(None, palettes).name, gpus_enabled=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await until(lambda: launch.attempt == 1 and launch.verdict_now is not None and launch.verdict_now.final
                    and not launch.server_running, pilot=pilot)
        first = session.info.preflight
        assert first is not None and not first.failed
        assert "command" in {c.name for c in first.checks}  # not a server command line: only the machine checked
        timeline = str(app.query_one("PhaseTimeline").render())
        assert "preflight" in timeline and "⚠ command:" in timeline
        await pilot.press("r")
        await until(lambda: launch.attempt == 2 and launch.verdict_now is not None and launch.verdict_now.final
                    and not launch.server_running, pilot=pilot)
        assert session.info.preflight is not first and launch.preflight_report is session.info.preflight


def test_a_probe_that_cannot_run_is_a_warning_for_run_not_a_crash(tmp_path):
    """The server's interpreter does not exist: `check` says so in one line (exit 2), `run` goes on."""
    out = run_cli("check", "--gpus", "none", "--", str(tmp_path / "python3.99"), "-m", "sglang.launch_server")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "python3.99" in out.stderr
    report = asyncio.run(preflight_for([str(tmp_path / "python3.99"), "-m", "sglang.launch_server"], {},
                                       host=None, gpus="none", shm=None))
    assert not report.failed and report.checks[0].status == "warn" and "cannot run the checks" in report.checks[0].why


async def test_f_frees_the_port_an_earlier_instance_holds_after_asking(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import socket, sys, time\ns = socket.socket()\n"
                               "s.bind(('127.0.0.1', 0)); s.listen(); print(s.getsockname()[1], flush=True)\n"
                               "time.sleep(120)"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(holder.stdout.readline())
        args = build_parser().parse_args(
            ["run", "--no-check", "--name", "port", "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
             "--stop-grace", "2,2", "--", sys.executable, SIM, "--bind-port", str(port), "--tp", "1", "--step", "0.01"]
        )
        session, launch = make_launch(build_spec(args), launch_options(args))
        palettes = themes.discover()
        app = LaunchApp(launch, session, palettes, themes.resolve(None, palettes).name, gpus_enabled=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await until(lambda: launch.attempt == 1 and launch.verdict_now is not None
                        and launch.verdict_now.final and bool(header_hint(app)), pilot=pilot)
            assert f"another process holds port {port}" in header_hint(app) and f"free_port {port}" in header_hint(app)
            await pilot.press("F")
            await until(lambda: isinstance(app.screen, EditScreen), pilot=pilot)
            assert f"before launching: free_port {port}" in str(app.screen.query_one("#fix").render())
            await pilot.press("ctrl+s")
            await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
            assert f"Port {port} is held by pid {holder.pid}" in str(app.screen.query_one(Static).render())
            await pilot.press("y")
            await until(lambda: launch.attempt == 2 and launch.verdict_now is not None
                        and launch.verdict_now.kind == "ready", pilot=pilot)
            assert holder.poll() is not None  # stopped, after the operator said yes
            await launch.stop()
        assert [a.applied for a in History().attempts("port")] == [None, "port-in-use"]
    finally:
        holder.kill()
        holder.wait()
