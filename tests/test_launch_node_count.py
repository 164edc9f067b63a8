"""The one attempt lifecycle on one node and on two: the same ``Launch``, the same behaviours —
only the runner differs. One node: a single SSH host (127.0.0.2), its log followed by the
launch's own session. Two nodes: the node-set runner over two real sshd (127.0.0.2 and .3), each
attempt followed by its node set. Each test runs for both."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import pytest

from tests.launch_helpers import no_leftover_servers  # noqa: F401 (autouse: no simulator outlives a test)
from tests.support import launch_verdict, until
from tests.test_run_nodes import command, fake_sglang, free_port  # noqa: F401 (a fixture)
from tests.test_smoke import fake  # noqa: F401 (a fixture: a server answering /v1/models)
from tui.cluster import default_session
from tui.history import History
from tui.launch.controller import Launch
from tui.launch.events import AttemptStarted, LaunchEvent
from tui.launch.nodes import NodesRunner
from tui.launch.spec import LaunchSpec, StopPlan
from tui.session import WatchSession

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(180)]
CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"  # the context-length failure's fix (server_sim)


@pytest.fixture
def sim(fake_sglang) -> tuple[list[str], dict[str, str]]:  # noqa: F811 (the imported fixture)
    """SGLang's command (the simulator as ``python -m sglang.launch_server``, so the node-set
    runner adds each node's rank and the node count) and its environment."""
    return command(f"127.0.0.2:{free_port()}"), {"PYTHONPATH": str(fake_sglang)}


@pytest.fixture(params=[1, 2], ids=["one-node", "two-nodes"])
def nodes(request, sshd_nodes, monkeypatch) -> list[str]:
    """The hosts of the launch: one, or two."""
    monkeypatch.setenv("WATCHTOWER_SSH_KNOWN_HOSTS", str(sshd_nodes[0].known_hosts))
    monkeypatch.setenv("WATCHTOWER_SSH_IDENTITY", str(sshd_nodes[0].client_key))
    return [node.spec for node in sshd_nodes[: request.param]]


def make(nodes: list[str], tmp_path: Path, history: History, sim: tuple[list[str], dict[str, str]], *extra: str,
         **fields) -> Launch:
    """The launch as ``run --host H`` (one node) or ``run --nodes H1,H2`` (two) wires it."""
    argv, env = [*sim[0], *extra], dict(sim[1])
    if len(nodes) == 1:
        spec = LaunchSpec("nc", argv, env, log_dir=tmp_path / "logs", host=nodes[0], plan=StopPlan(2, 2), **fields)
        launch = Launch(spec, history=history)
        launch.attach(WatchSession())
        return launch
    spec = LaunchSpec("nc", argv, env, log_dir=tmp_path / "logs", plan=StopPlan(2, 2), **fields)
    return Launch(spec, history=history, runner=lambda emit: NodesRunner(nodes, emit),
                  make_node=partial(default_session, gpu_interval=0.2))


@contextlib.asynccontextmanager
async def following(launch: Launch) -> AsyncIterator[Launch]:
    """``launch`` followed as the dashboard and the plain output follow it: the one log's session
    from the start, or each attempt's node set as it starts; closed (its server left running) after."""
    def started(event: LaunchEvent) -> None:
        if isinstance(event, AttemptStarted) and launch.runner.spans:
            launch.nodes.start()

    launch.subscribe(started)
    if launch.followed:
        launch.nodes.start()
    try:
        yield launch
    finally:
        await launch.close()
        if launch.session is not None:
            await launch.session.stop()


