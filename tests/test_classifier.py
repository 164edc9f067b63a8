"""Error classification: traceback blocks of any exception type, chains, interleaved ranks,
one-line signatures, warnings, and healthy lines that must raise no alarm."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.core.classifier import Classifier
from tui.core.lines import LineAssembler, make_line
from tui.core.profiles import generic_profile, load_profile
from tui.core.state import FAILED
from tui.core.tracker import StartupTracker

FIXTURES = Path(__file__).parent / "fixtures"


def track(name: str) -> StartupTracker:
    return track_text((FIXTURES / name).read_bytes())


def track_text(data: bytes) -> StartupTracker:
    tracker = StartupTracker()
    assembler = LineAssembler(progress=False)
    for item in assembler.feed(data) + assembler.flush():
        tracker.feed(item, 1_700_000_000.0)
    tracker.finish()
    return tracker


@pytest.mark.parametrize(
    ("log", "line", "kind", "rank", "category", "text"),
    [
        ("sglang_attributeerror_tp8.log", 35, "AttributeError", "TP3", None, "no attribute 'set_eagle3_layers_to_capture'"),
        ("sglang_context_length.log", 3, "ValueError", "main", None, "context_length (262144) is greater"),
        ("bare_chained_keyerror_oserror.log", 1, "OSError", None, None, "model type `qwen3_next`"),
        ("sglang_keyerror_custom_chain.log", 5, "CheckpointMismatch", "TP0", None, "shard 3 lacks"),
        ("sglang_memoryerror.log", 4, "MemoryError", "TP1", "host_oom", "MemoryError"),
        ("sglang_cuda_oom_graph.log", 13, "Exception", "TP0", "cuda_oom", "Capture cuda graph failed: CUDA out of memory"),
        ("sglang_nccl_timeout.log", 6, "nccl_timeout", "rank3", "nccl_timeout", "Watchdog caught collective operation timeout"),
        ("vllm_kv_failure.log", 8, "ValueError", "EngineCore_DP0", "kv_cache_too_small", "larger than the available KV cache memory"),
    ],
)
def test_the_first_error_is_the_root_cause(log, line, kind, rank, category, text):
    state = track(log).state
    assert state.outcome == FAILED
    error = state.first_error
    assert (error.line, error.kind, error.rank, error.category) == (line, kind, rank, category)
    assert text in error.message
    assert not error.secondary
    # the secondary noise after it (sigquit, child failed, wrapper errors) is kept, not hidden
    assert all(e.line >= line or e.secondary for e in state.errors if e.fatal)


def test_eight_interleaved_tracebacks_each_get_their_rank_and_exception():
    state = track("sglang_attributeerror_tp8.log").state
    blocks = [e for e in state.errors if e.kind == "AttributeError"]
    assert sorted(e.rank for e in blocks) == sorted(f"TP{i}" for i in range(8))
    assert [e.line for e in blocks] == [35, 36, 37, 44, 45, 46, 47, 48]  # each block's first line
    for e in blocks:
        texts = [t for _, t in e.block]
        assert "Scheduler hit an exception" in texts[0]
        assert texts[-1].startswith("AttributeError:")
        # the right frames went to the right block: File, code, File, code, ...
        frames = texts[1:-1]
        assert [t.lstrip().startswith('File "') for t in frames] == [True, False] * 4
    secondary = [e.kind for e in state.errors if e.secondary]
    assert secondary == ["child_failed", "killed"]


def test_a_chain_is_one_error_whose_cause_is_the_last_exception():
    state = track("bare_chained_keyerror_oserror.log").state
    assert len(state.errors) == 1
    error = state.errors[0]
    assert error.kind == "OSError" and error.line == 1 and error.end_line == 17
    assert any("KeyError: 'qwen3_next'" in t for _, t in error.block)


def test_interleaved_chains_with_a_custom_exception():
    state = track("sglang_keyerror_custom_chain.log").state
    mismatches = [e for e in state.errors if e.kind == "CheckpointMismatch"]
    assert [(e.rank, e.message.split(":")[1].split()[1]) for e in mismatches] == [("TP0", "3"), ("TP1", "4")]


def test_vllm_reprefixed_and_raw_tracebacks():
    state = track("vllm_kv_failure.log").state
    kinds = [(e.line, e.kind, e.secondary) for e in state.errors]
    assert kinds == [
        (7, "engine_failed", True),  # "EngineCore failed to start." comes before its traceback
        (8, "ValueError", False),  # logger.exception: every line re-prefixed, ending in \r\n
        (17, "ValueError", False),  # the same exception on raw stderr, after "Process EngineCore_DP0:"
        (25, "RuntimeError", True),  # the API server's "see root cause above"
    ]


def test_healthy_starts_raise_no_alarm():
    for log in ("sglang_eagle3_tp8_ready.log", "sglang_old_04.log", "vllm_v1_ready.log"):
        state = track(log).state
        assert state.errors == [], log


def run(lines: list[str], profile=None):
    classifier = Classifier(profile or load_profile("sglang"))
    errors, warnings = [], []
    for n, text in enumerate(lines, 1):
        made, warning, _ = classifier.feed(n, text)
        errors += made
        if warning:
            warnings.append(n)
    errors += classifier.close_all()
    return errors, warnings


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "cuda_oom"),
        ("RuntimeError: CUDA error: out of memory", "cuda_oom"),
        ("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error", "nccl"),
        ("torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. Socket Timeout", "store_timeout"),
        ("Killed", "killed"),
        ("/bin/bash: line 1: 12345 Killed                  python -m sglang.launch_server", "killed"),
        ("Fatal Python error: Segmentation fault", "segfault"),
        ("Segmentation fault (core dumped)", "segfault"),
        ("terminate called after throwing an instance of 'std::runtime_error'", "cpp_terminate"),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_error"),
        ("[Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use", "port_in_use"),
        ("OSError: meta-llama/Nope is not a local folder and is not a valid model identifier listed on 'https://huggingface.co/models'", "hf_access"),
        ("OSError: [Errno 12] Cannot allocate memory", "host_oom"),
        ("Received sigquit from a child process. It usually means the child failed.", "child_failed"),
        ("RuntimeError: Rank 3 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer.", "scheduler_died"),
        ("ERROR:    Application startup failed. Exiting.", "startup_failed"),
        ("ValueError: weird value", "ValueError"),
    ],
)
def test_one_line_signatures(text, kind):
    errors, _ = run([text])
    assert [e.kind for e in errors] == [kind]
    assert errors[0].message == text.strip()


@pytest.mark.parametrize(
    "text",
    [
        "Failed to import amdsmi with ModuleNotFoundError(\"No module named 'amdsmi'\")",
        "Ignore import error when loading sglang.srt.models.mllama4: No module named 'x'",
        "server_args=ServerArgs(log_level='error', watchdog_timeout=300, on_error='raise', request_timeout=600, enable_nccl_nvls=False)",
        "Decode batch, #running-req: 1, #token: 100, token usage: 0.00, cuda graph: True, gen throughput (token/s): 41.2, #queue-req: 0",
        'INFO:     127.0.0.1:51234 - "GET /health HTTP/1.1" 200 OK',
        "Load weight end. elapsed=6.91 s, type=LlamaForCausalLM, avail mem=70.40 GB, mem usage=7.72 GB.",
    ],
)
def test_healthy_lines_are_not_errors(text):
    errors, warnings = run([text])
    assert errors == [] and warnings == []


def test_vllm_config_dump_with_error_words_is_not_an_error():
    profile = load_profile("vllm")
    tracker = StartupTracker(profile)
    line = (
        "(APIServer pid=1) INFO 08-14 10:00:00 [utils.py:326] non-default args: {'model': 'm', "
        "'disable_log_stats': False, 'error_on_timeout': True, 'timeout': 'CUDA error: out of memory'}"
    )
    tracker.feed(make_line(1, 0, line.encode()), 1_700_000_000.0)
    assert tracker.state.errors == []


def test_any_exception_type_even_without_a_message():
    errors, _ = run(
        [
            "Traceback (most recent call last):",
            '  File "a.py", line 1, in <module>',
            "    raise SystemExit",
            "SystemExit",
            "Traceback (most recent call last):",
            '  File "b.py", line 2, in <module>',
            "    raise mymodule.Boom()",
            "mymodule.Boom",
        ]
    )
    assert [(e.line, e.kind, e.message) for e in errors] == [(1, "SystemExit", "SystemExit"), (5, "Boom", "Boom")]


def test_killed_after_a_block_is_its_own_error_not_a_message_line():
    errors, _ = run(
        [
            "Traceback (most recent call last):",
            '  File "a.py", line 1, in <module>',
            "    load()",
            "RuntimeError: boom",
            "with more text on the next line",
            "Killed",
        ]
    )
    assert [(e.kind, e.line) for e in errors] == [("RuntimeError", 1), ("killed", 6)]
    assert errors[0].block[-1][1] == "with more text on the next line"


def test_a_traceback_cut_short_is_still_reported():
    errors, _ = run(["Traceback (most recent call last):", '  File "a.py", line 1, in <module>', "    load()"])
    assert len(errors) == 1
    assert errors[0].kind == "Traceback" and "cut short" in errors[0].message and errors[0].end_line == 3


def test_a_traceback_relayed_in_an_exception_message_is_read_to_its_cause():
    """SGLang up to 0.3 raised its child's traceback as the message of its own: "RuntimeError:
    Initialization failed. controller_init_state: Traceback (most recent call last):" (P20,
    sglang#1343). One error, whose cause is the relayed exception, not a traceback cut short."""
    errors, _ = run([
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/server.py", line 365, in launch_server',
        "    raise RuntimeError(",
        "RuntimeError: Initialization failed. controller_init_state: Traceback (most recent call last):",
        '  File "/x/vllm/custom_all_reduce_utils.py", line 227, in gpu_p2p_access_check',
        "    result = pickle.loads(returned.stdout)",
        "_pickle.UnpicklingError: invalid load key, 'W'.",
        ", detoken_init_state: init ok",
    ])
    assert [(e.kind, e.line, e.exc_line) for e in errors] == [("UnpicklingError", 1, 7)]
    assert "RuntimeError: Initialization failed" in "\n".join(t for _, t in errors[0].block)
    # a message that only names the word is no relay: the traceback after it is a new one
    errors, _ = run([
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in f',
        "    x()",
        "print the Traceback (most recent call last): header",
        '  File "b.py", line 1, in g',
        "    y()",
        "KeyError: 1",
    ])
    assert [(e.kind, e.line) for e in errors] == [("Traceback", 1), ("KeyError", 4)]


