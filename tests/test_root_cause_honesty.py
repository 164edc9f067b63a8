"""Root-cause honesty (issue 32 item 3): a traceback that a logger line interleaves with is read
to its exception, however far below; one failure a server tells on several lines is one error."""

from __future__ import annotations

from pathlib import Path

from tui.commands.scan import scan_with_hints

SGLANG = (
    "[2026-03-04 11:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n"
    "[2026-03-04 11:00:03] Load weight begin. avail mem=78.00 GB\n"
    "[2026-03-04 11:01:00] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sglang/srt/managers/scheduler.py", line 2400, in run_scheduler_process\n'
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
    "[2026-03-04 11:01:00] Received sigquit from a child process. It usually means the child failed.\n"
    '  File "/sglang/srt/model_executor/model_runner.py", line 300, in __init__\n'
    "    self.initialize(min_per_gpu_memory)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.19 GiB of which 1.02 GiB is free.\n"
)

VLLM_HEAD = (
    "(APIServer pid=1) INFO 08-14 11:00:00 [api_server.py:1] vLLM API server version 0.31.0\n"
    "(APIServer pid=1) INFO 08-14 11:00:00 [api_server.py:2] non-default args: {'model': '/models/m', "
    "'tensor_parallel_size': 2}\n"
    "(Worker_TP0 pid=20) INFO 08-14 11:00:03 [gpu_model_runner.py:1953] Starting to load model /models/m...\n"
    "(Worker_TP0 pid=20) INFO 08-14 11:00:30 [gpu_model_runner.py:2007] Model loading took 15.27 GiB and 6.53 seconds\n"
    "(Worker_TP0 pid=20) ERROR 08-14 11:00:50 [multiproc_executor.py:700] WorkerProc failed to start.\n"
    "Traceback (most recent call last):\n"
    '  File "/vllm/v1/executor/multiproc_executor.py", line 690, in worker_main\n'
    "    worker = WorkerProc(*args, **kwargs)\n"
)
# the other worker goes on compiling, and logging, while the first prints its traceback
VLLM_OTHER = "".join(
    f"(Worker_TP1 pid=21) INFO 08-14 11:00:{50 + i // 100:02d} [backends.py:{200 + i}] Compiling a graph for "
    f"compile range (1, {i})\n" for i in range(250)
)
VLLM_TAIL = (
    '  File "/torch/_inductor/compile_fx.py", line 800, in compile_fx_inner\n'
    "    return fn(*args)\n"
    "torch._inductor.exc.InductorError: OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 "
    "has a total capacity of 79.19 GiB of which 300.00 MiB is free.\n"
)

LLAMA = (
    "build: 4800 (1e2d3c4) with cc (GCC) 12.2.0 for x86_64-linux-gnu\n"
    "main: loading model\n"
    "srv    load_model: loading model '/models/q.gguf'\n"
    "load_tensors: offloaded 81/81 layers to GPU\n"
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 40110.50 MiB on device 0: cudaMalloc failed: out of memory\n"
    "alloc_tensor_range: failed to allocate CUDA0 buffer of size 42058770432\n"
    "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n"
    "llama_model_load_from_file_impl: failed to load model\n"
    "common_init_from_params: failed to load model '/models/q.gguf'\n"
    "srv    load_model: failed to load model, '/models/q.gguf'\n"
    "srv    operator(): operator(): cleaning up before exit...\n"
    "main: exiting due to model loading error\n"
)


def scan(tmp_path: Path, text: str):
    log = tmp_path / "server.log"
    log.write_text(text)
    return scan_with_hints(str(log))


def test_a_logger_line_inside_a_traceback_does_not_cut_it_short(tmp_path):
    state, hints = scan(tmp_path, SGLANG)
    (oom,) = [e for e in state.errors if e.line == 3]
    assert oom.kind == "OutOfMemoryError" and oom.end_line == 9
    assert not any("cut short" in e.message for e in state.errors)
    assert [h.id for h in hints][:1] == ["weights-oom"]  # the OOM came in the weight load


