"""When a watch is over: decided beside the verdict (``tui.core.ending``: how long a final-looking
verdict is held; ``tui.session.ending``: the stage that pushes ``WatchOver``), so that the plain
presenter has one loop that renders what it hears and decides nothing."""

from __future__ import annotations

import asyncio
import math

import pytest

from tests.support import MemorySource, until
from tui.core.ending import (
    AT_ONCE,
    FAIL_SETTLE_S,
    GRACE_S,
    LOG_DECIDED,
    NODES_FAILED,
    PROCESSES_GONE,
    QUIET_S,
    Ending,
    log_hold,
    nodes_hold,
)
from tui.core.events import Ready
from tui.core.verdict import DEAD, FAILED, LOADING, READY, STALLED, STARTING, STOPPED, Verdict
from tui.session import WatchSession
from tui.session.ending import WatchEnding, WatchOver

HEADER = '[2026-11-30 08:00:00] server_args=ServerArgs(model_path="m", tp_size=1)\n'
READY_LINE = "[2026-11-30 08:01:00] The server is fired up and ready to roll!\n"


# ------------------------------------------------------------------ the rule (pure)


def test_one_log_that_decided_is_held_until_quiet_or_the_grace_period() -> None:
    ending = Ending()
    assert ending.weigh(10.0, LOG_DECIDED, quiet_for=0.0) is None  # the log still grows: a root cause may follow
    assert ending.weigh(10.0 + GRACE_S - 0.01, LOG_DECIDED, quiet_for=0.0) is None
    assert ending.weigh(10.0 + GRACE_S, LOG_DECIDED, quiet_for=0.0) == "decided"  # a log that keeps growing
    quiet = Ending()
    assert quiet.weigh(10.0, LOG_DECIDED, quiet_for=QUIET_S - 0.01) is None
    assert quiet.weigh(10.01, LOG_DECIDED, quiet_for=QUIET_S) == "decided"  # quiet: nothing more to wait for


def test_a_new_startup_within_the_grace_period_starts_the_hold_afresh() -> None:
    ending = Ending()
    assert ending.weigh(0.0, LOG_DECIDED, quiet_for=0.0) is None  # ready
    assert ending.weigh(1.5, None, quiet_for=0.0) is None  # a new startup in the same log: undecided again
    assert ending.weigh(1.6, LOG_DECIDED, quiet_for=0.0) is None  # its own ready: held from now on
    assert ending.weigh(1.6 + GRACE_S - 0.01, LOG_DECIDED, quiet_for=0.0) is None
    assert ending.weigh(1.6 + GRACE_S, LOG_DECIDED, quiet_for=0.0) == "decided"


def test_gone_processes_are_held_for_their_last_words_however_quiet_the_log() -> None:
    ending = Ending()
    assert ending.weigh(0.0, PROCESSES_GONE) is None  # (the log has long been quiet)
    assert ending.weigh(QUIET_S - 0.01, PROCESSES_GONE) is None
    assert ending.weigh(QUIET_S, PROCESSES_GONE) == "processes"


def test_which_hold_a_verdict_gets() -> None:
    ready, dead, loading = Verdict(READY, "ready"), Verdict(DEAD, "gone"), Verdict(LOADING, "weights")
    assert log_hold(ready, log_decided=True) is LOG_DECIDED
    assert log_hold(dead, log_decided=False) is PROCESSES_GONE
    assert log_hold(Verdict(STARTING, "ready marker seen; waiting for the health URL"), log_decided=True) is None
    assert log_hold(loading, log_decided=False) is None
    assert nodes_hold(ready) is AT_ONCE and nodes_hold(Verdict(STOPPED, "x")) is AT_ONCE
    assert nodes_hold(Verdict(FAILED, "oom")) is NODES_FAILED and nodes_hold(dead) is NODES_FAILED
    assert nodes_hold(Verdict(STALLED, "quiet")) is None


def test_several_nodes_settle_after_a_failure_and_again_after_it_went_away() -> None:
    ending = Ending()
    assert ending.weigh(0.0, AT_ONCE) == "decided"  # ready on every node: at once
    failing = Ending()
    assert failing.weigh(0.0, NODES_FAILED) is None
    assert failing.weigh(FAIL_SETTLE_S, NODES_FAILED) == "decided"
    again = Ending()
    assert again.weigh(0.0, NODES_FAILED) is None
    assert again.weigh(0.3, None) is None  # (a dead node's log read to its end: undecided meanwhile)
    assert again.weigh(5.0, NODES_FAILED) is None  # failed again: its root cause gets its moment again
    assert again.weigh(5.0 + FAIL_SETTLE_S, NODES_FAILED) == "decided"


