"""The fakes against reality: each fake log of a shape a real server was recorded in here must read
as the recording does, line kind by line kind.

The fakes (tests/fixtures/make_cases.py) stand in for servers this machine cannot run (GPUs, other
versions); the recordings (tests/fixtures/real/, RECORDED.md) are what llama.cpp's server and vLLM
0.32 on the CPU really printed. For each pair: the same outcome and phases in the same order, and
every line of the fake that moves the tracker (a phase's begin, end or step, ready, an error) has a
line of the same kind in the recording — the same level, process, the same profile rules matching
it, and the same first words once numbers are set aside. A fake that drifts from the real server
(a reworded marker, another prefix, a level the server does not use) fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tui.core.lines import make_line
from tui.core.profiles import Profile, load_profile
from tui.core.tracker import StartupTracker
from tui.core.tracker_events import WarningFound

FIXTURES = Path(__file__).parent / "fixtures"
REAL = FIXTURES / "real"

# fake: (its real recording, the recording's lines up to its ready line or all, phases not compared)
PAIRS = {
    # xllamacpp's server is the one recorded; it prints "srv  init: build_info: …" first, the binary no such line
    "case_llamacpp_embedded_ready.log": ("profiles-llamacpp-embedded-ready-sigterm.log", 10, {"server_args"}),
    # the binary's own function is llama_server where the embedded one says init (tools/server/server.cpp)
    "case_llamacpp_current_ready.log": ("profiles-llamacpp-embedded-ready-sigterm.log", 10, {"server_args"}),
    "case_llamacpp_current_truncated_gguf.log": ("profiles-llamacpp-embedded-truncated-gguf.log", None, {"server_args"}),
    "case_vllm_cpu_ready.log": ("profiles-vllm-cpu-0.32-ready-sigterm.log", 105, set()),
}
#: The server's own function in llama.cpp's server lines: the binary's and the embedded server's.
SERVER_FUNCTION = re.compile(r"^(?:llama_server|init): ")
NUMBERS = re.compile(r"\d+(?:[.,]\d+)*")


def read(path: Path, upto: int | None) -> tuple[StartupTracker, list[tuple[str, list[object]]]]:
    tracker, lines = StartupTracker(), []
    for number, raw in enumerate(path.read_bytes().split(b"\n")[:upto], 1):
        text = raw.decode("utf-8", "replace")
        lines.append((text, tracker.feed(make_line(number, 0, raw))))
    tracker.finish()
    return tracker, lines


def kind(profile: Profile, text: str) -> tuple[object, ...]:
    """What a line is to the profile: its level, its process (without the pid), the rules that match
    its message, and its first words with numbers set aside."""
    for header in profile.headers:
        match = header.match(text)
        if match is not None:
            groups = match.groupdict()
            msg = groups["msg"] or ""
            level, proc = groups.get("lvl"), (groups.get("proc") or "").split(" pid=")[0]
            break
    else:
        msg, level, proc = text, None, ""
    rules = [f"{spec.name}.{what}" for spec in profile.phases
             for what, patterns in (("begin", spec.begin), ("end", spec.end), ("step", spec.step), ("implicit", spec.implicit_begin))
             if any(p.search(msg) for p in patterns)]
    rules += [name for name, patterns in (("ready", profile.ready), ("ready_with", profile.ready_with), ("stop", profile.stop),
                                          ("close", profile.close)) if any(p.search(msg) for p in patterns)]
    rules += [f"signature.{s.kind}" for s in profile.signatures if s.regex.search(msg)]
    words = " ".join(NUMBERS.sub("0", SERVER_FUNCTION.sub("<server>: ", msg)).split()[:4])
    return level, proc, tuple(rules), words


def movers(lines: list[tuple[str, list[object]]]) -> list[str]:
    """The lines that moved the tracker (warnings apart: a line's warning is no marker)."""
    return [text for text, events in lines if any(not isinstance(e, WarningFound) for e in events)]


@pytest.mark.parametrize("fake", sorted(PAIRS))
def test_a_fake_reads_as_its_real_server_did(fake):
    real_name, upto, apart = PAIRS[fake]
    real, real_lines = read(REAL / real_name, upto)
    imitation, fake_lines = read(FIXTURES / fake, None)
    assert imitation.profile is not None and real.profile is not None
    assert imitation.profile.name == real.profile.name
    assert imitation.state.outcome == real.state.outcome
    phases = [p.name for p in real.state.phases if p.name not in apart]
    assert [p.name for p in imitation.state.phases if p.name not in apart] == phases
    profile = real.profile
    seen = {kind(profile, text) for text, _ in real_lines}
    drifted = [text for text in movers(fake_lines) if kind(profile, text) not in seen]
    assert drifted == [], f"lines of {fake} no line of {real_name} is like"
    real_error, fake_error = real.state.first_error, imitation.state.first_error
    assert (real_error is None) == (fake_error is None)
    if real_error is not None and fake_error is not None:
        assert (fake_error.kind, NUMBERS.sub("0", fake_error.message).split(":")[:2]) == (
            real_error.kind, NUMBERS.sub("0", real_error.message).split(":")[:2])


def test_the_check_sees_a_drifted_fake(tmp_path):
    """The comparison is no formality: vLLM 0.2x's "Starting vLLM API server 0 on" in a 0.32 fake,
    or a llama.cpp fake that logs its load error at level W, is told apart from the recording."""
    profile = load_profile("vllm")
    real = {kind(profile, text) for text, _ in read(REAL / "profiles-vllm-cpu-0.32-ready-sigterm.log", 105)[1]}
    assert kind(profile, "(APIServer pid=7) INFO 11-02 08:02:03 [entry.py:140] Starting vLLM server on http://0.0.0.0:8000") in real
    assert kind(profile, "(APIServer pid=7) INFO 11-02 08:02:03 [api_server.py:1900] Starting vLLM API server 0 on http://0.0.0.0:8000") not in real
    llama = load_profile("llamacpp")
    lines = read(REAL / "profiles-llamacpp-embedded-truncated-gguf.log", None)[1]
    real = {kind(llama, text) for text, _ in lines}
    line = "0.00.041.220 {} llama_model_load: error loading model: tensor 'x' data is not within the file bounds"
    assert kind(llama, line.format("E")) in real and kind(llama, line.format("W")) not in real


def test_every_fake_of_a_recorded_shape_is_compared():
    """A fake written for llama.cpp's current shape or vLLM on the CPU has its recording here."""
    current = [p.name for p in FIXTURES.glob("case_*.log")
               if re.match(rb"\d+\.\d\d\.\d{3}\.\d{3} [IWE] ", p.read_bytes()) or b"cpu_model_runner" in p.read_bytes()]
    assert sorted(current) == sorted(PAIRS)
