"""The real llama.cpp server (PyPI ``xllamacpp``'s embedded server, on SmolLM2-135M): `run`, `watch`,
`attach`, `history`, `--health`/`--smoke`, failing starts, relaunch, kill -9 and stop — every line
read comes from the real server (issue 29). A start takes 0.5–6 s here (the model is 98 MB), so each
scenario starts its own."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401  (autouse)
from tests.real_servers import (
    GGUF,
    HandStarted,
    alarms,
    free_port,
    llamacpp_command,
    require_installed,
    wait_for_line,
)
from tests.support import run_cli, screen_text, start_cli, until
from tui.launch.proctable import is_alive

pytestmark = [pytest.mark.timeout(180)]

WAIT = 60.0
READY_LINE = r"init: listening on http://127\.0\.0\.1:\d+"


@pytest.fixture(autouse=True)
def installed():
    require_installed()


@pytest.fixture
def env(tmp_path):
    return {"WATCHTOWER_DATA_DIR": str(tmp_path / "data")}


@pytest.fixture
def hand_started(tmp_path):
    started: list[HandStarted] = []

    def start(*extra: str) -> HandStarted:
        server = HandStarted(llamacpp_command(free_port(), *extra), tmp_path / f"llama-{len(started)}.log").start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def run_plain(env, tmp_path, name: str, *command: str, extra: tuple[str, ...] = (), timeout: float = 150):
    """``run --plain`` of ``command``, given up after 90 s (a start that fails does so on its own, in about a
    second idle; CI's real tier ran a 100M-token context's weight load in 16 s beside the vLLM starts, and the
    20 s it had given up at was too short)."""
    return run_cli("run", "--plain", "--name", name, "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
                   "--timeout", "90", *extra, "--", *command, env=env, timeout=timeout)


def failed_on(done, first_error: str) -> str:
    """The verdict line of a `run --plain` that exited 1, asserted FAILED on ``first_error`` (a pattern)."""
    assert done.returncode == 1, done.stdout + done.stderr
    verdict = next(line for line in done.stdout.splitlines() if line.startswith(("FAILED", "DEAD")))
    assert verdict.startswith("FAILED") and re.search(first_error, verdict), done.stdout
    return verdict


def history(env, name: str) -> list[dict]:
    return json.loads(run_cli("history", name, "--json", env=env).stdout)


def test_run_is_ready_on_its_own_line_answers_health_and_smoke_then_attach_and_history(tmp_path, env):
    port = free_port()
    ready = run_plain(env, tmp_path, "llama", *llamacpp_command(port),
                      extra=("--health", f"http://127.0.0.1:{port}/health", "--smoke"))
    try:
        assert ready.returncode == 0, ready.stdout + ready.stderr
        assert "server: llamacpp" in ready.stdout
        assert not alarms(ready.stdout), ready.stdout
        line = next(line for line in ready.stdout.splitlines() if re.search(r"(^|\s)READY\b", line))
        assert re.search(r"first token|TTFT", line, re.I), line  # the real server answered the completion
        assert "keeps running" in ready.stdout
        (row,) = history(env, "llama")
        assert row["outcome"] == "ready" and is_alive(row["pid"])
        assert row["phases"] and row["ready_seconds"], row  # the real phase times (weight load …) are kept

        again = run_cli("attach", "llama", "--plain", env=env, timeout=WAIT)
        assert again.returncode == 0, again.stdout + again.stderr
        shown = int(re.search(r"reattached to the running: pid (\d+)", again.stdout)[1])
        assert shown in (row["pid"], *launch_tree(row["pid"])), again.stdout  # the server's own, under the wrapper kept
        assert "READY" in again.stdout
        ready_in = re.compile(r"READY: ready in (\d+:\d\d)")
        assert ready_in.search(again.stdout)[1] == ready_in.search(ready.stdout)[1], again.stdout  # the start's time
        table = run_cli("history", "llama", env=env).stdout
        assert "v1 ✓ ready" in table and "weight load" in table, table
    finally:
        for row in history(env, "llama"):
            if row["pid"] and is_alive(row["pid"]):
                os.killpg(row["pid"], signal.SIGKILL)


#: the flags each numbers case gives the real model
WRONG_NUMBERS = {"context": ("-c", "100000000"), "slots": ("-np", "5000"), "negative context": ("-c", "-5"),
                 "one-token context": ("-c", "1")}


@pytest.mark.parametrize(
    ("case", "first_error", "hint"),
    [
        ("truncated", r"error loading model: tensor '[^']+' data is not within the file bounds",
         "the GGUF file is shorter than its header says"),
        ("directory", r"failed to read magic", "which is no .gguf file"),  # llama.cpp's first E line; the loader's error follows it
        # round 4, R7: a checkpoint's safetensors given to -m, and a GGUF of a newer version than this reader
        ("safetensors", r"invalid magic characters", "a safetensors file (a Hugging Face checkpoint's weights)"),
        ("newer gguf", r"this GGUF file is version 4 but this software only supports up to version 3",
         "newer than this llama.cpp reads"),
        # cut inside the header: the reader's own words (gguf_init_from_reader), not the file's end
        ("header cut", r"failed to read key-value pairs", "could not read the GGUF's key-value pairs"),
        # a context whose KV cache the host cannot hold: the CPU buffer is the host's memory (not the GPU
        # offload's hint), and the context's own words come three lines after the first error, the
        # server still running: the hint they call for is said then
        ("context", r"insufficient memory", "the KV cache and compute buffers for this context do not fit"),
        # numbers llama.cpp refuses as it makes its context (round 4, stop 44: no hint before)
        ("slots", r"n_seq_max must be <= \d+", "lower --parallel to"),
        ("negative context", r"n_ctx_seq == 0", "give --ctx-size a positive number"),
        # GGML_ABORT's own line (file:line: function: message), then SIGABRT and a debugger's backtrace
        ("one-token context", r"get_sub_batch: failed to add token", "--ctx-size is far too small"),
    ],
)
def test_a_real_failing_start_is_failed_with_the_servers_first_error(tmp_path, env, case, first_error, hint):
    if case in ("truncated", "header cut"):
        model = tmp_path / "truncated.gguf"
        keep = GGUF.stat().st_size * 2 // 5 if case == "truncated" else 200_000  # (the header: past 200 kB)
        with GGUF.open("rb") as whole, model.open("wb") as cut:
            cut.write(whole.read(keep))  # the header and the first layers, or the header's start: the rest is cut
    elif case in WRONG_NUMBERS:
        model = GGUF
    elif case == "safetensors":
        model = tmp_path / "model.safetensors"
        model.write_bytes(b"\x40\x77\x00\x00\x00\x00\x00\x00" + b'{"__metadata__": {}}' * 8)  # as safetensors starts
    elif case == "newer gguf":
        model = tmp_path / "v4.gguf"
        data = bytearray(GGUF.read_bytes())
        data[4:8] = (4).to_bytes(4, "little")  # the header's version field, after the magic
        model.write_bytes(bytes(data))
    else:
        model = tmp_path / "a-folder"
        model.mkdir()
    extra = WRONG_NUMBERS.get(case, ())
    failed = run_plain(env, tmp_path, "bad", *llamacpp_command(free_port(), *extra, model=model))
    verdict = failed_on(failed, first_error)
    assert "exit" in verdict or "still running" in verdict  # its end is said (exit 1, once it came)
    (row,) = history(env, "bad")
    assert row["outcome"] == "failed" and re.search(first_error, row["first_error"] or ""), row
    if hint is not None:
        assert re.search(rf"hint: .*{re.escape(hint)}", failed.stdout), failed.stdout
    if case in ("context", "slots", "negative context"):  # the context llama.cpp could not make: past the weights
        assert "weight load done" in failed.stdout and "memory pool started" in failed.stdout, failed.stdout



def _wrong_option(case: str, tmp_path: Path) -> tuple[str, ...]:
    """The options that start the real server wrong in ``case`` (its files written under ``tmp_path``)."""
    if case == "lora is a safetensors":
        adapter = tmp_path / "my-lora" / "adapter_model.safetensors"
        adapter.parent.mkdir()
        adapter.write_bytes(b"\x40\x77\x00\x00\x00\x00\x00\x00" + b'{"__metadata__": {}}' * 8)  # PEFT's, as safetensors starts
        return ("--lora", str(adapter))
    if case == "grammar":
        grammar = tmp_path / "yesno.gbnf"
        grammar.write_text('root ::= "yes" | "no\n')  # a string never closed
        return ("--grammar-file", str(grammar))
    if case == "chat template":
        template = tmp_path / "chat.jinja"
        template.write_text("{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% endfor %}")  # no endif
        return ("--jinja", "--chat-template-file", str(template))
    return {
        "lora is the model": ("--lora", str(GGUF)),
        "mmproj missing": ("--mmproj", str(tmp_path / "mmproj-model-f16.gguf")),
        "mmproj is the model": ("--mmproj", str(GGUF)),
        "draft missing": ("-md", str(tmp_path / "draft-q8_0.gguf")),
        "quantized V cache": ("-fa", "off", "-ctv", "q4_0"),
        "no batch": ("-b", "0", "-ub", "0"),
        "cache type block": ("-ctk", "q2_K"),
        "web assets missing": ("--path", str(tmp_path / "webui")),
        "TLS": ("--ssl-key-file", str(tmp_path / "server.key"), "--ssl-cert-file", str(tmp_path / "server.pem")),
        "web page as the model": ("-m", str(_web_page(tmp_path))),
        "flag given bare": ("-fa",),
        "vLLM's context flag": ("--max-model-len", "2048"),
        "port in the host": ("--host", f"127.0.0.1:{free_port()}"),
        "template file is a folder": ("--jinja", "--chat-template-file", str(tmp_path)),
        "vLLM's name flag": ("--served-model-name", "smollm2"),
        "lora path misspelt": ("--lora", str(tmp_path / "lora" / "adapter-f16.gguf")),
        # (as the shell passes -m /x/my models/m.gguf: two words, the second left over)
        "path with a space": ("-m", str(tmp_path / "my"), "models/SmolLM2-135M-Instruct.Q4_1.gguf"),
    }[case]


def _web_page(tmp_path: Path) -> Path:
    """What `wget` of the Hub's /blob/ URL saves under the GGUF's name: the page, not the file (round 4 R8)."""
    page = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    page.write_text("<!doctype html>\n<html><head><title>SmolLM2-135M-Instruct.Q4_1.gguf</title></head></html>\n")
    return page


@pytest.mark.parametrize(
    ("case", "first_error", "hint"),
    [
        # a GGUF another option names: the hint names that option, not -m (round 4 R5: "check -m" for each)
        ("lora is the model", r"expect general\.type to be 'adapter', but got: model", "not a LoRA adapter"),
        ("lora is a safetensors", r"invalid magic characters", "is a safetensors adapter"),
        ("mmproj missing", r"failed to open GGUF file", "could not open the multimodal projector"),
        ("mmproj is the model", r"Failed to load CLIP model", "--mmproj names the model's own GGUF"),
        ("draft missing", r"failed to open GGUF file", "which is not the model -m gave"),
        # settings llama.cpp refuses as it makes its context
        ("quantized V cache", r"quantized V cache requires flash_attn", "needs flash attention: start with -fa on"),
        ("no batch", r"n_batch and n_ubatch cannot both be zero", "are both 0"),
        ("cache type block", r"K cache type q2_K with block size 256 does not divide", "stores blocks of 256"),
        # files it reads before it loads: a grammar (abort, exit 134) and a Jinja template
        ("grammar", r"error parsing grammar", "the grammar given with --grammar or --grammar-file does not parse"),
        ("chat template", r"common_chat_templates_init", "the chat template does not parse"),
        # the HTTP server's own start (before: STARTING, its two E lines counted as warnings)
        ("web assets missing", r"static assets path not found", "does not exist where the server runs"),
        ("TLS", r"built without SSL support", "this llama.cpp build has no TLS"),
        # round 4, stop 47: R8's (a web page saved as the GGUF; a flag that takes a value now; vLLM's name for -c)
        ("web page as the model", r"invalid magic characters: '<!do'", "the model file is a web page"),
        ("flag given bare", r"expected one argument", "-fa/--flash-attn takes a value and got none"),
        ("vLLM's context flag", r"unrecognized arguments: --max-model-len", "llama.cpp's -c/--ctx-size"),
        # round 4, stop 48: R9's (the port written into --host; a folder for the template's file; vLLM's name flag)
        ("port in the host", r"couldn't bind HTTP server socket, hostname: 127\.0\.0\.1:\d+", "binds --host and --port apart"),
        ("template file is a folder", r"Is a directory", "was given a folder"),
        ("vLLM's name flag", r"unrecognized arguments: --served-model-name", "llama.cpp's -a/--alias"),
        # round 4, stop 49: R10's (--lora's folder misspelt; a path with a space, not quoted)
        ("lora path misspelt", r"failed to open '[^']+': No such file or directory", "there is no file at"),
        ("path with a space", r"unrecognized arguments: models/", "a path with a space in it, not quoted"),
    ],
)
def test_a_real_start_given_another_option_wrong_is_failed_with_the_hint_for_that_option(
    tmp_path, env, case, first_error, hint,
):
    failed = run_plain(env, tmp_path, "bad", *llamacpp_command(free_port(), *_wrong_option(case, tmp_path)))
    failed_on(failed, first_error)
    said = [line for line in failed.stdout.splitlines() if line.lstrip().startswith("hint")]
    assert said and hint in said[0], failed.stdout  # the option's own hint, first
    assert not [line for line in said if "check -m" in line], said  # and none that blames -m
    if case in ("quantized V cache", "no batch"):  # refused as the context is made: past the weights
        assert "weight load done" in failed.stdout and "memory pool started" in failed.stdout, failed.stdout

async def test_a_port_held_by_another_process_fails_and_f_frees_it_into_a_ready_v2(tmp_path, monkeypatch):
    """The seed's story on a real server: FAILED naming the port, F, the holder named and stopped
    only after `y`, v2 READY."""
    from textual.widgets import Static

    from tests.test_seed_attempts import header_hint
    from tui.app import themes
    from tui.app.launch_modals import ConfirmScreen, EditScreen
    from tui.app.launcher import LaunchApp
    from tui.cli import build_parser
    from tui.commands.options import launch_options
    from tui.commands.run import build_spec
    from tui.history import History
    from tui.wiring import make_launch

    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path / "data"))
    holder = subprocess.Popen([sys.executable, "-c", "import socket, time\ns = socket.socket()\n"
                               "s.bind(('127.0.0.1', 0)); s.listen(); print(s.getsockname()[1], flush=True)\n"
                               "time.sleep(120)"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(holder.stdout.readline())
        args = build_parser().parse_args(["run", "--no-check", "--name", "port", "--log-dir", str(tmp_path / "logs"),
                                          "--gpus", "none", "--stop-grace", "2,2", "--", *llamacpp_command(port)])
        session, launch = make_launch(build_spec(args), launch_options(args))
        palettes = themes.discover()
        app = LaunchApp(launch, session, palettes, themes.resolve(None, palettes).name, gpus_enabled=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await until(lambda: launch.attempt == 1 and launch.verdict_now is not None and launch.verdict_now.final
                        and bool(header_hint(app)), pilot=pilot, timeout=WAIT)
            assert launch.verdict_now.kind == "failed" and "couldn't bind HTTP server socket" in launch.verdict_now.text
            assert f"free_port {port}" in header_hint(app)
            await pilot.press("F")
            await until(lambda: isinstance(app.screen, EditScreen), pilot=pilot)
            await pilot.press("ctrl+s")
            await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
            assert f"Port {port} is held by pid {holder.pid}" in str(app.screen.query_one(Static).render())
            await pilot.press("y")
            await until(lambda: launch.attempt == 2 and launch.verdict_now is not None
                        and launch.verdict_now.kind == "ready", pilot=pilot, timeout=WAIT)
            assert "READY" in screen_text(app)
            await launch.stop()
        assert [a.applied for a in History().attempts("port")] == [None, "port-in-use"]
    finally:
        holder.kill()
        holder.wait()


def test_a_port_held_by_another_process_is_failed_with_the_servers_bind_error(tmp_path, env):
    """`run --plain`: the real bind error, FAILED, exit 1 (not `DEAD: exit code 1`)."""
    with subprocess.Popen([sys.executable, "-c", "import socket, time\ns = socket.socket()\n"
                           "s.bind(('127.0.0.1', 0)); s.listen(); print(s.getsockname()[1], flush=True)\n"
                           "time.sleep(120)"], stdout=subprocess.PIPE, text=True) as holder:
        try:
            port = int(holder.stdout.readline())
            failed = run_plain(env, tmp_path, "port", *llamacpp_command(port))
        finally:
            holder.kill()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    verdict = next(line for line in failed.stdout.splitlines() if line.startswith(("FAILED", "DEAD")))
    assert verdict.startswith("FAILED") and f"couldn't bind HTTP server socket, hostname: 127.0.0.1, port: {port}" in (
        verdict), failed.stdout


async def plain_until(proc: asyncio.subprocess.Process, needle: str, seen: list[str], timeout: float = WAIT) -> str:
    """The first line of a running ``--plain`` holding ``needle`` (those already read first)."""
    for line in seen:
        if needle in line:
            return line
    while True:
        raw = await asyncio.wait_for(proc.stdout.readline(), timeout)
        if not raw:
            err = (await proc.stderr.read()).decode(errors="replace")
            raise AssertionError(f"ended before {needle!r}: {''.join(seen)} {err}")
        seen.append(raw.decode())
        if needle in seen[-1]:
            return seen[-1]


async def test_watch_of_a_server_started_by_hand_finds_it_and_reads_ready(tmp_path, hand_started):
    server = hand_started()
    proc = await start_cli("watch", "--plain", str(server.log), "--timeout", "20", "--gpus", "none")
    seen: list[str] = []
    found = await plain_until(proc, f"server: pid {server.pid}", seen)
    assert "llamacpp_server.py" in found and "writes the log" in found
    assert await asyncio.wait_for(proc.wait(), WAIT) == 0, "".join(seen)
    seen.extend(raw.decode() for raw in (await proc.stdout.read()).splitlines(keepends=True))
    text = "".join(seen)
    assert "weight load" in text and not alarms(text), text
    assert any(re.search(r"(^|\s)READY\b", line) for line in seen), text  # watch --plain lines carry the time first


async def test_kill_9_of_a_server_watched_by_hand_is_dead_promptly(tmp_path, hand_started):
    """The dashboard (which follows on after READY, unlike --plain): a real server is SIGKILLed once
    it listens; DEAD within a second, naming its pid."""
    from tui.app.dashboard import build_app
    from tui.session import SessionInfo, WatchSession
    from tui.sources.factory import log_tailer, writer_source

    server = hand_started()
    await wait_for_line(server.log, READY_LINE, WAIT, alive=server)
    log = str(server.log)
    session = WatchSession(log=log_tailer(log, writers=True), info=SessionInfo(log_path=log))
    session.add_source(writer_source(log))
    app = build_app(session, gpus_enabled=False)
    async with app.run_test(size=(150, 45)) as pilot:
        await until(lambda: server.pid in {p.pid for p in session.process.writers.processes}, timeout=WAIT, pilot=pilot)
        await until(lambda: session.state.lines > 8, timeout=WAIT, pilot=pilot)
        os.kill(server.pid, signal.SIGKILL)
        killed = time.monotonic()
        await until(lambda: session.verdict().kind == "dead", timeout=WAIT, pilot=pilot)
        took = time.monotonic() - killed
        await until(lambda: "DEAD" in screen_text(app), timeout=WAIT, pilot=pilot, what="the header redrawn")
        assert f"pid {server.pid}" in session.verdict().text
    print(f"llama.cpp by hand: SIGKILL -> DEAD in {took:.2f} s")
    assert took < 3.0, f"{took:.2f} s"  # ~1 s: 0.5 s process polling, 0.5 s for the log's last words


async def test_kill_9_under_run_is_dead_and_stop_is_stopped_never_dead(tmp_path):
    """Under `run` (the dashboard's launch): kill -9 of the real server → DEAD within a second;
    a relaunch (`r`) → v2, stopped with `x` (SIGINT first: llama.cpp cleans up and exits 0) → STOPPED."""
    from tests.test_launch_app import data_dir  # noqa: F401
    from tui.app import themes
    from tui.app.launch_modals import ConfirmScreen
    from tui.app.launcher import LaunchApp
    from tui.cli import build_parser
    from tui.commands.options import launch_options
    from tui.commands.run import build_spec
    from tui.wiring import make_launch

    args = build_parser().parse_args(["run", "--no-check", "--name", "llama", "--log-dir", str(tmp_path / "logs"),
                                      "--gpus", "none", "--stop-grace", "5,5", "--", *llamacpp_command(free_port())])
    session, launch = make_launch(build_spec(args), launch_options(args))
    palettes = themes.discover()
    app = LaunchApp(launch, session, palettes, themes.resolve(None, palettes).name, gpus_enabled=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await until(lambda: launch.run is not None and launch.run.log_path.exists(), pilot=pilot, timeout=WAIT)
        await wait_for_line(launch.run.log_path, READY_LINE, WAIT)
        pid = launch.run.pid
        server = next(iter(launch_tree(pid)), pid)  # the launcher's child, where there is a wrapper
        os.kill(server, signal.SIGKILL)
        killed = time.monotonic()
        await until(lambda: launch.verdict_now is not None and launch.verdict_now.kind == "dead", pilot=pilot,
                    timeout=WAIT)
        took = time.monotonic() - killed
        assert "SIGKILL" in launch.verdict_now.text, launch.verdict_now.text

        await pilot.press("r")  # relaunch the same command: v2
        await until(lambda: launch.attempt == 2 and launch.run is not None and launch.run.log_path.exists(),
                    pilot=pilot, timeout=WAIT)
        await wait_for_line(launch.run.log_path, READY_LINE, WAIT)
        await pilot.press("x")
        await until(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        await pilot.press("y")
        await until(lambda: not launch.server_running, pilot=pilot, timeout=WAIT)
        await until(lambda: launch.verdict_now is not None and launch.verdict_now.final, pilot=pilot, timeout=WAIT)
        assert launch.verdict_now.kind == "stopped", launch.verdict_now
        assert "cleaning up before exit" in launch.run.log_path.read_text()  # it stopped itself, cleanly
    print(f"llama.cpp under run: SIGKILL -> DEAD in {took:.2f} s")
    assert took < 3.0, f"{took:.2f} s"


def launch_tree(pid: int) -> list[int]:
    """The children of a launched attempt's process (the server, under Watchtower's wrapper)."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


