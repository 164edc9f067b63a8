"""Verdicts for a server Watchtower did not launch, from the writer events (the facts discovery
reports: tests/test_watch_writers.py runs the real thing against real processes)."""

from __future__ import annotations

import signal

from tests.app_support import CLOCK, feed, fixed_session, make_app
from tests.support import screen_text, until
from tui.core.events import GpuInfo, GpuProcess, GpuSample, NoWriter, NoWriterReason, ServerProcess, WriterGone, WritersFound
from tui.core.verdict import DEAD, FAILED, LOADING, STALLED, STARTING
from tui.core.writers import WriterState

LOG = b"[2026-03-14 21:04:10] server_args=ServerArgs(model_path='/models/m', tp_size=2)\n" + b"".join(
    b"[2026-03-14 21:04:20 TP%d] Load weight begin. avail mem=139.26 GB\n" % r for r in range(2)
)
MAIN = ServerProcess(4242, 1, "python", "python -m sglang.launch_server --tp 2", 1.0, "main", None, True)
TP = [ServerProcess(4300 + r, 4242, f"sglang::scheduler_TP{r}", f"sglang::scheduler_TP{r}", 2.0, "rank", f"TP{r}")
      for r in range(2)]
TREE = WritersFound("log", "localhost", (MAIN, *TP), CLOCK)


def gone(process: ServerProcess, main: bool = False, **status) -> WriterGone:
    return WriterGone("log", "localhost", process, main, remaining=2, at=CLOCK, **status)


def test_the_main_process_gone_is_dead_naming_it_and_honest_about_its_status():
    session = fixed_session(LOG)
    session.handle(TREE)
    assert session.verdict().kind == STARTING
    session.handle(gone(MAIN, main=True))
    verdict = session.verdict()
    assert verdict.kind == DEAD
    assert "main process pid 4242 (python -m sglang.launch_server --tp 2) is gone" in verdict.detail
    assert "exit status unknown" in verdict.detail and "Load weight begin" in verdict.detail


def test_a_known_exit_status_is_said():
    state = WriterState()
    state.apply(TREE)
    state.apply(gone(MAIN, main=True, exit_known=True, signal=signal.SIGKILL))
    assert "killed by SIGKILL" in state.status().end_text


def test_a_rank_dying_while_the_main_lives_is_a_failure_naming_the_rank():
    session = fixed_session(LOG)
    session.handle(TREE)
    session.handle(gone(TP[1]))
    verdict = session.verdict()
    assert verdict.kind == FAILED and verdict.ranks == ("TP1",)
    assert "TP1's process pid 4301 (sglang::scheduler_TP1) is gone" in verdict.detail
    assert "while the main process 4242 lives" in verdict.detail
    # a new server writing the log (a restart) starts afresh
    session.handle(WritersFound("log", "localhost", (MAIN.__class__(**{**_fields(MAIN), "pid": 5000}),), CLOCK))
    assert session.verdict().kind == STARTING


def _fields(process: ServerProcess) -> dict:
    return {name: getattr(process, name) for name in process.__dataclass_fields__}


def test_a_helper_child_ending_is_no_failure():
    helper = ServerProcess(4400, 4242, "sh", "sh -c nvidia-smi", 3.0, "child")
    session = fixed_session(LOG)
    session.handle(WritersFound("log", "localhost", (MAIN, *TP, helper), CLOCK))
    session.handle(gone(helper))
    assert session.verdict().kind == STARTING


def test_loading_is_the_servers_own_gpu_memory_moving():
    clock = [CLOCK]
    session = fixed_session(LOG)
    session.clock = lambda: clock[0]
    session.handle(TREE)

    def sample(server_gib: float, other_gib: float) -> GpuSample:
        procs = (GpuProcess(4300, int(server_gib * 2**30)), GpuProcess(9999, int(other_gib * 2**30)))
        return GpuSample("localhost", clock[0], (GpuInfo(0, memory_used=int((server_gib + other_gib) * 2**30),
                                                          utilization=0, processes=procs),))

    for k in range(5):  # another job frees memory fast; the server's own grows 1 GiB/s
        session.handle(sample(10 + k, 60 - 8 * k))
        clock[0] += 1
    clock[0] += 60  # the log has been quiet a minute
    for k in range(5):
        session.handle(sample(80 + k, 20))
        clock[0] += 1
    verdict = session.verdict()
    assert verdict.kind == LOADING and "its GPU mem +1.0 GiB/s" in verdict.detail


def test_alive_and_silent_past_the_limit_is_stalled():
    clock = [CLOCK]
    session = fixed_session(LOG)
    session.clock = lambda: clock[0]
    session.handle(TREE)
    clock[0] += 21 * 60  # SGLang's weight load limit is 20 minutes
    verdict = session.verdict()
    assert verdict.kind == STALLED and verdict.ranks == ("TP0", "TP1")


async def test_dashboard_shows_the_process_tree_and_says_no_writer_once():
    session = fixed_session(LOG)
    session.handle(NoWriter("log", "localhost", NoWriterReason.PIPE, "the log is written by tee from a pipe", CLOCK))
    app = make_app(session)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert text.count("no writer found") == 1 and "tee from a pipe" in text
        session.handle(TREE)
        session.flush()
        await until(lambda: "sglang::scheduler_TP1" in screen_text(app), pilot=pilot, what="the process tree drawn")
        text = screen_text(app)
        assert "no writer found" not in text
        assert "Server processes" in text and "4242" in text and "TP1" in text and "sglang::scheduler_TP1" in text
        session.handle(gone(MAIN, main=True))
        feed(session, b"")
        await until(lambda: "DEAD" in screen_text(app), pilot=pilot, what="the header redrawn")
        text = screen_text(app)
        assert "DEAD" in text and "gone, exit status unknown" in text


async def test_a_ready_server_whose_process_dies_is_dead_not_ready_in_the_header():
    ready = LOG + b"[2026-03-14 21:05:20] The server is fired up and ready to roll!\n"
    session = fixed_session(ready)
    session.handle(TREE)
    app = make_app(session)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert "READY" in screen_text(app)
        session.handle(gone(MAIN, main=True))
        session.flush()
        await pilot.pause()
        text = screen_text(app)
        assert "DEAD" in text and "after ready" in text and "READY " not in text
        assert app.exit_code_for_state() == 1


def test_the_report_lists_the_server_processes_and_the_logs_startups():
    from tui.present.report import build_report

    session = fixed_session(LOG + b"[2026-03-14 21:05:20] The server is fired up and ready to roll!\n" + LOG)
    session.handle(TREE)
    session.handle(gone(TP[0]))
    report = build_report(session)
    assert "Startups in this log (2)" in report
    assert "attempt 1  lines 1-4  ✓ ready" in report and "attempt 2  lines 5-…" in report
    assert "Server processes" in report and "4242" in report and "sglang::scheduler_TP1" in report
    assert "✗    4300  TP0        gone, exit status unknown" in report
