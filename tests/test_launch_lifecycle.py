"""The attempt lifecycle's logic (``tui.launch.controller.Launch``) over an in-memory runner, in the
fast tier: relaunch as v2 after v1 failed, the stop's SIGINT → SIGTERM → SIGKILL escalation and its
countdown, the wait for the old attempt's GPU memory, and the history record of every attempt.
The same steps with real processes are in test_launch_process.py (each runner's own) and
test_launch_flow.py; here the session, tracker, verdict and history are real, only the processes
are made up."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from functools import partial

import pytest

from tests.support import MemoryRunner, launch_verdict, until
from tui.core.events import GpuInfo, GpuProcess, GpuSample
from tui.core.verdict import DEAD
from tui.history import History
from tui.launch.controller import Launch
from tui.launch.events import AttemptStarted, Note
from tui.launch.gpu_release import GpuBusy
from tui.launch.spec import LaunchError, LaunchSpec, StopPlan
from tui.session import WatchSession

GIB = 2**30
START = (
    "[2026-03-04 11:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n"
    "[2026-03-04 11:00:01] Load weight begin. avail mem=79.10 GB\n"
)
READY = (
    "[2026-03-04 11:00:05] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=64.10 GB\n"
    "[2026-03-04 11:00:09] The server is fired up and ready to roll!\n"
)
CRASH = (
    "Traceback (most recent call last):\n"
    '  File "/opt/sglang/python/sglang/launch_server.py", line 14, in <module>\n'
    "    launch_server(server_args)\n"
    "ValueError: context_length 262144 is longer than the model's 131072\n"
)


class Lifecycle:
    """A launch wired to a session as `watchtower run` wires them, its attempts in a MemoryRunner."""

    def __init__(self, tmp_path, *, dies_at: int = signal.SIGINT, plan: StopPlan | None = None,
                 max_rate: float = 15.0) -> None:
        spec = LaunchSpec("sim", ["python", "-m", "sglang.launch_server", "--model-path", "/models/m"],
                          log_dir=tmp_path / "logs", plan=plan or StopPlan(after_int=15, after_term=10, after_kill=5))
        self.session = WatchSession(max_rate=max_rate)  # (how often the screen would be told)
        self.launch = Launch(spec, history=History(), runner=partial(MemoryRunner, dies_at=dies_at))
        self.launch.attach(self.session)
        self.runner: MemoryRunner = self.launch.runner  # type: ignore[assignment]
        self.notes: list[str] = []
        self.launch.subscribe(lambda e: isinstance(e, Note) and self.notes.append(e.text))

    async def __aenter__(self) -> Lifecycle:
        self.session.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.launch.close()
        await self.session.stop()

    async def verdict(self, predicate):
        """The launch's verdict once it satisfies ``predicate``, as the launch judged it."""
        return await launch_verdict(self.launch, predicate, judge=False)