def test_a_header_told_twice_before_its_frames_is_one_traceback():
    """A child's "Traceback (most recent call last):" and, on the next line, its parent relaying the same
    one ("router init state: Traceback …", P20: sglang#51): one traceback whose frames follow, not a
    first one cut short before any frame."""
    errors, _ = run([
        "Process Process-1:",
        "Traceback (most recent call last):",
        "router init state: Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/router/model_runner.py", line 272, in load_model',
        "    model = model_class(",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB.",
    ])
    assert [(e.kind, e.line) for e in errors] == [("OutOfMemoryError", 1)]
    # a header whose block already has frames is another traceback's beginning: the first is cut short
    errors, _ = run([
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in f',
        "Traceback (most recent call last):",
        '  File "b.py", line 1, in g',
        "    y()",
        "KeyError: 1",
    ])
    assert [e.kind for e in errors] == ["Traceback", "KeyError"] and "cut short" in errors[0].message


def test_a_logged_message_before_an_unprefixed_traceback_names_it_when_cut_short():
    """logger.exception under vLLM's prefix (NVIDIA NIM's, with the year: P24): the record's message, then
    its traceback on lines of no prefix. A traceback the paste cuts short is named by that message."""
    lines = [
        "ERROR 2025-07-21 14:34:24.934 factory.py:62] Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
        "Traceback (most recent call last):",
        '  File "/opt/nim/vllm/engine/llm_engine.py", line 274, in __init__',
        "    self.model_executor = executor_class(vllm_config=vllm_config, )",
    ]

    def cut_short(lines: list[str]) -> str:
        tracker = track_text("".join(f"{text}\n" for text in lines).encode())
        (error,) = [e for e in tracker.state.errors if e.kind == "Traceback"]
        return error.message

    message = cut_short(lines)
    assert message.startswith("Bfloat16 is only supported") and "cut short at line 4" in message
    # a record two lines above is another message: the traceback says only where it was cut
    assert cut_short([lines[0], "INFO 2025-07-21 14:34:25.000 x.py:1] going on", *lines[1:]]).startswith("traceback cut short")


