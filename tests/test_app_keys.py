"""The dashboard driven through Textual's pilot: keys in, widget state asserted."""

from __future__ import annotations

import re

import pytest

from tests.app_support import feed, fixed_session, make_app
from tests.support import screen_text
from tui.app.app import LogStatus
from tui.app.header import VerdictHeader
from tui.session import ERROR, PHASE

HEAD = (
    "[2026-03-14 21:04:10] server_args={'model_path': '/models/m', 'tp_size': 2}\n"
    "[2026-03-14 21:04:12 TP0] Init parallel begin.\n"
    "[2026-03-14 21:04:12 TP1] Init parallel begin.\n"
    "[2026-03-14 21:04:13 TP0] Load weight begin. avail mem=139.26 GB\n"
    "[2026-03-14 21:04:13 TP1] Load weight begin. avail mem=139.26 GB\n"
)


def filler(n: int, start: int = 0) -> str:
    return "".join(f"[2026-03-14 21:04:14 TP0] filler line {start + i} needle{(start + i) % 50 == 7}\n" for i in range(n))


def traceback(rank: str, final: str) -> str:
    return (
        f"[2026-03-14 21:04:20 {rank}] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/opt/sglang/srt/managers/scheduler.py", line 6360, in run_scheduler_process\n'
        "    scheduler = Scheduler(server_args, port_args)\n"
        '  File "/opt/sglang/srt/configs/model_config.py", line 262, in __init__\n'
        "    raise ValueError(\n"
        f"{final}\n"
    )


def crash_log() -> bytes:
    text = HEAD + filler(200) + traceback("TP0", "ValueError: context length too long")
    text += filler(100, 200) + traceback("TP1", "KeyError: 'rope_scaling'")
    text += "[2026-03-14 21:04:21] Received sigquit from a child process. It usually means the child failed.\n"
    return text.encode()


async def test_follow_pause_and_resume_at_bottom():
    session = fixed_session((HEAD + filler(400)).encode())
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        log = app.log_view
        assert log.follow and log.scroll_y == log.max_scroll_y > 0
        await pilot.press("space")
        assert not log.follow
        held = log.scroll_y
        feed(session, filler(300, 400).encode())
        await pilot.pause()
        assert log.scroll_y == held < log.max_scroll_y  # paused: new lines do not move the view
        assert "paused" in screen_text(app)
        await pilot.press("G")
        await pilot.pause()
        assert log.follow and log.scroll_y == log.max_scroll_y
        await pilot.press("pageup")
        await pilot.pause()
        assert not log.follow  # scrolling up pauses
        await pilot.press("end")
        await pilot.pause()
        assert log.follow  # back at the bottom: following again
        feed(session, filler(50, 700).encode())
        await pilot.pause()
        assert log.scroll_y == log.max_scroll_y
        await pilot.resize_terminal(100, 45)  # the view grows: the scroll is clamped, still following
        await pilot.pause()
        assert log.follow and log.scroll_y == log.max_scroll_y
        feed(session, filler(20, 750).encode())
        await pilot.pause()
        assert log.follow and log.scroll_y == log.max_scroll_y
        await pilot.press("g")
        await pilot.pause()
        assert log.scroll_y == 0 and not log.follow


