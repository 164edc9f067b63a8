"""The session (sources -> tracker -> models) and the panels' rendering of what it holds."""

from __future__ import annotations

import asyncio

from tests.app_support import CLOCK, feed, fixed_session, make_app
from tests.support import MemorySource, screen_text, until
from tui.app.gpus import GpuPanel, render_gpus
from tui.app.themes import discover
from tui.core.events import ConnectionState, GpuInfo, GpuSample, GpuUnavailable, LogChunk, LogGap, LogRestart, LogTruncated
from tui.session import ERROR, MARK, WatchSession
from tui.session.pump import SLICE_BYTES

PALETTE = discover()["dark"]


def lines(n: int, start: int = 0) -> bytes:
    return b"".join(b"[2026-03-14 21:05:00 TP0] Decode batch. #running-req: %d\n" % i for i in range(start, start + n))


def test_scrollback_is_capped_and_counts_what_it_dropped():
    session = fixed_session(scrollback=1000)
    for start in range(0, 25_000, 5_000):
        feed(session, lines(5_000, start))
    scrollback = session.scrollback
    assert scrollback.end_seq == 25_000  # every line counted
    assert len(scrollback) <= 1000 + 1000 // 8  # memory bounded
    assert scrollback.dropped == 25_000 - len(scrollback)
    newest = scrollback.get(scrollback.end_seq - 1)
    assert newest.number == 25_000 and newest.text.endswith("#running-req: 24999")
    assert scrollback.find_line(25_000) == newest
    assert scrollback.find_line(10) is None  # dropped long ago


def test_each_kept_lines_own_time_is_read_once_when_asked_for_even_across_a_trim():
    """``Scrollback.times``: lines read lazily, each once, beside their seq; lines dropped before
    they were read are never read; NaN where a line printed no time."""
    import math

    from tui.session.models import Scrollback

    read: list[str] = []

    def time_of(text: str) -> float | None:
        read.append(text)
        return float(text) if text.isdigit() else None

    scrollback = Scrollback(capacity=10, time_of=time_of)
    for n in range(5):
        scrollback.append(n + 1, str(n))
    assert list(scrollback.times(3)) == [(3, 3.0), (4, 4.0)] and len(read) == 5  # all kept lines read, once
    for n in range(5, 30):  # past the capacity: the oldest go, read or not
        scrollback.append(n + 1, str(n) if n % 2 else "no time")
    def times(start: int = 0) -> list[tuple[int, float | None]]:
        return [(seq, None if math.isnan(own) else own) for seq, own in scrollback.times(start)]

    pairs = times()
    assert pairs == [(seq, float(seq) if seq % 2 else None) for seq in range(scrollback.first_seq, 30)]
    assert scrollback.first_seq > 5 and len(read) == 5 + len(pairs)  # the lines dropped unread: never read
    assert times(28) == pairs[-2:] and len(read) == 5 + len(pairs)


def test_lines_without_a_marker_still_count_and_are_what_the_log_said_last():
    """The session skips matching for lines with no marker word, not counting them: a server
    dying after a stretch of serving lines is reported with its true last line."""
    session = fixed_session(b"[2026-03-14 21:04:10] server_args={'model_path': '/m'}\n" + lines(3000))
    state = session.state
    assert state.lines == 3001 and state.last_line == 3001
    assert state.last_text.endswith("#running-req: 2999")


def test_traceback_lines_are_styled_as_one_error_block():
    text = (
        b"[2026-03-14 21:04:10] server_args={'model_path': '/m'}\n"
        b"[2026-03-14 21:04:12 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        b'  File "/x.py", line 1, in f\n'
        b"    g()\n"
        b"KeyError: 'rope_scaling'\n"
        b"[2026-03-14 21:04:13] after\n"
    )
    session = fixed_session(text)
    styles = [session.scrollback.find_line(n).style for n in range(1, 7)]
    assert styles[1:5] == [ERROR] * 4
    assert styles[5] != ERROR
    error = session.state.first_error
    assert error.kind == "KeyError" and error.line == 2


