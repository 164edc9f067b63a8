"""The parser under attack: no line crashes it, and skipping lines never changes what it concludes.

Two properties over random logs built from every fixture's line shapes, cut lines, huge
numbers, lone markers without a rank tag, escape sequences and control bytes:

* fuzz: nothing raises out of the core and no line needs the tracker's last-resort boundary
  (``state.unparsed`` stays 0), with the server detected or forced;
* scan == watch: ``scan``'s prefiltered pass and the live session's prefiltered pass end in
  exactly the state of a tracker fed every line.

A few seconds in the normal run; ``pytest --fuzz`` runs thousands of examples.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tui.commands.scan import to_json
from tui.core.events import LineUnparsed, LogChunk
from tui.core.lines import LineAssembler
from tui.core.profiles import builtin_profiles, load_profile, prefilter_words
from tui.core.scan import Scanner
from tui.core.tracker import StartupTracker
from tui.session import WatchSession

FIXTURES = Path(__file__).parent / "fixtures"
SHAPES = sorted(
    {row for log in FIXTURES.glob("*.log") for row in log.read_bytes().split(b"\n") if row.strip()}
)
#: Shapes the fixtures lack: the lines that crashed round 1's tracker, and bars with absurd counts.
EXTRA = [
    b"Load weight end. elapsed=4.30 s",
    b"Load weight begin. avail mem=78.12 GB",
    b"[2026-02-22 23:40:01] Load weight end. elapsed=1.2.3 s, type=X",
    b"Loading safetensors checkpoint shards:  50% Completed | " + b"9" * 400 + b"/" + b"9" * 400 + b" [00:01<00:01]",
    b"Loading safetensors checkpoint shards:  50% Completed | " + b"7" * 5000 + b"/2 [00:01<00:01]",
    b"Capturing batches (bs=" + b"8" * 320 + b" avail_mem=1.00 GB): 100%|##########| " + b"4" * 4400 + b"/4",
    b"[2026-02-22 23:41:00 DP1 TP9] Capture cuda graph end. Time elapsed: 1e999 s.",
    b"[2026-13-45 99:99:99 TP0] Load weight end. elapsed=nan s",
    b"(EngineCore_DP0 pid=1) INFO 11-22 10:00:00 [gpu_model_runner.py:1] Model loading took 9" + b"9" * 400 + b" GiB",
]
CONTROL = [b"\x00", b"\x1b[1m", b"\x1b[0m", b"\r", b"\x7f", b"\xff\xfe", b"\x1b]0;title\x07", b"\xe2\x80\xae", b"\t"]
HEADER = re.compile(rb"^(?:\([^)]*\) ?)?\[[^\]]*\] ?(?:(?:INFO|WARNING|ERROR|DEBUG) +)?|^\w+ \d\d-\d\d [\d:]+ \[[^\]]*\] ")


def _mutate(row: bytes, how: str, where: int, extra: bytes) -> bytes:
    at = where % (len(row) + 1)
    if how == "cut":
        return row[:at]
    if how == "bare":  # a lone marker: the same message without its timestamp and rank tag
        return HEADER.sub(b"", row)
    if how == "huge":
        return re.sub(rb"\d+", b"9" * (309 + where % 5000), row, count=1)
    if how == "control":
        return row[:at] + extra + row[at:]
    return row


#: The shapes that hold a marker word: where the tracker does its work, so drawn more often.
MARKERS = [row for row in SHAPES + EXTRA if any(w.encode() in row for w in prefilter_words(builtin_profiles()))]
_shape = st.one_of(st.sampled_from(MARKERS), st.sampled_from(MARKERS), st.sampled_from(SHAPES + EXTRA))
_row = st.one_of(
    _shape,
    st.tuples(
        _shape,
        st.sampled_from(["cut", "bare", "huge", "control", "keep"]),
        st.integers(min_value=0, max_value=10_000),
        st.sampled_from(CONTROL),
    ).map(lambda t: _mutate(*t)),
    st.binary(max_size=60),
)
#: Logs often start with the line that names the server: then every later line meets its profile.
_first = st.sampled_from([b"", b"[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/m', tp_size=8)",
                          b"INFO 11-22 10:00:00 [api_server.py:1] vLLM API server version 0.11.0"])
_log = st.tuples(
    st.tuples(_first, st.lists(_row, min_size=1, max_size=60)).map(lambda t: [t[0], *t[1]] if t[0] else t[1]),
    st.lists(st.integers(min_value=0, max_value=20_000), max_size=6),
    st.booleans(),
).map(lambda t: (b"\n".join(t[0]) + (b"\n" if t[2] else b""), t[1]))

SERVERS = [None, "sglang", "vllm"]
samples = {"fuzz": 0, "scan_equals_watch": 0}


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({c for c in cuts if c < len(data)} | {0, len(data)})
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


def _tracker(server: str | None) -> StartupTracker:
    return StartupTracker(load_profile(server) if server else None)


def _every_line(chunks: list[bytes], server: str | None, progress: bool, at: float | None) -> StartupTracker:
    """The reference: a tracker fed every line (and, live, every ``\\r`` update) in order."""
    tracker = _tracker(server)
    lines = LineAssembler(progress=progress)
    for chunk in chunks:
        for item in lines.feed(chunk):
            assert not any(isinstance(e, LineUnparsed) for e in tracker.feed(item, at)), item
    for item in lines.flush():
        tracker.feed(item, at)
    tracker.finish()
    return tracker


def _digest(tracker: StartupTracker) -> dict:
    """Everything a presenter can show from the state."""
    state = tracker.state
    return {
        **to_json(state),
        "phases": [
            (p.name, p.start_line, p.end_line, p.start_ts, p.end_ts, p.progress, p.detail, p.failed,
             sorted((r.rank, r.start_line, r.end_line, r.start_ts, r.end_ts) for r in p.ranks.values()))
            for p in state.phases
        ],
        "errors": [(e.line, e.kind, e.message, e.rank, e.end_line, e.ts, e.fatal, e.secondary) for e in state.errors],
        "ranks": sorted(state.ranks),
        "times": (state.first_ts, state.last_ts),
        "last": (state.last_line, state.last_text),
        "unparsed": state.unparsed,
    }


def test_fuzz_nothing_escapes_the_core(fuzz_examples):
    @settings(max_examples=fuzz_examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(log=_log, server=st.sampled_from(SERVERS))
    def check(log, server):
        samples["fuzz"] += 1
        data, cuts = log
        tracker = _every_line(_chunks(data, cuts), server, progress=True, at=1.0)
        tracker.quiet()
        tracker.process_exited(1, None, 2.0)
        assert tracker.state.unparsed == 0

    check()
    print(f"fuzz samples run: {samples['fuzz']}")


def test_scan_and_watch_equal_feeding_every_line(fuzz_examples):
    words = prefilter_words(builtin_profiles())

    @settings(max_examples=fuzz_examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(log=_log, server=st.sampled_from(SERVERS))
    # a record at an error level that no word of the prefilter names: read for its time (CI, stop 45: scan had
    # skipped it, watch read it), and a logger's message before the traceback its record goes on with
    @example(log=(b"(EngineCore_DP0 pid=41) INFO 08-14 10:00:08 [core.py:654] Waiting for init message.\n"
                  b"(Worker_TP2 pid=22) ERROR 09-12 15:00:35 [multiproc_executor.py:601]     ops.all_reduce(inp, out)\n", []),
             server=None)
    @example(log=(b"ERROR 07-07 02:26:35 [engine.py:448] The weights are gone.\n"
                  b"ERROR 07-07 02:26:35 [engine.py:448] Traceback (most recent call last):\n"
                  b'ERROR 07-07 02:26:35 [engine.py:448]   File "/x/vllm/engine.py", line 436, in run_mp_engine\n', []),
             server="vllm")
    # an OSC escape never ended, alone on its line, then a bar: the escape ends with its line
    @example(log=(b"(APIServer pid=5)   Value error, User-specified max_model_len (300000) is greater than the derived "
                  b"max_model_len (max_position_embeddings=131072 in model's config.json).\n\x1b]\n" + b"".join(
                      b"\rCapturing CUDA graphs (mixed prefill-decode, PIECEWISE):  %2d%%|          | %d/51 [00:0%d<00:50,  "
                      b"2.41it/s]" % (i * 2, i, i % 10) for i in range(20)) + b"\n", []), server=None)
    def check(log, server):
        samples["scan_equals_watch"] += 1
        data, cuts = log
        chunks = _chunks(data, cuts)
        reference = _digest(_every_line(chunks, server, progress=False, at=None))
        tracker = _tracker(server)
        scanner = Scanner(tracker, words)
        for chunk in chunks:
            scanner.feed(chunk)
        scanner.finish()
        assert _digest(tracker) == reference, "scan"

        live = _digest(_every_line(chunks, server, progress=True, at=5.0))
        session = WatchSession(profile=load_profile(server) if server else None, clock=lambda: 5.0)
        for offset, chunk in enumerate(chunks):
            session.handle(LogChunk("log", offset, chunk, 5.0))
        session.finish()
        assert _digest(session.tracker) == live, "watch"

    check()
    print(f"scan == watch samples run: {samples['scan_equals_watch']}")


def test_a_rank_only_a_skipped_line_names_does_not_end_a_phase_early_under_scan():
    """TP1 prints a line without a marker word between its peers' ends: scan and watch agree."""
    log = (
        b"[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/m', tp_size=2)\n"
        b"[2026-02-22 23:38:59 TP0] Load weight begin. avail mem=78.12 GB\n"
        b"[2026-02-22 23:38:59 TP1] Decode batch, #running-req: 0\n"
        b"[2026-02-22 23:40:34 TP0] Load weight end. elapsed=95.62 s\n"
    ) + b"[2026-02-22 23:40:35 TP1] hello\n" * 3
    reference = _digest(_every_line([log], None, progress=False, at=None))
    tracker = StartupTracker()
    scanner = Scanner(tracker, prefilter_words(builtin_profiles()))
    scanner.feed(log)
    scanner.finish()
    assert _digest(tracker) == reference


