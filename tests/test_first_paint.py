"""A dashboard starts without the garbage collector, from its command's imports to its first frame
(issue 35: the collector's passes over what a start allocates were a tenth of the first paint)."""

from __future__ import annotations

import argparse
import gc

import pytest

from tests.app_support import fixed_session, make_app
from tests.support import until
from tui.cli import run_command


def collecting_during(**options: object) -> bool:
    seen = []
    run_command(argparse.Namespace(func=lambda _args: seen.append(gc.isenabled()), **options))
    return seen[0]


def test_only_a_dashboard_starts_without_the_collector_and_it_is_back_on_after():
    assert gc.isenabled()
    assert collecting_during(plain=False, json=False) is False
    assert gc.isenabled()
    assert collecting_during(plain=True, json=False) is True  # text output: nothing drawn to wait for
    assert collecting_during(plain=False, json=True) is True
    assert collecting_during(json=False) is True  # a command with no dashboard (scan, history)


def test_the_collector_is_back_on_however_the_command_ends():
    def failing(_args: argparse.Namespace) -> int:
        raise RuntimeError("the command failed")

    with pytest.raises(RuntimeError):
        run_command(argparse.Namespace(func=failing, plain=False, json=False))
    assert gc.isenabled()


async def test_the_dashboard_turns_the_collector_back_on_once_it_has_drawn_with_the_start_frozen():
    """Back on, with what the start allocated frozen (never scanned again: its first passes over it
    were 70 ms before the log's first line showed); a dashboard whose process collects all along (a
    test's, a library user's) freezes nothing."""
    app = make_app(fixed_session())
    gc.disable()
    try:
        async with app.run_test(size=(120, 35)) as pilot:
            await until(gc.isenabled, pilot=pilot, what="the collector back on after the first frame")
            assert gc.get_freeze_count() > 1000
    finally:
        gc.unfreeze()
        gc.enable()
    async with make_app(fixed_session()).run_test(size=(120, 35)) as pilot:
        await pilot.pause()
        assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_session_makes_its_line_filter_at_its_first_chunk_not_when_built():
    """Compiling the marker words is 7 ms that a watch's first paint need not wait for: a session just
    built has no filter yet; its first chunk makes it, and a relaunch keeps it (the words are the same)."""
    from tests.app_support import feed

    session = fixed_session()
    assert "_feeder" not in vars(session)
    feed(session, b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n")
    made = vars(session)["_feeder"]
    session.new_attempt(2)
    assert vars(session).get("_feeder", made) is made


async def test_the_nodes_start_as_soon_as_the_first_frame_is_drawn():
    """Textual's Ready (the first frame written) starts the nodes: their trackers prime and their logs
    are read then, not after the next refresh (which waited out Textual's refresh interval: 25 ms
    more before the log's first line could be read)."""
    from textual.events import Ready

    from tui.app.dashboard import build_app

    app = build_app(fixed_session(), autostart=True)
    frames: list[int] = []
    display = app._display

    def counted(screen, renderable):
        display(screen, renderable)
        if renderable is not None:
            frames.append(1)

    app._display = counted  # type: ignore[method-assign]
    frames_when_started: list[int] = []
    start = app.nodes.start

    def started() -> None:
        frames_when_started.append(len(frames))
        start()

    app.nodes.start = started  # type: ignore[method-assign]
    frames_when_ready: list[int] = []

    def heard(message: object) -> None:
        if isinstance(message, Ready):  # (told as the app dispatches it)
            frames_when_ready.append(len(frames))

    async with app.run_test(size=(120, 35), message_hook=heard) as pilot:
        await until(lambda: bool(frames_when_started), pilot=pilot, what="the nodes started")
        await pilot.pause()
    assert frames_when_ready and frames_when_started == frames_when_ready  # no frame drawn between
