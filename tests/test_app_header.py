"""The header says only what is so: an idle watch is not 'reading the log'."""

from __future__ import annotations

from tests.app_support import fixed_session
from tests.support import screen_text


def test_an_idle_watch_says_what_it_read_not_that_it_is_reading():
    session = fixed_session(b"starting up\nsome unrelated output\n")
    current = session.verdict()
    assert current.word == "STARTING"
    assert "reading the log" not in current.detail
    assert current.detail == "2 lines read, no startup phase yet"


async def test_after_the_process_died_elapsed_is_the_time_it_ran_not_its_last_line():
    from tests.app_support import feed, make_app
    from tui.core.events import ProcessExited
    from tui.session import SessionInfo, WatchSession

    now = [1_000_000.0]
    session = WatchSession(info=SessionInfo(host="h", log_path="/l.log"), clock=lambda: now[0])
    feed(session, b"[2026-03-14 21:04:10] server_args={'model_path': '/m'}\n"
                  b"[2026-03-14 21:04:11 TP0] Load weight begin. avail mem=139.26 GB\n")
    app = make_app(session)
    async with app.run_test(size=(120, 30)) as pilot:
        now[0] += 40.0  # loading quietly for 40 s, then stopped
        session.handle(ProcessExited(1, 4242, None, 2, at=now[0]))
        session.flush()
        now[0] += 30.0  # and looked at half a minute later
        await pilot.pause()
        app.refresh_all()
        await pilot.pause()
        header = screen_text(app).splitlines()[0]
        assert "elapsed 0:41" in header, header
