"""80×24 and 120 columns: the help scrolls to every key, the footer shows whole entries only."""

from __future__ import annotations

import re

import pytest

from tests.app_support import fixed_session, make_app
from tests.support import screen_text
from tests.test_app_keys import crash_log

def launcher_app():
    return make_app(fixed_session(crash_log()))


def add_launcher_keys(app) -> None:
    for action in ("stop", "relaunch", "edit_relaunch", "attempts", "kill_holders"):
        app.add_key(action, lambda: None)


async def test_help_at_80x24_scrolls_to_every_key():
    app = launcher_app()
    async with app.run_test(size=(80, 24)) as pilot:
        add_launcher_keys(app)
        await pilot.press("question_mark")
        await pilot.pause()
        seen = set()
        for _ in range(10):
            text = screen_text(app)
            assert len(text.splitlines()) == 24
            seen |= set(re.findall(r"│  (\S+)\s", text))
            await pilot.press("pagedown")
            await pilot.pause()
        keys = {key for key, _ in app.key_rows()}
        assert {"q", "x", "r", "R", "a", "k", "w"} <= keys <= seen, keys - seen
        assert "escape" in seen


@pytest.mark.parametrize("width", [80, 100, 120, 160])
async def test_footer_shows_whole_entries_only(width):
    app = launcher_app()
    async with app.run_test(size=(width, 30)) as pilot:
        add_launcher_keys(app)
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert len(footer) <= width
        shown = dict(re.findall(r" (\S+)  (.+?)(?=  \S+  |\s*$)", footer))
        wanted = {entry[1]: entry[2] for entry in app.footer_entries()}
        assert shown and all(wanted.get(key) == description for key, description in shown.items()), footer
        assert {"?", "q", "e"} <= set(shown)
        if width >= 120:
            assert {"x", "r", "R"} <= set(shown)
