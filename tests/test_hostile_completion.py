"""Names the completion reads back are data, never code (issue 33, item 1).

Whoever can write the history database (a shared data directory) or the config file chooses the
launch and host names that bash's completion offers on <TAB>. A real bash sources the real
completion script and completes ``attach``/``history``/``--host``: a name holding ``$(…)`` or
backticks is offered as the text it is, and the command inside it never runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.support import run_cli
from tests.test_completion import REPO, complete

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")


def hostile_names(tmp_path) -> dict[str, object]:
    """Names that would each create a marker file in ``tmp_path`` if a shell evaluated them."""
    return {
        "dollar": (f"dsv3$(touch {tmp_path}/ran-dollar)", tmp_path / "ran-dollar"),
        "backtick": (f"dsv3`touch {tmp_path}/ran-backtick`", tmp_path / "ran-backtick"),
        "arith": (f"dsv3$((x[$(touch {tmp_path}/ran-arith)]))", tmp_path / "ran-arith"),
    }


def test_a_launch_name_in_the_history_is_offered_and_never_run(tmp_path):
    from tui.history import History

    history = History()  # WATCHTOWER_DATA_DIR: this test's own (conftest); written as an attacker would
    names = hostile_names(tmp_path)
    for name, _marker in names.values():
        history.start(name, command=["true"], env={}, host="localhost", log_path="/l/x-v1.log", started_at=1.0)
    history.start("dsv3-prod", command=["true"], env={}, host="localhost", log_path="/l/p-v1.log", started_at=2.0)

    offered = set(complete("watchtower attach dsv3", tmp_path)) | set(complete("watchtower history ", tmp_path))

    for name, marker in names.values():
        assert not marker.exists(), f"completing ran the code in the launch name {name!r}"
    assert "dsv3-prod" in offered
    assert {name for name, _ in names.values()} <= offered  # offered as written: the user sees them


def test_host_names_are_offered_and_never_run(tmp_path):
    """The [hosts] names go through the same reading: a ``watchtower`` on PATH that answers
    ``config --hosts`` with hostile names (what a config file written by another user gives)."""
    names = hostile_names(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    listing = tmp_path / "hosts.txt"
    listing.write_text("".join(f"{name}\n" for name, _ in names.values()) + "dsv3-gpu2\n")
    shim = bin_dir / "watchtower"  # the real CLI, except that `config --hosts` lists the names above
    shim.write_text(f'#!/bin/sh\n[ "$1 $2" = "config --hosts" ] && exec cat {listing}\n'
                    f'exec {sys.executable} -m tui.cli "$@"\n')
    shim.chmod(0o755)
    script = "source <(watchtower completion bash) || exit 9\n_watchtower_hosts dsv3\n"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO)}
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path)

    for name, marker in names.values():
        assert not marker.exists(), f"completing ran the code in the host name {name!r}"
    assert set(done.stdout.splitlines()) == {name for name, _ in names.values()} | {"dsv3-gpu2"}, done.stderr


@pytest.mark.parametrize("name", ["x$(id)", "x`id`", "x;id", "x|id", "x&id", "x id", "x\nid", "x>y", "x*"])
def test_run_refuses_a_launch_name_with_shell_metacharacters(name):
    done = run_cli("run", "--plain", "--no-check", "--name", name, "--", "true", timeout=60)
    assert done.returncode == 2 and "invalid --name" in done.stderr and "Traceback" not in done.stderr, done.stderr
