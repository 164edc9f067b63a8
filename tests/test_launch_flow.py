"""The launch loop end to end, without the app: real server processes, real logs, the real tracker.

run → fail → edit env → relaunch → ready; silent SIGKILL → dead within a second; a hang →
stalled?; growing GPU memory → loading; health and log marker both needed; hooks; secrets
masked everywhere; GPU leftovers that are not ours; reattach after Watchtower restarted.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launch_helpers import adopts_orphans, no_leftover_servers  # noqa: F401  (autouse; used by name)
from tests.support import launch_verdict, until
from tui.core.events import GpuInfo, GpuProcess, GpuSample
from tui.core.limits import StallLimits
from tui.core.verdict import DEAD, LOADING, STALLED
from tui.history import History
from tui.launch.gpu_release import GpuBusy
from tui.launch.controller import Launch
from tui.launch.spec import LaunchSpec
from tui.launch.events import Note, VerdictChanged
from tui.launch.proctable import group_members, is_alive
from tui.launch.spec import StopPlan
from tui.session import WatchSession

SIM = str(Path(__file__).with_name("server_sim.py"))
CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
TOKEN = "hf_TopSecretToken0123456789"
GIB = 2**30


def sim(*args: str) -> list[str]:
    return [sys.executable, SIM, "--step", "0.01", *args]


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


class Harness:
    """A session and a launch wired as `watchtower run` wires them; verdicts recorded."""

    def __init__(self, spec: LaunchSpec) -> None:
        self.session = WatchSession(stall_limits=spec.stall_limit)  # (given at construction, as `run` does)
        self.launch = Launch(spec, history=History())
        self.launch.attach(self.session)
        self.verdicts: list = []
        self.launch.subscribe(lambda e: isinstance(e, VerdictChanged) and self._on_verdict(e.verdict, e.previous))

    def _on_verdict(self, verdict, previous) -> None:
        self.verdicts.append((time.time(), verdict))

    async def __aenter__(self) -> Harness:
        self.session.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.launch.close(stop_server=True)
        await self.session.stop()

    async def until(self, predicate, timeout: float = 20.0):
        """A verdict that satisfies ``predicate`` (judged afresh at each look)."""
        return await launch_verdict(self.launch, predicate, timeout=timeout)

def spec(tmp_path, command, **kwargs) -> LaunchSpec:
    kwargs.setdefault("plan", StopPlan(after_int=2, after_term=2))
    return LaunchSpec(name=kwargs.pop("name", "sim"), command=command, log_dir=tmp_path / "logs", **kwargs)


async def test_fail_edit_env_relaunch_ready_and_the_attempts_table(tmp_path, data_dir):
    async with Harness(spec(tmp_path, sim("--outcome", "raise", "--tp", "2"), env={"NCCL_DEBUG": "WARN"})) as h:
        await h.launch.start()
        failed = await h.until(lambda v: v.final)
        assert failed.kind == "failed"
        assert "ValueError" in failed.detail and "context_length" in failed.detail
        assert h.launch.run.attempt == 1 and h.launch.run.log_path.name == "sim-v1.log"
        await asyncio.wait_for(h.launch.run.wait(), 10)  # the simulator exits right after its error
        # the operator adds the variable the error names, and relaunches
        await h.launch.relaunch(env={**h.launch.spec.env, CONTEXT_ENV: "1"})
        ready = await h.until(lambda v: v.final)
        assert ready.kind == "ready", ready
        assert h.launch.run.attempt == 2 and h.session.info.attempt == 2
        assert h.session.state.outcome == "ready"
        pids = group_members(h.launch.run.pgid)
        assert len(pids) >= 3  # the server and its two "schedulers"
        assert await h.launch.stop()
        assert not any(is_alive(p) for p in pids) and group_members(h.launch.run.pgid) == []
    rows = History().attempts("sim")
    assert [r.attempt for r in rows] == [1, 2]
    assert rows[0].summary.startswith("v1 ✗ ValueError ") and rows[0].outcome == "failed"
    assert rows[0].exit_text == "exited with code 1"
    assert rows[1].summary.startswith("v2 ✓ ready ") and rows[1].env_diff == [f"+{CONTEXT_ENV}=1"]
    assert rows[1].log_path.endswith("sim-v2.log") and "weight_load" in rows[1].phases


async def test_silent_sigkill_is_dead_with_the_signal_promptly(tmp_path, data_dir):
    async with Harness(spec(tmp_path, sim("--outcome", "sigkill", "--load-seconds", "0.4"))) as h:
        await h.launch.start()
        dead = await h.until(lambda v: v.final)
        exited_at = h.launch.run.exited_at
        assert dead.kind == DEAD
        assert dead.detail.startswith(f"SIGKILL · pid {h.launch.run.server_pid}; ")  # the server's, the cause first
        assert "Loading safetensors checkpoint shards:  50%" in dead.detail  # what the log said last
        seen_at = next(t for t, v in h.verdicts if v.kind == DEAD)
        assert seen_at - exited_at < 3.0  # (prompt, not a poll's or a timeout's wait; the slack is for load)
        assert exited_at - os.stat(h.launch.run.log_path).st_mtime < 3.0
    (row,) = History().attempts("sim")
    assert row.outcome == DEAD and "SIGKILL" in row.summary


async def test_a_server_that_fails_before_its_launch_is_recorded_is_judged_on_its_whole_log(tmp_path, data_dir,
                                                                                              monkeypatch):
    """A server that writes its lines and exits while the history is still recording its launch
    (a slow disk, a loaded machine: llama.cpp with its port held ends in 16 ms): the exit waits for
    the log's last words, so the failure is its error, in one startup — not 'exit code 1; the log
    is empty', the lines that follow read as a second startup (issue 29, the port-held seed story)."""
    lines = ("0.00.000.432 I srv          init: initializing ...\n"
             "0.00.003.789 I srv          init: build_info: b0-unknown\n"
             "0.00.005.086 E srv         start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080\n"
             "0.00.005.211 E srv          init: exiting due to HTTP server error\n")
    server = [sys.executable, "-c", f"import sys; sys.stdout.write({lines!r}); sys.exit(1)"]
    h = Harness(spec(tmp_path, server, name="early"))
    update = History.update

    def recorded_once_it_has_exited(history, *args, **kwargs):
        """The launch's first history write, finished only after the server has exited."""
        deadline = time.monotonic() + 10
        while (h.launch.run is None or h.launch.run.exited_at is None) and time.monotonic() < deadline:
            time.sleep(0.01)
        return update(history, *args, **kwargs)

    monkeypatch.setattr(History, "update", recorded_once_it_has_exited)
    async with h:
        await h.launch.start()
        failed = await h.until(lambda v: v.final)
        assert failed.kind == "failed" and "couldn't bind HTTP server socket" in failed.detail, failed
        assert h.session.state.attempt == 1 and not h.session.state.earlier, h.session.state.earlier


