"""A run of plain lines read in one call (``StartupTracker.feed_rows``, which takes the ranks'
repeats of one message together) ends where feeding each line as a ``Line`` does: the same state,
the same events in the same order, whatever the ranks print and in whatever order."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_parser_fuzz import _chunks, _digest, _every_line
from tui.core.lines import LineAssembler, plain_rows
from tui.core.profiles import builtin_profiles, load_profile, prefilter_words
from tui.core.scan import Scanner
from tui.core.tracker import StartupTracker

#: What SGLang's ranks print (each rank the same message), and the lines around them: markers of
#: every phase and their draft repeats, a warning, errors, a traceback, bars, a new startup, ready.
MESSAGES = [
    "server_args=ServerArgs(model_path='/models/m', tp_size=8, port=30000)",
    "Init torch distributed begin.",
    "Init torch distributed ends. mem usage=0.35 GB",
    "Load weight begin. avail mem=78.12 GB",
    "Load weight end. type=LlamaForCausalLM, avail mem=70.40 GB, mem usage=7.72 GB.",
    "KV Cache is allocated. #tokens: 812345, KV size: 40.10 GB",
    "Memory pool end. avail mem=19.80 GB",
    "Capture cuda graph begin. This can take up to several minutes. avail mem=19.60 GB",
    "Capture cuda graph end. Time elapsed: 9.60 s. mem usage=0.61 GB. avail mem=18.99 GB.",
    "Capture draft cuda graph begin. avail mem=18.00 GB",
    "Capture draft cuda graph end. Time elapsed: 3.10 s.",
    "Entering DeepGEMM JIT Pre-Compile session. It may take a long time",
    "Compiling a graph for dynamic shape takes 12.50 s",
    "max_total_num_tokens=812345, chunked_prefill_size=8192, available_gpu_mem=18.99 GB",
    "INFO:     Started server process [4242]",
    "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    "The server is fired up and ready to roll!",
    "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00",
    "WARNING:  Found ulimit of 1024 and failed to automatically increase with error",
    "Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2103, in run_scheduler_process',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "NCCL error: unhandled system error",
    "Received sigquit from a child process. It usually means the child failed.",
    "hello from the tokenizer",
    "api_key=sk-abcdefghijklmnop1234 token usage: 0.5",
]
#: Lines without a rank header: bars, a bare marker, blank lines, a carrier's label, a JSON record.
LOOSE = [
    "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:03<00:03,  1.62s/it]",
    "Capturing batches (bs=1 avail_mem=19.02 GB): 100%|##########| 36/36 [00:09<00:00,  3.90it/s]",
    "Load weight end. elapsed=4.30 s",
    "",
    "   ",
    "0: [2026-02-22 23:40:00 TP0] Load weight begin. avail mem=78.12 GB",
    '{"message": "Load weight end.", "levelname": "INFO"}',
]
#: Rank tags: TP alone, with DP (either order), two digits, none.
TAGS = [" TP0", " TP1", " TP2", " TP3", " TP7", " TP10", " DP1 TP3", " TP3 DP1", ""]

_message_run = st.tuples(
    st.sampled_from(MESSAGES),
    st.lists(st.sampled_from(TAGS), min_size=1, max_size=10),  # the ranks that print it, in order
    st.integers(min_value=-1, max_value=3),  # seconds after the last record (-1: a time no clock has)
    st.sampled_from(["", "", "", "(Worker pid=7) ", "INFO "]),  # what comes before or in the header
)
_step = st.one_of(_message_run, _message_run, _message_run, st.sampled_from(LOOSE))


def _rows(steps: list) -> list[str]:
    rows, second = [], 0
    for step in steps:
        if isinstance(step, str):
            rows.append(step)
            continue
        msg, tags, later, extra = step
        second += max(later, 0)
        stamp = f"2026-02-22 23:{40 + second // 60:02d}:{second % 60:02d}" if later >= 0 else "2026-13-45 99:99:99"
        for tag in tags:
            if extra == "INFO ":
                rows.append(f"[{stamp}{tag}] INFO {msg}")
            else:
                rows.append(f"{extra}[{stamp}{tag}] {msg}")
    return rows


def _line_by_line(data: bytes, server: str | None) -> tuple[StartupTracker, list]:
    tracker = StartupTracker(load_profile(server) if server else None)
    events = []
    for item in LineAssembler(progress=False).feed(data):
        events += tracker.feed(item, 5.0)
    return tracker, events


def _in_runs(data: bytes, cuts: list[int], server: str | None) -> tuple[StartupTracker, list]:
    """``data`` cut into runs of whole lines at ``cuts``, each handed over as the scanner would."""
    tracker = StartupTracker(load_profile(server) if server else None)
    events, number, offset = [], 1, 0
    lines = data.splitlines(keepends=True)
    bounds = sorted({c % (len(lines) + 1) for c in cuts} | {0, len(lines)})
    for a, b in zip(bounds, bounds[1:]):
        run = b"".join(lines[a:b])
        rows = plain_rows(run)
        if rows is None:  # (a secret whose mask changes the line's length: fed as lines)
            for item in LineAssembler(progress=False).feed(run):
                events += tracker.feed(replace(item, number=item.number + number - 1, offset=item.offset + offset), 5.0)
        else:
            events += tracker.feed_rows(number, offset, rows, 5.0)
        number += b - a
        offset += len(run)
    return tracker, events


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    steps=st.lists(_step, min_size=1, max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=4),
    server=st.sampled_from([None, "sglang"]),
)
def test_rows_read_together_end_as_lines_read_one_by_one(steps, cuts, server):
    data = "".join(row + "\n" for row in _rows(steps)).encode()
    reference, said = _line_by_line(data, server)
    tracker, events = _in_runs(data, cuts, server)
    assert events == said
    assert _digest(tracker) == _digest(reference)
    assert tracker.finish() == reference.finish()
    assert _digest(tracker) == _digest(reference)


def test_a_dense_startup_reads_the_ranks_repeats_together(monkeypatch):
    """The fast path is taken: of eight ranks' lines of a message only the first is read as a line."""
    steps = [(msg, [" TP0", " TP1", " TP2", " TP3", " TP4", " TP5", " TP6", " TP7"], 1, "") for msg in MESSAGES[1:9]]
    rows = _rows([MESSAGES[0], *steps])
    rows[0] = "[2026-02-22 23:39:59] " + rows[0]
    read_as_lines = []
    tracker = StartupTracker()
    line = tracker._line
    monkeypatch.setattr(tracker, "_line", lambda item, at, events: (read_as_lines.append(item.number), line(item, at, events)))
    events = tracker.feed_rows(1, 0, rows, None)
    assert len(read_as_lines) == 1 + len(steps)
    reference, said = _line_by_line("".join(r + "\n" for r in rows).encode(), None)
    assert events == said and _digest(tracker) == _digest(reference)
    assert [p.name for p in tracker.state.phases if p.done] == ["server_args", "dist_init", "weight_load", "memory_pool"]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    steps=st.lists(st.one_of(_step, st.sampled_from(["[2026-02-22 23:41:00 TP0] Decode batch, #running-req: 1"])),
               min_size=1, max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=5),
)
def test_scan_of_rank_runs_ends_as_every_line_fed(steps, cuts):
    """Through the scanner (runs cut anywhere by its blocks, lines without a word between them)."""
    data = "".join(row + "\n" for row in _rows(steps)).encode()
    chunks = _chunks(data, cuts)
    reference = _every_line(chunks, None, progress=False, at=None)
    tracker = StartupTracker()
    scanner = Scanner(tracker, prefilter_words(builtin_profiles()))
    for chunk in chunks:
        scanner.feed(chunk)
    scanner.finish()
    assert _digest(tracker) == _digest(reference)