def test_gaps_and_restarts_are_marked_and_numbers_restart():
    session = fixed_session(lines(10))
    session.handle(LogGap("log", 100, 4096, "truncated before it was read"))
    session.handle(LogRestart("log", "recreated"))
    feed(session, lines(3))
    marks = [e for e in session.scrollback.entries() if e.style == MARK]
    assert len(marks) == 2 and "4096 bytes at offset 100 could not be read" in marks[0].text and "recreated" in marks[1].text
    assert session.scrollback.find_line(2).text.endswith("#running-req: 1")
    assert session.scrollback.find_line(2).seq > marks[1].seq  # line 2 of the new file


def test_a_truncation_is_a_gap_in_the_same_startup_not_a_new_attempt():
    """The tailer says what was kept (LogTruncated); the startup so far stands and line
    numbers go on after the kept lines, as ``grep -n`` counts the file."""
    startup = (b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
               b"[2026-03-14 21:04:11] Load weight begin. avail mem=70.00 GB\n")
    session = fixed_session(startup + lines(3))
    assert session.state.server == "sglang" and session.state.phase("weight_load") is not None
    session.handle(LogTruncated("log", len(startup), 2))
    feed(session, b"[2026-03-14 21:04:12] after the cut\n")
    assert session.state.server == "sglang" and session.state.phase("weight_load") is not None
    marks = [e for e in session.scrollback.entries() if e.style == MARK]
    assert len(marks) == 1 and "truncated" in marks[0].text and "line 3" in marks[0].text
    assert session.scrollback.entries()[-1].number == 3  # the kept lines 1-2, then this one


async def test_updates_are_coalesced_under_a_flood():
    session = WatchSession(max_rate=10)
    updates = []
    session.subscribe(updates.append)
    loop = asyncio.get_running_loop()
    start = loop.time()
    for start_line in range(0, 50_000, 500):
        session.handle(LogChunk("log", 0, lines(500, start_line), 0.0))
        await asyncio.sleep(0.002)  # a source yielding between chunks
    elapsed = loop.time() - start
    await asyncio.sleep(0.25)  # time passing is the point: the throttle's last, delayed notification comes
    assert session.scrollback.end_seq == 50_000
    assert 1 <= len(updates) <= elapsed * 10 + 3  # at most max_rate notifications a second
    assert all("log" in u.topics for u in updates)


async def test_a_gpu_sample_alone_holds_no_later_change_back_but_the_log_stays_throttled():
    """The throttle is for the log's flood: the first sample's flush (once a second, each node's)
    does not make the log's first line wait out the interval behind it (57 ms of a watch's start)."""
    from tui.session.notices import Notices

    notices = Notices(max_rate=2.0, before_views=lambda: None)  # at most one flush each 0.5 s
    told: asyncio.Queue[frozenset[str]] = asyncio.Queue()
    notices.subscribe(lambda update: told.put_nowait(update.topics))
    loop = asyncio.get_running_loop()
    notices.changed("gpu")
    assert await asyncio.wait_for(told.get(), 1.0) == {"gpu"}
    asked = loop.time()
    notices.changed("log", "state")
    assert await asyncio.wait_for(told.get(), 0.25) == {"log", "state"}  # not 0.5 s behind the sample
    notices.changed("log")
    assert await asyncio.wait_for(told.get(), 2.0) == {"log"}
    assert loop.time() - asked >= 0.45  # the log's next change: throttled as before
    notices.close()


