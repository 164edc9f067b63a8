"""Whole traceback blocks in the dashboard: every line styled, filtered in, copied and reported."""

from __future__ import annotations

import re

from tests.app_support import fixed_session, make_app
from tests.support import until
from tui.session import ERROR, WatchSession
from tui.sources.local import LocalTailer

HEAD = (
    "[2026-03-14 21:04:10] server_args={'model_path': '/models/m', 'tp_size': 1}\n"
    "[2026-03-14 21:04:13 TP0] Load weight begin. avail mem=139.26 GB\n"
)


def long_traceback(frames: int, start: int = 0) -> str:
    """A traceback of 3 + 2 * frames lines (its frames numbered from ``start``), ending in a
    message line after the exception."""
    lines = ["[2026-03-14 21:04:20 TP0] Scheduler hit an exception: Traceback (most recent call last):"]
    for i in range(start, start + frames):
        lines += [f'  File "/opt/sglang/srt/layer_{i}.py", line {i + 10}, in forward_{i}', f"    return self.inner_{i}(x)"]
    lines.append("AttributeError: 'Qwen3MoeForCausalLM' object has no attribute 'set_eagle3_layers_to_capture'")
    lines.append("Possible solutions: upgrade the model's remote code")
    return "\n".join(lines) + "\n"


def block_log(frames: int) -> bytes:
    after = "".join(f"[2026-03-14 21:04:21] after {i}\n" for i in range(5))
    return (HEAD + long_traceback(frames) + after).encode()


async def test_a_73_line_traceback_is_styled_filtered_copied_and_reported_whole(tmp_path):
    session = fixed_session(block_log(35))  # 1 + 70 + 2 = 73 lines, lines 3-75
    (error,) = session.state.errors
    assert (error.line, error.end_line, error.size) == (3, 75, 73)
    styles = {e.number: e.style for e in session.scrollback.entries()}
    assert all(styles[n] == ERROR for n in range(3, 76)), [n for n in range(3, 76) if styles[n] != ERROR]
    assert styles[76] != ERROR and styles[2] != ERROR
    app = make_app(session, tmp_path=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("f")
        await pilot.pause()
        log = app.log_view
        shown = {log.entry_at(r).number for r in range(log.row_count) if log.entry_at(r).style == ERROR}
        assert set(range(3, 76)) <= shown
        await pilot.press("e", "y")
        copied = app.clipboard.splitlines()
        assert len(copied) == 73 and copied[0].endswith("Traceback (most recent call last):")
        assert 'layer_17.py' in app.clipboard  # a middle frame, which the sample of head + tail lacks
        await pilot.press("w")
        await pilot.pause()
        report = app.last_report.read_text()
        numbers = [int(m) for m in re.findall(r"^ +(\d+) \|", report, re.M)]
        assert numbers == list(range(3, 76))


async def test_a_block_past_the_copy_limit_says_what_was_left_out(tmp_path):
    session = fixed_session(block_log(1500))  # 3003 lines: more than a copy takes
    (error,) = session.state.errors
    app = make_app(session, tmp_path=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("e", "y")
        await pilot.pause()
        copied = app.clipboard.splitlines()
        gap = [line for line in copied if "lines left out" in line]
        assert len(gap) == 1 and len(copied) == 2001
        first, last = map(int, re.search(r"lines (\d+)–(\d+)", gap[0]).groups())
        assert last - first + 1 == 1003 == int(gap[0].split()[1])
        notes = [n.message for n in app._notifications]  # noqa: SLF001
        assert any("1003 of 3003 lines left out" in m and f"lines {first}–{last}" in m for m in notes), notes
        await pilot.press("w")
        await pilot.pause()
        report = app.last_report.read_text()
        assert len(re.findall(r"^ +\d+ \|", report, re.M)) == 3003  # a report holds it all


async def test_lines_dropped_from_the_scrollback_are_re_read_from_the_file(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(block_log(300) + "".join(f"[2026-03-14 21:04:22] later {i}\n" for i in range(400)).encode())
    session = WatchSession(log=LocalTailer(log), scrollback=100)
    app = make_app(session, tmp_path=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        session.start()
        await until(lambda: session.state.lines >= 1007)
        (error,) = session.state.errors
        assert session.scrollback.find_line(error.line) is None  # long gone from the scrollback
        await pilot.press("y")
        await pilot.pause()
        copied = app.clipboard.splitlines()
        assert len(copied) == error.size == 603
        assert copied[0].endswith("Traceback (most recent call last):") and "layer_150.py" in app.clipboard
        assert copied[-1].startswith("Possible solutions")
