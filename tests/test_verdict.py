"""The verdict: log + process + GPUs -> one word, and the reasons shown with it."""

from __future__ import annotations

import signal

from tui.core.events import GpuInfo, GpuSample, HealthStatus
from tui.core.limits import StallLimits
from tui.core.state import FAILED, READY, STOPPED, ErrorReport, Phase, RankPhase, StartupState
from tui.core.verdict import (
    DEAD,
    LOADING,
    STALLED,
    STARTING,
    ProcessStatus,
    clock,
    describe_exit,
    gpu_activity,
    judge,
)

GIB = 2**30
ALIVE = ProcessStatus(alive=True)


def loading_state(ranks=("TP0", "TP1", "TP2")) -> StartupState:
    state = StartupState(server="sglang", first_ts=1000.0, last_ts=1010.0, ranks=set(ranks))
    phase = Phase("weight_load", start_line=5, start_ts=1005.0)
    phase.ranks = {"TP0": RankPhase("TP0", 5, 1005.0, end_line=9, end_ts=1009.0), "TP1": RankPhase("TP1", 6, 1005.0)}
    state.phases = [Phase("server_args", 1, 1000.0, end_line=2, end_ts=1001.0), phase]
    return state


def samples(rate_gib: float, util: int, now: float, n: int = 5) -> list[GpuSample]:
    out = []
    for i in range(n):
        at = now - (n - 1 - i)
        used = int((10 + rate_gib * i) * GIB)
        out.append(GpuSample("localhost", at, (GpuInfo(0, memory_used=used, utilization=util), GpuInfo(1, memory_used=GIB, utilization=0))))
    return out


def test_exit_descriptions_name_the_signal_and_the_oom_killer():
    assert describe_exit(None, signal.SIGKILL) == "killed by SIGKILL"
    assert describe_exit(-11, None) == "killed by SIGSEGV (segmentation fault)"
    assert describe_exit(137, None) == "killed by SIGKILL"  # via a shell
    assert describe_exit(1, None) == "exited with code 1"
    assert describe_exit(None, None) == "exited (status unknown)"


def test_silent_death_is_dead_with_signal_and_last_words():
    state = loading_state()
    v = judge(
        state, now=1020.0, last_activity=1019.5, last_line="Loading safetensors checkpoint shards:  50% Completed",
        process=ProcessStatus(alive=False, signal=signal.SIGKILL),
    )
    assert v.kind == DEAD and v.final
    assert v.detail.startswith("SIGKILL; ") and "50% Completed" in v.detail  # the cause first
    assert "OOM" not in v.detail  # a SIGKILL alone is no evidence of the OOM killer
    oom = judge(state, now=1020.0, last_activity=1019.5, process=ProcessStatus(
        alive=False, signal=signal.SIGKILL, pid=4242, oom_evidence="kernel log: Killed process 4242"))
    assert oom.detail.startswith("SIGKILL · pid 4242 · killed by SIGKILL: the OOM killer (kernel log: Killed process 4242)")


def test_exit_with_a_classified_error_is_failed_with_the_error_and_the_code():
    state = loading_state()
    state.outcome = FAILED
    state.errors = [ErrorReport(line=7, kind="ValueError", message="context length too long", rank="TP0")]
    v = judge(state, now=1020.0, last_activity=1019.0, process=ProcessStatus(alive=False, returncode=1))
    assert v.kind == FAILED
    assert v.detail == "ValueError: context length too long (TP0); exited with code 1"


def test_user_stop_is_stopped_not_dead():
    v = judge(loading_state(), now=1020.0, last_activity=1019.0,
              process=ProcessStatus(alive=False, signal=signal.SIGINT, stopped_by_user=True))
    assert v.kind == STOPPED


