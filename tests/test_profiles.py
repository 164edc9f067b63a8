"""Server profiles: loading, validation, detection, and the prefilter words' coverage."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from tui.core.lines import LineAssembler, make_line
from tui.core.profiles import (
    BUILTIN,
    ProfileError,
    builtin_profiles,
    detect_server,
    load_profile,
    prefilter_words,
)
from tui.core.profiles import all_patterns as every_pattern
from tui.core.state import PHASES
from tui.core.tracker import StartupTracker

FIXTURES = Path(__file__).parent / "fixtures"
LOGS = sorted(FIXTURES.glob("*.log"))
PROFILES_DIR = Path(__file__).parent.parent / "tui" / "profiles"


def feed_all(data: bytes, tracker: StartupTracker, skip=None) -> list:
    """Feed every line (or, with ``skip(line_bytes)``, only those the scanner would keep)."""
    raw_lines = data.split(b"\n")
    assembler = LineAssembler(progress=False)
    events = []
    for item in assembler.feed(data) + assembler.flush():
        if skip is not None and not tracker.needs_every_line and skip(raw_lines[item.number - 1]):
            continue
        events += tracker.feed(item, 1_700_000_000.0)
    return events + tracker.finish()


def summary(tracker: StartupTracker) -> dict:
    s = tracker.state
    return {
        "server": s.server,
        "outcome": s.outcome,
        "ready_line": s.ready_line,
        "phases": [(p.name, p.start_line, p.end_line, p.seconds, len(p.ranks), p.slowest_rank) for p in s.phases],
        "errors": [(e.line, e.kind, e.message, e.rank) for e in s.errors],
        "warnings": s.warnings,
    }


def test_builtin_profiles_load_and_compile_every_pattern():
    profiles = builtin_profiles()
    assert [p.name for p in profiles] == list(BUILTIN)
    for profile in profiles:
        assert profile.detect and profile.headers and profile.ready
        assert {spec.name for spec in profile.phases} <= set(PHASES)
        for pattern in [*every_pattern(profile), *profile.headers]:  # compiled on first use: used here
            assert pattern.groups == re.compile(pattern.pattern).groups
        kinds = {sig.kind for sig in profile.signatures}
        assert {"cuda_oom", "nccl", "nccl_timeout", "killed", "segfault", "port_in_use"} <= kinds


@pytest.mark.parametrize("name", BUILTIN)
def test_each_builtin_file_passes_the_checks_a_users_file_gets(name):
    """A built-in profile's load leaves its patterns' groups unchecked until their first use: loaded
    as a user's file, each is compiled and checked (a header's (?P<msg>…), identity's (?P<value>…))."""
    as_users = load_profile(str(PROFILES_DIR / f"{name}.toml"))  # a failed check: ProfileError
    assert as_users.headers and all("msg" in h.groupindex for h in as_users.headers)
    identity = [p for _key, patterns in as_users.identity for p in patterns]
    assert identity and all("value" in p.groupindex for p in identity)


