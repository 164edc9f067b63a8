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


def loading_session():
    """A session on a clock the test moves (``now[0]``), its log in weight load since 21:04:11."""
    from tests.app_support import feed
    from tui.session import SessionInfo, WatchSession

    now = [1_000_000.0]
    session = WatchSession(info=SessionInfo(host="h", log_path="/l.log"), clock=lambda: now[0])
    feed(session, b"[2026-03-14 21:04:10] server_args={'model_path': '/m'}\n"
                  b"[2026-03-14 21:04:11 TP0] Load weight begin. avail mem=139.26 GB\n")
    return now, session


async def test_after_the_process_died_elapsed_is_the_time_it_ran_not_its_last_line():
    from tests.app_support import make_app
    from tui.core.events import ProcessExited

    now, session = loading_session()
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


async def test_a_quiet_logs_timeline_moves_with_a_repaint_not_a_relayout():
    """Once a second a quiet log's timeline moves (the silence grows): a repaint of that panel,
    never a relayout of the screen (which redraws every panel: the dashboard's CPU at rest and over
    a real start, issue 37 item 5)."""
    from tests.app_support import make_app
    from tui.app.timeline import PhaseTimeline

    now, session = loading_session()
    app = make_app(session)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        now[0] += 5.0
        assert session.times.quiet_for() is not None
        timeline = app.query_one(PhaseTimeline)
        timeline.second()
        assert timeline._repaint_required
        assert not timeline._layout_required and not app.screen._layout_required
        await pilot.pause()


async def test_a_long_title_gives_way_to_the_clock_at_80_columns():
    """Seen by hand on the real llama.cpp at 80×24: ``run: NAME`` with the server's host and the
    attempt left no room for the elapsed time; the title now gives way (its head kept), not the clock."""
    from tests.app_support import make_app

    now, session = loading_session()
    session.info.title = "run: llamacpp_server_with_a_long_name_for_the_demo"
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        now[0] += 5.0
        app.refresh_all()
        await pilot.pause()
        header = screen_text(app).splitlines()[0]
        assert "run: llamacpp_server" in header and "…" in header and "elapsed 0:06" in header, header


def test_a_long_log_path_gives_way_to_the_clock_keeping_its_file_name():
    from tui.app.header import path_tail

    path = "/scratch/users/operator/runs/2026-12-06/deepseek-v3/logs/sglang-node0.log"
    assert path_tail(path, len(path)) == path  # fits: whole
    assert path_tail(path, 40) == "…/deepseek-v3/logs/sglang-node0.log"  # whole components, as many as fit
    assert path_tail(path, 20) == "…/sglang-node0.log"
    assert path_tail(path, 14) == "…ang-node0.log"  # then the end of the name
    assert path_tail(path, 2) == "…node0.log"  # never under PATH_LEAST
    assert path_tail("node0.log", 2) == "node0.log"


async def test_at_80_columns_the_header_keeps_the_attempt_and_its_clock_beside_a_long_log_path():
    from tests.app_support import make_app
    from tui.session import SessionInfo, WatchSession

    path = "/scratch/users/operator/runs/2026-12-06/deepseek-v3/logs/sglang-node0.log"
    session = WatchSession(info=SessionInfo(host="gpu-node-17", log_path=path), clock=lambda: 1_000_000.0)
    from tests.app_support import feed

    feed(session, b"[2026-03-14 21:04:10] server_args={'model_path': '/m'}\n")
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        top = screen_text(app).splitlines()[0]
        assert "attempt v1" in top and "elapsed" in top and "sglang-node0.log" in top, top
        assert "…" not in top.rstrip()[-3:], top  # nothing at its end was cut
