"""Silence limits per phase: --stall-limit (default and per phase), the profile's stall_after,
and history keyed by what the log says (server, model path, TP size)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.support import run_cli
from tui.core.events import LogChunk
from tui.core.limits import DEFAULT_STALL_LIMIT, MIN_STALL, StallLimits, parse_duration
from tui.core.profiles import ProfileError, load_profile
from tui.core.verdict import STALLED, STARTING
from tui.history import History
from tui.history.watched import WatchedStartups, log_key
from tui.session import WatchSession

REPO = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
ARGS = b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/DeepSeek-V3', tp_size=8)\n"
LOADING = ARGS + b"[2026-03-14 21:04:20 TP0] Load weight begin. avail mem=139.26 GB\n"


def test_durations():
    assert parse_duration("20m") == 1200 and parse_duration("90s") == 90 and parse_duration("1h30m") == 5400
    assert parse_duration("2.5m") == 150 and parse_duration("300") == 300 and parse_duration(45) == 45
    for bad in ("", "ten minutes", "5x", "0", "-3m", "m"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_parse_default_and_per_phase():
    limits = StallLimits.parse("5m,weight_load=20m, cuda_graph=8m")
    assert limits.default == 300 and dict(limits.phases) == {"weight_load": 1200, "cuda_graph": 480}
    assert StallLimits.parse("weight_load=20m").default is None
    with pytest.raises(ValueError, match="unknown phase 'weights'"):
        StallLimits.parse("weights=20m")
    with pytest.raises(ValueError, match="two defaults"):
        StallLimits.parse("5m,6m")


def test_which_limit_wins():
    cli = StallLimits.parse("5m,weight_load=20m")
    profile = {"weight_load": 900.0, "memory_pool": 120.0}
    assert cli.threshold("weight_load", expected=60, profile=profile)[0] == 1200  # the phase's own
    assert cli.threshold("memory_pool", expected=60, profile=profile)[0] == 300  # then the default
    none = StallLimits()
    seconds, why = none.threshold("weight_load", expected=400, profile=profile)
    assert seconds == 400 and "longer than weight load has ever taken (6:40)" in why  # history
    assert none.threshold("weight_load", expected=5, profile=profile)[0] == MIN_STALL
    seconds, why = none.threshold("memory_pool", profile=profile)
    assert seconds == 120 and "server's usual limit for memory pool (2:00)" in why  # the profile
    assert none.threshold("cuda_graph", profile=profile)[0] == DEFAULT_STALL_LIMIT


def test_profiles_carry_per_phase_limits(tmp_path):
    sglang = load_profile("sglang").stall_after
    assert sglang["weight_load"] == 1200 and sglang["memory_pool"] == 300
    assert load_profile("vllm").stall_after["cuda_graph"] == 900
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[phases.weight_load]\nbegin = ["^a"]\nstall_after = "soon"\n')
    with pytest.raises(ProfileError, match=r"phases.weight_load.stall_after: 'soon' is not a duration"):
        load_profile(str(bad))


def test_bad_stall_limit_is_a_one_line_usage_error(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(LOADING)
    result = run_cli("watch", "--plain", str(log), "--stall-limit", "weights=3m", timeout=60)
    assert result.returncode == 2
    assert "unknown phase 'weights'" in result.stderr and "Traceback" not in result.stderr


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def session_after(data: bytes, silence: float, **kwargs) -> WatchSession:
    clock = Clock()
    session = WatchSession(clock=clock, **kwargs)
    session.handle(LogChunk("test", 0, data, clock.now))
    clock.now += silence
    return session


def test_the_profiles_limit_for_the_running_phase():
    """SGLang's weight load may be quiet 20 minutes (a 547 GB model's shards); not more."""
    assert session_after(LOADING, 19 * 60).verdict().kind == STARTING
    verdict = session_after(LOADING, 21 * 60).verdict()
    assert verdict.kind == STALLED and "usual limit for weight load (20:00)" in verdict.detail
    assert "TP0 not done with weight load" in verdict.detail


def test_cli_phase_limit_in_the_session():
    limits = StallLimits.parse("30m,weight_load=2m")
    verdict = session_after(LOADING, 150, stall_limits=limits).verdict()
    assert verdict.kind == STALLED and "limit for weight load (2:00, --stall-limit)" in verdict.detail
    assert session_after(ARGS, 150, stall_limits=limits).verdict().kind == STARTING  # server args: 30m


def test_history_is_keyed_by_what_the_log_says():
    session = session_after(LOADING, 0)
    assert log_key(session.state) == "sglang /models/DeepSeek-V3 tp=8"
    session.limits.expected.update({"weight_load": 100.0})
    session.clock.now += 120  # type: ignore[attr-defined]
    verdict = session.verdict()
    assert verdict.kind == STALLED and "longer than weight load has ever taken (1:40)" in verdict.detail


async def test_watched_startups_are_remembered_by_key():
    history = History()  # the test's own data dir (conftest)
    memory = WatchedStartups()
    ready = (FIXTURES / "sglang_eagle3_tp8_ready.log").read_bytes()
    session = WatchSession()
    session.handle(LogChunk("test", 0, ready, 0.0))
    memory.update(session.state)
    await memory.close()
    key = log_key(session.state)
    longest = history.log_phase_longest(key)
    assert longest["weight_load"] == pytest.approx(session.state.phase("weight_load").seconds)
    # a later watch of the same server, model and TP size knows it from the first lines
    later = WatchedStartups()
    fresh = WatchSession()
    fresh.limits.expect(later.longest)
    fresh.handle(LogChunk("test", 0, ready[: ready.index(b"Load weight begin")], 0.0))
    later.update(fresh.state)
    await later.close()
    assert fresh.limits.expected == longest
    # another TP size is another startup
    other = WatchSession()
    other.handle(LogChunk("test", 0, ARGS.replace(b"tp_size=8", b"tp_size=4"), 0.0))
    assert history.log_phase_longest(log_key(other.state)) == {}


async def test_watch_plain_says_stalled_after_the_phase_limit(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(LOADING)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tui.cli", "watch", "--plain", str(log), "--stall-limit", "10m,weight_load=1s",
        "--timeout", "60", stdout=asyncio.subprocess.PIPE, cwd=REPO,
    )
    try:
        while True:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            assert line, "the watcher ended without saying stalled?"
            if "STALLED?" in line:
                break
        assert "past the limit for weight load (0:01, --stall-limit)" in line and "TP0 not done" in line
        with open(log, "ab") as out:  # the log moves again
            out.write(b"[2026-03-14 21:09:20 TP0] Load weight end. elapsed=300.0 s, avail mem=70.40 GB\n")
        while "the log moves again" not in line:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            assert line
    finally:
        proc.kill()
        await proc.wait()
