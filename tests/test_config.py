"""The config file: a default for every option, flags over it, `watchtower config` saying where each
value came from; an unknown key or a wrong type is one line naming the key and the file, exit 2;
the key map (`[keys]`) rebinds the dashboard and `?` shows it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.app_support import fixed_session, make_app
from tests.support import run_cli, screen_text
from tests.test_app_keys import HEAD
from tui.app.keys import KEYS
from tui.cli import build_parser
from tui.commands.config import apply, load, resolve_names
from tui.core.config import SETTINGS, ConfigError, activate
from tui.core.limits import StallLimits

REPO = Path(__file__).parent.parent

EVERY_KEY = """
[gpu]
source = "none"
interval = 2.5

[display]
theme = "light"

[stall]
default = "5m"
weight_load = "20m"
cuda_graph = 480

[launch]
log_dir = "/scratch/wt-logs"
health = "http://127.0.0.1:30000/health"
smoke = true
stop_grace = "20,5"
on_ready = "echo ready"
on_fail = "echo failed"

[hosts]
gpu1 = "ops@gpu1.example.com:2222"

[clusters]
prod = "~/clusters/prod.toml"

[keys]
next_error = "j"
quit = "Q"
"""


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(EVERY_KEY)
    return path


def parsed(config_path: Path, *argv: str, environ: dict | None = None):
    settings = load(str(config_path), environ or {})
    parser = build_parser(argv[0])
    apply(parser, settings)
    args = parser.parse_args(list(argv))
    resolve_names(args, settings)
    return args


def test_a_file_with_every_key_sets_every_option(config_file):
    settings = load(str(config_file), {})
    assert {key: held.origin for key, held in settings.values.items()} == dict.fromkeys(
        [s.key for s in SETTINGS] + ["stall"], "file")
    args = parsed(config_file, "run", "--host", "gpu1", "--", "true")
    assert (args.gpus, args.gpu_interval, args.theme, args.log_dir) == ("none", 2.5, "light", "/scratch/wt-logs")
    assert (args.health, args.stop_grace, args.on_ready, args.on_fail, args.smoke) == (
        "http://127.0.0.1:30000/health", "20,5", "echo ready", "echo failed", True)
    assert args.stall_limit == StallLimits.parse("5m,weight_load=20m,cuda_graph=480s")
    assert args.host == "ops@gpu1.example.com:2222"
    watch = parsed(config_file, "watch", "--host", "gpu1:/var/log/s.log", "--cluster", "prod")
    assert watch.hosts == ["ops@gpu1.example.com:2222:/var/log/s.log"]
    assert watch.cluster == os.path.expanduser("~/clusters/prod.toml")
    assert settings.keys == {"next_error": "j", "quit": "Q"}


def test_flags_override_the_file_and_the_environment_overrides_the_file(config_file):
    args = parsed(config_file, "watch", "x.log", "--gpus", "sim", "--stall-limit", "1m",
                  environ={"WATCHTOWER_DISPLAY_THEME": "high-contrast"})
    assert args.gpus == "sim" and args.gpu_interval == 2.5  # the flag; the file
    assert args.theme == "high-contrast" and args.stall_limit == StallLimits.parse("1m")


def test_watchtower_config_says_where_each_value_came_from(config_file):
    out = run_cli("--config", str(config_file), "config", "--gpu-interval", "3",
              env={"WATCHTOWER_LAUNCH_HEALTH": "http://h:1/health"})
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line for line in out.stdout.splitlines() if not line.startswith("#")}
    assert rows["gpu.interval"].split()[1:] == ["3.0", "flag", "--gpu-interval"]
    assert rows["launch.health"].split()[1:] == ["'http://h:1/health'", "environment", "WATCHTOWER_LAUNCH_HEALTH"]
    assert rows["gpu.source"].split()[1:] == ["'none'", "file", str(config_file)]
    assert rows["keys.next_error"].split()[1:] == ["'j'", "file", str(config_file)]
    assert rows["keys.search"].split()[1:] == ["'/'", "default"]
    assert rows["launch.smoke"].split()[1:] == ["True", "file", str(config_file)]
    assert rows["keys.stop"].split()[1:] == ["'x'", "default"]  # the launcher's keys are listed too
    smoke = run_cli("--config", str(config_file), "config", "--smoke", env={"WATCHTOWER_LAUNCH_SMOKE": "0"})
    assert {line.split()[0]: line for line in smoke.stdout.splitlines()}["launch.smoke"].split()[1:] == [
        "True", "flag", "--smoke"]
    env = run_cli("config", env={"WATCHTOWER_LAUNCH_SMOKE": "no", "XDG_CONFIG_HOME": str(config_file.parent / "none")})
    assert {line.split()[0]: line for line in env.stdout.splitlines()}["launch.smoke"].split()[1:] == [
        "False", "environment", "WATCHTOWER_LAUNCH_SMOKE"]
    bare = run_cli("config", env={"XDG_CONFIG_HOME": str(config_file.parent / "none")})
    assert "gpu.source" in bare.stdout and all(line.endswith("default") for line in bare.stdout.splitlines()[1:])


@pytest.mark.parametrize("text, needle", [
    ('[gpu]\nsorce = "nvml"\n', "unknown key 'gpu.sorce'"),
    ('[gpus]\nsource = "nvml"\n', "unknown key 'gpus'"),
    ('[gpu]\ninterval = "fast"\n', "gpu.interval: expected a number of seconds greater than 0, got 'fast'"),
    ('[launch]\nsmoke = "yes"\n', "launch.smoke: expected true or false, got 'yes'"),
    ('[gpu]\nsource = "cuda"\n', "gpu.source: expected one of auto, nvml, smi, sim, none, got 'cuda'"),
    ('[stall]\nweight_lod = "5m"\n', "stall: unknown phase 'weight_lod'"),
    ('[keys]\nnext_eror = "j"\n', "unknown key 'keys.next_eror'"),
    ('[keys]\nnext_error = "x"\n', "keys.next_error = 'x': stop has that key too by default"),
    ('[keys]\nnext_node = "escape"\n', "keys.next_node = 'escape': Textual keeps that key"),
    ('[keys]\nstop = "q"\n', "keys.stop = 'q': quit has that key too by default"),
    ('[keys]\nstopp = "X"\n', "unknown key 'keys.stopp'"),
    ('[keys]\nnext_error = "q"\n', "keys.next_error = 'q': quit has that key too by default"),
    ('[keys]\nnext_error = "j"\nquit = "j"\n', "keys.quit = 'j': next_error has that key too"),
    ('[hosts]\ngpu1 = 3\n', "hosts.gpu1: expected a non-empty string"),
    ("[gpu\n", "not valid TOML"),
])
def test_a_bad_file_is_one_line_naming_the_key_and_the_file_exit_2(tmp_path, text, needle):
    path = tmp_path / "config.toml"
    path.write_text(text)
    out = run_cli("--config", str(path), "scan", str(REPO / "tests/fixtures/sglang_eagle3_tp8_ready.log"))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and needle in out.stderr and str(path) in out.stderr, out.stderr


def test_the_default_place_is_read_and_a_missing_config_flag_file_is_refused(tmp_path):
    (tmp_path / "watchtower").mkdir()
    (tmp_path / "watchtower" / "config.toml").write_text('[gpu]\nsource = "smi"\n')
    out = run_cli("config", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert "'smi'" in out.stdout and "file" in out.stdout
    missing = run_cli("--config", str(tmp_path / "nope.toml"), "config")
    assert missing.returncode == 2 and "nope.toml" in missing.stderr and "Traceback" not in missing.stderr
    with pytest.raises(ConfigError):
        load(str(tmp_path / "nope.toml"), {})


def test_the_default_keys_leave_tmux_and_screen_their_prefixes():
    keys = {k.strip() for b in KEYS for k in b.key.split(",")}
    assert not keys & {"ctrl+b", "ctrl+a"}


async def test_the_key_map_rebinds_the_dashboard_and_help_shows_it(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[keys]\nnext_error = "j"\nhelp = "h"\n')
    activate(load(str(path), {}))
    try:
        app = make_app(fixed_session((HEAD).encode()))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("question_mark")  # no longer help
            await pilot.pause()
            assert app.screen.__class__.__name__ != "HelpScreen"
            await pilot.press("h")
            await pilot.pause()
            assert app.screen.__class__.__name__ == "HelpScreen"
            rows = dict(app.key_rows())
            assert rows["j"].startswith("next error") and rows["h"] == "this help" and "e" not in rows
            assert "next error (traceback block)" in screen_text(app)
    finally:
        activate(load(None, {"XDG_CONFIG_HOME": str(tmp_path / "none")}))