async def test_a_relaunch_after_a_failure_is_v2_with_its_own_log_and_both_attempts_are_in_the_history(tmp_path):
    async with Lifecycle(tmp_path) as life:
        started: list[AttemptStarted] = []
        life.launch.subscribe(lambda e: isinstance(e, AttemptStarted) and started.append(e))
        v1 = await life.launch.start()
        life.runner.log(v1).say(START + CRASH)
        life.runner.exit(v1, returncode=1)
        failed = await life.verdict(lambda v: v.final)
        assert failed.kind == "failed" and "ValueError: context_length 262144" in failed.detail, failed

        v2 = await life.launch.relaunch(env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"})
        assert (v2.attempt, v2.log_path.name) == (2, "sim-v2.log") and v2.log_path.parent == tmp_path / "logs"
        assert life.runner.started == [v1, v2] and v2.env == {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
        assert [e.run.attempt for e in started] == [1, 2] and life.session.info.attempt == 2
        life.runner.log(v2).say(START + READY)
        ready = await life.verdict(lambda v: v.final)
        assert ready.kind == "ready" and life.launch.attempt == 2
        await life.launch.settle()
        assert life.runner.signals == []  # v1 had ended: nothing to stop before v2
    rows = History().attempts("sim")
    assert [(r.attempt, r.outcome) for r in rows] == [(1, "failed"), (2, "ready")]
    assert rows[0].exit_text == "exited with code 1" and rows[0].summary.startswith("v1 ✗ ValueError")
    assert rows[1].env_diff == ["+SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"] and rows[1].log_path.endswith("sim-v2.log")
    assert [r.pid for r in rows] == [v1.pid, v2.pid]


@pytest.mark.parametrize(
    "dies_at, signals, graces, note",
    [
        (signal.SIGINT, [signal.SIGINT], [15], None),
        (signal.SIGTERM, [signal.SIGINT, signal.SIGTERM], [15, 10], None),
        (signal.SIGKILL, [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], [15, 10, 5], "v1: needed SIGKILL: pid {pid}"),
    ],
    ids=["polite", "at-sigterm", "stubborn"],
)
async def test_a_stop_escalates_only_as_far_as_needed_counting_down_each_grace(tmp_path, dies_at, signals, graces, note):
    async with Lifecycle(tmp_path, dies_at=dies_at) as life:
        run = await life.launch.start()
        life.runner.log(run).say(START)
        await life.verdict(lambda v: v.kind == "starting")
        stopping = asyncio.create_task(life.launch.stop())
        countdowns = {
            signal.SIGINT: "SIGINT sent, SIGTERM in 11 s",
            signal.SIGTERM: "SIGTERM sent, SIGKILL in 6 s",
        }
        for sig in signals[:-1]:  # each signal the server outlives: the countdown, then the grace runs out
            await until(lambda sig=sig: life.runner.signals[-1:] == [(1, sig)] and run.stopping is not None
                        and run.stopping.signal == sig)
            assert life.launch.stop_countdown(now=run.stopping.at + 4) == countdowns[sig]
            assert life.launch.verdict().kind == "stopping"
            life.runner.let_grace_pass()
        assert await asyncio.wait_for(stopping, 10) is True
        assert [s for _, s in life.runner.signals] == signals and life.runner.graces == graces
        assert life.launch.stop_countdown() is None and not run.alive and run.status.stopped_by_user
        assert life.notes == ([] if note is None else [note.format(pid=run.pid) + f" ({' '.join(run.command)})"])
        await life.launch.settle()
    (row,) = History().attempts("sim")
    assert row.outcome == "stopped"


async def test_a_relaunch_waits_for_the_old_attempts_gpu_memory_then_starts_v2(tmp_path):
    async with Lifecycle(tmp_path) as life:
        v1 = await life.launch.start()
        life.runner.exit(v1, signum=signal.SIGKILL)
        assert (await life.verdict(lambda v: v.final)).kind == DEAD
        # the driver still lists the dead server's memory for a moment after its exit
        life.session.handle(GpuSample("localhost", time.time(), (
            GpuInfo(0, memory_used=60 * GIB, processes=(GpuProcess(v1.pid, 60 * GIB),)),
        )))
        relaunch = asyncio.create_task(life.launch.relaunch(gpu_timeout=30))
        await until(lambda: "GPU memory" in life.launch.activity)
        assert not relaunch.done() and life.launch.run is v1 and len(life.runner.started) == 1
        life.session.handle(GpuSample("localhost", time.time(), (
            GpuInfo(0, memory_used=60 * GIB, processes=(GpuProcess(v1.pid, 60 * GIB),)),
        )))  # still listed: still waiting
        await asyncio.sleep(0)
        assert not relaunch.done()
        life.session.handle(GpuSample("localhost", time.time(), (GpuInfo(0, memory_used=0),)))
        v2 = await asyncio.wait_for(relaunch, 10)
        assert v2.attempt == 2 and life.launch.activity == ""


async def test_gpu_memory_held_by_a_process_not_ours_stops_the_relaunch_naming_it(tmp_path):
    async with Lifecycle(tmp_path) as life:
        v1 = await life.launch.start()
        life.runner.exit(v1, returncode=1)
        await life.verdict(lambda v: v.final)
        holder = os.getpid()  # a real process that is no attempt of this launch: this test's own
        life.session.handle(GpuSample("localhost", time.time(), (
            GpuInfo(0, memory_used=20 * GIB, processes=(GpuProcess(holder, 20 * GIB),)),
        )))
        with pytest.raises(GpuBusy) as busy:
            await life.launch.relaunch(gpu_timeout=5)
        assert [h.pid for h in busy.value.holders] == [holder] and not busy.value.holders[0].ours
        assert "GPU0 20.0 GiB" in str(busy.value) and len(life.runner.started) == 1
        v2 = await life.launch.relaunch(force=True)  # what `k` then `r` comes to, or a relaunch regardless
        assert v2.attempt == 2


async def test_an_attempt_that_could_not_start_leaves_no_record_and_the_next_one_is_still_v1(tmp_path):
    async with Lifecycle(tmp_path) as life:
        life.runner.refuse = "cannot start python: No such file or directory"
        with pytest.raises(LaunchError, match="cannot start python"):
            await life.launch.start()
        assert History().attempts("sim") == [] and life.launch.run is None
        life.runner.refuse = None
        run = await life.launch.launch()
        assert run.attempt == 1 and life.runner.started == [run]
        await life.launch.settle()
    assert [(r.attempt, r.pid) for r in History().attempts("sim")] == [(1, run.pid)]


async def test_a_judgement_between_the_exit_and_the_logs_last_words_is_not_final(tmp_path):
    """The runner knows the process exited before the log's last bytes and the exit reach the tracker:
    a judgement in between (the tick, a session update) waits for them, so the attempt ends FAILED
    with its traceback, once, not DEAD with the log read as empty."""
    from tui.launch.events import AttemptFinished

    async with Lifecycle(tmp_path) as life:
        ends: list[str] = []
        life.launch.subscribe(lambda e: isinstance(e, AttemptFinished) and ends.append(str(e.verdict.kind)))
        run = await life.launch.start()
        life.runner.log(run).say(START + CRASH)
        life.runner.exit(run, returncode=1)
        early = life.launch.evaluate()  # what the ticker would judge if it fired now
        assert early is not None and not early.final, early
        final = await life.verdict(lambda v: v.final)  # then, once they came: the traceback's
        assert final.kind == "failed" and "ValueError" in final.detail, final
        assert ends == ["failed"]


async def cold_load_read(life):
    """v1 started, its weight load under way, its processes' counters saying 15 GB came off an
    ext4 disk (bytes read = bytes off disk: cold); v1."""
    from tui.core.events import CheckpointFound, ReadCounters

    gb = 10**9
    v1 = await life.launch.start()
    life.session.handle(CheckpointFound("/models/m", 15 * gb, 1, filesystem="ext4"))
    life.session.handle(ReadCounters("launch", "localhost", time.time(), ((v1.pid, 2 * gb, gb),)))
    life.runner.log(v1).say(START)
    await until(lambda: life.session.weight.load.running, what="the weight load under way")
    life.session.handle(ReadCounters("launch", "localhost", time.time(), ((v1.pid, 17 * gb, 16 * gb),)))
    return v1


async def test_an_attempts_history_record_keeps_whether_its_weight_load_was_cold(tmp_path):
    """The load's processes read the checkpoint off an ext4 disk (their I/O counters): the
    attempt's record says cold, for `history`'s profile to set beside the next attempt's."""
    async with Lifecycle(tmp_path) as life:
        v1 = await cold_load_read(life)
        life.runner.log(v1).say(READY)
        ready = await life.verdict(lambda v: v.final)
        assert ready.kind == "ready"
        await life.launch.settle()
    (row,) = History().attempts("sim")
    assert row.page_cache == "cold"


async def test_a_burst_of_more_events_than_a_screen_refresh_keeps_drops_no_phase_end_for_the_record(tmp_path):
    """The record hears the session's events one by one, none dropped: 1500 warnings and the
    weight load's end within one screen refresh (more events than a refresh's batch keeps) still
    leave the attempt's record saying its load was cold — the page cache is read as the load ends."""
    from tui.history import phase_seconds

    warnings = "".join(f"[2026-03-04 11:00:02] WARNING odd thing number {i}\n" for i in range(1500))
    async with Lifecycle(tmp_path, max_rate=0.5) as life:  # the screen told every 2 s: one batch
        v1 = await cold_load_read(life)
        life.runner.log(v1).say(warnings + READY.splitlines(keepends=True)[0])
        await until(lambda: "weight_load" in phase_seconds(life.session.state), what="the weight load's end")
        await life.launch.settle()
        (row,) = History().attempts("sim")
        assert row.page_cache == "cold", row.phases
        assert "weight_load" in row.phases, row.phases
