"""A failure pasted without its log headers (an issue's excerpt, a terminal's last screen) is still
named by what only one server prints: its own source files in a traceback, its own advice or
warm-up words (issue 32). The look-alikes: a file of another server imported along the way (old
SGLang ran vLLM's distributed code), a message every server shares. And the lines read before the
server was named are read again under its profile: a loader's error before its first own line."""

from __future__ import annotations

import json

import pytest

from tests.support import run_cli

SGLANG_CAPTURE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 300, in __init__\n'
    "    self.capture()\n"
    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 200.00 MiB is free.\n"
)
OLD_SGLANG_VIA_VLLM = (
    "Traceback (most recent call last):\n"
    '  File "/x/site-packages/vllm/distributed/parallel_state.py", line 444, in all_gather\n'
    "    torch.distributed.all_gather_into_tensor(output, input_)\n"
    "RuntimeError: NCCL communicator was aborted\n"
)
VLLM_KV = ("The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache "
           "(20000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")
VLLM_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/site-packages/vllm/entrypoints/openai/api_server.py", line 186, in <module>\n'
    "    engine = AsyncLLMEngine.from_engine_args(\n"
    "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).\n"
)
SGLANG_POOL = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"


def scan(tmp_path, text: str) -> dict:
    log = tmp_path / "pasted.log"
    log.write_text(text)
    return json.loads(run_cli("scan", "--json", str(log)).stdout)


@pytest.mark.parametrize(
    ("text", "server", "hint"),
    [
        (SGLANG_CAPTURE, "sglang", "graph-capture-oom"),
        (SGLANG_POOL, "sglang", "mem-fraction-too-low"),
        (VLLM_KV, "vllm", "kv-max-seq-len"),
        (VLLM_TRACEBACK, "vllm", "heads-not-divisible-by-tp"),
        # a wrapper's prefix before vLLM's own words
        ("ValueError: [address=127.0.0.1:1, pid=2] User-specified max_model_len (8192) is greater than the derived "
         "max_model_len (max_position_embeddings=4096 or model_max_length=None in model's config.json).\n",
         "vllm", "max-model-len-too-long"),
        # the vllm command's own parser refusing a flag, the line pasted alone (a published log: before, no server)
        ("vllm: error: unrecognized arguments: --enable-reasoning\n", "vllm", "vllm-enable-reasoning-removed"),
        # llama-server's router prints each model server's lines after its pid
        ("0.09.829.518 I log_info: verbosity = 3 (adjust with the `-lv N` CLI arg)\n[53621] 0.13.286.060 E clip_init: "
         "failed to load model '/m/mmproj.gguf': load_hparams: unknown projector type: gemma9uv\n", "llamacpp",
         "llamacpp-unknown-projector"),
    ],
)
def test_a_pasted_failure_is_named_by_what_only_its_server_prints(tmp_path, text, server, hint):
    found = scan(tmp_path, text)
    assert (found["server"], found["outcome"]) == (server, "failed")
    assert [h["id"] for h in found["hints"]][:1] == [hint]


def test_another_servers_file_in_a_traceback_names_no_server(tmp_path):
    """vllm/distributed/ is no vLLM marker: old SGLang imported it."""
    found = scan(tmp_path, OLD_SGLANG_VIA_VLLM)
    assert found["server"] is None and found["outcome"] == "failed"


def test_sglangs_argument_parser_names_sglang_after_vllms_platform_line(tmp_path):
    """SGLang imports vLLM, whose "Automatically detected platform" line has vLLM's shape: the parser's
    own program name (launch_server.py) then names SGLang, so the hint does not call it vLLM."""
    found = scan(tmp_path, "INFO 03-06 10:05:08 __init__.py:190] Automatically detected platform cuda.\n"
                           "usage: launch_server.py [-h] --model-path MODEL_PATH [--port PORT]\n"
                           "launch_server.py: error: unrecognized arguments: --enable-thinking\n")
    assert found["server"] == "sglang"
    assert "the installed sglang has no --enable-thinking" in found["hints"][0]["why"]
    vllm = scan(tmp_path, "INFO 03-06 10:05:08 __init__.py:190] Automatically detected platform cuda.\n"
                          "usage: api_server.py [-h] [--model MODEL]\n"
                          "api_server.py: error: unrecognized arguments: --enable-thinking\n")
    assert vllm["server"] == "vllm"