async def test_a_hang_with_idle_gpus_is_stalled_naming_the_ranks(tmp_path, data_dir):
    async with Harness(spec(tmp_path, sim("--outcome", "hang", "--tp", "3"), stall_limit=StallLimits(1.0))) as h:
        await h.launch.start()
        now = time.time()
        idle = tuple(GpuInfo(i, memory_used=5 * GIB, utilization=0) for i in range(3))
        for k in range(3):
            h.session.handle(GpuSample("localhost", now + k * 0.5, idle))
        stalled = await h.until(lambda v: v.kind == STALLED, timeout=15)
        assert stalled.ranks == ("TP0", "TP1", "TP2")
        assert "TP0, TP1, TP2 not done with weight load" in stalled.detail and "GPUs idle" in stalled.detail


async def test_a_quiet_log_with_growing_gpu_memory_is_loading(tmp_path, data_dir):
    async with Harness(spec(tmp_path, sim("--outcome", "hang"), stall_limit=StallLimits(1.0))) as h:
        await h.launch.start()
        await h.until(lambda v: v.kind == STALLED, timeout=15)  # quiet and no GPU data

        async def feed():
            for k in range(40):
                used = int((10 + 2.0 * k * 0.25) * GIB)
                h.session.handle(GpuSample("localhost", time.time(), (GpuInfo(0, memory_used=used, utilization=0),)))
                await asyncio.sleep(0.25)  # time passing is the point: memory that grows per second

        feeder = asyncio.create_task(feed())
        try:
            loading = await h.until(lambda v: v.kind == LOADING, timeout=10)
            assert "GPU mem +2.0 GiB/s" in loading.detail
        finally:
            feeder.cancel()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_ready_needs_the_health_endpoint_too_and_hooks_get_the_verdict_without_secrets(tmp_path, data_dir):
    port = free_port()
    hook_out = tmp_path / "hook.env"
    s = spec(
        tmp_path,
        sim("--outcome", "ready", "--port", str(port), "--step", "0.05"),
        env={"HF_TOKEN": TOKEN},
        health_url=f"http://127.0.0.1:{port}/health",
        on_ready=f"env > {hook_out}",
    )
    async with Harness(s) as h:
        notes: list[str] = []
        h.launch.subscribe(lambda e: isinstance(e, Note) and notes.append(e.text))
        await h.launch.start()
        await h.until(lambda v: v.final)
        pending = [v for _, v in h.verdicts if v.pending]
        assert pending and all("health 200" in v.pending for v in pending)
        assert h.verdicts[-1][1].kind == "ready"
        await h.launch.settle()
        assert notes == ["hook ran (exit 0)"]
    hook_env = dict(line.split("=", 1) for line in hook_out.read_text().splitlines() if "=" in line)
    assert hook_env["WATCHTOWER_OUTCOME"] == "ready" and hook_env["WATCHTOWER_ATTEMPT"] == "1"
    assert hook_env["WATCHTOWER_NAME"] == "sim"
    assert "HF_TOKEN" not in hook_env and TOKEN not in hook_out.read_text()


