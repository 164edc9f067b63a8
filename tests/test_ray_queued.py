"""vLLM over Ray waiting for its placement group: a queued phase (waiting for resources, never
"stalled?" or "loading"), and the GPUs the run asks for against the GPUs Ray has.

The fixtures come from ``tests/fixtures/make_cases.py`` (``case_vllm_ray_placement_*``): vLLM's own
``_wait_until_pg_ready`` lines, with a job script's ``ray status`` before the server's first line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import run_cli
from tui.commands.scan import scan_with_hints
from tui.core import cluster as core
from tui.core.events import GpuInfo, GpuSample
from tui.core.limits import StallLimits
from tui.core.state import FAILED, STARTING
from tui.core.verdict import LOADING, STALLED, TIMEOUT, VerdictKind, gpu_activity, judge
from tui.core.verdict import STARTING as STARTING_KIND
from tui.core.verdict import ProcessStatus

FIXTURES = Path(__file__).parent / "fixtures"
WAIT = FIXTURES / "case_vllm_ray_placement_wait.log"  # Ray has 8 GPUs, the run asks for 16
JOINED = FIXTURES / "case_vllm_ray_placement_wait_node_joined.log"  # `ray status` 8, then 16
TIMED_OUT = FIXTURES / "case_vllm_ray_placement_timeout.log"  # vLLM gave up after 1800 s
QUEUED_WORDS = "queued: waiting for resources (placement group)"


def busy_gpus(now: float):
    """Another job's GPUs at work: memory moving, 90 % busy."""
    samples = [GpuSample("localhost", now - 4 + i, (GpuInfo(0, memory_used=(10 + i) * 2**30, utilization=90),))
               for i in range(5)]
    return gpu_activity(samples, now)


def test_the_wait_for_the_placement_group_is_the_queued_phase():
    state, _ = scan_with_hints(str(WAIT))
    phase = state.current_phase
    assert phase is not None and phase.name == "queued"
    lines = WAIT.read_text().splitlines()
    assert "No current placement group found" in lines[phase.start_line - 1]  # where the wait began
    assert phase.detail == "placement group"
    assert state.outcome == STARTING


@pytest.mark.parametrize("gpus", ["idle", "busy"])
def test_a_long_silence_while_queued_is_waiting_not_stalled_or_loading(gpus):
    """Ten minutes between vLLM's lines (its interval doubles: 640 s) is the wait itself; busy GPUs
    are another job's, the server holds none yet."""
    state, _ = scan_with_hints(str(WAIT))
    now = 10_000.0
    activity = busy_gpus(now) if gpus == "busy" else None
    verdict = judge(state, ProcessStatus(alive=True), gpus=activity, now=now, last_activity=now - 700)
    assert verdict.kind == STARTING_KIND, verdict.text
    assert verdict.detail == f"log quiet 11:40 · {QUEUED_WORDS}"
    log_only = judge(state, gpus=activity, now=now, last_activity=now - 700)
    assert log_only.kind == STARTING_KIND and log_only.detail.startswith(QUEUED_WORDS), log_only.text
    assert log_only.kind not in (STALLED, LOADING)


def test_only_a_limit_set_for_the_queued_phase_makes_its_wait_stalled():
    state, _ = scan_with_hints(str(WAIT))
    now = 10_000.0
    general = judge(state, ProcessStatus(alive=True), now=now, last_activity=now - 700, limits=StallLimits.parse("5m"))
    assert general.kind == STARTING_KIND, general.text
    own = judge(state, ProcessStatus(alive=True), now=now, last_activity=now - 700,
                limits=StallLimits.parse("queued=10m"))
    assert own.kind == STALLED and "past the limit for queued (10:00, --stall-limit)" in own.detail, own.text


def test_the_timeout_says_it_was_still_queued():
    state, _ = scan_with_hints(str(WAIT))
    verdict = judge(state, now=1000.0, last_activity=940.0, timed_out=600.0)
    assert verdict.kind == TIMEOUT
    assert verdict.detail == f"after 10:00, still starting · {QUEUED_WORDS} · log quiet for 1:00"


def test_watch_plain_timeout_says_queued_and_the_gpus_ray_lacks():
    done = run_cli("watch", "--plain", "--gpus", "none", "--timeout", "1", str(WAIT))
    assert done.returncode == 3, done.stderr
    out = done.stdout
    assert f"TIMEOUT after 1.0 s: still starting; {QUEUED_WORDS} since line 23; last line 27" in out, out
    assert "hint: Ray has not placed the workers after 70 s: the job asks for 16 GPUs and Ray sees 8, 8 short" in out
    assert "ray start --address=<head>:6379 --num-gpus=" in out


