"""torch.compile's ranges counted, with a time left and whether they compile (cold) or come
from the cache (warm).

vLLM 0.15+ prints one line per compile range on every worker, with the range's own time
(``Compiling a graph for compile range (1, 2048) takes 20.00 s``, or ``Directly load the
compiled graph(s) for compile range … from the cache, took 0.512 s``; log-formats.md P2); the
engine's config line lists the ranges to do (``'compile_sizes': [4, 8], 'compile_ranges_split_points':
[2048, 8192]``: four). The lines below are written for these tests after those formats.
"""

from __future__ import annotations

from tui.core.counting import CountEstimator
from tui.core.events import LogChunk, PhaseProgress
from tui.core.lines import Line

CONFIG = (
    "(EngineCore_DP0 pid=4300) INFO 01-20 10:00:03 [core.py:93] Initializing a V1 LLM engine (v0.15.1) with config: "
    "model='/models/m', tensor_parallel_size=2, compilation_config={'level': None, 'mode': <CompilationMode.VLLM_COMPILE: 3>, "
    "'compile_sizes': [4, 8], 'compile_ranges_split_points': [2048, 8192], 'cudagraph_capture_sizes': [1, 2, 4, 8]}\n"
)
HEAD = (
    "(APIServer pid=4200) INFO 01-20 10:00:00 [api_server.py:1805] vLLM API server version 0.15.1\n"
    + CONFIG
    + "(Worker_TP0 pid=4310) INFO 01-20 10:00:10 [gpu_model_runner.py:1953] Starting to load model /models/m...\n"
    "(Worker_TP0 pid=4310) INFO 01-20 10:00:20 [gpu_model_runner.py:2007] Model loading took 7.50 GiB memory and 9.80 seconds\n"
    "(Worker_TP0 pid=4310) INFO 01-20 10:00:21 [backends.py:548] Using cache directory: /root/.cache/vllm/torch_compile_cache/5ca1ab1e00/rank_0_0/backbone for vLLM's torch.compile\n"
    "(Worker_TP1 pid=4311) INFO 01-20 10:00:21 [backends.py:548] Using cache directory: /root/.cache/vllm/torch_compile_cache/5ca1ab1e00/rank_1_0/backbone for vLLM's torch.compile\n"
    "(Worker_TP0 pid=4310) INFO 01-20 10:00:28 [backends.py:559] Dynamo bytecode transform time: 6.80 s\n"
)


def compiled(worker: int, rng: str, seconds: float) -> str:
    return (f"(Worker_TP{worker} pid={4310 + worker}) INFO 01-20 10:01:00 [backends.py:310] "
            f"Compiling a graph for compile range {rng} takes {seconds:.2f} s\n")


def loaded(worker: int, rng: str, seconds: float) -> str:
    return (f"(Worker_TP{worker} pid={4310 + worker}) INFO 01-20 10:01:00 [backends.py:201] "
            f"Directly load the compiled graph(s) for compile range {rng} from the cache, took {seconds:.3f} s\n")


def _session(text: str, now: list[float]):
    from tui.session import WatchSession

    session = WatchSession(clock=lambda: now[0])
    session.handle(LogChunk("log", 0, text.encode(), now[0]))
    session.flush()
    return session, len(text.encode())


def _more(session, offset: int, text: str, now: list[float]) -> int:
    session.handle(LogChunk("log", offset, text.encode(), now[0]))
    session.flush()
    return offset + len(text.encode())


# ---------------------------------------------------------------- the tracker counts the ranges


def test_the_tracker_counts_rank_0s_ranges_against_the_ones_the_config_lists() -> None:
    from tui.core.profiles import builtin_profiles
    from tui.core.tracker import StartupTracker

    profile = next(p for p in builtin_profiles() if p.name == "vllm")
    tracker = StartupTracker(profile=profile)
    lines = (HEAD + compiled(0, "(8193, 8192)", 30.0) + compiled(1, "(8193, 8192)", 31.0)
             + compiled(0, "(2049, 8192)", 20.0) + loaded(1, "(1, 2048)", 0.4)).splitlines()
    events = []
    for number, text in enumerate(lines, 1):
        events += tracker.feed(Line(number, 0, (text,)), 0.0)
    items = [e for e in events if isinstance(e, PhaseProgress) and e.phase == "compile"]
    assert [(e.done, e.total, e.took, e.cached) for e in items] == [(1, 4, 30.0, False), (2, 4, 20.0, False)], items
    assert items[-1].detail == "2/4"
    assert tracker.state.phase("compile").count == 4


def test_ranges_with_no_listed_total_are_counted_alone() -> None:
    """vLLM 0.10 (one dynamic shape, and no ranges in its config line): a count, no total."""
    from tui.core.profiles import builtin_profiles
    from tui.core.tracker import StartupTracker

    profile = next(p for p in builtin_profiles() if p.name == "vllm")
    tracker = StartupTracker(profile=profile)
    head = HEAD.replace(CONFIG, "")
    lines = (head + "(Worker_TP0 pid=4310) INFO 01-20 10:01:00 [backends.py:215] Compiling a graph for dynamic shape takes 25.10 s\n").splitlines()
    events = []
    for number, text in enumerate(lines, 1):
        events += tracker.feed(Line(number, 0, (text,)), 0.0)
    items = [e for e in events if isinstance(e, PhaseProgress) and e.phase == "compile"]
    assert [(e.done, e.total, e.took) for e in items] == [(1, None, 25.1)]