async def test_a_big_read_is_fed_in_slices_with_the_event_loop_let_through_between():
    """A 256 KiB read of a flood is fed a slice of whole lines at a time: whatever else waits on
    the loop (a key press, the screen's refresh) waits behind one slice, not the whole read."""
    flood = b"".join(b"[2026-03-14 21:05:00 TP%d] Decode batch. #running-req: %d, #token: %d, token usage: 0.12, "
                     b"gen throughput (token/s): 1234.5\n" % (i % 8, i, i * 7) for i in range(20_000))
    source = MemorySource()
    session = WatchSession(log=source)
    session.start()
    source.say(flood)
    seen = [0]  # the lines in the scrollback at each turn of the loop
    while seen[-1] < 20_000:
        await asyncio.sleep(0)
        seen.append(session.scrollback.end_seq)
    await session.stop()
    widest_turn = max(b - a for a, b in zip(seen, seen[1:]))
    lengths = [len(line) + 1 for line in flood.splitlines()]
    shortest, longest = min(lengths), max(lengths)
    assert widest_turn * shortest <= SLICE_BYTES + longest  # one slice (and its last line) a turn
    assert [session.scrollback.get(seq).number for seq in (0, 19_999)] == [1, 20_000]  # every line, in order


def test_gpu_panel_states():
    from tui.sources.sim import SimGpuSource

    session = fixed_session()  # no GPU source: no sample will come (a node with gpus = none)
    text = render_gpus(session, 100, PALETTE).plain
    assert "none watched for this node" in text and "waiting" not in text
    text = render_gpus(WatchSession(gpu=SimGpuSource()), 100, PALETTE).plain
    assert "waiting for the first GPU sample" in text
    text = render_gpus(session, 100, PALETTE, enabled=False).plain
    assert "off (--gpus none)" in text
    session.handle(GpuUnavailable("localhost", "NVML library not found (libnvidia-ml.so.1): no NVIDIA driver here"))
    assert "unavailable: NVML library not found" in render_gpus(session, 100, PALETTE).plain
    gib = 1 << 30
    session.handle(GpuSample("node", CLOCK, (
        GpuInfo(index=0, name="NVIDIA H200", memory_used=70 * gib, memory_total=140 * gib, utilization=97,
                temperature=63, power_w=412.0),
        GpuInfo(index=1, name="NVIDIA H200", memory_used=None, memory_total=140 * gib),
        GpuInfo(index=2, error="GPU is lost"),
    )))
    text = render_gpus(session, 100, PALETTE).plain
    assert "unavailable" not in text  # a sample arrived: the source is back
    session.handle(GpuUnavailable("node", "connection lost"))
    stale = render_gpus(session, 100, PALETTE).plain.splitlines()
    assert "last sample; connection lost" in stale[0] and "70.0/140 GiB" in stale[1]
    rows = text.splitlines()
    assert "70.0/140 GiB" in rows[1] and "97%" in rows[1] and "63°C" in rows[1] and "412W" in rows[1]
    assert "N/A" in rows[2]
    assert "GPU is lost" in rows[3]
    narrow = render_gpus(session, 36, PALETTE).plain.splitlines()
    assert all(len(r) <= 36 for r in narrow) and "70/140G" in narrow[1]


def h200s(count: int, utilization: int) -> GpuSample:
    gib = 1 << 30
    return GpuSample("node", CLOCK, tuple(
        GpuInfo(index=i, name="NVIDIA H200", memory_used=70 * gib, memory_total=140 * gib, utilization=utilization)
        for i in range(count)))


