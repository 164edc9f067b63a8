"""Log text is shown literally: markup and escape sequences cannot restyle or break the screen."""

from __future__ import annotations

from tests.app_support import fixed_session, make_app
from tests.support import screen_text
from tui.app.header import VerdictHeader

HOSTILE = (
    b"[2026-03-14 21:04:10] server_args={'model_path': '/models/m'}\n"
    b"[2026-03-14 21:04:11] markup [bold red]x[/] and [link=https://evil.example]click[/link] end\n"
    b"[2026-03-14 21:04:12] title \x1b]0;pwned title\x07 after\n"
    b"[2026-03-14 21:04:13] clear \x1b[2J\x1b[H screen and \x1b[31mred\x1b[0m\n"
    b"[2026-03-14 21:04:14] nul \x00 byte and bell \x07 and backspace \x08\n"
    b"[2026-03-14 21:04:15] unclosed [/] [bold [not a tag] \\[escaped]\n"
    b"[2026-03-14 21:04:16] emoji \xf0\x9f\x94\xa5 wide \xe5\xad\x97 invalid \xff utf-8\n"
)


async def test_markup_and_escapes_are_shown_literally():
    session = fixed_session(HOSTILE)
    app = make_app(session)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        log = app.log_view
        rows = {log.entry_at(r).number: log.render_line(r - int(log.scroll_y)).text for r in range(log.row_count)
                if int(log.scroll_y) <= r < int(log.scroll_y) + log.scrollable_content_region.height}
        assert "markup [bold red]x[/] and [link=https://evil.example]click[/link] end" in rows[2]
        assert "title  after" in rows[3]  # the OSC title sequence is removed whole
        assert "clear  screen and red" in rows[4]  # CSI clear/home/colour removed, text kept
        assert "nul \u2400 byte and bell \u2407 and backspace \u2408" in rows[5]  # control pictures
        assert "unclosed [/] [bold [not a tag] \\[escaped]" in rows[6]
        assert "\ufffd utf-8" in rows[7]
        for text in rows.values():
            assert "\x1b" not in text and "\x00" not in text and "\x07" not in text
        # the screen is intact: header on top, title unchanged, nothing styled from the log
        screen = screen_text(app).splitlines()
        assert screen[0].lstrip().startswith("WATCHTOWER")
        assert app.title == "Watchtower"
        assert len(screen) == 30
        assert app.query_one(VerdictHeader).verdict is not None
        markup_row = next(r for r in range(log.row_count) if log.entry_at(r).number == 2)
        strip = log.render_line(markup_row - int(log.scroll_y))
        assert strip.text.strip() and all(not (seg.style and seg.style.link) for seg in strip)  # no hyperlink made from the log
        assert not any(seg.style and seg.style.bold and seg.text == "x" for seg in strip)


async def test_search_term_with_markup_is_literal_too():
    app = make_app(fixed_session(HOSTILE))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("slash", *"[bold red]", "enter")
        await pilot.pause()
        assert "[bold red]x[/]" in app.log_view.current_entry().text
        assert "search: [bold red] (n/N)" in screen_text(app)


async def test_a_giant_line_is_cut_for_display_and_the_view_stays_fast():
    giant = b"[2026-03-14 21:04:17] " + b"x[b]" * 600_000 + b"\n"  # 2.4 MB on one line
    session = fixed_session(HOSTILE + giant + b"[2026-03-14 21:04:18] after the giant\n")
    app = make_app(session)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        log = app.log_view
        assert log.virtual_size.width < 5000  # the horizontal extent is capped
        await pilot.press("right", "right", "right")
        await pilot.pause()
        text = screen_text(app)
        assert "after the giant" in text and "x[b]x[b]" in text
        assert text.splitlines()[0].lstrip().startswith("WATCHTOWER")


async def test_a_row_marks_each_search_match_and_the_cursor_row_whole():
    """The row is made of segments directly: each match of the search term (any case) in the
    match style over the line's own, the rest of the text in the line's own; the cursor's row in
    the cursor style end to end."""
    session = fixed_session(b"[2026-03-14 21:04:10] Decode batch. #token: 12, token usage: 0.12\n"
                            b"[2026-03-14 21:04:11] no term here\n")
    app = make_app(session)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        log, style = app.log_view, app.palette.style
        log.search = "TOKEN"
        log.cursor = 1
        await pilot.pause()
        first, second = (log.render_line(log.row_of(seq) - int(log.scroll_y)) for seq in (0, 1))
        text = style(log.entry_at(log.row_of(0)).style)
        match = log.rich_style + text + style("match")
        assert [seg.text for seg in first if seg.style == match] == ["token", "token"]
        assert "".join(seg.text for seg in first if seg.style == log.rich_style + text) == \
            "[2026-03-14 21:04:10] Decode batch. #: 12,  usage: 0.12"
        assert not any(seg.style == match for seg in second)
        cursor = style("cursor")
        shown = [seg for seg in second if seg.text.strip()]
        assert shown and all(seg.style.bgcolor == cursor.bgcolor for seg in shown)  # the cursor's row
        assert not any(seg.style.bgcolor == cursor.bgcolor for seg in first)
