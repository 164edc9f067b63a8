"""Hostile config files (issue 33 item 4): each is one line naming the file, exit 2, and nothing
that the file holds is shown unmasked by ``watchtower config``."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from tui.cli import main
from tui.commands.config import load
from tui.core.config import ConfigError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string, control characters escaped (so the file holds them raw)."""
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" for c in text) + '"'


def test_an_array_nested_50k_deep_is_one_line_not_a_recursion_traceback(tmp_path):
    path = _write(tmp_path, "x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(ConfigError) as refused:
        load(str(path))
    assert str(path) in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("binding", ["\x1b[A", "ctrl+\x07", "q\nw", "no_such_key_name", "ctrl+nokey"])
def test_a_key_map_with_escapes_control_characters_or_names_no_key_makes_is_refused(tmp_path, binding):
    path = _write(tmp_path, f"[keys]\nquit = {_toml_string(binding)}\n")
    with pytest.raises(ConfigError) as refused:
        load(str(path))
    assert "keys.quit" in str(refused.value) and str(path) in str(refused.value)


@pytest.mark.parametrize("binding", ["Q", "ctrl+x", "f5", "exclamation_mark", "ctrl+d,f6"])
def test_a_key_map_of_keys_a_terminal_makes_is_taken(tmp_path, binding):
    config = load(str(_write(tmp_path, f'[keys]\nquit = "{binding}"\n')))
    assert config.keys["quit"] == binding


def test_a_theme_that_does_not_exist_is_refused_where_the_file_is_read(tmp_path):
    path = _write(tmp_path, '[display]\ntheme = "no-such-theme"\n')
    with pytest.raises(ConfigError) as refused:
        load(str(path))
    assert str(path) in str(refused.value) and "no-such-theme" in str(refused.value)


def test_watchtower_config_masks_the_secrets_the_file_holds(tmp_path):
    path = _write(tmp_path, "[hosts]\n"
                  'db = "https://admin:hunter2secret@example.org/x"\n'
                  "[clusters]\n"
                  'c = "run --api-key sk-verysecret123 --token tok-abcdef987"\n')
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--config", str(path), "config"]) == 0
    shown = out.getvalue()
    assert "hosts.db" in shown and "clusters.c" in shown
    for secret in ("hunter2secret", "sk-verysecret123", "tok-abcdef987"):
        assert secret not in shown, shown


def test_an_env_file_with_a_nul_byte_is_one_line_naming_its_line(tmp_path):
    from tui.commands.run import read_env_file
    from tui.core.errors import UsageError

    path = tmp_path / "server.env"
    path.write_bytes(b"A=1\nB=2\x00x\n")
    with pytest.raises(UsageError) as refused:
        read_env_file(str(path))
    assert str(refused.value) == f"--env-file {path}, line 2: a NUL byte"


def test_a_gpu_poll_faster_than_a_tenth_of_a_second_is_refused_on_the_line_and_in_the_file(tmp_path, capsys):
    from tui.cli import build_parser

    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["watch", "--gpu-interval", "1e-300", "x.log"])
    assert exited.value.code == 2 and "--gpu-interval: expected at least 0.1 seconds" in capsys.readouterr().err
    with pytest.raises(ConfigError) as refused:
        load(str(_write(tmp_path, "[gpu]\ninterval = 1e-300\n")))
    assert "gpu.interval" in str(refused.value)
    assert build_parser().parse_args(["watch", "--gpu-interval", "0.5", "x.log"]).gpu_interval == 0.5