def test_a_loaders_error_before_its_first_own_line_is_the_root_cause(tmp_path):
    """An older llama.cpp prints "error loading model: failed to open …" before its first
    ``llama_…:`` line names it: read again under llama.cpp's profile, that line is the root cause
    (before: the later "unable to load model", and no hint)."""
    found = scan(tmp_path, '{"timestamp":1,"level":"INFO","function":"main","line":1,"message":"build info"}\n'
                           "error loading model: failed to open models/q.gguf: No such file or directory\n"
                           "llama_load_model_from_file: failed to load model\n"
                           '{"timestamp":1,"level":"ERROR","function":"load_model","line":2,"message":"unable to load model"}\n')
    assert found["server"] == "llamacpp"
    assert found["root_cause"]["line"] == 2
    assert found["root_cause"]["message"].startswith("error loading model: failed to open models/q.gguf")
    assert [h["id"] for h in found["hints"]][:1] == ["gguf-cannot-open"]


def test_the_source_line_that_raises_is_not_the_root_cause(tmp_path):
    """A traceback's source line holds the message's words (`raise ValueError("No available memory
    for the cache blocks. "`): the exception's own line after it is the root cause's message, and
    the frames pasted without their ``Traceback`` line are its block (it starts at line 1)."""
    v = "vllm-1  | ERROR 11-18 18:07:28 engine.py:366] "
    found = scan(tmp_path, v + '  File "/x/vllm/worker/worker.py", line 493, in raise_if_cache_size_invalid\n'
                           + v + '    raise ValueError("No available memory for the cache blocks. "\n'
                           + v + "ValueError: No available memory for the cache blocks. Try increasing "
                                 "`gpu_memory_utilization` when initializing the engine.\n")
    assert found["server"] == "vllm"
    assert [(e["line"], e["kind"]) for e in found["errors"]] == [(1, "ValueError")]
    assert found["root_cause"]["message"].startswith("ValueError: No available memory for the cache blocks. Try")
    assert [h["id"] for h in found["hints"]][:1] == ["kv-too-small"]


CALLED = ("subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/x/main.c', '-O3', '-I/usr/include/python3.10', "
          "'-shared', '-fPIC', '-lcuda', '-o', '/tmp/x/cuda_utils.so']' returned non-zero exit status 1.\n")


def test_a_compilers_words_right_after_the_exception_are_its_root_cause(tmp_path):
    """The compiler's error pasted below the exception it explains (or carried in its message): the
    root cause all the same, the exception its follow-on, and its hint given."""
    found = scan(tmp_path, CALLED + "/tmp/x/main.c:5:10: fatal error: Python.h: No such file or directory\n")
    assert found["root_cause"]["kind"] == "build_headers"
    assert found["root_cause"]["follow_on"]["kind"] == "CalledProcessError"
    assert [h["id"] for h in found["hints"]][:1] == ["python-dev-headers"]


@pytest.mark.parametrize(
    "after",
    [
        # further on, after records of the log's own: by then it explains nothing of this failure
        "[2026-03-04 11:00:01] INFO x\n[2026-03-04 11:00:02] INFO y\n[2026-03-04 11:00:03] INFO z\n/tmp/y/main.c:5:10: fatal error: Python.h: No such file or directory\n",
        # a cause line whose signature may only come before its failure: another rank dying of it
        "n1:1234:1300 [1] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<40123> failed\n",
    ],
    ids=["three lines later", "an NCCL WARN after it"],
)
def test_a_cause_line_after_the_failure_that_does_not_go_with_it_stays_out(tmp_path, after):
    found = scan(tmp_path, CALLED + after)
    assert found["root_cause"]["kind"] == "CalledProcessError"
    assert found["root_cause"]["follow_on"] is None