def test_a_traceback_that_goes_on_250_lines_later_is_one_error(tmp_path):
    state, _ = scan(tmp_path, VLLM_HEAD + VLLM_OTHER + VLLM_TAIL)
    (oom,) = [e for e in state.errors if e.line == 6]
    assert oom.kind == "OutOfMemoryError" and oom.end_line == 6 + 2 + 250 + 3
    assert not any("cut short" in e.message for e in state.errors)


def test_a_traceback_really_cut_short_is_still_said_so(tmp_path):
    """The log stops inside the traceback: nothing more came, and the report says so."""
    state, _ = scan(tmp_path, VLLM_HEAD + VLLM_OTHER)
    (cut,) = [e for e in state.errors if e.line == 6]
    assert "cut short" in cut.message and "multiproc_executor.py" in cut.message


def test_one_failure_told_on_seven_lines_is_one_error_with_its_lines(tmp_path):
    state, hints = scan(tmp_path, LLAMA)
    (error,) = state.errors
    assert error.kind == "cuda_oom" and error.line == 5 and error.end_line == 12
    assert [n for n, _ in error.block] == [5, 6, 7, 8, 9, 10, 12]
    assert [h.id for h in hints] == ["llamacpp-offload-oom"]


def test_failures_apart_stay_apart(tmp_path):
    """Two errors with lines between them are two errors: only adjacent lines join."""
    text = LLAMA.replace("llama_model_load_from_file_impl", "print_info: a\nprint_info: b\nprint_info: c\n"
                         "llama_model_load_from_file_impl")
    state, _ = scan(tmp_path, text)
    assert [e.line for e in state.errors] == [5, 11]


LLAMA_LISTENS_FIRST = (
    "build: 5100 (3f2c1d4) with cc (Ubuntu 13.3.0) 13.3.0 for x86_64-linux-gnu\n"
    "main: HTTP server is listening, hostname: 0.0.0.0, port: 8080, http threads: 31\n"
    "main: loading model\n"
    "srv    load_model: loading model '/models/q.gguf'\n"
)


def test_a_failed_llamacpp_start_that_listened_first_has_no_ready_row(tmp_path):
    """llama.cpp listens before it loads: that line is no ready phase when the load then fails."""
    log = tmp_path / "server.log"
    log.write_text(LLAMA_LISTENS_FIRST + "llama_model_load: error loading model: tensor 'blk.2.ffn_up.weight' data is "
                   "not within the file bounds, model is corrupted or incomplete\n"
                   "main: exiting due to model loading error\n")
    state, _ = scan_with_hints(str(log))
    assert state.outcome == "failed" and [p.name for p in state.phases] == ["server_args", "weight_load"]


def test_a_ready_llamacpp_start_that_listened_first_is_ready_after_its_load(tmp_path):
    """Ready where the model is in and the main loop starts (it listened already: 503 until then), not a
    ready phase beside the load, nor at "model loaded" (a chat template it then refuses aborts it first)."""
    log = tmp_path / "server.log"
    log.write_text(LLAMA_LISTENS_FIRST + "llama_context: constructing llama_context\n"
                   "srv          init: initializing slots, n_slots = 4\nmain: model loaded\n"
                   "main: server is listening on http://0.0.0.0:8080 - starting the main loop\n")
    state, _ = scan_with_hints(str(log))
    assert state.outcome == "ready" and state.ready_line == 8
    assert [(p.name, p.start_line) for p in state.phases] == [
        ("server_args", 1), ("weight_load", 3), ("memory_pool", 5), ("ready", 8)]


