"""Notifications: window titles that cannot be abused, hooks without secrets, health probe answers."""

from __future__ import annotations

import asyncio

from tui.core.secrets import Masker
from tui.launch.outcome import hook_env, run_hook, title_sequence
from tui.sources.health import HealthProbe, http_status


def test_title_is_osc2_and_tmux_window_name_with_control_characters_removed():
    seq = title_sequence("✓ sim v4 ready\x1b]2;evil\x07\nmore", in_tmux=False)
    assert seq.startswith("\x1b]2;") and seq.endswith("\x07") and seq.count("\x1b") == 1 and seq.count("\x07") == 1
    assert "✓ sim v4 ready" in seq and "\n" not in seq
    both = title_sequence("✗ sim v2 failed", in_tmux=True)
    assert both == "\x1b]2;✗ sim v2 failed\x07\x1bk✗ sim v2 failed\x1b\\"


def test_hook_environment_has_the_verdict_and_no_secrets():
    masker = Masker(["hf_hooksecret123"])
    env = hook_env(
        {"outcome": "failed", "error": "ValueError: token hf_hooksecret123 rejected", "attempt": 3},
        masker,
        base={"PATH": "/bin", "HF_TOKEN": "hf_hooksecret123", "AWS_SECRET_ACCESS_KEY": "x", "HOME": "/root"},
    )
    assert env["WATCHTOWER_OUTCOME"] == "failed" and env["WATCHTOWER_ATTEMPT"] == "3"
    assert env["WATCHTOWER_ERROR"] == "ValueError: token **** rejected"
    assert "HF_TOKEN" not in env and "AWS_SECRET_ACCESS_KEY" not in env and env["PATH"] == "/bin"


async def test_hooks_run_with_their_status_and_time_out():
    code, first = await run_hook('echo "$WATCHTOWER_OUTCOME"; exit 4', {"WATCHTOWER_OUTCOME": "ready", "PATH": "/bin:/usr/bin"})
    assert (code, first) == (4, "ready")
    code, first = await run_hook("sleep 5", {"PATH": "/bin:/usr/bin"}, timeout=0.2)
    assert code is None and "timed out" in first


async def test_health_probe_reports_each_answer_until_200():
    answers = iter([b"HTTP/1.1 503 Service Unavailable\r\n\r\n", b"HTTP/1.1 200 OK\r\n\r\n"])

    async def serve(reader, writer):
        await reader.readline()
        writer.write(next(answers))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        probe = HealthProbe(f"http://127.0.0.1:{port}/health", interval=0.05)
        seen = [status async for status in probe.statuses()]
    assert [(s.ok, s.detail) for s in seen] == [(False, "HTTP 503 Service Unavailable"), (True, "HTTP 200 OK")]
    assert await http_status(f"http://127.0.0.1:{port}/health") == (None, "connection refused")