def test_the_timeout_ends_an_undecided_watch_but_a_held_verdict_ends_as_decided() -> None:
    ending = Ending(deadline=30.0)
    assert ending.weigh(29.9, None) is None
    assert ending.due(29.9) == pytest.approx(0.1)
    assert ending.weigh(30.0, None) == "timeout"
    held = Ending(deadline=30.0)
    assert held.weigh(29.0, LOG_DECIDED, quiet_for=0.0) is None
    assert held.weigh(31.5, LOG_DECIDED, quiet_for=QUIET_S) == "decided"  # its ready, not "still starting"


def test_when_to_weigh_again_with_time_alone() -> None:
    ending = Ending()
    assert ending.due(0.0) is None  # nothing held, no deadline: only a new verdict can end it
    ending.weigh(0.0, LOG_DECIDED, quiet_for=0.1)
    assert ending.due(0.0, quiet_for=0.1) == pytest.approx(QUIET_S - 0.1)  # the moment the log is quiet enough
    assert ending.due(1.9, quiet_for=0.0) == pytest.approx(0.1)  # else the end of the grace period
    ending.weigh(5.0, PROCESSES_GONE)
    assert ending.due(5.1) == pytest.approx(QUIET_S - 0.1)


# ------------------------------------------------------------------ the stage (a real session)


async def watched(source: MemorySource, **ending: object) -> tuple[WatchSession, WatchEnding, list[object]]:
    """A session over ``source`` and its ending, started; everything heard, in order, with the end last."""
    session = WatchSession(log=source)
    session.subscribe(lambda update: None)  # (as a node set does: the session flushes, and its verdict is pushed)
    heard: list[object] = []
    session.hear(heard.append)
    watch = WatchEnding.of_log(session, **ending)  # type: ignore[arg-type]
    watch.subscribe(heard.append)
    session.start()
    watch.start()
    return session, watch, heard


async def over(heard: list[object]) -> WatchOver:
    found = await until(lambda: [item for item in heard if isinstance(item, WatchOver)], timeout=10)
    assert len(found) == 1
    return found[0]


async def test_a_ready_log_ends_once_quiet_after_every_event_it_weighed() -> None:
    source = MemorySource()
    session, watch, heard = await watched(source)
    try:
        source.say(HEADER + READY_LINE)
        end = await over(heard)
        assert end.why == "decided" and end.change.verdict.kind == READY
        assert any(isinstance(item, Ready) for item in heard[: heard.index(end)])  # the events came first
        await asyncio.sleep(0)
        assert [item for item in heard if isinstance(item, WatchOver)] == [end]  # pushed once
    finally:
        watch.stop()
        await session.stop()


async def test_the_unterminated_last_line_counts_when_the_input_has_played_out() -> None:
    source = MemorySource()
    session, watch, heard = await watched(source)
    try:
        source.say(HEADER + READY_LINE.rstrip("\n"))  # no newline: the line is not over until the input is
        source.end()
        end = await over(heard)
        assert end.why == "ended"
        assert end.change.verdict.kind == READY, end  # read as it closed the input (``finish``)
    finally:
        watch.stop()
        await session.stop()


async def test_a_startup_still_under_way_ends_at_the_timeout() -> None:
    source = MemorySource()
    session, watch, heard = await watched(source, timeout=0.3)
    try:
        source.say(HEADER)
        end = await over(heard)
        assert end.why == "timeout" and not end.change.verdict.final
    finally:
        watch.stop()
        await session.stop()


async def test_a_replay_played_out_ends_once_its_log_is_quiet() -> None:
    source, played_out = MemorySource(), asyncio.Event()
    session, watch, heard = await watched(source, played_out=played_out)
    try:
        source.say(HEADER)
        await until(lambda: session.state.lines >= 1)
        await asyncio.sleep(QUIET_S)  # (quiet, but not yet played out: it goes on)
        assert not [item for item in heard if isinstance(item, WatchOver)]
        played_out.set()  # pushes nothing: the stage looks again as its log stays quiet
        end = await over(heard)
        assert end.why == "ended" and end.change.verdict.kind == STARTING
    finally:
        watch.stop()
        await session.stop()