def test_an_escape_sequence_inside_a_marker_word_is_seen_by_scan():
    log = (
        b"[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/m')\n"
        + b"[2026-02-22 23:38:51] filler\n" * 5
        + b"[2026-02-22 23:38:59 TP0] Load \x1b[1mweight\x1b[0m begin. avail mem=78.12 GB\n"
    )
    tracker = StartupTracker()
    scanner = Scanner(tracker, prefilter_words(builtin_profiles()))
    scanner.feed(log)
    scanner.finish()
    phase = tracker.state.phase("weight_load")
    assert phase is not None and phase.start_line == 7


# ---------------------------------------------------------------- user patterns and config files (issue 22)

_REGEX_PIECES = st.sampled_from(
    ["a", "b", "é", "x", ".", "\\d", "\\w", "\\s", "\\W", "\\b", "+", "*", "?", "{2}", "{1,3}", "(", ")", "(?:", "|",
     "[", "]", "[a-z]", "[^b]", "^", "$", "\\", "(?=", "(?!", "(?<=", "\\1", "(?P<n>", "(?P=n)", "*+", "(?>", "(?i)", "ſ"]
)
_TEXT = st.text(alphabet=st.sampled_from(list("aabbx é1 _-.ſ\t")), max_size=60)


def test_fuzz_user_patterns_load_or_are_refused_and_never_hang(fuzz_examples, tmp_path):
    """Any pattern a user writes: refused in one line naming it, or run on the linear engine, whose
    answer (match or not, and where) is Python's on ASCII text; a long almost-matching line
    never hangs (the test's timeout would be the failure)."""
    from tui.core.linear import is_linear
    from tui.core.profiles import ProfileError

    @settings(max_examples=fuzz_examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(pieces=st.lists(_REGEX_PIECES, min_size=1, max_size=12), texts=st.lists(_TEXT, max_size=4))
    def check(pieces, texts):
        pattern = "".join(pieces)
        path = tmp_path / "user.toml"
        path.write_text(f"name = 'u'\n[[signatures]]\nkind = 'k'\npattern = {pattern!r}\n".replace("\\'", "''"))
        try:
            profile = load_profile(str(path))
        except ProfileError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc)
            return
        regex = next(s.regex for s in profile.signatures if s.kind == "k")
        assert is_linear(regex)
        python = re.compile(regex.pattern)
        for text in [*texts, "a" * 3000 + "é", "x" * 3000 + "!"]:
            found = regex.search(text)
            if text.isascii():
                expected = python.search(text)
                assert (found is None) == (expected is None), (regex.pattern, text)
                if expected is not None:
                    assert found.span() == expected.span(), (regex.pattern, text)
        tracker = StartupTracker(profile)
        tracker.feed(LineAssembler().feed(("\n".join([*texts, "a" * 3000 + "é"]) + "\n").encode())[0])

    check()


