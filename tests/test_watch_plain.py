"""`watchtower watch LOG --plain`: the real CLI in a subprocess following a file a writer appends to.

Every step waits for the line the watcher prints (read from its stdout), never for time.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from tests.support import start_cli

FIXTURES = Path(__file__).parent / "fixtures"
WAIT = 20.0  # generous bound for one expected line on a loaded 2-core machine

pytestmark = pytest.mark.timeout(90)


async def start(log: Path, *extra: str) -> asyncio.subprocess.Process:
    return await start_cli("watch", str(log), "--plain", *extra, env={"NO_COLOR": "1"})


async def expect(proc: asyncio.subprocess.Process, needle: str, seen: list[str] | None = None) -> str:
    """Read the watcher's output up to the first line containing ``needle``; return that line."""
    seen = seen if seen is not None else []
    while True:
        raw = await asyncio.wait_for(proc.stdout.readline(), WAIT)
        if not raw:
            err = (await proc.stderr.read()).decode(errors="replace")
            raise AssertionError(f"watcher exited before {needle!r}; output: {''.join(seen)}; stderr: {err}")
        line = raw.decode("utf-8")
        seen.append(line)
        if needle in line:
            return line


async def finish(proc: asyncio.subprocess.Process) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(proc.communicate(), WAIT)
    return proc.returncode, out.decode("utf-8"), err.decode("utf-8")


def lines_of(name: str) -> list[bytes]:
    """The fixture's lines as grep counts them (bytes.splitlines would also split on \\r)."""
    data = (FIXTURES / name).read_bytes()
    return [line + b"\n" for line in data.split(b"\n")[:-1]]


async def test_follows_a_log_that_does_not_exist_yet_to_ready(tmp_path):
    log = tmp_path / "server.log"
    proc = await start(log, "--timeout", "60")
    await expect(proc, "waiting for the log")
    lines = lines_of("sglang_eagle3_tp8_ready.log")
    with open(log, "ab") as out:
        out.write(b"".join(lines[:28]))
        out.flush()
        # ("server: sglang", not "server:": the writer line "server: pid N (this test's python), writes
        # the log" may come first, as the test process itself holds the log open for writing)
        assert "(line 1)" in await expect(proc, "server: sglang")
        out.write(b"".join(lines[28:30]))  # the first Load weight begin lines
        out.flush()
        assert "(line 29)" in await expect(proc, "weight load started")
        out.write(b"".join(lines[30:45]))
        out.flush()
        done = await expect(proc, "weight load done")
        assert "1:38" in done and "slowest TP4 of 8 ranks" in done and "lines 29-45" in done
        out.write(b"".join(lines[45:]))
        out.flush()
        seen: list[str] = []
        ready = await expect(proc, "READY", seen)
    assert "(line 125)" in ready
    assert any("draft init done" in s for s in seen) and any("CUDA graphs done" in s for s in seen)
    rc, rest, err = await finish(proc)
    assert rc == 0 and err == ""


async def test_a_crash_while_watching_names_the_root_cause(tmp_path):
    log = tmp_path / "server.log"
    lines = lines_of("sglang_attributeerror_tp8.log")
    log.write_bytes(b"".join(lines[:20]))
    proc = await start(log, "--timeout", "60")
    await expect(proc, "weight load started")
    with open(log, "ab") as out:
        out.write(b"".join(lines[20:]))
    first = await expect(proc, "error: line 35 [TP3]: AttributeError")
    assert "set_eagle3_layers_to_capture" in first
    seen: list[str] = []
    verdict = await expect(proc, "FAILED", seen)
    assert any("| AttributeError:" in s for s in seen)  # the traceback's last lines
    assert "line 35 [TP3]: AttributeError" in verdict and "also on TP0" in verdict
    rc, _, err = await finish(proc)
    assert rc == 1 and err == ""


async def test_the_verdict_waits_for_the_root_cause_that_follows_a_wrapper_error(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_bytes((FIXTURES / "vllm_kv_failure.log").read_bytes())
    proc = await start(log)
    verdict = await expect(proc, "FAILED")
    assert "line 8 [EngineCore_DP0]: ValueError" in verdict
    assert (await finish(proc))[0] == 1


async def test_timeout_exits_3_and_says_where_it_stopped(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes((FIXTURES / "sglang_silent_death.log").read_bytes())
    proc = await start(log, "--timeout", "1")
    line = await expect(proc, "TIMEOUT")
    assert "in weight load" in line
    assert (await finish(proc))[0] == 3


async def test_echo_prints_log_lines_without_raw_control_characters(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(
        b"[2026-02-22 23:38:50] server_args=ServerArgs(x=1)\n"
        b"\x1b[31mred\x1b[0m [bold]markup[/bold] bell\x07 nul\x00 \x1b]0;title\x07 bad\xff utf8\n"
        b"[2026-02-22 23:38:51] The server is fired up and ready to roll!\n"
    )
    proc = await start(log, "--echo")
    rc, out, err = await finish(proc)
    assert rc == 0, err
    assert "| red [bold]markup[/bold] bell" in out  # shown literally, colours removed
    assert "\ufffd utf8" in out
    assert not any(ch < " " and ch != "\n" for ch in out)


async def test_ctrl_c_exits_quietly(tmp_path):
    proc = await start(tmp_path / "never.log")
    await expect(proc, "waiting for the log")
    proc.send_signal(signal.SIGINT)
    rc, out, err = await finish(proc)
    assert rc == 130
    assert "Traceback" not in err and "Traceback" not in out


async def test_a_bad_server_is_one_clear_line(tmp_path):
    proc = await start(tmp_path / "x.log", "--server", "ollama")
    rc, out, err = await finish(proc)
    assert rc == 2 and out == ""
    assert err.startswith("watchtower: unknown server 'ollama'") and err.count("\n") == 1


async def test_from_end_ignores_what_the_log_already_holds(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes((FIXTURES / "sglang_attributeerror_tp8.log").read_bytes())  # an old failed attempt
    proc = await start(log, "--from-end", "--server", "sglang", "--timeout", "60")
    await expect(proc, "watching")

    async def writer() -> None:
        # a real writer: keeps appending until the watcher has seen the new lines and exited
        n = 0
        while proc.returncode is None:
            n += 1
            with open(log, "ab") as out:
                out.write(f"[2026-02-22 23:50:{n % 60:02d}] The server is fired up and ready to roll!\n".encode())
            await asyncio.sleep(0.05)

    task = asyncio.create_task(writer())
    try:
        seen: list[str] = []
        await expect(proc, "READY", seen)
        rc, _, _ = await finish(proc)
    finally:
        task.cancel()
    assert rc == 0
    assert not any("AttributeError" in s or "FAILED" in s for s in seen)


async def test_a_replaced_log_is_a_new_attempt(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(lines_of("sglang_silent_death.log")))  # an attempt stuck in weight load
    proc = await start(log, "--timeout", "60")
    await expect(proc, "weight load started")
    replacement = tmp_path / "server.log.new"
    replacement.write_bytes((FIXTURES / "sglang_old_04.log").read_bytes())
    os.replace(replacement, log)  # the operator relaunched: a new file under the same name
    await expect(proc, "a new attempt starts at line 1")
    ready = await expect(proc, "READY")
    assert "(line 22)" in ready
    assert (await finish(proc))[0] == 0
