"""Issue 20, item 5: simulated GPUs (--gpus sim) are labelled wherever they appear — the GPU panel,
the report, the checks — and a simulated reading never passes a check."""

from __future__ import annotations

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
from tui.wiring import make_launch

SIM = str(Path(__file__).with_name("server_sim.py"))


async def test_the_dashboard_the_report_and_the_checks_say_the_gpus_are_simulated(tmp_path):
    args = build_parser().parse_args(
        ["run", "--name", "simgpu", "--log-dir", str(tmp_path / "logs"), "--gpus", "sim", "--gpu-interval", "0.1",
         "--stop-grace", "2,2", "--", sys.executable, SIM, "--outcome", "hang", "--tp", "2", "--step", "0.01"]
    )
    session, launch = make_launch(build_spec(args), launch_options(args))
    palettes = themes.discover()
    app = LaunchApp(launch, session, palettes, themes.resolve(None, palettes).name, gpus_enabled=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: launch.run is not None and session.gpus.latest is not None, pilot=pilot)
        await until(lambda: "× H200" in screen_text(app), pilot=pilot)
        title = next(line for line in screen_text(app).splitlines() if "× H200" in line)
        assert "GPUs SIMULATED" in title and "made-up figures" in title
        report = launch.preflight_report
        gpu_checks = [c for c in report.checks if c.name in ("GPUs", "GPU memory", "GPU holders", "weights")]
        assert gpu_checks and all(c.status == "warn" and "simulated" in c.why for c in gpu_checks)
        app.output_dir = tmp_path / "out"
        await pilot.press("w")
        await until(lambda: app.last_report is not None, pilot=pilot)
        text = app.last_report.read_text()
        assert "GPUs (simulated: made-up figures" in text
        assert "✓ GPUs" not in text and "✓ weights" not in text
        await launch.stop()


def test_check_with_simulated_gpus_never_says_they_pass(tmp_path):
    from tests.test_check import free_port, sglang_command, write_model, write_sglang

    target = write_model(tmp_path / "Qwen3-MoE", "Qwen3MoeForCausalLM", 262144, 547 * 10**9)
    draft = write_model(tmp_path / "eagle3-draft", "LlamaForCausalLMEagle3", 262144, 2 * 10**9)
    site = write_sglang(tmp_path / "site", hook="base")
    out = run_cli("check", "--gpus", "sim", "--env", f"PYTHONPATH={site}", "--",
                  *sglang_command(target, draft, free_port()), timeout=120)
    assert "✓ GPUs" not in out.stdout and "✓ weights" not in out.stdout, out.stdout
    assert "⚠ GPUs: simulated GPUs (--gpus sim), not this machine's: 8 visible" in out.stdout
    assert "⚠ weights: simulated GPUs (--gpus sim), not this machine's: fit" in out.stdout
    assert out.returncode != 0  # never an all-clear on made-up GPUs


async def test_the_demo_and_a_recording_of_simulated_gpus_say_so_when_played(tmp_path):
    """The demo's GPU samples were made up by the simulator: played back, they are labelled as such,
    and a recording of `--gpus sim` keeps the label (a real sample's recording does not gain it)."""
    from tui.app.dashboard import build_app
    from tui.commands.demo import recording_path
    from tui.core.events import GpuInfo
    from tui.sources.replay import RecordingWriter, load
    from tui.wiring.recordings import replay_session

    session, replay = replay_session(recording_path("ready"), speed=50.0)
    app = build_app(session, output_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: session.gpus.latest is not None and "GPUs SIMULATED" in screen_text(app), pilot=pilot)
        assert session.gpus.latest.simulated  # (at 80 columns: the label comes before what a narrow panel cuts)
    replay.close()

    gpu = GpuInfo(0, "NVIDIA H200", memory_used=1 << 30, memory_total=141 << 30)
    writer = RecordingWriter(tmp_path / "r.wtrec", host="h")
    writer.gpu(0.0, (gpu,), simulated=True)
    writer.gpu(1.0, (gpu,))
    writer.close(1.0)
    assert [bool(r.get("sim")) for r in load(tmp_path / "r.wtrec").records if "gpu" in r] == [True, False]