def test_quiet_log_with_growing_gpu_memory_is_loading_with_the_rate():
    now = 2000.0
    act = gpu_activity(samples(2.1, 0, now), now)
    assert act is not None and round(act.mem_rate / GIB, 1) == 2.1
    v = judge(loading_state(), now=now, last_activity=now - 60, process=ALIVE, gpus=act)
    assert v.kind == LOADING
    assert "GPU mem +2.1 GiB/s" in v.detail and "log quiet 1:00" in v.detail


def test_busy_gpus_also_count_as_loading():
    now = 2000.0
    v = judge(loading_state(), now=now, last_activity=now - 600, process=ALIVE, gpus=gpu_activity(samples(0, 95, now), now))
    assert v.kind == LOADING and "GPUs busy 95%" in v.detail


def test_silence_longer_than_history_with_idle_gpus_is_stalled_naming_the_ranks():
    now = 2000.0
    v = judge(loading_state(), now=now, last_activity=now - 400, process=ALIVE,
              gpus=gpu_activity(samples(0, 0, now), now), expected_phase=300.0)
    assert v.kind == STALLED
    assert v.ranks == ("TP1", "TP2")  # TP1 began and did not end; TP2 never began
    assert "TP1, TP2 not done with weight load" in v.detail
    assert "longer than weight load has ever taken (5:00)" in v.detail
    # the same silence within what history has seen is only quiet
    v = judge(loading_state(), now=now, last_activity=now - 200, process=ALIVE,
              gpus=gpu_activity(samples(0, 0, now), now), expected_phase=300.0)
    assert v.kind == STARTING and "log quiet 3:20" in v.detail


def test_configured_limit_overrides_history_and_old_gpu_samples_do_not_count():
    now = 2000.0
    old = samples(5.0, 90, now - 100)  # busy, but long ago
    v = judge(loading_state(), now=now, last_activity=now - 45, process=ALIVE,
              gpus=gpu_activity(old, now), expected_phase=3000.0, limits=StallLimits(40.0))
    assert v.kind == STALLED and "no GPU data" in v.detail and "past the limit (0:40, --stall-limit)" in v.detail


def test_ready_needs_log_marker_and_health_both_and_says_which_is_pending():
    state = loading_state()
    health = HealthStatus("http://127.0.0.1:30000/health", ok=False, detail="connection refused")
    v = judge(state, now=1020.0, last_activity=1019.0, process=ALIVE, health=health)
    assert v.kind == STARTING and v.pending == ("log ready marker", "health 200")
    state.outcome = READY
    v = judge(state, now=1020.0, last_activity=1019.0, process=ALIVE, health=health)
    assert v.kind == STARTING and v.pending == ("health 200",)
    assert "waiting for http://127.0.0.1:30000/health: connection refused" in v.detail
    v = judge(state, now=1020.0, last_activity=1019.0, process=ALIVE,
              health=HealthStatus(health.url, ok=True, detail="HTTP 200 OK"))
    assert v.kind == READY and v.detail == "ready in 0:10"
    state.outcome = "starting"  # health alone is not enough
    v = judge(state, now=1020.0, last_activity=1019.0, process=ALIVE,
              health=HealthStatus(health.url, ok=True, detail="HTTP 200 OK"))
    assert v.kind == STARTING and v.pending == ("log ready marker",)


def test_clock():
    assert clock(291) == "4:51" and clock(628) == "10:28" and clock(3723) == "1:02:03" and clock(None) == "?"


def test_while_we_stop_it_the_servers_last_words_are_not_a_failure():
    state = loading_state()
    state.outcome = FAILED  # the KeyboardInterrupt traceback our SIGINT caused
    state.errors = [ErrorReport(line=9, kind="KeyboardInterrupt", message="KeyboardInterrupt")]
    v = judge(state, now=1020.0, last_activity=1019.0, process=ProcessStatus(alive=True, stopped_by_user=True))
    assert v.kind == "stopping" and not v.final
    v = judge(state, now=1021.0, last_activity=1019.0,
              process=ProcessStatus(alive=False, signal=signal.SIGINT, stopped_by_user=True))
    assert v.kind == STOPPED and v.final