async def test_error_navigation_lands_on_each_error_and_copies_its_block(tmp_path):
    session = fixed_session(crash_log())
    errors = session.state.errors
    assert len(errors) >= 2, "the tracker reports both tracebacks"
    app = make_app(session, tmp_path=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        log = app.log_view
        await pilot.press("e")
        first = log.current_entry()  # the exception line, its traceback above it (issue 20, item 10)
        assert first is not None and first.number == errors[0].end_line
        assert first.text.startswith("ValueError") and first.style == ERROR
        await pilot.press("e")
        second = log.current_entry()
        assert second is not None and second.number == errors[1].end_line
        assert not log.follow
        # the cursor line is on screen
        assert log.scroll_y <= log.row_of(second.seq) < log.scroll_y + log.scrollable_content_region.height
        await pilot.press("E")
        assert log.current_entry().number == errors[0].end_line
        await pilot.press("y")
        copied = app.clipboard
        assert "ValueError: context length too long" in copied and "Traceback" in copied
        assert "KeyError" not in copied


async def test_filter_shows_only_errors_and_phase_lines():
    session = fixed_session(crash_log())
    app = make_app(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        log = app.log_view
        everything = log.row_count
        await pilot.press("f")
        await pilot.pause()
        assert log.only_notable
        rows = [log.entry_at(r) for r in range(log.row_count)]
        assert 0 < len(rows) < everything
        assert all(e.style in (ERROR, PHASE, "mark") for e in rows)
        assert not any("filler" in e.text for e in rows)
        assert any("ValueError: context length too long" in e.text for e in rows)
        assert any("Load weight begin" in e.text for e in rows)
        assert "filter: errors + phases" in screen_text(app)
        await pilot.press("e")  # error navigation works inside the filter too
        assert log.current_entry().number == session.state.errors[0].end_line
        await pilot.press("f")
        await pilot.pause()
        assert log.row_count == everything
        assert log.current_entry().number == session.state.errors[0].end_line  # the cursor survives


async def test_search_next_and_previous():
    session = fixed_session((HEAD + filler(400)).encode())
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        log = app.log_view
        await pilot.press("slash")
        await pilot.press(*"needletrue")
        await pilot.press("enter")
        first = log.current_entry()
        assert first is not None and "needleTrue" in first.text and "filler line 7 " in first.text
        await pilot.press("n")
        assert "filler line 57 " in log.current_entry().text
        await pilot.press("N")
        assert "filler line 7 " in log.current_entry().text
        await pilot.press("N")  # wraps around to the last match
        assert "filler line 357 " in log.current_entry().text
        assert "search: needletrue" in screen_text(app)


async def test_theme_cycles_and_styles_follow(tmp_path):
    session = fixed_session(crash_log())
    app = make_app(session, theme="light")
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.palette.name == "light" and app.theme == "light"
        seen = {app.palette.name}
        for _ in range(len(app.palettes)):
            await pilot.press("t")
            seen.add(app.palette.name)
            assert app.theme == app.palette.textual.name
        assert {"dark", "light", "high-contrast"} <= seen
        while app.palette.name != "high-contrast":
            await pilot.press("t")
        error_style = app.palette.style("error")
        assert error_style.reverse and error_style.bold  # not told apart by red alone


async def test_user_theme_file_is_loaded(tmp_path):
    theme = tmp_path / "mine.toml"
    theme.write_text('name = "mine"\n[colors]\nprimary = "#123456"\n[styles]\nerror = "bold underline magenta"\n')
    app = make_app(fixed_session(crash_log()), theme=str(theme))
    async with app.run_test(size=(100, 30)):
        assert app.palette.name == "mine" and app.palette.style("error").underline
        assert app.palette.style("phase")  # unset styles fall back to defaults


@pytest.mark.parametrize("text, said", [
    ('name = "mine"\n[colors\n', "invalid TOML (Expected ']'"),
    (b"\xff\xfe not utf-8", "cannot read it: 'utf-8' codec"),
    ('name = "mine"\n', "needs a [colors] table"),
])
def test_a_bad_theme_file_is_one_line_naming_it(tmp_path, text, said):
    """Its TOML parsed as every built-in file is (``tui.core.kept``): a parse error is still the theme
    file's one line, not a traceback."""
    from tui.app import themes
    from tui.core.errors import UsageError

    theme = tmp_path / "mine.toml"
    theme.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(UsageError) as refused:
        themes.load_file(theme)
    assert str(refused.value).startswith(f"theme file {theme}: ") and said in str(refused.value)
    assert "\n" not in str(refused.value)


async def test_write_report_and_screenshot(tmp_path):
    session = fixed_session(crash_log())
    app = make_app(session, tmp_path=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("w")
        await pilot.press("s")
        await pilot.pause()
    reports = list(tmp_path.glob("watchtower-report-*.txt"))
    shots = list(tmp_path.glob("watchtower-*.svg"))
    assert len(reports) == 1 and len(shots) == 1
    report = reports[0].read_text()
    assert "FAILED" in report and "ValueError: context length too long" in report
    assert "scheduler = Scheduler(server_args, port_args)" in report  # the traceback, not just its last line
    assert "weight load" in report
    assert "<svg" in shots[0].read_text()[:500]


async def test_help_and_quit_hook():
    app = make_app(fixed_session((HEAD).encode()))
    asked = []

    def veto() -> bool:
        asked.append(True)
        return len(asked) > 1  # refuse the first time, allow the second

    async with app.run_test(size=(100, 30)) as pilot:
        app.before_quit.append(veto)
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "HelpScreen"
        assert "next error (traceback block)" in screen_text(app)
        await pilot.press("escape")
        await pilot.press("q")
        assert app.is_running and asked == [True]
        await pilot.press("q")
    assert asked == [True, True] and app.return_code == 0


async def test_extension_key_runs_callback_and_is_listed():
    app = make_app(fixed_session(HEAD.encode()))
    calls = []
    async with app.run_test(size=(100, 30)) as pilot:
        app.add_key("relaunch", lambda: calls.append("r"))
        await pilot.press("r")
        assert calls == ["r"]
        assert ("r", "relaunch the same command as the next attempt") in app.key_rows()
        titles = {command.title for command in app.get_system_commands(app.screen)}
        assert {"Error", "Search", "Filter", "Copy", "Report", "Theme", "Quit", "Relaunch"} <= titles


async def test_resize_keeps_state():
    session = fixed_session(crash_log())
    app = make_app(session)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("f")
        await pilot.press("e")
        cursor = app.log_view.cursor
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.log_view.only_notable and app.log_view.cursor == cursor
        text = screen_text(app)
        assert "FAILED" in text and "Phases" in text
        await pilot.resize_terminal(200, 60)
        await pilot.pause()
        assert app.log_view.only_notable and app.log_view.cursor == cursor
        assert app.query_one(VerdictHeader).verdict.kind == "failed"
        assert f"{len(session.state.errors)} errors" in app.query_one(LogStatus).render().plain


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_layout_fits(size):
    app = make_app(fixed_session(crash_log()))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        text = screen_text(app).splitlines()
        assert len(text) == size[1]
        assert "WATCHTOWER" in text[0] and "FAILED" in text[1]
        assert any("weight load" in line for line in text)
        assert app.log_view.scrollable_content_region.height >= 8  # the log keeps room to be useful


async def test_progress_bar_is_one_updating_line():
    session = fixed_session(HEAD.encode())
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        log = app.log_view
        rows = log.row_count
        shown = []
        for pct in (10, 50, 90):  # tqdm writes "\r<bar>": each refresh shows as soon as it is written
            feed(session, f"\rLoading safetensors checkpoint shards: {pct:3d}% Completed | {pct}/100".encode())
            await pilot.pause()
            if log.row_count == rows + 1:
                shown.append(log.entry_at(rows).text)
        assert len(shown) == 3 and ["10/100" in shown[0], "50/100" in shown[1], "90/100" in shown[2]] == [True] * 3
        feed(session, b"\rLoading safetensors checkpoint shards: 100% Completed | 100/100\n")
        await pilot.pause()
        assert log.row_count == rows + 1  # the finished bar is one line of the log
        assert "100/100" in log.entry_at(rows).text and session.scrollback.progress is None


async def test_rank_grid_toggle_shows_each_rank():
    from tests.app_support import demo_session

    app = make_app(demo_session("ready", upto=50.0))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        text = screen_text(app)
        assert "Ranks" in text and "Phases" not in text
        assert all(f"TP{r} " in text for r in range(8))
        await pilot.press("p")
        await pilot.pause()
        assert "Phases" in screen_text(app)
    app = make_app(demo_session("ready", upto=50.0))
    async with app.run_test(size=(200, 60)) as pilot:  # very wide and tall: both at once
        await pilot.pause()
        text = screen_text(app)
        assert "Ranks" in text and "Phases" in text


async def test_e_on_a_deep_traceback_lands_on_the_exception_with_the_traceback_above(tmp_path):
    """Issue 20, item 10: a real Python process raising 60 frames deep; `e` lands on the exception
    line, not on "Traceback" 121 lines above it, and the block shows above it."""
    import subprocess
    import sys

    log = tmp_path / "server.log"
    code = "".join(f"def f{i}():\n    f{i + 1}()\n" for i in range(59))  # 60 distinct frames: none folded
    code += "def f59():\n    raise ValueError('context length too long')\nf0()\n"
    script = tmp_path / "server.py"  # from a file: each frame is two lines, its source line shown
    script.write_text(code)
    with log.open("wb") as out:
        subprocess.run([sys.executable, str(script)], stdout=out, stderr=subprocess.STDOUT)
    session = fixed_session(log.read_bytes())
    (error,) = session.state.errors
    assert error.end_line - error.line > 100
    app = make_app(session)
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.pause()
        await pilot.press("e")
        entry = app.log_view.current_entry()
        assert entry.number == error.end_line and entry.text == "ValueError: context length too long"
        shown = screen_text(app)
        assert "ValueError: context length too long" in shown
        assert shown.count(", in f") >= 8  # the frames above it are in view, highlighted as the block


async def test_rank_grid_at_80_columns_keeps_every_phase_column():
    """Issue 34 item 10: beside the GPU panel at 80 columns the grid's last column was cut off;
    the cells narrow so that every phase the startup had fits, its ranks' times in each."""
    from tests.app_support import demo_session
    from tui.app.timeline import RANK_PHASES, shown

    session = demo_session("ready")
    columns = shown(session.state, RANK_PHASES)
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        text = screen_text(app)
        tp7 = next(line for line in text.splitlines() if line.strip().startswith("TP7 "))
        cells = re.findall(r"✓\d+s\b", tp7.split("│")[0])  # whole times, the last one not cut
        assert len(columns) >= 5 and len(cells) == len(columns), text


async def test_i_shows_a_failed_starts_hints_in_full_where_the_header_cuts_them():
    """At 80 columns the header has two rows for the first hint and cuts the rest of it (round 4, stop 46:
    a real llama.cpp given a folder as -m, whose hint ends in the conversion the operator needs); ``i``
    shows every hint whole, its link too, and the footer offers it once the start has failed."""
    folder = "/root/.cache/watchtower/real-servers/models/SmolLM2-135M-Instruct"
    log = ("0.00.002.865 I srv          init: loading model\n"
           f"0.00.002.895 I srv    load_model: loading model '{folder}'\n"
           "0.00.003.000 E gguf_init_from_reader: failed to read magic\n"
           f"0.00.003.100 E llama_model_load: error loading model: llama_model_loader: failed to load model from {folder}\n"
           "0.00.003.200 E srv          init: exiting due to model loading error\n")
    app = make_app(fixed_session(log.encode()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = screen_text(app)
        assert "convert_hf_to_gguf.py" not in shown  # the header's two rows end before the fix
        assert " i " in shown.splitlines()[-1] and "Hints" in shown.splitlines()[-1], shown.splitlines()[-1]
        await pilot.press("i")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "HintsScreen"
        words = screen_text(app)
        assert "convert_hf_to_gguf.py" in words and "download a GGUF of the model" in words, words
        assert "github.com/ggml-org/llama.cpp/discussions/2948" in words
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.__class__.__name__ != "HintsScreen"


async def test_i_says_so_where_no_hint_speaks():
    app = make_app(fixed_session(HEAD.encode()))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("i")
        await pilot.pause()
        assert "no hint: the start has not failed" in screen_text(app)
