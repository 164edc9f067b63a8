"""Hints are never wrong: the rules of issue 19, run over every fixture in tests/fixtures and over
every hint in hints.toml.

- a number comes from the right field of the log (a port is never read out of a timestamp or a
  source line such as ``socket.cpp:759``);
- a hint names only flags of the server that wrote the log;
- advice to lower or raise a memory fraction moves it the right way from the value this run used;
- no advice to wait where the log says waiting cannot help (Ray: more GPUs asked than exist);
- no catch-all ("see the traceback", "report upstream").
"""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from tui.commands.scan import scan_with_hints
from tui.core.hints import knowledge

FIXTURES = Path(__file__).parent / "fixtures"
LOGS = sorted(p.name for p in FIXTURES.glob("*.log"))

# Each server's own command-line flags that a hint may name (the servers' --help); a flag in
# DOCKER is the container's, right whatever the server.
SERVER_FLAGS = {
    "sglang": {
        "--mem-fraction-static", "--cuda-graph-max-bs", "--log-level", "--disable-cuda-graph", "--context-length",
        "--watchdog-timeout", "--dist-timeout", "--dist-init-addr", "--disable-custom-all-reduce",
        "--speculative-draft-model-path", "--port", "--tp", "--chunked-prefill-size", "--max-running-requests",
        "--trust-remote-code", "--model-path", "--attention-backend", "--chat-template", "--enable-torch-compile",
        "--reasoning-parser", "--dtype", "--kv-cache-dtype", "--served-model-name",
    },
    "vllm": {
        "--gpu-memory-utilization", "--max-model-len", "--max-num-seqs", "--limit-mm-per-prompt", "--enable-lora", "--config-format", "--enforce-eager", "--port",
        "--tensor-parallel-size", "--disable-custom-all-reduce", "--trust-remote-code", "--max-num-batched-tokens",
        "--speculative-config", "--compilation-config", "--hf-overrides", "--kv-cache-memory", "--kv-cache-memory-bytes", "--model", "--block-size",
        "--load-format", "--tokenizer-mode", "--host", "--generation-config", "--ssl-certfile", "--ssl-keyfile",
        "--ssl-ca-certs", "--worker-cls", "--lora-modules",
        "--enable-chunked-prefill",
        "--pipeline-parallel-size", "--dtype", "--hf-config-path", "--tokenizer", "--max-lora-rank", "--quantization",
        "--chat-template", "--enable-auto-tool-choice", "--tool-call-parser", "--reasoning-parser",
        "--enable-sleep-mode", "--enable-expert-parallel", "--runner", "--convert", "--allowed-origins", "--task",
        "--structured-outputs-config", "--distributed-executor-backend", "--enable-reasoning", "--worker-use-ray",
        "--kv-cache-dtype", "--attention-backend", "--served-model-name", "--swap-space", "--kv-transfer-config",
        "--disable-hybrid-kv-cache-manager",
    },
    "trtllm": {"--port", "--tp_size", "--pp_size", "--kv_cache_free_gpu_memory_fraction", "--max_batch_size", "--max_num_tokens", "--max_seq_len",
               "--trust_remote_code", "--extra_llm_api_options"},
    "tgi": {"--port", "--num-shard", "--max-total-tokens", "--max-input-tokens", "--max-batch-prefill-tokens",
            "--cuda-memory-fraction", "--quantize", "--trust-remote-code", "--max-batch-total-tokens"},
    "llamacpp": {"--port", "--ctx-size", "-c", "--n-gpu-layers", "-ngl", "--parallel", "--cache-type-k", "--cache-type-v",
                 "--flash-attn", "--mlock", "--no-mmap", "--host", "--lora", "--mmproj", "--model-draft", "--path",
                 "--ssl-key-file", "--ssl-cert-file", "--grammar", "--grammar-file", "--chat-template-file", "--chat-template",
                 "--jinja", "--no-jinja", "--batch-size", "--ubatch-size", "--override-kv", "--split-mode", "--spec-type",
                 "--lookup-cache-static", "--load-mode", "--mmap", "--direct-io", "--override-tensor", "--alias"},
}
DOCKER = {"--shm-size", "--ipc", "--port", "--help", "--gpus", "--runtime", "--ulimit", "--mpi", "--no-build-isolation"}  # the container's, launcher's and installer's flags (docker run, nvidia-ctk, srun, pip), and those every server has
RAY = {"--address", "--num-gpus"}  # `ray start`'s own, for a server run over Ray (vLLM's workers)
FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]*")  # "--kv_cache_free_gpu_memory_fraction" too
FRACTION_FLAGS = {"vllm": "--gpu-memory-utilization", "sglang": "--mem-fraction-static", "trtllm": "--kv_cache_free_gpu_memory_fraction"}
LOGGED_FRACTION = {
    "vllm": re.compile(r"gpu_memory_utilization(?:=|['\"]:\s*)([\d.]+)"),
    "sglang": re.compile(r"mem_fraction_static(?:=|['\"]:\s*)([\d.]+)"),
    "trtllm": re.compile(r"free_gpu_memory_fraction=([\d.]+)"),
}
DEFAULT_FRACTION = {"vllm": 0.9}  # where the args line names only what the run changed
TIMESTAMP = re.compile(r"\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?")
CATCH_ALL = re.compile(r"(?i)\bsee the traceback\b|\breport (?:it )?upstream\b|\bunknown error\b")


