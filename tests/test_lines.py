"""Line assembly: grep -n numbering, \\r segments, sanitising, the 1 MiB cap, any chunking."""

from __future__ import annotations

import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core import lines as lines_mod
from tui.core.lines import Line, LineAssembler, Progress, clean, make_line


def assemble(chunks: list[bytes]) -> list[Line]:
    asm = LineAssembler()
    out: list = []
    for chunk in chunks:
        out.extend(asm.feed(chunk))
    out.extend(asm.flush())
    return [item for item in out if isinstance(item, Line)]


def test_numbers_and_offsets_match_grep_n(tmp_path):
    data = (
        b"first\n"
        b"bar:  10%\rbar:  50%\rbar: 100%\n"  # a tqdm bar: one line, three segments
        b"crlf line\r\n"
        b"\n"
        b"needle here\n"
        b"last, unterminated needle"
    )
    log = tmp_path / "x.log"
    log.write_bytes(data)
    got = assemble([data])
    assert [ln.number for ln in got] == [1, 2, 3, 4, 5, 6]
    assert [ln.offset for ln in got] == [0, 6, 36, 47, 48, 60]
    grep = subprocess.run(["grep", "-n", "needle", str(log)], capture_output=True, check=True).stdout
    grep_numbers = [int(row.split(b":")[0]) for row in grep.splitlines()]
    assert grep_numbers == [ln.number for ln in got if "needle" in ln.text]
    assert got[1].segments == ("bar:  10%", "bar:  50%", "bar: 100%")
    assert got[1].text == "bar: 100%"
    assert got[2].segments == ("crlf line",)  # \r\n ends a line like \n
    assert got[3].segments == ()


def test_marker_swallowed_by_a_progress_bar_is_its_own_segment():
    data = b"Capturing batches (bs=1 avail_mem=19.02 GB): 100%|##| 36/36\r[2026-02-22 23:39:18 TP0] Capture cuda graph end.\n"
    (line,) = assemble([data])
    assert line.segments[-1] == "[2026-02-22 23:39:18 TP0] Capture cuda graph end."


def test_bare_cr_reports_progress_of_the_open_line_not_new_lines():
    asm = LineAssembler()
    items = asm.feed(b"head\nLoading:  10%\rLoading:  20%\rLoad")
    # one update per chunk: only the newest finished segment matters to a live view
    assert [type(i) for i in items] == [Line, Progress]
    assert (items[1].number, items[1].text) == (2, "Loading:  20%")
    (update,) = asm.feed(b"ing:  30%\rLoad")
    assert (update.number, update.text) == (2, "Loading:  30%")
    (update,) = asm.feed(b"ing:  40%\rLoading:  50%")  # a whole new bar after the last \r: shown now
    assert update.text == "Loading:  50%"
    items = asm.feed(b"\rLoading: 100%\n")
    assert len(items) == 1 and items[0].number == 2 and items[0].text == "Loading: 100%"


def test_invalid_utf8_nul_and_escapes_never_reach_the_terminal_raw():
    (line,) = assemble([b"\x1b[1;36m(VllmWorker rank=3 pid=9)\x1b[0;0m bad \xff\xfe byte \x00 nul \x07 bell\x1b]0;title\x07 end\n"])
    assert line.text == "(VllmWorker rank=3 pid=9) bad \ufffd\ufffd byte \u2400 nul \u2407 bell end"
    for ch in line.text:
        assert ord(ch) >= 0x20 and not 0x7F <= ord(ch) <= 0x9F


def test_clean_keeps_markup_literally():
    assert clean("[bold red]x[/] [link=http://e]y") == "[bold red]x[/] [link=http://e]y"
    assert clean("a\x1b[2Jb\x1b[31mc") == "abc"


def test_giant_line_is_cut_but_counted_once(monkeypatch):
    monkeypatch.setattr(lines_mod, "MAX_LINE_BYTES", 1000)
    giant = b"x" * 5000
    got = assemble([b"a\n", giant[:1700], giant[1700:], b"\nb\n"])
    assert [ln.number for ln in got] == [1, 2, 3]
    assert got[1].truncated and len(got[1].text) == 1000
    assert got[2].text == "b" and got[2].offset == 2 + 5000 + 1


def test_giant_bar_line_keeps_the_record_after_its_last_cr(monkeypatch):
    monkeypatch.setattr(lines_mod, "MAX_LINE_BYTES", 1000)
    bar = b"".join(b"Capturing batches: %3d%%\r" % (i % 100) for i in range(400))
    data = bar + b"[2026-02-22 23:39:18 TP0] Capture cuda graph end.\n"
    for chunks in ([data], [data[:999], data[999:1500], data[1500:]]):
        (line,) = assemble(chunks)
        assert line.truncated
        assert line.text == "[2026-02-22 23:39:18 TP0] Capture cuda graph end."


def test_skip_advances_numbers_without_building_lines():
    asm = LineAssembler()
    asm.skip(10, 100)
    (line,) = asm.feed(b"x\n")
    assert (line.number, line.offset) == (11, 100)


