"""Following means the last line is on screen: opening an existing log, g/G, pausing by e and /."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app_support import feed, fixed_session, make_app
from tests.support import screen_text, until
from tui.app.app import LogStatus

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
