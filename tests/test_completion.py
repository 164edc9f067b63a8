"""`watchtower completion bash|zsh|fish`: a real bash sources the script and completes a subcommand,
an option, and `attach`'s launch names from the history; `--version` names the commit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import run_cli

REPO = Path(__file__).parent.parent

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")


def complete(words: str, tmp_path: Path, source: str = "source <(watchtower completion bash) || exit 9",
             env: dict[str, str] | None = None) -> list[str]:
    """What bash's completion offers for the command line ``words`` (the cursor at its end), the
    script loaded by ``source``."""
    bin_dir = tmp_path / "bin"  # `watchtower` on PATH, as an install puts it (the script calls it back)
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "watchtower"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m tui.cli \"$@\"\n")
    shim.chmod(0o755)
    script = (
        f"{source}\n"
        f"COMP_LINE={words!r}; COMP_POINT=${{#COMP_LINE}}\n"
        "read -ra COMP_WORDS <<< \"$COMP_LINE\"\n"
        "[[ $COMP_LINE == *' ' ]] && COMP_WORDS+=('')\n"
        "COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
        "_shtab_watchtower watchtower \"${COMP_WORDS[-1]}\" \"${COMP_WORDS[-2]}\"\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    env = {**os.environ, **(env or {}), "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO)}
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def test_bash_completes_a_subcommand_and_an_option(tmp_path):
    assert complete("watchtower wat", tmp_path) == ["watch"]
    assert set(complete("watchtower re", tmp_path)) == {"replay", "record"}
    assert "--json" in complete("watchtower watch --js", tmp_path)


def test_bash_completes_attach_with_the_launch_names_in_the_history(tmp_path):
    from tui.history import History

    history = History()  # WATCHTOWER_DATA_DIR: this test's own (conftest)
    for name in ("dsv3-prod", "dsv3-canary", "qwen"):
        history.start(name, command=["python", "-m", "sglang.launch_server"], env={}, host="localhost",
                      log_path=f"/l/{name}-v1.log", started_at=100.0)
    assert set(complete("watchtower attach dsv3", tmp_path)) == {"dsv3-prod", "dsv3-canary"}
    assert set(complete("watchtower history ", tmp_path)) == {"dsv3-prod", "dsv3-canary", "qwen"}


@pytest.mark.parametrize("shell, needle", [("zsh", "#compdef watchtower"), ("fish", "complete -c watchtower")])
def test_zsh_and_fish_scripts_are_written(shell, needle):
    out = run_cli("completion", shell, timeout=60)
    assert out.returncode == 0 and needle in out.stdout and "history --names" in out.stdout


def test_version_names_the_commit_in_a_checkout():
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    if commit.returncode != 0:
        pytest.skip("not a git checkout")
    out = run_cli("--version", cwd="/", timeout=60)
    assert out.returncode == 0 and commit.stdout.strip() in out.stdout, out.stdout


def test_config_hosts_lists_the_names_and_bash_completes_host_with_them(tmp_path):
    (tmp_path / "watchtower").mkdir()
    (tmp_path / "watchtower" / "config.toml").write_text(
        '[hosts]\ngpu1 = "ops@gpu1.example.com"\ngpu2 = "ops@gpu2.example.com:2222"\nlab = "lab"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    out = run_cli("config", "--hosts", env=env, timeout=60)
    assert out.returncode == 0 and out.stdout.split() == ["gpu1", "gpu2", "lab"], out.stdout + out.stderr
    assert set(complete("watchtower watch --host gpu", tmp_path, env=env)) >= {"gpu1", "gpu2"}


@pytest.mark.parametrize("shell, where, needle", [
    ("bash", ".local/share/bash-completion/completions/watchtower", "_shtab_watchtower"),
    ("zsh", ".zfunc/_watchtower", "#compdef watchtower"),
    ("fish", ".config/fish/completions/watchtower.fish", "complete -c watchtower"),
])
def test_completion_install_writes_where_the_shell_looks_and_says_so_in_one_line(tmp_path, shell, where, needle):
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_DATA_HOME": "", "XDG_CONFIG_HOME": ""}
    out = run_cli("completion", shell, "--install", env=env, timeout=60)
    assert out.returncode == 0 and out.stdout.count("\n") == 1 and str(home / where) in out.stdout, out.stdout
    assert needle in (home / where).read_text()
    if shell == "bash":  # a real bash completes from the file installed
        assert complete("watchtower wat", tmp_path, source=f"source {home / where} || exit 9") == ["watch"]