async def test_a_token_appears_nowhere_watchtower_shows_or_stores(tmp_path, data_dir):
    command = sim("--outcome", "raise", "--echo-env", "HF_TOKEN", "--api-key", "sk-live-abcdef123456")
    async with Harness(spec(tmp_path, command, env={"HF_TOKEN": TOKEN})) as h:
        await h.launch.start()
        verdict = await h.until(lambda v: v.final)
        shown = [e.text for e in h.session.scrollback.entries()]
        assert any("'hf_token': '" in line for line in shown)  # the line is there, the value is not
        everything = "\n".join([*shown, h.launch.command_text, verdict.text, h.session.info.command])
        assert TOKEN not in everything and "sk-live-abcdef123456" not in everything
        assert "HF_TOKEN=****" in h.launch.command_text and "--api-key '****'" in h.launch.command_text
        assert TOKEN in h.launch.run.log_path.read_text()  # the server's own log is the server's
    db = (data_dir / "history.sqlite3").read_bytes()
    assert TOKEN.encode() not in db and b"sk-live-abcdef123456" not in db
    with sqlite3.connect(data_dir / "history.sqlite3") as conn:
        dump = "\n".join(conn.iterdump())
    assert TOKEN not in dump and "****" in dump


async def test_foreign_gpu_holders_block_a_relaunch_until_killed(tmp_path, data_dir):
    squatter = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        async with Harness(spec(tmp_path, sim("--outcome", "raise"))) as h:
            await h.launch.start()
            await h.until(lambda v: v.final)
            h.session.handle(
                GpuSample("localhost", time.time(), (
                    GpuInfo(0, memory_used=40 * GIB, processes=(GpuProcess(squatter.pid, 40 * GIB),)),
                    GpuInfo(1, memory_used=20 * GIB, processes=(GpuProcess(squatter.pid, 20 * GIB),)),
                ))
            )
            with pytest.raises(GpuBusy) as busy:
                await h.launch.relaunch(gpu_timeout=0.5)
            (holder,) = busy.value.holders
            assert holder.pid == squatter.pid and not holder.ours
            assert holder.per_gpu == {0: 40 * GIB, 1: 20 * GIB}
            assert "time.sleep(60)" in holder.text and "GPU0 40.0 GiB, GPU1 20.0 GiB" in holder.text
            assert holder.device_open is False and "another container" in holder.text  # no /dev/nvidia* here
            assert await h.launch.kill_holders([holder.pid]) == []
            assert squatter.wait(timeout=5) == -signal.SIGTERM
            h.session.handle(GpuSample("localhost", time.time(), (GpuInfo(0, memory_used=0), GpuInfo(1, memory_used=0))))
            run = await h.launch.relaunch(gpu_timeout=0.5)
            assert run.attempt == 2
    finally:
        if squatter.poll() is None:
            squatter.kill()
            squatter.wait()