def test_the_report_is_updated_in_place_when_the_chain_goes_on():
    classifier = Classifier(generic_profile())
    lines = [
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in f',
        "    x[1]",
        "KeyError: 1",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "a.py", line 3, in g',
        "    f()",
        "OSError: cannot load",
    ]
    reports = []
    for n, text in enumerate(lines, 1):
        reports += classifier.feed(n, text)[0]
    assert len(reports) == 2 and reports[0] is reports[1]  # reported at once, then updated
    assert reports[0].kind == "OSError" and reports[0].line == 1
    assert classifier.open
    assert classifier.close_all() == []  # already reported
    assert not classifier.open


def test_warnings_are_counted_not_failed():
    errors, warnings = run(
        [
            "/x/torch/cuda/__init__.py:63: FutureWarning: The pynvml package is deprecated.",
            "  import pynvml",
            "WARNING:  Invalid HTTP request received.",
            "[W1122 10:00:00.123 socket.cpp:200] [c10d] The hostname of the client socket cannot be retrieved.",
            "NCCL WARN Could not find real path of /sys/class/net/ib0",
        ]
    )
    # an NCCL WARN line is held as a possible cause (a failure that follows would be its follow-on)
    assert [(e.line, e.cause, e.fatal) for e in errors] == [(5, True, False)] and warnings == [1, 3, 4, 5]


