"""One log, many startups (``>>`` redirection, systemd / container restarts): each startup is an
attempt of its own; the last one decides; a ready line of an earlier one never counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app_support import fixed_session, make_app
from tests.support import run_cli, screen_text
from tui.commands.scan import scan_file, to_json
from tui.core.events import NewStartup
from tui.core.lines import LineAssembler
from tui.core.profiles import ProfileError, load_profile
from tui.core.state import FAILED, INTERRUPTED, READY, STARTING
from tui.core.tracker import StartupTracker

FIXTURES = Path(__file__).parent / "fixtures"
READY_LOG = FIXTURES / "sglang_eagle3_tp8_ready.log"
CRASH_LOG = FIXTURES / "sglang_attributeerror_tp8.log"


def lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n")


@pytest.fixture
def ready_then_crash(tmp_path) -> Path:
    """A ready startup, then (appended to the same file) a second one that crashes."""
    log = tmp_path / "server.log"
    log.write_bytes(READY_LOG.read_bytes() + CRASH_LOG.read_bytes())
    return log


def track(data: bytes) -> tuple[StartupTracker, list]:
    tracker = StartupTracker()
    assembler = LineAssembler(progress=False)
    events = []
    for item in assembler.feed(data) + assembler.flush():
        events += tracker.feed(item, None)
    events += tracker.finish()
    return tracker, events


def test_scan_reports_the_last_startup_and_lists_both(ready_then_crash):
    result = run_cli("scan", "--json", str(ready_then_crash))
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    first_lines = lines_in(READY_LOG)
    assert report["outcome"] == FAILED
    assert report["ready_line"] is None  # the first startup's ready line is not this one's
    first, second = report["attempts"]
    assert first == {"start_line": 1, "end_line": first_lines, "outcome": READY, "first_error": None}
    assert second["start_line"] == first_lines + 1 and second["end_line"] == report["lines"]
    assert second["outcome"] == FAILED and second["first_error"].startswith("AttributeError: ")
    # the phases and errors are the last startup's, with the file's own line numbers (grep -n)
    assert report["phases"] and all(p["start_line"] > first_lines for p in report["phases"])
    assert report["errors"][0]["line"] == first_lines + 35


def test_scan_human_output_has_one_line_per_startup(ready_then_crash):
    result = run_cli("scan", str(ready_then_crash))
    assert result.returncode == 1
    rows = [line for line in result.stdout.splitlines() if line.strip().startswith("attempt ")]
    assert len(rows) == 2
    assert "lines 1-130" in rows[0] and "ready" in rows[0]
    assert "lines 131-246" in rows[1] and "failed" in rows[1] and "AttributeError" in rows[1]


def test_a_single_startup_lists_one_attempt():
    report = to_json(scan_file(str(READY_LOG)))
    assert [a["outcome"] for a in report["attempts"]] == [READY]
    assert report["attempts"][0]["start_line"] == 1


def test_a_crash_then_a_good_restart_is_ready():
    tracker, events = track(CRASH_LOG.read_bytes() + READY_LOG.read_bytes())
    state = tracker.state
    assert state.outcome == READY and state.attempt == 2
    assert state.ready_line == lines_in(CRASH_LOG) + 125
    (new,) = [e for e in events if isinstance(e, NewStartup)]
    assert new.line == lines_in(CRASH_LOG) + 1 and new.attempt == 2
    assert new.previous.outcome == FAILED and new.previous.first_error.startswith("AttributeError")
    assert not state.errors  # the earlier startup's traceback is not this one's


def test_a_startup_cut_short_without_a_word_is_interrupted():
    silent = (FIXTURES / "sglang_silent_death.log").read_bytes()
    head = b"\n".join(READY_LOG.read_bytes().split(b"\n")[:40]) + b"\n"  # into weight loading
    tracker, _ = track(head + silent)
    (earlier,) = tracker.state.earlier
    assert earlier.outcome == INTERRUPTED and earlier.end_line == 40


def test_a_startup_marker_within_the_same_startup_starts_nothing():
    """vLLM prints its version banner, then its args: one startup, not two."""
    tracker, events = track((FIXTURES / "vllm_v1_ready.log").read_bytes())
    assert tracker.state.attempt == 1 and not any(isinstance(e, NewStartup) for e in events)


def test_vllm_restart_after_a_failure():
    kv = (FIXTURES / "vllm_kv_failure.log").read_bytes()
    ready = (FIXTURES / "vllm_v1_ready.log").read_bytes()
    tracker, _ = track(kv.rstrip(b"\n") + b"\n" + ready)
    state = tracker.state
    assert state.outcome == READY and [a.outcome for a in state.attempts] == [FAILED, READY]


def test_the_startup_marker_is_profile_data(tmp_path):
    profile = tmp_path / "mine.toml"
    profile.write_text(
        'name = "mine"\n'
        "[phases.server_args]\nbegin = ['^Booting']\nranked = false\n"
        "[phases.weight_load]\nbegin = ['^load begin']\nend = ['^load end']\n"
        "[markers]\nready = ['^all ready']\n"
    )
    loaded = load_profile(str(profile))
    assert [p.pattern for p in loaded.startup] == ["^Booting"]  # default: the server_args begin lines
    tracker = StartupTracker(loaded)
    assembler = LineAssembler(progress=False)
    for item in assembler.feed(b"Booting\nload begin\nload end\nall ready\nBooting\nload begin\n"):
        tracker.feed(item, None)
    state = tracker.state
    assert state.attempt == 2 and state.outcome == STARTING and state.start_line == 5
    assert state.earlier[0].outcome == READY
    profile.write_text(profile.read_text().replace("[markers]\n", "[markers]\nstartup = ['(']\n"))
    with pytest.raises(ProfileError, match="markers.startup"):
        load_profile(str(profile))


def test_watch_plain_shows_the_crash_as_the_current_attempts_failure(ready_then_crash):
    result = run_cli("watch", "--plain", "--timeout", "30", str(ready_then_crash))
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "READY (line 125)" in out  # the first startup was ready, and said so
    assert "new startup at line 131 (attempt 2 in this log)" in out
    (final,) = [line for line in out.splitlines() if "FAILED at line" in line]  # (hints may follow it)
    assert "FAILED at line 165" in final and "AttributeError" in final and "(attempt 2 in this log)" in final
    assert out.index("READY (line 125)") < out.index("new startup at line 131") < out.index(final)


async def test_dashboard_keeps_the_earlier_startup_summarised(ready_then_crash):
    session = fixed_session(ready_then_crash.read_bytes())
    state = session.state
    assert state.outcome == FAILED and state.attempt == 2
    assert state.phases and all(p.start_line > 130 for p in state.phases)  # the timeline restarted
    marks = [e.text for e in session.scrollback.entries() if "new startup" in e.text]
    assert marks == ["── new startup at line 131 (attempt 2 in this log) ──"]
    app = make_app(session)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    assert "FAILED" in text and "AttributeError" in text
    assert "Startups in this log (2)" in text
    assert "attempt 1  lines 1-130  ✓ ready" in text
    assert "attempt 2  lines 131-…  ✗ failed" in text and "← current" in text


def test_fast_path_equals_full_path_across_startups(ready_then_crash):
    from tests.test_scan_cli import full_path_state

    assert to_json(scan_file(str(ready_then_crash))) == to_json(full_path_state(ready_then_crash))


def test_a_phase_said_after_the_state_moved_on_names_its_own_lines():
    """The plain words of a phase's end are printed from a queue: by then the state may be a later
    startup's (a log read from its start). "weight load done (lines A-B)" is the event's own span,
    not the weight load of the startup the tracker reads now."""
    from tui.core.events import PhaseEnded
    from tui.present.event_words import EventWords

    data = READY_LOG.read_bytes()
    tracker, events = track(data + data)
    first = next(e for e in events if isinstance(e, PhaseEnded) and e.phase == "weight_load")
    said = []
    EventWords(said.append, lambda: tracker.state).phase_ended(first)  # the state: the second startup's
    assert tracker.state.phase("weight_load").start_line > lines_in(READY_LOG)  # (it has moved on)
    assert first.start_line is not None and first.start_line < first.line <= lines_in(READY_LOG)
    assert f"(lines {first.start_line}-{first.line}" in said[0].text
    assert said[0].fields["start_line"] == first.start_line
