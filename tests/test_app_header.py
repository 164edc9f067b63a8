"""The header says only what is so: an idle watch is not 'reading the log'."""

from __future__ import annotations

from tests.app_support import fixed_session
from tui.app.header import verdict


def test_an_idle_watch_says_what_it_read_not_that_it_is_reading():
    session = fixed_session(b"starting up\nsome unrelated output\n")
    current = verdict(session)
    assert current.word == "STARTING"
    assert "reading the log" not in current.detail
    assert current.detail == "2 lines read, no startup phase yet"
