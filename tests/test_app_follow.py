"""Following means the last line is on screen: opening an existing log, g/G, pausing by e and /."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.app_support import feed, fixed_session, make_app
from tests.support import screen_text, until
from tui.app.app import LogStatus
from tui.app.header import VerdictHeader

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def bottom_on_screen(app) -> bool:
    log = app.log_view
    last = log.session.scrollback.get(log.session.scrollback.end_seq - 1)
    height = log.scrollable_content_region.height
    return log.row_of(last.seq) is not None and log.scroll_y <= log.row_of(last.seq) < log.scroll_y + height


def status(app) -> str:
    return str(app.query_one(LogStatus).render())


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 48)])
async def test_an_existing_log_opens_at_its_last_line(size):
    """The whole file arrives in the first read, after the first paint, as `watch` on a finished log."""
    session = fixed_session()
    app = make_app(session)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        feed(session, (FIXTURES / "sglang_eagle3_tp8_ready.log").read_bytes())
        await until(lambda: bottom_on_screen(app) and "fired up" in screen_text(app), pilot=pilot,
                    what="the last line on screen", seen=lambda: screen_text(app))
        assert app.log_view.follow and "following" in status(app)
        assert "fired up and ready to roll" in screen_text(app)


async def test_g_and_G_always_move_and_e_or_search_say_paused():
    session = fixed_session((FIXTURES / "sglang_attributeerror_tp8.log").read_bytes())
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        log = app.log_view
        assert bottom_on_screen(app)
        await pilot.press("G")  # already following: still at the bottom, still following
        await pilot.pause()
        assert bottom_on_screen(app) and log.follow
        await pilot.press("g")
        await pilot.pause()
        assert log.scroll_y == 0 and "paused" in status(app)
        await pilot.press("G")
        await pilot.pause()
        assert bottom_on_screen(app) and "following" in status(app)
        await pilot.press("e")
        await pilot.pause()
        assert not log.follow and "paused" in status(app)
        await pilot.press("G")
        await pilot.pause()
        assert bottom_on_screen(app) and "following" in status(app)
        await pilot.press("slash")
        await pilot.press(*"Load weight", "enter")
        await pilot.pause()
        assert not log.follow and "paused" in status(app)
        assert "Load weight" in log.current_entry().text


async def test_new_lines_alone_redraw_the_log_and_its_status_not_the_header():
    """A flood's lines change the log and its status line; the header (at the top of the screen)
    redraws when the verdict, state or connection changes, or its clock ticks: redrawing it with
    every batch of lines made each refresh render it again and stretched the screen's update to its
    top rows (the timeline and GPU panels with it)."""
    session = fixed_session(b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
                            b"[2026-03-14 21:04:11 TP0] Load weight begin. avail mem=70.00 GB\n")
    app = make_app(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        header = app.query_one(VerdictHeader)
        drawn = []  # who asked the header to redraw (its clock's ticks aside: they come from a timer)

        def refresh(*args, refresh=header.refresh, **kwargs):
            drawn.append(sys._getframe(1).f_code.co_name)
            return refresh(*args, **kwargs)

        header.refresh = refresh  # type: ignore[method-assign]
        for start in range(0, 3000, 1000):
            feed(session, b"".join(b"[2026-03-14 21:05:00 TP0] Decode batch. #running-req: %d\n" % i
                                   for i in range(start, start + 1000)))
            await until(lambda: app.log_view.virtual_size.height == start + 1002, pilot=pilot, what="the log drawn")
        assert "_draw" not in drawn
        feed(session, b"[2026-03-14 21:05:01 TP0] Load weight end. elapsed=6.91 s, avail mem=60.40 GB\n")  # a phase ends
        await until(lambda: "_draw" in drawn, pilot=pilot, what="the header redrawn")