def test_watch_ray_plain_timeout_names_the_queued_node():
    done = run_cli("watch", "--ray", str(WAIT), "--plain", "--gpus", "none", "--timeout", "1")
    assert done.returncode == 3, done.stderr
    assert f"TIMEOUT after 1.0 s: STARTING on head: {QUEUED_WORDS}" in done.stdout, done.stdout


def test_the_node_set_verdict_names_the_queued_node():
    state, _ = scan_with_hints(str(WAIT))
    worker, _ = scan_with_hints(str(FIXTURES / "vllm_v1_ready.log"))
    verdict = core.verdict([core.NodeStatus("head", state), core.NodeStatus("10.20.0.12", worker, role=core.WORKER)])
    assert (verdict.kind, verdict.node, verdict.detail) == (VerdictKind.STARTING, "head", QUEUED_WORDS)


def test_the_hint_names_what_the_run_asks_and_what_ray_has():
    """The run asks for TP8 × PP2 = 16 GPUs (its placement group lists 16 bundles); the job's
    ``ray status``, printed before vLLM's first line, showed 8."""
    _, hints = scan_with_hints(str(WAIT))
    assert [h.id for h in hints] == ["ray-placement"]
    assert "the job asks for 16 GPUs and Ray sees 8, 8 short" in hints[0].why
    assert "`ray start --address=<head>:6379 --num-gpus=<its GPUs>`" in hints[0].why


def test_the_last_ray_status_before_the_server_is_what_it_met():
    """The other node joined between two ``ray status``: Ray has the 16 GPUs, so no hint may say it
    lacks any (the wait has another cause: VLLM_HOST_IP, GPUs held elsewhere)."""
    state, hints = scan_with_hints(str(JOINED))
    assert state.identity["ray_gpus"] == "16.0"
    assert [h.id for h in hints] == ["ray-placement"]
    assert "short" not in hints[0].why and "Ray sees" not in hints[0].why
    assert "VLLM_HOST_IP" in hints[0].why and "16 GPU workers" in hints[0].why


def test_vllm_giving_up_on_the_placement_group_says_the_counts_once():
    state, hints = scan_with_hints(str(TIMED_OUT))
    assert state.outcome == FAILED
    assert state.phase("queued") is not None and not state.phase("queued").done  # it failed waiting
    assert [h.id for h in hints] == ["ray-gpus-short"]  # not the timeout's too: vLLM had said Ray lacks GPUs
    assert "asks Ray for 16 GPUs (tensor × pipeline parallel size) but Ray sees 8, 8 short" in hints[0].why


def test_a_ray_start_that_placed_at_once_has_no_queued_phase():
    """No waiting line (placed within vLLM's first 10 s): the lines that follow the placement end no
    phase, and nothing is said to be queued."""
    state, _ = scan_with_hints(str(FIXTURES / "vllm_v1_ready.log"))
    assert state.phase("queued") is None


def test_only_what_ray_has_is_read_from_the_job_scripts_lines(tmp_path):
    """Before the server's first line only the job script's ``ray status`` counts: a ``--port=6379``
    it echoed is Ray's, not the port the server will answer on."""
    log = tmp_path / "job.out"
    log.write_text("+ ray start --head --port=6379 --num-gpus=8\n" + WAIT.read_text())
    state, _ = scan_with_hints(str(log))
    assert state.identity.get("ray_gpus") == "8.0"
    assert "port" not in state.identity


def test_a_launch_gives_no_eta_for_the_wait():
    """History's usual phase times make no estimate of a queue: the verdict keeps saying what it
    waits for, not "queued 0:30 of ~2:00"."""
    from tui.history.records import Expectations

    assert Expectations(None, {}).eta("queued", 30.0, 40.0) is None
    assert Expectations(None, {}).eta("weight_load", 30.0, 40.0) == "weight load 0:30"


def test_watch_ray_says_the_hint_a_one_log_watch_says():
    """The head's note (Ray has 8 GPUs of the 16 asked for) is said before the TIMEOUT, as `watch LOG` says it."""
    done = run_cli("watch", "--ray", str(WAIT), "--plain", "--gpus", "none", "--timeout", "1")
    assert done.returncode == 3, done.stderr
    out = done.stdout
    assert "[head]   hint: Ray has not placed the workers after 70 s: the job asks for 16 GPUs and Ray sees 8, 8 short" in out, out
    assert out.index("hint: Ray has not placed") < out.index("TIMEOUT after")


async def test_the_ray_dashboards_header_notes_what_ray_lacks():
    from functools import partial

    from tests.support import screen_text, until
    from tui.app.dashboard import build_app
    from tui.cluster import default_session, ray_cluster

    session = ray_cluster(str(WAIT), None, partial(default_session, gpu_interval=0.1))
    app = build_app(None, nodes=session)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: "Ray sees 8" in screen_text(app), timeout=30, pilot=pilot)
        header = str(app.query_one("#header").render())
        assert "note (line" in header and "Ray sees 8, 8 short" in header, header