async def test_ready_is_recorded_announced_and_a_stop_keeps_it(nodes, sim, tmp_path):
    history = History(tmp_path / "history.db")
    said = tmp_path / "hook.txt"
    launch = make(nodes, tmp_path, history, sim,
                  on_ready=f"echo $WATCHTOWER_OUTCOME $WATCHTOWER_ATTEMPT $WATCHTOWER_HOST > {said}")
    async with following(launch):
        run = await launch.start()
        ready = await launch_verdict(launch, lambda v: v.kind == "ready", timeout=60, judge=False)
        if len(nodes) == 2:
            assert ready.text == "READY: 127.0.0.2 serving, 127.0.0.3 worker past CUDA graphs"
        await launch.settle()
        assert said.read_text().split() == ["ready", "1", launch.host_label]
        (row,) = history.attempts("nc")
        assert (row.outcome, row.host, row.pid) == ("ready", ",".join(nodes), run.pid)
        assert "fired up" in Path(row.log_path).read_text()  # a log there is (across nodes: the first node's)
        stopping = asyncio.create_task(launch.stop())
        countdown = await until(launch.stop_countdown)  # what the launch line shows meanwhile
        assert countdown.startswith("SIGINT sent, SIGTERM in "), countdown
        assert await stopping and launch.stop_countdown() is None
        assert not await launch.runner.alive(run)
        await until(lambda: history.attempts("nc")[0].ended_at is not None, timeout=30)
        (row,) = history.attempts("nc")
        assert row.outcome == "ready" and row.exit_text  # ready stays ready; how it ended is said


async def test_a_failure_is_diagnosed_and_the_edited_relaunch_is_ready(nodes, sim, tmp_path):
    history = History(tmp_path / "history.db")
    launch = make(nodes, tmp_path, history, sim, "--outcome", "raise", "--context-length", "200000")
    async with following(launch):
        await launch.start()
        failed = await launch_verdict(launch, lambda v: v.kind in ("failed", "dead"), timeout=60, judge=False)
        assert failed.kind == "failed" and "context_length" in failed.text
        hints = launch.nodes.judging.hints  # what the header shows and F applies
        assert hints and hints[0].id == "context-length-too-long"  # (its fix: the model's own context)
        await launch.relaunch(env={**sim[1], CONTEXT_ENV: "1"})
        assert launch.attempt == 2
        await launch_verdict(launch, lambda v: v.kind == "ready", timeout=60, judge=False)
        await launch.settle()
        await until(lambda: [(r.attempt, r.outcome) for r in history.attempts("nc")] == [(1, "failed"), (2, "ready")])
        first, second = history.attempts("nc")
        assert "ValueError" in (first.first_error or "") and second.env[CONTEXT_ENV] == "1"
        assert await launch.stop()


async def test_attach_follows_the_running_attempt_and_stops_it(nodes, sim, tmp_path):
    history = History(tmp_path / "history.db")
    slow = ([*sim[0][:-1], "4"], sim[1])  # a 4 s weight load: the first Watchtower goes before it is ready
    async with following(make(nodes, tmp_path, history, slow)) as first:
        run = await first.start()
        assert run.alive
    async with following(make(nodes, tmp_path, history, slow)) as again:
        found = await again.start(launch=False)
        assert again.reattached and found.attempt == 1 and len(history.attempts("nc")) == 1
        await launch_verdict(again, lambda v: v.kind == "ready", timeout=60, judge=False)
        assert await again.stop()
        assert not await again.runner.alive(found)


async def test_ready_waits_for_the_health_url_of_the_serving_node(nodes, sim, tmp_path, fake):  # noqa: F811
    """--health: the log's ready line is half of READY; the URL's 200, asked from the (serving) node, the other."""
    silent = f"http://127.0.0.1:{free_port()}/v1/models"  # nothing listens there
    async with following(make(nodes, tmp_path, History(tmp_path / "h1.db"), sim, health_url=silent)) as launch:
        await launch.start()
        waiting = await launch_verdict(launch, lambda v: silent in v.text, timeout=60, judge=False)
        serving = next(iter(launch.nodes.nodes.values()))
        await until(lambda: serving.state.outcome == "ready")  # its log's ready line came
        assert waiting.kind == "starting" and launch.evaluate().kind == "starting"  # the ready line alone is not READY
        assert await launch.stop()
    answering = f"http://127.0.0.1:{fake(0.0).port}/v1/models"
    async with following(make(nodes, tmp_path, History(tmp_path / "h2.db"), sim, health_url=answering)) as launch:
        await launch.start()
        await launch_verdict(launch, lambda v: v.kind == "ready", timeout=60, judge=False)
        assert await launch.stop()