def texts(hint) -> list[str]:
    return [hint.why, *(a.text for a in hint.fix)]


@pytest.fixture(scope="module")
def scanned() -> dict[str, tuple]:
    return {name: scan_with_hints(str(FIXTURES / name)) for name in LOGS}


def test_there_are_fixtures_with_hints(scanned):
    """The rules below are only as good as the fixtures that give hints."""
    assert sum(1 for _, hints in scanned.values() if hints) >= 10


@pytest.mark.parametrize("name", LOGS)
def test_a_port_comes_from_an_address_never_a_timestamp(name, scanned):
    text = (FIXTURES / name).read_text(errors="replace")
    stamps = [m.span() for m in TIMESTAMP.finditer(text)]
    _, hints = scanned[name]
    for hint in hints:
        for action in hint.fix:
            if action.text.startswith("free_port"):
                port = action.text.split()[1]
                places = [m.start() for m in re.finditer(rf"(?<![\d.]){port}(?!\d)", text)]
                honest = [
                    at for at in places
                    if not any(a <= at < b for a, b in stamps) and not re.search(r"\.(?:py|cpp|cc|cu|h):$", text[max(0, at - 5):at])
                ]
                assert honest, f"{name}: {hint.id} frees port {port}, which the log has only in a timestamp or a source line"


@pytest.mark.parametrize("name", LOGS)
def test_a_hint_names_only_flags_of_the_server_that_wrote_the_log(name, scanned):
    state, hints = scanned[name]
    quoted = set(FLAG.findall((FIXTURES / name).read_text(errors="replace")))  # the run's own, quoted back
    allowed = SERVER_FLAGS.get(state.server or "", set()) | DOCKER | quoted | (RAY if state.server == "vllm" else set())
    for hint in hints:
        for text in texts(hint):
            for flag in FLAG.findall(text):
                assert flag in allowed, f"{name} ({state.server}): {hint.id} names {flag}"


@pytest.mark.parametrize("name", LOGS)
def test_a_memory_fraction_moves_the_right_way_from_the_value_this_run_used(name, scanned):
    state, hints = scanned[name]
    flag = FRACTION_FLAGS.get(state.server or "")
    if flag is None:
        return
    text = (FIXTURES / name).read_text(errors="replace")
    logged = LOGGED_FRACTION[state.server].search(text)
    used = float(logged.group(1)) if logged else DEFAULT_FRACTION.get(state.server)
    for hint in hints:
        for action in hint.fix:
            parts = action.text.split()
            if parts[:2] != ["set_flag", flag] or len(parts) < 3:
                continue
            assert used is not None, f"{name}: {hint.id} sets {flag} {parts[2]} though the run's value is unknown"
            value = float(parts[2])
            said = hint.why.lower()
            if value < used:
                assert "lower" in said and f"raise {flag}" not in said, (name, hint.id, used, hint.why)
            else:
                assert value > used and "raise" in said, (name, hint.id, used, hint.why)
        for word, number in re.findall(rf"(lower|raise) {re.escape(flag)} to ([\d.]+)", hint.why):
            assert (float(number) < used) if word == "lower" else (float(number) > used), (name, hint.id, used, hint.why)


@pytest.mark.parametrize("name", LOGS)
def test_no_advice_to_wait_where_waiting_cannot_help(name, scanned):
    text = (FIXTURES / name).read_text(errors="replace")
    if "required GPUs exceeds the total number of available GPUs" not in text:
        return
    _, hints = scanned[name]
    assert hints, name
    for hint in hints:
        assert not re.search(r"(?i)give it longer|wait longer|be patient", hint.why), (name, hint.id)