def test_unprefixed_lines_go_to_the_block_that_expects_them():
    """Two blocks interleaved line by line, each File followed by its code line."""
    classifier = Classifier(load_profile("sglang"))
    lines = [
        ("TP0", True, "Scheduler hit an exception: Traceback (most recent call last):"),
        ("TP1", True, "Scheduler hit an exception: Traceback (most recent call last):"),
        (None, False, '  File "a.py", line 1, in f0'),
        (None, False, '  File "b.py", line 1, in f1'),
        (None, False, "    code_for_a()"),
        (None, False, "    code_for_b()"),
        (None, False, "ValueError: from a"),
        (None, False, "KeyError: 'from b'"),
    ]
    errors = []
    for n, (rank, record, text) in enumerate(lines, 1):
        errors += classifier.feed(n, text, rank, record)[0]
    assert [(e.rank, e.kind) for e in errors] == [("TP0", "ValueError"), ("TP1", "KeyError")]
    assert [t for _, t in errors[0].block][1:3] == ['  File "a.py", line 1, in f0', "    code_for_a()"]


def test_an_exception_goes_with_the_body_written_in_one_piece_after_its_header():
    """TP0's header is flushed, then TP3 writes its whole record (header, frames, exception), then
    TP0's body follows: TP3's exception is TP3's, not the oldest block's (issue 19: "FAILED TP0 ·
    … GPU 3"), and the first exception is the root cause."""
    classifier = Classifier(load_profile("sglang"))
    lines = [
        ("TP0", True, "Scheduler hit an exception: Traceback (most recent call last):"),
        ("TP3", True, "Scheduler hit an exception: Traceback (most recent call last):"),
        (None, False, '  File "scheduler.py", line 10, in run'),
        (None, False, "    self.forward()"),
        (None, False, '  File "model_runner.py", line 20, in forward'),
        (None, False, "    torch.cuda.synchronize()"),
        (None, False, "RuntimeError: CUDA error: an illegal memory access was encountered on GPU 3"),
        (None, False, '  File "scheduler.py", line 10, in run'),
        (None, False, "    self.forward()"),
        (None, False, "RuntimeError: NCCL communicator was aborted on GPU 0"),
    ]
    errors = []
    for n, (rank, record, text) in enumerate(lines, 1):
        errors += classifier.feed(n, text, rank, record)[0]
    assert [(e.rank, e.message[-5:], e.exc_line) for e in errors] == [("TP3", "GPU 3", 7), ("TP0", "GPU 0", 10)]