# ---------------------------------------------------------------- the estimator


def test_cannot_tell_until_two_ranges_agree_then_the_time_left_from_their_own_times() -> None:
    est = CountEstimator()
    est.feed("compile", 100.0, 1, 4, 30.0, False)
    first = est.estimate("compile", 100.0)
    assert first is not None and first.left is None
    assert first.words() == "1/4 · cold, compiling · 30.0 s each · time left: cannot tell yet", first.words()
    est.feed("compile", 126.0, 2, 4, 26.0, False)
    second = est.estimate("compile", 130.0)  # 2 left at 26–28 s each, 4 s into the next
    assert second is not None and second.left is not None
    low, high = second.left
    assert (round(low), round(high)) == (48, 52), second.left
    assert second.words() == "2/4 · cold, compiling · 26.0 s each · ~0:50 left", second.words()
    assert second.to_json()["scope"] == "items" and second.to_json()["cached"] == 0


def test_ranges_that_disagree_or_run_past_their_pace_say_cannot_tell() -> None:
    est = CountEstimator()
    est.feed("compile", 0.0, 1, 4, 60.0, False)
    est.feed("compile", 10.0, 2, 4, 10.0, False)  # 10 s against a mean of 35 s: no pace yet
    assert est.estimate("compile", 10.0).left is None
    est = CountEstimator()
    est.feed("compile", 0.0, 1, 3, 20.0, False)
    est.feed("compile", 20.0, 2, 3, 20.0, False)
    assert est.estimate("compile", 30.0).left is not None
    assert est.estimate("compile", 45.0).left is None  # overdue: the pace no longer says


def test_ranges_from_the_cache_are_warm_and_a_mix_is_said() -> None:
    est = CountEstimator()
    est.feed("compile", 0.0, 1, 3, 0.4, True)
    est.feed("compile", 0.5, 2, 3, 0.5, True)
    warm = est.estimate("compile", 0.5)
    assert warm is not None and "2/3 · warm, from the cache" in warm.words(), warm.words()
    est.feed("compile", 30.0, 3, 3, 29.0, False)
    mixed = est.estimate("compile", 30.0)
    assert "3/3 · 2 from the cache, 1 compiled" in mixed.words() and mixed.left == (0.0, 0.0), mixed.words()


# ---------------------------------------------------------------- where the operator looks


def test_the_header_says_the_compiles_count_its_pace_and_that_it_is_cold() -> None:
    now = [1000.0]
    session, offset = _session(HEAD, now)
    now[0] += 30
    offset = _more(session, offset, compiled(0, "(8193, 8192)", 30.0) + compiled(1, "(8193, 8192)", 30.5), now)
    assert "compile 1/4 · cold, compiling · 30.0 s each · time left: cannot tell yet" in session.verdict().detail, \
        session.verdict().detail
    now[0] += 28
    offset = _more(session, offset, compiled(0, "(2049, 8192)", 28.0), now)
    now[0] += 5
    words = session.weight.counting_words()
    assert words == "compile 2/4 · cold, compiling · 28.0 s each · ~0:52 left", words


def test_the_header_says_a_warm_compile_is_loading_from_the_cache() -> None:
    now = [1000.0]
    session, offset = _session(HEAD, now)
    now[0] += 1
    _more(session, offset, loaded(0, "(8193, 8192)", 0.52) + loaded(0, "(2049, 8192)", 0.48), now)
    words = session.weight.counting_words()
    assert words is not None and words.startswith("compile 2/4 · warm, from the cache"), words


def test_plain_and_json_progress_say_the_ranges_and_whether_cold() -> None:
    from tui.present.event_words import EventWords

    now = [1000.0]
    session, offset = _session(HEAD, now)
    now[0] += 30
    _more(session, offset, compiled(0, "(8193, 8192)", 30.0), now)
    said = []
    words = EventWords(said.append, lambda: session.state, count=session.weight.count_estimate)
    words.show(PhaseProgress("compile", 9, 0.25, "1/4", 1, 4, 30.0, False))
    assert said[-1].text == "compile 25% 1/4 · cold, compiling · 30.0 s each · time left: cannot tell yet", said[-1].text
    assert said[-1].fields["count"]["scope"] == "items"


def test_the_timeline_row_says_the_ranges_and_cold_not_the_cache_folder() -> None:
    from tui.app.themes import discover
    from tui.app.timeline import render_timeline

    now = [1000.0]
    session, offset = _session(HEAD, now)
    now[0] += 30
    offset = _more(session, offset, compiled(0, "(8193, 8192)", 30.0), now)
    now[0] += 29
    _more(session, offset, compiled(0, "(2049, 8192)", 29.0), now)
    now[0] += 3
    row = next(line for line in render_timeline(session, 160, discover()["dark"]).plain.splitlines() if "compile" in line)
    assert "50% 2/4 · cold, compiling · 29.0 s each · ~0:56 left" in row, row