async def test_a_gpu_sample_repaints_its_panel_and_lays_the_screen_out_only_when_its_rows_change():
    """At rest a sample a second changes figures, not rows: a repaint of the GPU panel, never a layout
    of the whole screen (issue 35). GPUs that come or go change its rows, and it grows to hold them."""
    session = fixed_session()
    app = make_app(session)
    async with app.run_test(size=(140, 45)) as pilot:
        panel = app.query_one(GpuPanel)
        asked: list[bool] = []
        refresh = panel.refresh

        def spy(*regions, layout: bool = False, **kwargs):
            asked.append(layout)
            return refresh(*regions, layout=layout, **kwargs)

        panel.refresh = spy  # type: ignore[method-assign]
        session.handle(h200s(12, 41))  # the first sample: drawn when it comes
        await until(lambda: panel.size.height == 13, pilot=pilot, seen=lambda: panel.size)
        assert asked[-1] is True
        for utilization in (42, 43):
            session.handle(h200s(12, utilization))
            await pilot.pause()  # (the sample's notice reaches the app)
            asked.clear()
            app.second()
            await until(lambda: f" {utilization}%" in screen_text(app), pilot=pilot)
            assert asked == [False] and panel.size.height == 13
        session.handle(h200s(16, 44))  # four more GPUs: four more rows
        await pilot.pause()
        app.second()
        await until(lambda: panel.size.height == 17, pilot=pilot, seen=lambda: panel.size)
        assert " 15 " in screen_text(app)


async def test_connection_state_is_shown_in_the_header():
    session = fixed_session(lines(3))
    app = make_app(session)
    async with app.run_test(size=(140, 30)) as pilot:
        session.handle(ConnectionState("gpu-node-07", "lost", "connection reset", retry_in=4.0))
        session.flush()
        await pilot.pause()
        assert "○ lost, retrying in 4s: connection reset" in screen_text(app)
        session.handle(ConnectionState("gpu-node-07", "connected"))
        session.flush()
        await pilot.pause()
        assert "● connected" in screen_text(app)


def test_prefilter_loses_nothing_the_tracker_would_see():
    """Skipping marker-free lines (by chunk offsets, or by text across chunk edges) gives the
    same startup state as feeding the tracker every line, whatever the chunking."""
    import random

    from tui.core.lines import LineAssembler
    from tui.core.tracker import StartupTracker
    from tui.sources.replay import load
    from tests.app_support import DATA

    for scenario in ("ready", "crash-context", "oom"):
        data = load(DATA / f"demo-{scenario}.wtrec").log_bytes()
        data = data.replace(b"\n[2026", b"\n" + lines(40) + b"[2026", 20)  # floods between markers
        reference = StartupTracker()
        assembler = LineAssembler()
        for item in assembler.feed(data) + assembler.flush():
            reference.feed(item, CLOCK)
        for seed in range(3):
            rng = random.Random(seed)
            session = fixed_session()
            pos = 0
            while pos < len(data):
                size = rng.choice((1, 7, 100, 4096, 70_000))
                session.handle(LogChunk("log", pos, data[pos : pos + size], CLOCK))
                pos += size
            session.finish()
            got, want = session.state, reference.state
            assert [(p.name, p.start_line, p.end_line) for p in got.phases] == \
                [(p.name, p.start_line, p.end_line) for p in want.phases], (scenario, seed)
            assert [(e.line, e.kind, e.rank) for e in got.errors] == [(e.line, e.kind, e.rank) for e in want.errors]
            assert got.outcome == want.outcome


def test_user_theme_dir_is_searched(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    themes_dir = tmp_path / "watchtower" / "themes"
    themes_dir.mkdir(parents=True)
    (themes_dir / "night.toml").write_text('name = "night"\n[colors]\nprimary = "#000080"\n')
    (themes_dir / "broken.toml").write_text("name = \n")
    palettes = discover()
    assert {"dark", "light", "high-contrast", "night"} <= set(palettes)
    assert "broken" not in palettes  # skipped with a one-line message, the rest still load


async def test_a_failing_source_is_reported_in_the_log_not_raised():
    class Broken:  # an EventSource whose stream fails
        async def events(self):
            yield GpuUnavailable("localhost", "starting")
            raise OSError("device vanished")

        def close(self) -> None:
            pass

    session = WatchSession(gpu=Broken())
    session.start()
    await session.wait()
    marks = [e.text for e in session.scrollback.entries() if e.style == MARK]
    assert marks and "stopped: device vanished" in marks[0]
    assert "device vanished" in session.gpus.unavailable  # the GPU panel says why it is empty
    await session.stop()