def test_a_traceback_logged_as_a_warning_does_not_fail_the_startup():
    tracker = StartupTracker(load_profile("vllm"))
    lines = [
        "WARNING 08-14 10:00:00 [utils.py:12] Failed to load optional plugin: Traceback (most recent call last):",
        'WARNING 08-14 10:00:00 [utils.py:12]   File "plugin.py", line 3, in <module>',
        "WARNING 08-14 10:00:00 [utils.py:12]     import fancy",
        "WARNING 08-14 10:00:00 [utils.py:12] ModuleNotFoundError: No module named 'fancy'",
        "INFO 08-14 10:00:01 [gpu_model_runner.py:1953] Starting to load model m...",
    ]
    for n, text in enumerate(lines, 1):
        tracker.feed(make_line(n, 0, text.encode()), 1_700_000_000.0)
    state = tracker.state
    assert [(e.kind, e.fatal) for e in state.errors] == [("ModuleNotFoundError", False)]
    assert state.outcome == "starting" and state.first_error is None


def test_torch_rank_prefixed_traceback_lines():
    """torchrun prefixes every line of a rank's output with "[rankN]:"."""
    tracker = StartupTracker(load_profile("vllm"))
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/x/swift/cli/deploy.py", line 5, in <module>',
        "[rank0]:     deploy_main()",
        "[rank0]: ValueError: The model's max seq len (163840) is larger than the maximum number of tokens "
        "that can be stored in KV cache (13360).",
        "ERROR 02-07 11:28:27 multiproc_worker_utils.py:124] Worker VllmWorkerProcess pid 645162 died, exit code: -15",
    ]
    for n, text in enumerate(lines, 1):
        tracker.feed(make_line(n, 0, text.encode()), 1_700_000_000.0)
    state = tracker.state
    first = state.first_error
    assert (first.line, first.kind, first.rank, first.category) == (1, "ValueError", "rank0", "kv_cache_too_small")
    assert [(e.kind, e.secondary) for e in state.errors[1:]] == [("worker_failed", True)]


def test_torch_cpp_log_prefixes_are_stripped_and_their_warnings_counted():
    tracker = StartupTracker(load_profile("sglang"))
    lines = [
        "[rank0]:[W1122 10:00:00.123456 ProcessGroupNCCL.cpp:4115] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now",
        "[rank3]:[E1122 10:10:03.123456000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600011 milliseconds before timing out.",
    ]
    for n, text in enumerate(lines, 1):
        tracker.feed(make_line(n, 0, text.encode()), 1_700_000_000.0)
    state = tracker.state
    assert state.warnings == 1
    error = state.first_error
    assert (error.kind, error.rank) == ("nccl_timeout", "rank3")
    assert error.message.startswith("[Rank 3] Watchdog caught collective operation timeout")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("RuntimeError: HIP out of memory. Tried to allocate 2.00 GiB", "cuda_oom"),
        ("RuntimeError: Found no NVIDIA driver on your system.", "no_gpu"),
        ("OSError: [Errno 28] No space left on device", "disk_full"),
    ],
)
def test_more_one_line_signatures(text, kind):
    errors, _ = run([text])
    assert [e.kind for e in errors] == [kind]


def test_a_traceback_cut_short_says_what_is_known():
    """Not "traceback cut short: Traceback (most recent call last):": where the log left it, and the
    frame that was running."""
    errors, _ = run(["Traceback (most recent call last):", '  File "a.py", line 1, in <module>', "    load()"])
    assert errors[0].message == 'traceback cut short at line 3, with no exception line; the last frame: File "a.py", line 1, in <module>'
    errors, _ = run(["Traceback (most recent call last):"])
    assert errors[0].message == "traceback cut short: the log leaves it at line 1 before any frame or exception line"


def test_frames_pasted_without_their_traceback_line_are_its_block():
    """An excerpt that starts inside a traceback (its ``Traceback`` line not pasted): the frames
    and the exception are one error from the first frame, so a hint that reads the frames
    (``load_weights``) can read them."""
    errors, _ = run(
        [
            '  File "/x/sglang/srt/models/deepseek_vl2.py", line 252, in load_weights',
            "    param = params_dict[name]",
            "            ~~~~~~~~~~~^^^^^^",
            "KeyError: 'lm_head.weight'",
        ]
    )
    assert [(e.line, e.kind, e.end_line) for e in errors] == [(1, "KeyError", 4)]
    assert "load_weights" in errors[0].block[0][1]


