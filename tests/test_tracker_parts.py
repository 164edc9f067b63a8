"""The parts StartupTracker holds, each on its own: its state, and what its reset keeps."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.attempts import Attempts
from tui.core.detection import Detection
from tui.core.line_time import LOOK_LINES, LineTimes
from tui.core.lines import Line, LineAssembler
from tui.core.phases import PhaseBook
from tui.core.profiles import builtin_profiles, load_profile
from tui.core.ranks import MAIN, Ranks
from tui.core.scan import LineFeeder, Prefilter, prefilter
from tui.core.state import FAILED, STARTING, Phase, RankPhase, StartupState
from tui.core.timestamps import Timestamps

VLLM_LINE = "INFO 11-22 10:00:00 [loader.py:1] Loading weights took 3.2 seconds"
SGLANG_ARGS = "[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/m', tp_size=8)"


def test_a_clock_reads_a_yearless_december_log_in_january_as_last_year():
    clock = Timestamps("%m-%d %H:%M:%S")
    arrived = datetime(2027, 1, 2, 9, 0, 0).timestamp()
    ts = clock.time("12-31 23:59:58.250", arrived)
    assert ts == datetime(2026, 12, 31, 23, 59, 58).timestamp() + 0.25
    assert clock.time(None, arrived) == ts  # a line with no time of its own: the log's latest
    assert Timestamps("%m-%d %H:%M:%S").time(None, arrived) == arrived  # a new clock knows none


def test_a_clock_without_a_format_gives_arrival_times_and_refuses_nonsense():
    assert Timestamps().time("2026-02-22 23:38:50", 7.0) == 7.0
    clock = Timestamps("%Y-%m-%d %H:%M:%S")
    assert clock.time("2026-13-99 99:99:99", 7.0) == 7.0
    assert clock.last is None


def test_rank_tags_are_one_rank_in_any_order_and_a_renamed_process_keeps_its_rank():
    ranks = Ranks(load_profile("sglang"))
    known: set[str] = set()
    assert ranks.name("TP3 DP0", None) == ranks.name("DP0 TP3", None) == "DP0 TP3"
    assert ranks.name(None, None) == MAIN
    assert not ranks.counted("TP1") and ranks.counted(None)  # (no tag: nothing to count)
    ranks.register({"ranks": "TP1", "proc": None, "pid": None}, known)
    assert ranks.counted("TP1") and not ranks.counted("TP2")  # a skipped line tagged TP1 adds nothing now
    assert ranks.register({"ranks": None, "proc": "Worker", "pid": "41"}, known) is None
    assert ranks.register({"ranks": None, "proc": "Worker_TP1", "pid": "41"}, known) == ("Worker", "Worker_TP1")
    assert known == {"TP1", "Worker_TP1"}
    ranks.new_startup()  # a new startup counts its tagged ranks anew; the process is still known
    assert ranks.tagged == set() and not ranks.counted("TP1")
    assert ranks.register({"ranks": None, "proc": "Worker_TP1", "pid": "41"}, known) is None


def test_detection_switches_on_a_definitive_marker_and_hands_back_the_lines_it_kept():
    detection = Detection(builtin_profiles())
    guess = detection.weigh(VLLM_LINE, None)
    assert guess is not None and guess.name == "vllm" and not detection.done
    first = Line(1, 0, (VLLM_LINE,))
    detection.keep(first, 1.0)
    switch = detection.weigh(SGLANG_ARGS, guess)
    assert switch is not None and switch.name == "sglang" and detection.settled
    assert detection.kept() == [(first, 1.0)]
    assert detection.kept() == []  # settled: nothing is read again after this


def test_detection_gives_up_after_the_first_lines_and_then_only_a_definitive_marker_counts():
    detection = Detection(builtin_profiles())
    for _ in range(min(p.max_detect_lines for p in builtin_profiles()) + 1):
        detection.count()
    assert detection.gave_up and detection.done and not detection.settled
    assert detection.weigh(VLLM_LINE, None) is None  # a shape alone no longer names a server
    named = detection.weigh(SGLANG_ARGS, None)
    assert named is not None and named.name == "sglang"


def test_a_new_startup_begins_only_after_the_last_one_got_somewhere():
    attempts = Attempts(load_profile("sglang"))
    state = StartupState()
    message = SGLANG_ARGS.partition("] ")[2]  # what follows the line's prefix
    assert not attempts.begins_anew(message, state)  # the first startup's own argument line
    state.outcome = FAILED
    assert attempts.begins_anew(message, state)
    following = Attempts.next(state, 40)
    assert (following.attempt, following.start_line, following.outcome) == (2, 40, STARTING)
    assert [s.outcome for s in following.earlier] == [FAILED]


def test_a_phase_book_moves_a_renamed_rank_and_forgets_it_all_on_a_new_startup():
    profile = load_profile("vllm")
    state = StartupState()
    book = PhaseBook(profile, state, Ranks(profile))
    phase = Phase("weight_load", 3, None)
    phase.ranks["Worker"] = RankPhase("Worker", 3, None)
    state.phases.append(phase)
    book.rename("Worker", "Worker_TP0")
    assert list(phase.ranks) == ["Worker_TP0"] and phase.ranks["Worker_TP0"].rank == "Worker_TP0"
    fresh = StartupState()
    book.new_startup(fresh)
    assert book.state is fresh
    events: list = []
    book.settle(99, events)
    assert events == []


class Recorder:
    """A tracker stand-in that notes which lines were fed and which only skipped."""

    def __init__(self, every_line: bool = False) -> None:
        self.needs_every_line = every_line
        self.needs_rank_tags = True
        self.fed: list[int] = []
        self.skipped: list[int] = []

    def feed(self, item, at=None):
        self.fed.append(item.number)
        return []

    def skip(self, line):
        self.skipped.append(line.number)

    def pass_over(self, number, text=None):
        pass

    def finish(self):
        return []


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.sampled_from(["Load weight begin", "x Load weight", "Decode batch", "", "Load", "weight",
                                      "KV Cache is allocated", "Load weightLoad weight"]), max_size=30),
       opened=st.sampled_from([b"", b"tail of a line read before, Load weight "]), hyperscan=st.booleans())
def test_the_feeder_with_a_block_search_feeds_the_lines_whose_own_text_has_a_word(rows, opened, hyperscan):
    """The block's word offsets (Hyperscan's match ends, or the regex's match starts) say which lines
    hold a word, a word at a line's first byte too: exactly the lines a search of each line's own
    text would feed."""
    words = ("Load weight", "KV Cache")
    feeder = LineFeeder(Prefilter(words, hyperscan=hyperscan))
    lines = LineAssembler(progress=False)
    lines.feed(opened)  # a line begun before the block: its text is searched
    block = "".join(f"{row}\n" for row in rows).encode()
    base = lines.offset
    items = lines.feed(block)
    hits = [base + at for at in feeder.words.positions(block)]
    with_hits, by_line = Recorder(), Recorder()
    list(feeder.lines(with_hits, items, 1.0, hits, base))
    list(feeder.lines(by_line, items, 1.0))
    assert with_hits.fed == by_line.fed == [item.number for item in items if any(w in item.text for w in words)]


def test_the_line_feeder_feeds_lines_with_a_word_and_skips_the_rest_unless_every_line_is_needed():
    feeder = LineFeeder(prefilter(("Load weight",)))
    block = b"Decode batch 1\nLoad weight begin\nDecode batch 2\n"
    lines = LineAssembler(progress=False)
    items = lines.feed(block)
    hits = list(feeder.words.positions(block))
    recorder = Recorder()
    assert [item.number for item, _ in feeder.lines(recorder, items, 1.0, hits)] == [1, 2, 3]
    assert (recorder.fed, recorder.skipped) == ([2], [1, 3])
    trusted = Recorder()  # a block search that found nothing: no line's text is searched again
    list(feeder.lines(trusted, items, 1.0, []))
    assert (trusted.fed, trusted.skipped) == ([], [1, 2, 3])
    searched = Recorder()  # no block search: each line's own text is searched
    list(feeder.lines(searched, items, 1.0))
    assert (searched.fed, searched.skipped) == ([2], [1, 3])
    everything = Recorder(every_line=True)
    list(feeder.lines(everything, items, 1.0, hits))
    assert (everything.fed, everything.skipped) == ([1, 2, 3], [])


def test_each_lines_own_time_is_read_where_its_profiles_header_has_it():
    at = datetime(2026, 3, 1, 12, 0).timestamp()
    sglang, vllm = load_profile("sglang"), load_profile("vllm")
    times = LineTimes()
    assert times.time_of("[2026-02-22 23:38:50 TP0] Load weight begin.", sglang, at) == datetime(2026, 2, 22, 23, 38, 50).timestamp()
    assert times.time_of("  3: [2026-02-22 23:38:51] INFO:     Started", sglang, at) == datetime(2026, 2, 22, 23, 38, 51).timestamp()  # srun -l
    assert times.time_of("ValueError: made 2026-02-22 23:38:52", sglang, at) is None  # a date in a message is not the line's time
    assert times.time_of("  File \"/x.py\", line 3, in f", sglang, at) is None
    record = '{"asctime": "2026-02-22 23:38:57,250", "levelname": "INFO", "message": "Loading weights"}'  # vLLM's JSON formatter
    assert LineTimes().time_of(record, vllm, at) == datetime(2026, 2, 22, 23, 38, 57).timestamp() + 0.25


def test_remembered_timestamps_read_as_a_fresh_reader_would():
    """Lines of a timestamp seen lately (the same second, the same minute at the same place) are read
    without a regex: never differently from a reader that has seen nothing."""
    at = datetime(2026, 3, 1, 12, 0).timestamp()
    lines = {
        "sglang": ["[2026-02-22 23:38:50 TP0] a", "[2026-02-22 23:38:50] INFO:     b", "[2026-02-22 23:38:59 TP1] c",
                   "[2026-02-22 23:38:59.250 TP1] a fraction", "[2026-02-22 23:38:5x TP1] no time", "[2026-02-22 23:39:01] d",
                   "(SGLangEngine pid=7, ip=10.0.0.2) [2026-02-22 23:39:02 TP3] e", "Traceback (most recent call last):",
                   "[2026-02-22 23:39:123] not a time"],
        "vllm": ["(EngineCore_DP0 pid=8) INFO 02-22 23:38:50 [core.py:1] a", "(APIServer pid=9) INFO 02-22 23:38:51 [api.py:1] b",
                 "(EngineCore_DP0 pid=8) INFO 02-22 23:38:52 [core.py:1] c", "INFO 02-22 23:38:53 [core.py:1] d"],
    }
    for server, texts in lines.items():
        profile, times = load_profile(server), LineTimes()
        assert [times.time_of(text, profile, at) for text in texts] == [LineTimes().time_of(text, profile, at) for text in texts]


def test_until_the_server_is_known_the_builtin_formats_are_tried_and_a_log_without_times_stops_costing():
    at = datetime(2026, 3, 1, 12, 0).timestamp()
    assert LineTimes().time_of("[01/15/2026-10:00:00] [TRT-LLM] [I] x", None, at) == datetime(2026, 1, 15, 10).timestamp()
    times = LineTimes()
    for _ in range(LOOK_LINES):
        assert times.time_of("step: 1 of a script that prints no time", None, at) is None
    assert times.time_of("[2026-02-22 23:38:50] late", None, at) is None  # read as a log without times
    assert times.time_of("[2026-02-22 23:38:50] late", load_profile("sglang"), at) is not None  # until its server is known