def test_a_llamacpp_start_that_aborts_between_its_load_and_its_main_loop_is_failed_with_no_ready_row(tmp_path):
    """A build that listened first and aborts on the model's chat template after "model loaded" never
    started its main loop: failed, not ready (P15, llama.cpp#11500)."""
    log = tmp_path / "server.log"
    log.write_text(LLAMA_LISTENS_FIRST + "llama_context: constructing llama_context\n"
                   "srv          init: initializing slots, n_slots = 1\nmain: model loaded\n"
                   "terminate called after throwing an instance of 'std::runtime_error'\n"
                   "  what():  this custom template is not supported\nAborted (core dumped)\n")
    state, hints = scan_with_hints(str(log))
    assert state.outcome == "failed" and state.ready_line is None
    assert "ready" not in [p.name for p in state.phases]
    assert [h.id for h in hints][:1] == ["llamacpp-template-unsupported"]


def test_a_vllm_traceback_pasted_without_the_first_character_is_read_to_its_exception(tmp_path):
    """A paste that lost its first character ("VllmWorkerProcess pid=214) ERROR …"): its first line is the
    worker's like the rest, and the traceback runs on to its exception, not "cut short" on line 1 (P16)."""
    tag = "(VllmWorkerProcess pid=214) ERROR 09-27 05:20:38 multiproc_worker_utils.py:233] "
    log = tmp_path / "server.log"
    log.write_text(tag[1:] + "Exception in worker VllmWorkerProcess while processing method determine_num_available_"
                   "blocks: CUDA out of memory. Tried to allocate 19.63 GiB., Traceback (most recent call last):\n"
                   + tag + '  File "/x/vllm/worker/worker.py", line 223, in determine_num_available_blocks\n'
                   + tag + "    self.model_runner.profile_run()\n"
                   + tag + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 19.63 GiB.\n")
    state, _ = scan_with_hints(str(log))
    root = state.first_error
    assert root is not None and root.kind in ("cuda_oom", "OutOfMemoryError"), root  # (not "Traceback": cut short)


def test_an_old_eagle_logs_draft_load_and_capture_are_the_drafts_own(tmp_path):
    """SGLang 0.4.1-0.4.3 loads the EAGLE draft after the target's graphs and captures the draft's
    with the target's words ("Capture cuda graph begin"): they are the draft's phase, not more of
    the target's graph capture."""
    target = (
        "[2025-01-20 10:00:05 TP{r}] Init torch distributed begin.\n"
        "[2025-01-20 10:00:06 TP{r}] Load weight begin. avail mem=78.50 GB\n"
        "[2025-01-20 10:00:40 TP{r}] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.40 GB\n"
        "[2025-01-20 10:00:41 TP{r}] Memory pool end. avail mem=8.20 GB\n"
        "[2025-01-20 10:00:42 TP{r}] Capture cuda graph begin. This can take up to several minutes.\n"
        "[2025-01-20 10:01:10 TP{r}] Capture cuda graph end. Time elapsed: 28.10 s\n"
    )
    draft = (
        "[2025-01-20 10:01:11 TP{r}] Init torch distributed begin.\n"
        "[2025-01-20 10:01:11 TP{r}] Load weight begin. avail mem=7.90 GB\n"
        "[2025-01-20 10:01:14 TP{r}] Load weight end. type=LlamaForCausalLMEagle, dtype=torch.bfloat16, avail mem=7.00 GB\n"
        "[2025-01-20 10:01:15 TP{r}] Memory pool end. avail mem=6.10 GB\n"
        "[2025-01-20 10:01:16 TP{r}] Capture cuda graph begin. This can take up to several minutes.\n"
        "[2025-01-20 10:01:40 TP{r}] Capture cuda graph end. Time elapsed: 24.00 s\n"
    )
    log = tmp_path / "server.log"
    log.write_text(
        "[2025-01-20 10:00:00] server_args=ServerArgs(model_path='/models/llama-3.1-8b', tp_size=2, "
        "speculative_algorithm='EAGLE', speculative_draft_model_path='/models/eagle-llama-3.1-8b')\n"
        + "".join(target.format(r=r) for r in (0, 1)) + "".join(draft.format(r=r) for r in (0, 1))
        + "[2025-01-20 10:01:41 TP0] max_total_num_tokens=425000, max_prefill_tokens=16384, max_running_requests=48\n"
        "[2025-01-20 10:01:42] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        "[2025-01-20 10:01:45] The server is fired up and ready to roll!\n"
    )
    state, _ = scan_with_hints(str(log))
    phases = {p.name: p for p in state.phases}
    assert state.outcome == "ready"
    graphs, draft_init = phases["cuda_graph"], phases["draft_init"]
    assert (graphs.start_line, graphs.end_line, graphs.seconds) == (6, 13, 28.0)  # the target's capture alone
    assert (draft_init.start_line, draft_init.end_line, draft_init.seconds) == (14, 25, 29.0)  # its dist-init line to its graphs


#: vLLM's ``logger.exception``: the exception's message on the record's first line, its traceback on the
#: record's next lines, each under the same prefix (the exception's own line is the traceback's last)
LOGGED = "ERROR 07-07 02:26:35 [engine.py:448] "
LOGGED_TB = (
    LOGGED + "Traceback (most recent call last):\n"
    + LOGGED + '  File "/usr/lib/python3/dist-packages/vllm/engine/multiprocessing/engine.py", line 436, in run_mp_engine\n'
    + LOGGED + "    engine = MQLLMEngine.from_vllm_config(\n"
    + LOGGED + '  File "/usr/lib/python3/dist-packages/vllm/worker/worker.py", line 560, in _check_if_gpu_supports_dtype\n'
)
BF16 = ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute "
        "capability 7.5. You can use float16 instead by explicitly setting the dtype flag in CLI, for example: --dtype=half.")