async def test_sigterm_of_a_watched_server_is_stopped_never_dead(tmp_path, hand_started):
    """A server stopped by its operator (SIGTERM: llama.cpp prints `cleaning up before exit...`, exit
    0) is STOPPED in the dashboard that watches it, never DEAD (`watch --plain` ends at READY: the
    dashboard is the watch that follows on)."""
    from tui.app.dashboard import build_app
    from tui.session import SessionInfo, WatchSession
    from tui.sources.factory import log_tailer, writer_source

    server = hand_started()
    await wait_for_line(server.log, READY_LINE, WAIT, alive=server)
    log = str(server.log)
    session = WatchSession(log=log_tailer(log, writers=True), info=SessionInfo(log_path=log))
    session.add_source(writer_source(log))
    app = build_app(session, gpus_enabled=False)
    kinds: list[str] = []
    async with app.run_test(size=(150, 45)) as pilot:
        await until(lambda: server.pid in {p.pid for p in session.process.writers.processes}, timeout=WAIT, pilot=pilot)
        await until(lambda: session.verdict().kind == "ready", timeout=WAIT, pilot=pilot)
        os.kill(server.pid, signal.SIGTERM)
        await until(lambda: kinds.append(session.verdict().kind) or not server.alive(), timeout=WAIT, pilot=pilot)
        await until(lambda: kinds.append(session.verdict().kind) or session.verdict().kind == "stopped", timeout=WAIT,
                    pilot=pilot)
        await until(lambda: "STOPPED" in screen_text(app), timeout=WAIT, pilot=pilot, what="the header redrawn")
        text = screen_text(app)
    assert "cleaning up before exit" in server.log.read_text()  # it stopped itself, cleanly
    assert "dead" not in kinds and "failed" not in kinds, kinds
    assert "DEAD" not in text, text


def test_the_real_demo_launches_the_tiny_llamacpp_and_reads_it_ready(tmp_path, env):
    """scripts/real_servers/demo, a newcomer's real start: `watchtower run` on the real llama.cpp
    (SmolLM2-135M) reads its own phases to READY, no alarm on the way."""
    demo = subprocess.run([str(Path(__file__).resolve().parent.parent / "scripts" / "real_servers" / "demo"),
                           "--plain", "--name", "demo", "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
                           "--timeout", "20"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env, "PORT": str(free_port())})
    try:
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert "server: llamacpp" in demo.stdout and "weight load done" in demo.stdout, demo.stdout
        assert re.search(r"^READY: ready in \d+:\d\d$", demo.stdout, re.M), demo.stdout
        assert not alarms(demo.stdout), demo.stdout
    finally:
        for row in history(env, "demo"):
            if row["pid"] and is_alive(row["pid"]):
                os.killpg(row["pid"], signal.SIGKILL)
