"""Every string `--plain` prints goes through the log lines' sanitiser: a path, a remote reason or
a remote stderr holding escape sequences, U+2028/2029 or a bidi override cannot restyle, move or
reorder the operator's terminal (real files with hostile names, the real loopback sshd)."""

from __future__ import annotations

import os

import pytest

from tests.conftest import sshd_available
from tests.support import run_cli

HOSTILE = "srv\x1b[2J\x1b]0;pwned\x07\u202egol.\u2028next\u2029\x07.log"
RAW = ("\x1b", "\u202e", "\u2028", "\u2029", "\x07")


def assert_sanitised(text: str) -> None:
    for raw in RAW:
        assert raw not in text, f"{raw!r} reached the terminal: {text!r}"
    assert "<U+202E>" in text and "<U+2028>" in text  # shown, not silently dropped


def test_watch_plain_shows_a_hostile_path_literally(tmp_path):
    log = tmp_path / HOSTILE
    log.write_text("[2026-02-22 23:38:50] The server is fired up and ready to roll!\n")
    result = run_cli("watch", str(log), "--plain", "--timeout", "20", timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    assert "watching" in first
    assert_sanitised(result.stdout + result.stderr)


def test_scan_and_usage_errors_show_a_hostile_path_literally(tmp_path):
    log = tmp_path / HOSTILE
    log.write_text("[2026-02-22 23:38:50] server_args=ServerArgs()\n")
    scan = run_cli("scan", str(log), timeout=60)
    assert_sanitised(scan.stdout)
    missing = run_cli("scan", str(tmp_path / ("x" + HOSTILE)), timeout=60)
    assert missing.returncode == 2
    assert_sanitised(missing.stderr)


@pytest.mark.ssh
@pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")
def test_remote_reasons_show_a_hostile_path_literally(sshd, tmp_path):
    remote = tmp_path / HOSTILE
    remote.mkdir()  # a directory: the remote side says why it cannot follow it
    env = dict(os.environ, WATCHTOWER_SSH_KNOWN_HOSTS=str(sshd.known_hosts), WATCHTOWER_SSH_IDENTITY=str(sshd.client_key))
    result = run_cli("watch", "--plain", "--host", sshd.spec, str(remote), "--timeout", "4", env=env, timeout=60)
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    assert any("waiting for the log" in line for line in lines), result.stdout
    assert_sanitised(result.stdout + result.stderr)