def test_a_user_profile_file_works_like_the_builtin(tmp_path):
    user = tmp_path / "my-sglang.toml"
    user.write_text((PROFILES_DIR / "sglang.toml").read_text().replace('name = "sglang"', 'name = "mine"'))
    data = (FIXTURES / "sglang_eagle3_tp8_ready.log").read_bytes()
    builtin, custom = StartupTracker(load_profile("sglang")), StartupTracker(load_profile(str(user)))
    feed_all(data, builtin)
    feed_all(data, custom)
    expected = summary(builtin)
    expected["server"] = "mine"
    assert summary(custom) == expected
    assert expected["outcome"] == "ready"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("name = 'x'\n[phases.weight_load]\nbegin = ['(unclosed']\n", "phases.weight_load.begin[0]: bad pattern '(unclosed'"),
        ("name = 'x'\n[phases.warmup]\nbegin = ['a']\n", "unknown key 'warmup'"),
        ("name = 'x'\ncolour = 'red'\n", "unknown key 'colour'"),
        ("title = 'no name'\n", "'name' is missing"),
        ("name = 'x'\n[[signatures]]\nkind = 'boom'\npattern = '[z-a]'\n", "signatures[0].pattern (boom): bad pattern"),
        ("name = 'x'\n[prefix]\nheaders = ['^no message group']\n", "needs a (?P<msg>"),
        ("name = [unclosed\n", "not valid TOML"),
        ("name = 'x'\n[phases.ready]\nranked = 'yes'\n", "phases.ready.ranked: expected true or false"),
        ("name = 'x'\n[phases.compile]\nitems_total = 'ranges'\n", "phases.compile.items_total: expected one of the [identity] keys"),
        ("name = 'x'\n[[signatures]]\nkind = 'cc'\npattern = 'x'\nafter = true\n", "signatures[0].after: only a 'cause' line"),
    ],
)
def test_a_bad_profile_is_one_clear_line(tmp_path, text, needle):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    message = str(info.value)
    assert needle in message
    assert "\n" not in message and str(path) in message


def test_unknown_server_and_missing_file():
    with pytest.raises(ProfileError, match="unknown server 'ollama'"):
        load_profile("ollama")
    with pytest.raises(ProfileError, match="no such profile file"):
        load_profile("/nonexistent/profile.toml")


def test_detect_server_from_first_lines():
    sglang = ["Failed to parse something", "[2026-02-22 23:38:50] server_args=ServerArgs(model_path='m')"]
    vllm = ["INFO 08-14 10:00:00 [__init__.py:241] Automatically detected platform cuda."]
    vllm_tagged = ["(APIServer pid=4000) INFO 08-14 10:00:00 [api_server.py:1805] vLLM API server version 0.10.1"]
    assert detect_server(sglang).name == "sglang"
    assert detect_server(vllm).name == "vllm"
    assert detect_server(vllm_tagged).name == "vllm"
    assert detect_server(["hello", "Traceback (most recent call last):"]) is None


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_prefilter_words_cover_every_line_that_changes_the_tracker(log):
    """Lines the tracker reacts to (while it may skip lines) all hold a prefilter word;
    and feeding only the lines the scanner would keep gives the same state."""
    words = [w.encode() for w in prefilter_words(builtin_profiles())]
    has_word = lambda raw: any(w in raw for w in words)  # noqa: E731
    data = log.read_bytes()
    raw_lines = data.split(b"\n")

    tracker = StartupTracker()
    assembler = LineAssembler(progress=False)
    for item in assembler.feed(data) + assembler.flush():
        skippable = not tracker.needs_every_line
        events = tracker.feed(item, 1_700_000_000.0)
        if skippable and events:
            assert has_word(raw_lines[item.number - 1]), f"line {item.number} has no prefilter word: {item.text[:120]!r}"
    tracker.finish()

    skipping = StartupTracker()
    feed_all(data, skipping, skip=lambda raw: not has_word(raw))
    assert summary(skipping) == summary(tracker)


def test_prefilter_words_are_literal_and_case_sensitive():
    words = prefilter_words(builtin_profiles())
    assert "Traceback" in words and "Load weight" in words and "Application startup" in words
    assert all(w and w == w.strip("\n") for w in words)
    assert len(words) == len(set(words))



@pytest.mark.parametrize("line", [
    "time=x level=ERROR msg=runner terminated: exit status 0xc0000005",
    "Process exited with code 3221225477",
    "worker exit with status -1073741819",
    "the runner exited code 0xC0000409",
])
def test_a_windows_crash_exit_passes_the_prefilter_by_its_words_not_a_bare_number(line):
    """The crash-code signature's lines hold a word ("exit status", "with code", …): the codes' bare
    prefixes ("32212", "-10737") would pass serving logs' numbers too, and every window holding one
    is one a big scan reads instead of stepping over (a 300 MB scan was 10 % slower with them)."""
    words = prefilter_words(builtin_profiles())
    assert any(w in line for w in words)
    assert not any(w in "batch 32212 tokens, offset -10737, ptr 0xc0000a1f" for w in words)