_pieces = st.lists(
    st.sampled_from(
        [b"a", b"Load weight begin", b"\n", b"\r", b"\r\n", b"\xc3\xa9", b"\xe2\x96\x88", b"\xff", b"\x1b[31m", b"\x00", b" "]
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(pieces=_pieces, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_any_chunking_yields_the_same_lines(pieces, cuts):
    data = b"".join(pieces)
    whole = assemble([data])
    bounds = sorted({c for c in cuts if c <= len(data)} | {0, len(data)})
    chunked = assemble([data[a:b] for a, b in zip(bounds, bounds[1:])])
    assert chunked == whole
    assert len(whole) == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


@settings(max_examples=300, deadline=None)
@given(pieces=_pieces, cut=st.integers(min_value=0, max_value=400))
def test_cap_is_chunking_independent(pieces, cut):
    orig = lines_mod.MAX_LINE_BYTES
    lines_mod.MAX_LINE_BYTES = 16
    try:
        data = b"".join(pieces)
        cut = min(cut, len(data))
        assert assemble([data[:cut], data[cut:]]) == assemble([data])
    finally:
        lines_mod.MAX_LINE_BYTES = orig


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from([b"a", b"TP0", b" ", b"\t", b"\n", b"\r", b"\x7f", b"\x00", b"\x1b[31m",
                                         b"\xc2\x85", b"\xe2\x80\xae", b"\xff", b"token=", b"s3cr3t", b"://",
                                         b"hf_abcdefghijklmnopqrstuvwxyz01", b"--api-key"]), max_size=60))
def test_a_chunk_reads_as_its_lines_made_one_by_one(pieces):
    """The assembler looks for bytes to clean (and secrets, a search a hint) once in a whole chunk:
    each line of a chunk with none, or with some, reads as that line made alone."""
    data = b"".join(pieces) + b"\n"
    alone, offset = [], 0
    for number, raw in enumerate(data.split(b"\n")[:-1], 1):
        alone.append(make_line(number, offset, raw.removesuffix(b"\r")))
        offset += len(raw) + 1
    assert assemble([data]) == alone


def test_each_line_of_a_chunk_with_secrets_is_masked_as_if_made_alone():
    """A chunk's secret hints are found by one search each: the line each falls in is masked, and
    only that one (a URL early in the chunk, a key at the end of a later line)."""
    data = (
        b"[2026-01-02 03:04:05] Uvicorn running on http://0.0.0.0:30000\n"
        + b"[2026-01-02 03:04:05 TP0] Load weight begin.\n" * 3
        + b"[2026-01-02 03:04:06] a long line of settings then the token=abcdef123456\n"
        + b"plain\n"
        + b"launch --api-key sk-abcdefghijklmnopqrstuv\n"
    )
    alone, offset = [], 0
    for number, raw in enumerate(data.split(b"\n")[:-1], 1):
        alone.append(make_line(number, offset, raw))
        offset += len(raw) + 1
    assert assemble([b"x" * 40 + b"\n" + data])[1:] == [
        Line(line.number + 1, line.offset + 41, line.segments) for line in alone
    ]
    assert "abcdef123456" not in alone[4].text and "sk-abcdefghijklmnopqrstuv" not in alone[6].text


def test_make_line_matches_assembler():
    assert make_line(1, 0, b"a\rb") == assemble([b"a\rb\n"])[0]


def test_slurmstepds_word_after_an_open_bar_is_the_lines_own_text():
    """Slurm's step daemon writes into the task's output right after a loading bar the server left
    open (no newline after its last \\r): its word is the line's text, the bar a segment before it."""
    from tui.core.lines import LineAssembler

    bar = b"\rLoading safetensors checkpoint shards:  12% Completed | 1/8 [00:01<00:00,  1.55s/it]"
    said = b"slurmstepd-n1: error: *** STEP 1.0 ON n1 CANCELLED AT 2026-12-06T00:16:56 ***\n"
    lines = [item for item in LineAssembler().feed(b"[2026-12-06 00:16:55 TP0] Load weight begin.\n" + bar + said)
             if hasattr(item, "segments")]
    assert lines[-1].text == said.decode().rstrip("\n")
    assert lines[-1].segments[0].endswith("1/8 [00:01<00:00,  1.55s/it]")  # the bar's last state kept
    plain = LineAssembler().feed(b"an unfinished line slurmstepd-n1: mentioned\n")  # no bar: left as it is
    assert [item.text for item in plain if hasattr(item, "segments")] == ["an unfinished line slurmstepd-n1: mentioned"]


@settings(max_examples=200)
@given(
    lengths=st.lists(st.integers(min_value=0, max_value=300), min_size=0, max_size=400),
    cut=st.tuples(st.floats(min_value=0, max_value=0.2), st.floats(min_value=0.8, max_value=1.0)),
    mutable=st.booleans(),
)
def test_newlines_counts_what_count_counts(lengths, cut, mutable):
    """Whichever way ``newlines`` counts (replace over the whole buffer less the edges, or byte by
    byte where the span is short, a small part, or starts with short lines), the figure is
    ``count``'s, for any span of any mix of line lengths."""
    data = b"".join(b"x" * n + b"\n" for n in lengths) + b"tail without newline"
    data = bytearray(data) if mutable else data
    start, end = int(len(data) * cut[0]), int(len(data) * cut[1])
    assert lines_mod.newlines(data, start, end) == data.count(b"\n", start, end)
    assert lines_mod.newlines(data) == data.count(b"\n")


def test_newlines_takes_the_replace_way_on_usual_lines_and_count_on_short_ones():
    """The two ways are both taken (else the property above tests one of them): usual log lines
    are counted by deleting them (a fresh bytes object), short ones byte by byte (no copy)."""

    class Watched(bytearray):
        replaced = 0

        def replace(self, *args):  # type: ignore[override]
            Watched.replaced += 1
            return super().replace(*args)

    usual = Watched(b"[2026-03-14 21:04:10] Decode batch. #running-req: 8, #token: 4096\n" * 2000)
    assert lines_mod.newlines(usual, 10, len(usual) - 10) == usual.count(b"\n", 10, len(usual) - 10)
    assert Watched.replaced == 1
    short = Watched(b"x\n" * 100_000)
    assert lines_mod.newlines(short) == 100_000
    assert Watched.replaced == 1