async def test_reattach_to_a_running_attempt_after_watchtower_restarted(tmp_path, data_dir):
    s = spec(tmp_path, sim("--outcome", "hang"))
    first = Harness(s)
    async with first:
        await first.launch.start()
        await first.until(lambda v: first.session.state.lines > 3)
        pid = first.launch.run.pid
        await first.launch.close()  # Watchtower exits; the server keeps running
        first.launch.run = None  # so that leaving the block does not stop it
    assert is_alive(pid)
    second = Harness(spec(tmp_path, sim("--outcome", "hang")))
    async with second:
        run = await second.launch.start()
        assert run.pid == pid and run.attempt == 1 and run.alive
        await second.until(lambda v: second.session.state.lines > 3)
        assert second.session.state.current_phase is not None  # the timeline is rebuilt from the log
        assert await second.launch.stop()
        assert not is_alive(pid)
    assert [r.attempt for r in History().attempts("sim")] == [1]


async def test_attaching_to_a_ready_attempt_keeps_its_recorded_time_to_ready(tmp_path, data_dir):
    first = Harness(spec(tmp_path, sim("--outcome", "ready")))
    async with first:
        await first.launch.start()
        assert (await first.until(lambda v: v.final)).kind == "ready"
        await first.launch.settle()
        recorded = History().latest("sim")
        await first.launch.close()  # Watchtower exits; the server keeps serving
        first.launch.run = None  # so that leaving the block does not stop it
    assert recorded is not None and recorded.ready_seconds is not None
    second = Harness(spec(tmp_path, sim("--outcome", "ready")))
    async with second:
        run = await second.launch.start()  # attach: the same attempt, judged READY again from its log
        assert run.attempt == 1
        assert (await second.until(lambda v: v.final)).kind == "ready"
        await second.launch.settle()
        again = History().latest("sim")
        assert again is not None and again.ready_seconds == recorded.ready_seconds, (again, recorded)
        assert again.outcome == "ready" and again.phases == recorded.phases


async def test_eta_from_the_last_successful_attempt_of_the_same_command(tmp_path, data_dir):
    command = sim("--outcome", "ready", "--load-seconds", "2.5", "--step", "0.02")
    async with Harness(spec(tmp_path, command)) as h:
        await h.launch.start()
        assert (await h.until(lambda v: v.final)).kind == "ready"
        await h.launch.settle()
        took = History().attempts("sim")[0]
        assert took.ready_seconds is not None and took.phases.get("weight_load", 0) >= 1.0
        await h.launch.relaunch()  # the same command again: history knows what to expect
        loading = await h.until(lambda v: "weight load" in v.detail and " of ~" in v.detail)
        assert "ready in ~" in loading.detail
        assert (await h.until(lambda v: v.final)).kind == "ready"