def test_frames_with_no_exception_line_are_no_error_unless_the_log_ends_in_them():
    """A logger's ``Stack (most recent call last):`` prints frames and no exception, and the log
    goes on: nothing failed, so nothing is reported. A paste that ends inside frames is a traceback
    cut short (its exception line lost with the rest), reported as one."""
    stack = [
        "Stack (most recent call last):",
        '  File "/x/server.py", line 10, in <module>',
        "    main()",
        '  File "/x/server.py", line 5, in main',
        "    log.info('loaded', stack_info=True)",
    ]
    errors, _ = run(stack + ["[2026-03-04 11:00:02] loaded"])
    assert errors == []
    errors, _ = run(stack[1:] + ['  File "/x/triton/runtime/build.py", line 32, in _build',
                                '    raise RuntimeError("Failed to find C compiler. Please'])
    assert [(e.line, e.kind) for e in errors] == [(1, "Traceback")]
    assert "cut short" in errors[0].message and "build.py" in errors[0].message


def test_an_exception_logged_alone_keeps_its_wrapped_message_and_the_words_it_carries():
    """An exception with no traceback, its message wrapped over lines (a terminal's width) or
    followed by the compiler's stderr it carries: those plain lines are its block, up to a blank
    line; the next record (a line with the log's header) is not taken."""
    classifier = Classifier(load_profile("vllm"))
    lines = [
        "AssertionError: Error in memory profiling. Initial free memory 82.94 GiB,",
        "current free memory 90.17 GiB. This happens when other processes sharing the",
        "same container release GPU memory.",
        "",
        "not part of it: after a blank line",
        "PTXASError: PTXAS error: Internal Triton PTX codegen error",
        "`ptxas` stderr:",
        "ptxas /tmp/t.ptx, line 5; error   : Feature '.bf16' requires .target sm_80 or higher",
        "shutting down",  # a record: its header (level, time) was read off by the tracker
    ]
    errors = []
    for n, text in enumerate(lines, 1):
        errors += classifier.feed(n, text, record=n == len(lines))[0]
    errors += classifier.close_all()
    assert [(e.line, e.kind, e.end_line) for e in errors] == [(1, "AssertionError", 3), (6, "PTXASError", 8)]
    assert [n for n, _ in errors[0].block] == [1, 2, 3]
    assert errors[1].block[-1][1].startswith("ptxas /tmp/t.ptx")


def test_a_line_after_a_one_line_signature_that_is_no_exception_is_not_its_message():
    """Only an exception's message goes on: a signature line that is none (a killed task) keeps to
    its own line, and what follows it is no part of it."""
    errors, _ = run(["srun: error: node-1: task 0: Killed", "srun: launch/slurm: _step_signal: Terminating StepId=1.0"])
    assert errors[0].end_line == 1 and len(errors[0].block) == 1


def test_a_python_warning_after_an_exception_is_not_its_message():
    """A real vLLM ends with "RuntimeError: Engine core initialization failed …" and then, as it exits,
    Python's warning ("…/resource_tracker.py:254: UserWarning: …" and its source line indented): the
    warning is a line of its own, and its source line no part of the exception's message (which read
    "… Failed core proc(s): {} warnings.warn('resource_tracker: …" before)."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/vllm/v1/engine/utils.py", line 1431, in wait_for_engine_startup',
        "    raise RuntimeError(",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        "/usr/lib/python3.11/multiprocessing/resource_tracker.py:254: UserWarning: resource_tracker: There appear to be "
        "1 leaked shared_memory objects to clean up at shutdown",
        "  warnings.warn('resource_tracker: There appear to be %d '",
    ]
    errors, warnings = run(lines, load_profile("vllm"))
    assert [(e.line, e.kind) for e in errors] == [(1, "RuntimeError")]
    assert errors[0].message == "RuntimeError: " + lines[3].split(": ", 1)[1]
    assert errors[0].end_line == 4
    assert warnings == [5]
