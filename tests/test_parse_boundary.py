"""One log line can never stop a watch: the lines that crashed round 1's tracker, through the real
CLI, and the boundary that catches whatever a future bug raises inside the tracker for one line.

The boundary tests need a line the tracker fails on, and once the known crashes are fixed no real
line does: ``FailingTracker`` injects that fault (it raises for lines holding ``BOOM``) into the
real scanner, the real live session fed by a real tailer, and the real ``watch --plain`` loop.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.app_support import make_app
from tests.support import run_cli, screen_text, until
from tui.core.events import LineUnparsed
from tui.core.options import WatchOptions
from tui.core.profiles import builtin_profiles, prefilter_words
from tui.core.scan import Scanner
from tui.core.state import READY
from tui.core.tracker import StartupTracker
from tui.cluster import ClusterSession
from tui.present.plain import LogPresenter
from tui.session import MARK, WatchSession
from tui.sources.local import LocalTailer
from tui.wiring.watch import log_session

START = b"[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/m', tp_size=8)\n"
READY_LINE = b"[2026-02-22 23:41:00] The server is fired up and ready to roll!\n"
#: The lines that crashed the tracker: a rank-less marker before a bar (TypeError), counts of 309+
#: digits (OverflowError) and 4300+ digits (ValueError).
CRASHERS = (
    b"Load weight begin. avail mem=78.12 GB\n"
    b"[2026-02-22 23:38:59 TP0] Load weight begin. avail mem=78.12 GB\n"
    b"Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01, 1.0s/it]\n"
    b"Load weight end. elapsed=4.30 s\n"
    b"Loading safetensors checkpoint shards:  50% Completed | " + b"9" * 400 + b"/3 [00:01<00:01]\n"
    b"Loading safetensors checkpoint shards:  50% Completed | " + b"7" * 5000 + b"/2 [00:01<00:01]\n"
)


class FailingTracker(StartupTracker):
    """A tracker with a bug: it raises on every line that holds BOOM."""

    def _one(self, number, text, at, events):
        if "BOOM" in text:
            raise RuntimeError("injected fault")
        super()._one(number, text, at, events)


def test_scan_survives_the_lines_that_crashed_it(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(START + CRASHERS + READY_LINE)
    result = run_cli("scan", str(log))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stdout + result.stderr  # ready, not a crash
    assert "READY" in result.stdout and "could not be parsed" not in result.stdout


def test_watch_plain_follows_past_the_lines_that_crashed_it_to_ready(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(START + CRASHERS + READY_LINE)
    result = run_cli("watch", str(log), "--plain", "--timeout", "30")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0 and "READY (line 8)" in result.stdout, result.stdout + result.stderr


def test_the_boundary_counts_and_reports_a_line_and_goes_on():
    tracker = FailingTracker()
    events = []
    for number, text in enumerate([START, b"x BOOM x\n", READY_LINE], 1):
        from tui.core.lines import make_line

        events += tracker.feed(make_line(number, 0, text.rstrip(b"\n")))
    unparsed = [e for e in events if isinstance(e, LineUnparsed)]
    assert [e.line for e in unparsed] == [2]
    assert unparsed[0].text.startswith("line 2 could not be parsed (RuntimeError: injected fault")
    state = tracker.state
    assert (state.unparsed, state.first_unparsed, state.lines, state.outcome) == (1, 2, 3, READY)


def test_scan_reports_an_unparsed_line_and_reads_on():
    tracker = FailingTracker()
    scanner = Scanner(tracker, prefilter_words(builtin_profiles()))
    scanner.feed(START + b"filler\n" * 100 + b"[2026-02-22 23:38:59 TP0] Load weight begin. BOOM\n" + READY_LINE)
    scanner.finish()
    from tui.commands.scan import render, to_json

    assert tracker.state.outcome == READY and to_json(tracker.state)["unparsed"] == 1
    assert "1 line(s) could not be parsed (the first: line 102)" in render("log", tracker.state)


@pytest.mark.timeout(60)
async def test_the_live_session_marks_the_line_and_keeps_following_a_real_file(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(START)
    session = WatchSession(log=LocalTailer(str(log)))
    session.tracker = FailingTracker()
    app = make_app(session, tmp_path=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        session.start()
        with log.open("ab") as out:
            out.write(b"[2026-02-22 23:38:59 TP0] Load weight BOOM\n")
            out.flush()
            await until(lambda: session.state.unparsed == 1)
            out.write(READY_LINE)
        await until(lambda: session.state.outcome == READY)
        marks = [e.text for e in session.scrollback.entries() if e.style == MARK]
        assert any("line 2 could not be parsed" in m for m in marks), marks
        await pilot.pause()
        assert "could not be parsed" in screen_text(app)
    await session.stop()


@pytest.mark.timeout(60)
async def test_watch_plain_prints_the_warning_and_reaches_ready(tmp_path, capsys):
    log = tmp_path / "server.log"
    log.write_bytes(START + b"[2026-02-22 23:38:59 TP0] Load weight BOOM\n" + READY_LINE)
    session = log_session(WatchOptions(log=str(log), timeout=30.0), scrollback=10)
    session.tracker = FailingTracker()
    watch = LogPresenter(ClusterSession.of_one(session), timeout=30.0)
    assert await asyncio.wait_for(watch.run(), 40) == 0
    out = capsys.readouterr().out
    assert "warning: line 2 could not be parsed (RuntimeError: injected fault)" in out
    assert "READY (line 3)" in out