def test_a_traceback_cut_short_under_its_loggers_message_is_that_message(tmp_path):
    """A paste that stops inside a ``logger.exception`` traceback (before its exception line): the
    message the logger gave on the record's first line is the error's (before: "traceback cut short",
    the cause on the line above it unread, no hint — a published vLLM log)."""
    state, hints = scan(tmp_path, LOGGED + BF16 + "\n" + LOGGED_TB)
    (error,) = state.errors
    assert error.message.startswith("Bfloat16 is only supported") and "cut short" in error.message, error.message
    assert [h.id for h in hints] == ["bf16-unsupported"], hints


def test_an_error_record_before_another_records_traceback_is_not_its_message(tmp_path):
    """The line above is another record (a second earlier): the traceback's message is unknown."""
    state, _ = scan(tmp_path, "ERROR 07-07 02:26:34 [engine.py:300] " + BF16 + "\n" + LOGGED_TB)
    cut = [e for e in state.errors if e.kind == "Traceback"]
    assert cut and cut[0].message.startswith("traceback cut short"), [e.message for e in state.errors]


def test_an_exception_message_its_logger_goes_on_writing_under_the_same_prefix_is_one_error(tmp_path):
    """vLLM writes a worker's traceback line by line under the record's prefix, and so the message's
    next lines ("Reasons:", then one a line): they are the error's (before: left out, and with them
    the only words that named the cause, the CPU's missing AMX)."""
    prefix = "(Worker pid=9) ERROR 12-07 13:02:16 [multiproc_executor.py:953] "
    later = "(Worker pid=9) ERROR 12-07 13:02:17 [multiproc_executor.py:953] "
    text = (prefix + "Traceback (most recent call last):\n"
            + prefix + '  File "/x/vllm/model_executor/kernels/linear/__init__.py", line 90, in choose_kernel\n'
            + prefix + "    raise ValueError(\n"
            + prefix + "ValueError: Failed to find a kernel that can implement the ScaledMM linear layer. Reasons: \n"
            + prefix + "CPUFp8W8A8BlockScaledMMKernel requires AMX tile support (Sapphire Rapids or newer)..\n"
            + later + "WorkerProc is shutting down.\n")  # a record of its own, a second later
    state, _ = scan(tmp_path, text)
    (error,) = [e for e in state.errors if e.kind == "ValueError"]
    assert [n for n, _ in error.block] == [1, 2, 3, 4, 5], error.block