async def test_a_final_verdict_pushed_before_the_start_ends_the_watch_once_it_starts() -> None:
    """A launch whose server fails at once pushes its final verdict before the presenter's loop
    starts the ending: that push is the one held, not missed (the watch waited forever)."""
    from tui.core.ending import launch_hold
    from tui.session.judging import VerdictChanged

    session = WatchSession(log=MemorySource())
    pushed: list[object] = []  # a launch's subscribers
    watch = WatchEnding(session.judging, launch_hold, pushes=pushed.append)
    heard: list[object] = []
    watch.subscribe(heard.append)
    failed = Verdict(FAILED, "ValueError: no")
    for push in pushed:  # the server failed before the watch's loop began
        push(VerdictChanged(failed, None))
    assert not heard  # weighed only once started
    session.start()
    try:
        watch.start()
        end = await over(heard)
        assert end.why == "decided"
    finally:
        watch.stop()
        await session.stop()


async def test_a_verdict_is_not_final_while_the_log_s_backlog_is_unread() -> None:
    """``watch --plain`` of a finished log: a ready line at its top decided READY, and the watch
    ended two seconds later with 24 MB unread — a log that ends in a crash. What the file held
    when the watch began is read before a verdict may end it; the hold begins once it is."""
    source = MemorySource()
    session = WatchSession(log=source)
    session.subscribe(lambda update: None)
    unread = [1_000_000]
    watch = WatchEnding(session.judging, lambda verdict: log_hold(verdict, True), quiet_for=lambda: math.inf,
                        backlog=lambda: unread[0])
    heard: list[object] = []
    watch.subscribe(heard.append)
    session.start()
    watch.start()
    try:
        source.say(HEADER + READY_LINE)
        await until(lambda: session.verdict().kind == READY)
        await asyncio.sleep(2 * QUIET_S)  # a quiet log held as ready would have ended by now (what is tested: it goes on)
        assert not heard
        unread[0] = 0  # read to the end of what the file held
        end = await over(heard)
        assert end.why == "decided" and end.change.verdict.kind == READY
    finally:
        watch.stop()
        await session.stop()


async def test_a_local_log_read_from_its_start_has_its_size_as_backlog(tmp_path) -> None:
    from tui.core.events import LogRestart
    from tui.sources.local import LocalTailer

    log = tmp_path / "server.log"
    log.write_text(HEADER * 2000)
    session = WatchSession(log=LocalTailer(log))
    ending = WatchEnding.of_log(session)
    session.start()
    try:
        assert 0 < ending.backlog() <= log.stat().st_size  # (marked at start, read as it goes)
        await until(lambda: ending.backlog() == 0)
        assert session.state.lines == 2000
    finally:
        await session.stop()
    tail = WatchSession(log=LocalTailer(log, from_end=True))  # attached at its end: nothing to read first
    tail.start()
    try:
        assert tail.rest.backlog_left() == 0
    finally:
        await tail.stop()
    fresh = WatchSession(log=LocalTailer(log))
    fresh.rest.mark_backlog()
    fresh.handle(LogRestart("log", "a new file at the path"))  # the file it held is gone
    assert fresh.rest.backlog_left() == 0


def test_the_verdict_asked_for_after_the_loop_ended_is_weighed_without_it() -> None:
    """SIGTERM or SIGHUP ends `watch --plain` by cancelling its loop; its verdict so far is then asked
    for outside it. A verdict that changed since the last push (a line read, not yet judged) is pushed
    and weighed then: weighing must not need the loop to ask again later (CI saw "no verdict" then)."""

    async def started() -> tuple[WatchSession, WatchEnding]:
        source = MemorySource()
        session, watch, _ = await watched(source, timeout=600)  # (a time to ask the clock again: the timeout)
        source.say(HEADER)
        await until(lambda: session.state.server is not None, timeout=10)
        return session, watch

    session, watch = asyncio.run(started())
    watch.weigh()  # (what a push does: undecided, it would ask the clock again)
    assert watch.over is None
    assert session.verdict().kind in (STARTING, LOADING)