SIZE = 1 << 18


def rep(piece: str) -> str:
    return piece * (SIZE // len(piece))


PATHOLOGICAL = [
    "Capture " + "a" * SIZE,
    "[2026-02-22 23:38:57 TP0] Capture " + rep("draft "),
    "[2026-02-22 23:38:57" + rep(" TP0"),
    "(" + rep("Worker ") + " pid=1) INFO",
    "KeyError" + rep(".a"),
    "Load weight end " + rep("a "),
    "Loading safetensors checkpoint shards: 45% Completed |" + " " * SIZE,
    "Capturing batches (bs=1 avail_mem=2.0 GB): 14%|" + rep("█"),
    " " * SIZE + "x",
    "Traceback (most recent call last):" + "\t" * SIZE,
    # a pattern's prefix repeated all along the line: a lazy gap after it would be quadratic
    rep("TCPStore "),
    rep("WorkNCCL("),
    rep("SIGQUIT received. "),
    rep("Using cache directory: "),
    rep("Capture cuda graph failed: "),
    rep("NCCL operation "),
    rep("amdsmi "),
    rep("Warning"),
    rep("AbcWarnin "),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("server", ["sglang", "vllm"])
def test_long_lines_against_every_pattern_do_not_hang(server):
    """Catastrophic backtracking would hang here (the timeout is the failure, not a timing):
    256 KiB lines built to make a quadratic pattern take minutes, and one capped 1 MiB line."""
    tracker = StartupTracker(load_profile(server))
    tracker.feed(make_line(1, 0, b"[2026-02-22 23:38:50] server_args=ServerArgs(x=1)"))
    for n, text in enumerate(PATHOLOGICAL, start=2):
        tracker.feed(make_line(n, 0, text.encode()))
    huge = make_line(len(PATHOLOGICAL) + 2, 0, ("[2026-02-22 23:38:57 TP0] Capture " + "draft " * 200000).encode())
    assert huge.truncated and len(huge.text) <= 1 << 20
    tracker.feed(huge)
    tracker.finish()
    assert tracker.state.lines == len(PATHOLOGICAL) + 2


def all_patterns(profile) -> list[re.Pattern]:
    pats = [*profile.ready, *profile.close, *profile.stop, *profile.warnings, *profile.benign]
    pats += [s.regex for s in profile.signatures]
    for spec in profile.phases:
        pats += [*spec.begin, *spec.end, *spec.step, *spec.progress, *spec.implicit_begin]
    return pats


@pytest.mark.parametrize("server", ["sglang", "vllm"])
def test_the_quick_first_test_never_misses_a_match(server):
    """QuickTest (RE2 on ASCII text, lookarounds dropped) may say yes wrongly, never no wrongly."""
    from tui.core.quicktest import QuickTest

    profile = load_profile(server)
    patterns = all_patterns(profile)
    quick = QuickTest(patterns)
    texts = []
    for log in LOGS:
        for raw in log.read_bytes().split(b"\n"):
            for seg in make_line(1, 0, raw).segments:
                texts.append(seg)
                for header in profile.headers:
                    m = header.match(seg)
                    if m:
                        texts.append(m.group("msg") or "")
                        break
    texts += ["UsérWarning: non-ASCII", "Capture draft decode CUDA graph begin.", "Ça: CUDA out of memory"]
    checked = 0
    for text in texts:
        if any(p.search(text) for p in patterns):
            checked += 1
            assert quick.search(text) is not None, text
    assert checked > 100


@pytest.mark.parametrize("server", ["sglang", "vllm", "llamacpp"])
def test_the_candidate_set_names_every_pattern_that_matches(server):
    """Candidates (one RE2 set a line, for the phase book) may name a pattern that does not match,
    never leave out one that does: on ASCII and on non-ASCII text, as each pattern's own search says."""
    from tui.core.quicktest import Candidates

    profile = load_profile(server)
    patterns = all_patterns(profile)
    which = Candidates(patterns).which
    texts = [seg for log in LOGS for raw in log.read_bytes().split(b"\n") for seg in make_line(1, 0, raw).segments]
    texts += [f"Ça {text}" for text in texts[:2000]]  # the same lines as non-ASCII text
    matched = 0
    for text in texts:
        named = which(text)
        assert list(named) == sorted(named), text
        for index, pattern in enumerate(patterns):
            if pattern.search(text) is not None:
                matched += 1
                assert index in named, (text, pattern.pattern)
    assert matched > 100


def test_the_documented_example_profile_loads_and_works(tmp_path):
    """The example in tui/profiles/FORMAT.md is a working profile."""
    doc = (PROFILES_DIR / "FORMAT.md").read_text()
    example = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "my-server.toml"
    path.write_text(example)
    tracker = StartupTracker(load_profile(str(path)))
    log = [
        "[2026-01-01 10:00:00 TP1] Load weight begin",
        "[2026-01-01 10:00:01 TP0] Load weight begin",
        "Loading shards:  50% Completed | 1/2 [00:01<00:01]",
        "[2026-01-01 10:00:09 TP0] Load weight end",
        "[2026-01-01 10:00:10 TP1] Load weight end",
        "[2026-01-01 10:00:11] The server is ready",
    ]
    for n, text in enumerate(log, 1):
        tracker.feed(make_line(n, 0, text.encode()))
    state = tracker.state
    assert state.server == "myserver" and state.outcome == "ready" and state.ready_line == 6
    wl = state.phase("weight_load")
    assert (wl.seconds, wl.slowest_rank, len(wl.ranks)) == (10.0, "TP1", 2)


@pytest.mark.parametrize("name", ["sglang", "vllm", "tgi", "llamacpp"])
def test_every_example_line_changes_the_trackers_state(name):
    """The examples document the patterns and warm the tracker up: none may be dead text."""
    from tui.core.lines import Line
    from tui.core.tracker import StartupTracker

    profile = load_profile(name)
    assert len(profile.examples) >= 10
    tracker = StartupTracker(profile)

    def fingerprint():
        s = tracker.state
        return (
            s.outcome, s.warnings, len(s.errors), [e.message for e in s.errors],
            [(p.name, p.end_line, p.progress, p.detail, len(p.ranks)) for p in s.phases],
            tracker.needs_every_line,
        )

    for number, text in enumerate(profile.examples, 1):
        before = fingerprint()
        inside_traceback = tracker.classifier.open
        events = tracker.feed(Line(number, 0, (text,)), 0.0)
        assert events or fingerprint() != before or inside_traceback, f"example {number} changes nothing: {text}"
    assert tracker.state.ready_line is not None and tracker.state.errors


def test_prime_leaves_the_tracker_untouched():
    from tui.core.tracker import StartupTracker

    tracker = StartupTracker()
    tracker.prime()
    assert tracker.state.lines == 0 and tracker.state.server is None and not tracker.state.phases


def test_a_builtin_pattern_compiled_on_first_use_is_the_compiled_pattern_from_then_on():
    from tui.core.profiles import _compile, trusted_patterns

    with trusted_patterns():
        pattern = _compile("test", r"Load weight end\. elapsed=(?P<seconds>[\d.]+)")
        broken = _compile("test", r"(unclosed")  # a built-in file's mistake shows on first use
    compiled = re.compile(pattern.pattern)
    assert "search" not in vars(pattern)  # not compiled yet
    assert pattern.search("Load weight end. elapsed=4.30 s").group("seconds") == "4.30"
    assert pattern.groupindex == compiled.groupindex and pattern.groups == 1
    assert vars(pattern)["search"].__self__ == compiled  # the compiled pattern's own method now (an equal pattern)
    assert copy.deepcopy(pattern) == pattern
    with pytest.raises(re.error):
        broken.search("x")