_TOML_VALUES = st.recursive(
    st.one_of(st.integers(), st.text(alphabet=st.sampled_from([*map(chr, range(0x20, 0x7F)), "é", "\u202e"]), max_size=8),
              st.booleans(), st.floats(allow_nan=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["name", "host", "log", "gpus", "args", "node", "pattern", "kind", "colors", "primary", "signatures", "hints", "id", "why"]), inner, max_size=3)),
    max_leaves=12,
)


def test_fuzz_config_files_load_or_fail_in_one_line(fuzz_examples, tmp_path):
    """Random TOML (and random bytes) as a profile, a hints file, a cluster file and a theme: loaded,
    or one UsageError / ProfileError line; never another exception."""
    import tomllib

    from tui.app.themes import load_file
    from tui.commands.cluster import cluster_file
    from tui.core.errors import UsageError
    from tui.core.hints import parse as parse_hints
    from tui.core.profiles import ProfileError

    def dumps(value) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k} = {dumps(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(dumps(v) for v in value) + "]"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return json_str(value)
        return repr(value)

    def json_str(text: str) -> str:
        import json

        return json.dumps(text, ensure_ascii=False)

    @settings(max_examples=fuzz_examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(table=st.dictionaries(st.sampled_from(["name", "node", "signatures", "hints", "colors", "prefix", "title", "x"]), _TOML_VALUES, max_size=4),
           junk=st.binary(max_size=40))
    def check(table, junk):
        text = "\n".join(f"{k} = {dumps(v)}" for k, v in table.items()) + "\n"
        for data in (text.encode(), junk, text.encode() + junk):
            path = tmp_path / "f.toml"
            path.write_bytes(data)
            for load in (lambda: load_profile(str(path)), lambda: cluster_file(str(path)), lambda: load_file(path),
                         lambda: parse_hints(path.read_text(errors="replace"), str(path))):
                try:
                    load()
                except (ProfileError, UsageError) as exc:
                    assert "\n" not in str(exc).strip() or "TOML" in str(exc)
        tomllib.loads(text)  # the generator writes valid TOML: the loaders saw its structure

    check()