@pytest.mark.parametrize("name", LOGS)
def test_no_catch_all(name, scanned):
    _, hints = scanned[name]
    for hint in hints:
        assert not CATCH_ALL.search(hint.why), (name, hint.id)


#: hints about a setting each server names its own way (another server's flag refused): each flag they name is
#: that server's, written after its name ("vLLM's is --max-model-len")
ACROSS_SERVERS = {"context-flag-of-another-server", "memory-flag-of-another-server", "model-name-flag-of-another-server"}
SERVER_NAMES = {"vllm": "vLLM's", "sglang": "SGLang's", "llamacpp": "llama.cpp's", "tgi": "TGI's", "trtllm": "TensorRT-LLM's"}


def test_a_hint_about_every_servers_names_for_a_setting_gives_each_flag_its_servers_name():
    for hint in knowledge().hints:
        if hint.id not in ACROSS_SERVERS:
            continue
        for template in hint.why:
            for found in FLAG.finditer(template):
                before = template[max(0, found.start() - 16) : found.start()]
                owners = [s for s, flags in SERVER_FLAGS.items() if found.group(0) in flags and SERVER_NAMES[s] in before]
                assert owners, (hint.id, found.group(0), before)


def test_a_hint_without_a_server_names_no_servers_flag():
    """A hint for every server may name only flags every server shares (the container's);
    a hint for one server names only that server's own flags — one ruled out for every other
    server (``not_if = ["server != 'llamacpp'"]``: its words pasted bare, the server unknown) too."""
    for hint in knowledge().hints:
        words = set()
        for template in (*hint.why, *hint.fix):
            words |= set(FLAG.findall(template))
        servers = set(hint.servers) | {c.other.strip("'") for c in hint.not_if
                                        if c.fact == "server" and c.op == "!=" and c.other and c.other.startswith("'")}
        if hint.id in ACROSS_SERVERS:
            continue
        if not servers:
            assert words <= DOCKER, (hint.id, words - DOCKER)
        else:
            for server in servers:
                own = SERVER_FLAGS[server] | DOCKER | (RAY if server == "vllm" else set())
                assert words <= own, (hint.id, server, words - own)


def test_a_template_names_only_values_it_can_get():
    """Every ``{name}`` is a pattern group or a computed value (a typo would silently drop the hint)."""
    from tui.core.hint_fill import Context

    from tui.core.profiles import IDENTITY_KEYS

    computed = {n[1:] for n in dir(Context) if n.startswith("_") and not n.startswith("__")} | IDENTITY_KEYS
    for hint in knowledge().hints:
        groups = set()
        for pattern in (hint.pattern, hint.lines, hint.quiet_after):
            if pattern is not None:
                groups |= set(pattern.groupindex)
        for template in (*hint.why, *hint.fix):
            for _, field, _, _ in string.Formatter().parse(template):
                if field:
                    name = re.split(r"\*|//", field)[0]
                    assert name in groups or name in computed, (hint.id, name)


def test_vllm_kv_error_gives_both_remedies_with_this_runs_numbers():
    _, hints = scan_with_hints(str(FIXTURES / "vllm_kv_failure.log"))
    why = hints[0].why
    assert "--max-model-len to 149344" in why and "raise --gpu-memory-utilization from 0.9" in why
    assert "36.00 GiB needed" in why and "20.51 GiB free" in why and "15.49 GiB more" in why


def test_the_runs_own_fraction_is_the_base_of_the_advice():
    _, hints = scan_with_hints(str(FIXTURES / "case_vllm_oom_at_util_075.log"))
    fix = [a.text for h in hints for a in h.fix]
    assert fix == ["set_flag --gpu-memory-utilization 0.71"]  # 0.75 − (4.00 − 2.31 GiB)/79.19 − 1 %


def test_ray_short_of_gpus_is_no_reason_to_wait():
    _, hints = scan_with_hints(str(FIXTURES / "case_vllm_ray_gpus_short.log"))
    assert [h.id for h in hints][:1] == ["ray-gpus-short"]
    assert "terminated-from-outside" not in [h.id for h in hints]


def test_no_fraction_is_assumed_where_the_log_never_printed_it():
    """trtllm-serve's log does not print its KV-cache fraction: the advice names the flag, no number
    (the run may have set any value)."""
    _, hints = scan_with_hints(str(FIXTURES / "shape_trtllm_executor_oom.log"))
    assert [h.id for h in hints] == ["trtllm-executor-oom"] and hints[0].fix == ()
    assert "--kv_cache_free_gpu_memory_fraction" in hints[0].why and "0.9" not in hints[0].why