async def test_relaunch_waits_until_the_old_attempts_gpu_memory_is_released(tmp_path, data_dir):
    async with Harness(spec(tmp_path, sim("--outcome", "raise"))) as h:
        await h.launch.start()
        await h.until(lambda v: v.final)
        old = h.launch.run
        await asyncio.wait_for(old.wait(), 10)
        # the driver still lists the dead server's memory for a moment after its exit
        h.session.handle(GpuSample("localhost", time.time(), (
            GpuInfo(0, memory_used=60 * GIB, processes=(GpuProcess(old.pid, 60 * GIB),)),
        )))
        relaunch = asyncio.create_task(h.launch.relaunch(gpu_timeout=30))
        await until(lambda: "GPU memory" in h.launch.activity)
        assert not relaunch.done() and h.launch.run is old  # still waiting for the memory
        h.session.handle(GpuSample("localhost", time.time(), (GpuInfo(0, memory_used=0),)))
        run = await asyncio.wait_for(relaunch, 10)
        assert run.attempt == 2


async def test_after_attach_a_relaunch_never_sends_masked_secrets(tmp_path, data_dir, monkeypatch):
    import argparse

    from tui.commands.attach import spec_from_history
    from tui.launch.spec import LaunchError

    first = Harness(spec(tmp_path, sim("--outcome", "hang"), env={"HF_TOKEN": TOKEN}))
    async with first:
        await first.launch.start()
        await first.until(lambda v: first.session.state.lines > 3)
        await first.launch.close()
        first.launch.run = None  # Watchtower exits; the server keeps running
    args = argparse.Namespace(name="sim", health=None, stop_grace="2,2", stall_limit=None, on_ready=None, on_fail=None)
    attached = spec_from_history(args)
    assert attached.env == {"HF_TOKEN": "****"}  # the history never had the token
    async with Harness(attached) as h:
        run = await h.launch.start()
        assert run.attempt == 1
        monkeypatch.delenv("HF_TOKEN", raising=False)
        with pytest.raises(LaunchError, match=r"secrets were not kept \(HF_TOKEN\)"):
            await h.launch.relaunch()
        assert h.launch.server_running and run.alive  # refused before anything was stopped
        monkeypatch.setenv("HF_TOKEN", TOKEN)  # the operator's shell has it: that one is used
        run = await h.launch.relaunch()
        assert run.attempt == 2 and h.launch.spec.env == {"HF_TOKEN": TOKEN}
        assert f"HF_TOKEN={TOKEN}".encode() in Path(f"/proc/{run.pid}/environ").read_bytes()


@pytest.mark.usefixtures("adopts_orphans")
async def test_a_relaunch_names_the_processes_it_had_to_stop_outside_the_group(tmp_path, data_dir):
    """A helper that setsid()-ed out of the group is stopped with the attempt, and said so."""
    from tests.test_launch_process import ESCAPER

    pids_file = tmp_path / "escaped"
    spec = LaunchSpec("esc", [sys.executable, "-c", ESCAPER, str(pids_file)], log_dir=tmp_path / "logs",
                      plan=StopPlan(after_int=0.5, after_term=0.5))
    async with Harness(spec) as h:
        notes: list[str] = []
        h.launch.subscribe(lambda e: isinstance(e, Note) and notes.append(e.text))
        await h.launch.start()
        await until(lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2,
                    what="the helpers to start (their pids in the file)")
        escaped = [int(p) for p in pids_file.read_text().split()]
        try:
            spec.command = sim("--outcome", "ready")
            await h.launch.relaunch(gpu_timeout=1)
            assert not any(is_alive(p) for p in escaped)
            (said,) = [n for n in notes if "outside its process group" in n]
            assert said.startswith("v1: ") and all(f"pid {p}" in said for p in escaped)
            assert h.launch.run.attempt == 2
        finally:
            for pid in escaped:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
