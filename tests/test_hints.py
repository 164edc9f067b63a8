"""Hints: known failure → why → fix, from real log files through scan, watch --plain and the core."""

from __future__ import annotations

import json
import string
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import run_cli, screen_text, until
from tui.commands.scan import scan_with_hints
from tui.core import cmdline
from tui.core.cmdline import Action
from tui.core.hints import knowledge, parse
from tui.core.profiles import ProfileError

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SG = "[2026-03-04 11:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=2)\n"
VL = "INFO 08-14 11:00:00 [api_server.py:1] vLLM API server version 0.10.1\n"


def traceback(final: str, *frames: str, prefix: str = "[2026-03-04 11:01:00 TP0] ") -> str:
    body = "".join(f'  File "/x/{f}.py", line 1, in f\n    {f}()\n' for f in frames)
    return f"{prefix}Scheduler hit an exception: Traceback (most recent call last):\n{body}{final}\n"


def scan(tmp_path: Path, text: str):
    log = tmp_path / "server.log"
    log.write_text(text)
    return scan_with_hints(str(log))


def ids(hints) -> list[str]:
    return [h.id for h in hints]


def test_builtin_file_loads_and_every_fix_is_an_action():
    kb = knowledge()
    assert len(kb.hints) >= 25
    for hint in kb.hints:
        assert hint.why and (hint.kinds or hint.pattern or hint.lines or hint.quiet_after), hint.id


def test_every_hint_can_speak_from_its_own_match_alone():
    """A hint's last ``why`` needs only its patterns' groups and the facts its preconditions
    showed (a hint fires only once they are read): it is shown even where the command (and the
    numbers computed from it) is unknown, as in ``scan``."""
    import string

    for hint in knowledge().hints:
        groups = {c.fact for c in hint.when if not c.negated}
        groups |= {c.other for c in hint.when if c.other and not c.negated and c.other.isidentifier()}
        for pattern in (hint.pattern, hint.lines, hint.quiet_after):
            if pattern is not None:
                groups |= set(pattern.groupindex)
        names = {f.split("*")[0].split("//")[0] for _, f, _, _ in string.Formatter().parse(hint.why[-1]) if f}
        assert names <= groups, (hint.id, names - groups)


def test_draft_context_names_both_lengths_and_sets_the_env(tmp_path):
    text = SG + traceback(
        "ValueError: User-specified context_length (262144) is greater than the derived context_length (131072). "
        "To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
        "scheduler", "eagle_worker", "model_config",
    )
    _, hints = scan(tmp_path, text)
    assert ids(hints) == ["context-length-override"]
    assert "(131072)" in hints[0].why and "(262144)" in hints[0].why and "draft" in hints[0].why
    assert [a.text for a in hints[0].fix] == ["set_env SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"]


def test_target_context_too_long_lowers_the_flag_to_the_models_own(tmp_path):
    _, hints = scan_with_hints(str(FIXTURES / "sglang_context_length.log"))
    assert ids(hints) == ["context-length-too-long"]
    assert [a.text for a in hints[0].fix] == ["set_flag --context-length 131072"]


def test_vllm_kv_uses_the_estimate_the_message_prints(tmp_path):
    _, hints = scan_with_hints(str(FIXTURES / "vllm_kv_failure.log"))
    assert ids(hints)[0] == "kv-max-model-len"
    assert [a.text for a in hints[0].fix] == ["set_flag --max-model-len 149344"]


def test_vllm_kv_estimate_from_another_wording(tmp_path):
    text = VL + (
        "ERROR 08-14 11:00:14 [core.py:700] ValueError: To serve at least one request with the model's max seq len "
        "(262144), (24.00 GiB KV cache is needed, which is larger than the available KV cache memory (8.04 GiB). "
        "Based on the available memory, the estimated maximum model length is 121840. Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"
    )
    state, hints = scan(tmp_path, text)
    assert state.outcome == "failed"
    assert [a.text for a in hints[0].fix] == ["set_flag --max-model-len 121840"]


def test_oom_in_graph_capture_wants_a_lower_fraction_by_what_was_missing(tmp_path):
    state = scan_with_hints(str(FIXTURES / "sglang_cuda_oom_graph.log"))[0]
    command = cmdline.parse(["python", "-m", "sglang.launch_server", "--mem-fraction-static", "0.95"])
    (hint,) = knowledge().diagnose(state, command)
    # 2.00 GiB asked, 1.02 GiB free of 79.19 GiB: 0.98/79.19 + 1 % → 0.03 lower
    assert hint.id == "graph-capture-oom" and "lower" in hint.why and "by 0.03" in hint.why
    assert [a.text for a in hint.fix] == ["set_flag --mem-fraction-static 0.92"]
    # without the command the fraction is the one the log's server_args printed (0.95)
    (logged,) = knowledge().diagnose(state)
    assert "by 0.03" in logged.why and [a.text for a in logged.fix] == ["set_flag --mem-fraction-static 0.92"]
    # and where the log printed none, no number is guessed for the flag
    state.identity.pop("mem_fraction")
    (bare,) = knowledge().diagnose(state)
    assert "by 0.03" in bare.why and bare.fix == ()


def test_not_enough_memory_wants_a_higher_fraction_from_the_avail_figures(tmp_path):
    text = SG + (
        "[2026-03-04 11:00:03 TP0] Load weight begin. avail mem=78.00 GB\n"
        "[2026-03-04 11:00:43 TP0] Load weight end. type=LlamaForCausalLM, avail mem=10.00 GB, mem usage=68.00 GB.\n"
    ) + traceback(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "scheduler", "model_runner"
    )
    state, hints = scan(tmp_path, text)
    (hint,) = hints
    assert hint.id == "mem-fraction-too-low"
    # the pool is empty below 1 - 10/78 = 0.872 → 0.88; advice 0.03 above that
    assert "10 of 78 GB" in hint.why and "0.88" in hint.why and "higher" in hint.why
    assert [a.text for a in hint.fix] == ["set_flag --mem-fraction-static 0.91"]
    command = cmdline.parse(["sglang", "serve", "--model-path", "/m", "--mem-fraction-static", "0.93"])
    (again,) = knowledge().diagnose(state, command)
    assert [a.text for a in again.fix] == ["set_flag --mem-fraction-static 0.94"]  # never lower than asked


@pytest.mark.parametrize(
    "text, expected, fix",
    [
        (SG + "[2026-03-04 11:00:03 TP0] ERROR: [Errno 98] error while attempting to bind on address "
         "('0.0.0.0', 30000): address already in use\n", "port-in-use", ["free_port 30000"]),
        (SG + traceback("RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes.",
                        "scheduler"), "memory-unbalanced", ["kill_gpu_holders"]),
        (SG + "[2026-03-04 11:05:00] Scheduler watchdog timeout (self.watchdog_timeout=300, self.busy=True)\n",
         "scheduler-watchdog", ["set_flag --watchdog-timeout 600"]),
        (SG + traceback("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
                        "system error, Error while creating shared memory segment /dev/shm/nccl-abc (size 9637888)",
                        "scheduler"), "shm-too-small", []),
        (SG + traceback("KeyboardInterrupt: terminated", "scheduler"), "terminated-from-outside", []),
        (SG + traceback("AttributeError: 'DeepseekV3ForCausalLM' object has no attribute 'set_eagle3_layers_to_capture'",
                        "eagle_worker"), "eagle3-hooks-missing", []),
    ],
)
def test_known_failures(tmp_path, text, expected, fix):
    state, hints = scan(tmp_path, text)
    assert state.outcome == "failed"
    assert ids(hints)[:1] == [expected]
    assert [a.text for a in hints[0].fix] == fix


V = "ERROR 08-14 11:00:14 [core.py:700] "
W = "WARNING 08-14 11:00:14 [shm_broadcast.py:1] "


@pytest.mark.parametrize(
    "text, expected",
    [
        (SG + traceback("RuntimeError: Gloo connectFullMesh failed with [pair.cc:144] no error", "scheduler"),
         "gloo-interface"),
        (SG + traceback("torch.distributed.DistStoreError: Socket Timeout: socket 10.0.0.2:5000 timed out after "
                        "1800000ms", "scheduler"), "rendezvous-timeout"),
        (VL + V + "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. "
         "Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.\n",
         "sampler-warmup-oom"),
        (VL + V + "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
         "when initializing the engine.\n", "kv-too-small"),
        (VL + V + "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can "
         "be stored in KV cache (65536). Try increasing `gpu_memory_utilization`.\n", "kv-max-seq-len"),
        (VL + V + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n",
         "engine-core-wrapper"),
        (VL + V + "KeyError: 'embed_tokens.weight'\n", "draft-mismatch-any"),
        (SG + traceback("OSError: /models/x is not a local folder and is not a valid model identifier listed on "
                        "'https://huggingface.co/models'", "scheduler"), "model-not-found"),
        (SG + traceback("OSError: [Errno 28] No space left on device", "scheduler"), "disk-full"),
        (SG + "[2026-03-04 11:00:03 TP0] Load weight begin. avail mem=78.00 GB\n" + traceback(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 0 has a total capacity "
            "of 79.19 GiB of which 100.00 MiB is free.", "scheduler", "model_runner"), "weights-oom"),
        (VL + W + "No available shared memory broadcast block found in 60 seconds. This typically happens when "
         "some processes are hanging.\n", "shm-broadcast-wait"),
        (VL + W + "Auto-prefetch is disabled because the filesystem (NFS) is not local\n", "slow-filesystem"),
        (VL + W + "torch.compile takes 2222.5 s in total\n", "torch-compile"),
    ],
)
def test_more_known_failures_through_the_real_classifier(tmp_path, text, expected):
    _, hints = scan(tmp_path, text)
    assert ids(hints)[:1] == [expected]


def test_warnings_that_predict_trouble_get_hints(tmp_path):
    text = SG + (
        "[2026-03-04 11:00:01] WARNING: Entering DeepGEMM JIT Pre-Compile session. It may take a long time "
        "(typically 10-20 mins) if you have not run `sglang.compile_deep_gemm`.\n"
        "[2026-03-04 11:00:02] Warning: User-specified context_length (262144) is greater than the derived "
        "context_length (131072). This may lead to incorrect model outputs or CUDA errors.\n"
    )
    state, hints = scan(tmp_path, text)
    assert state.outcome != "failed"
    assert ids(hints) == ["deepgemm-precompile", "context-override-warning"]
    assert "10–20 min" in hints[0].why and hints[0].line == 2
    assert "illegal memory" in hints[1].why


def test_scan_json_and_human_show_hints():
    log = str(FIXTURES / "sglang_attributeerror_tp8.log")
    out = run_cli("scan", "--json", log)
    data = json.loads(out.stdout)
    (hint,) = data["hints"]
    assert set(hint) == {"id", "why", "fix", "link", "evidence", "figures"} and hint["id"] == "eagle3-hooks-missing"
    assert "Qwen3MoeForCausalLM" in hint["why"] and hint["link"].startswith("https://github.com/sgl-project/")
    human = run_cli("scan", log).stdout
    assert "  hint: Qwen3MoeForCausalLM has no set_eagle3_layers_to_capture" in human


def test_watch_plain_prints_the_hint_just_before_failed(tmp_path):
    """The hint comes before the final verdict (the line a script or `tail -1` stops at), as in --json."""
    log = tmp_path / "v.log"
    log.write_bytes((FIXTURES / "vllm_kv_failure.log").read_bytes())
    out = run_cli("watch", "--plain", "--timeout", "20", str(log), timeout=60).stdout
    lines = out.splitlines()
    failed = next(i for i, line in enumerate(lines) if "FAILED at line" in line)
    hint = next(i for i, line in enumerate(lines) if "hint: the KV cache left after the weights" in line)
    assert failed - 2 <= hint < failed and "149344 tokens" in lines[hint]  # (its link on a line of its own)
    assert "set_flag --max-model-len 149344" in lines[hint]


# ------------------------------------------------------------------ the user's file


def test_user_file_goes_first_and_replaces_a_builtin_id(tmp_path, monkeypatch):
    user = tmp_path / "hints.toml"
    user.write_text(
        '[[hints]]\nid = "kv-max-model-len"\npattern = "estimated maximum model length is (?P<e>\\\\d+)"\n'
        'why = "ours: {e}"\nfix = ["set_flag --max-model-len {e//2}"]\n'
    )
    monkeypatch.setenv("WATCHTOWER_HINTS", str(user))
    kb = knowledge()
    assert [h.id for h in kb.hints].count("kv-max-model-len") == 1
    _, hints = scan_with_hints(str(FIXTURES / "vllm_kv_failure.log"))
    assert hints[0].why == "ours: 149344" and [a.text for a in hints[0].fix] == ["set_flag --max-model-len 74672"]


@pytest.mark.parametrize(
    "body, words",
    [
        ('[[hints]]\nid = "x"\nwhy = "w"\npattern = "a"\ncolour = "red"\n', ["hints[0]", "unknown key 'colour'"]),
        ('[[hints]]\nid = "x"\nwhy = "w"\npattern = "(a"\n', ["hints.x.pattern", "bad pattern"]),
        ('[[hints]]\nid = "x"\nwhy = "w"\npattern = "a"\nfix = ["reboot now"]\n', ["hints.x.fix", "unknown fix action"]),
        ('[[hints]]\nid = "x"\nwhy = "w"\n', ["hints.x", "needs a 'kind'"]),
        ('[[hints]]\nid = "x"\nwhy = "w"\nkind = "a"\nquiet_after = "b"\n', ["hints.x", "'quiet_after' matches a quiet log"]),
        ('[[hints]]\nid = "x"\nwhy = "w"\nkind = "a"\nroot = "yes"\n', ["hints.x.root"]),
        ('[[hints]]\nid = "x"\npattern = "a"\n', ["hints.x.why"]),
        ("[[hints]\n", ["not valid TOML"]),
    ],
)
def test_bad_user_file_is_refused_in_one_line(tmp_path, monkeypatch, body, words):
    user = tmp_path / "hints.toml"
    user.write_text(body)
    monkeypatch.setenv("WATCHTOWER_HINTS", str(user))
    with pytest.raises(ProfileError) as caught:
        knowledge()
    message = str(caught.value)
    assert "\n" not in message and str(user) in message
    assert all(w in message for w in words), message
    log = tmp_path / "l.log"
    log.write_text(SG)
    for path in (log, FIXTURES / "sglang_eagle3_tp8_ready.log"):  # (a ready log needs no hint, and is refused too)
        out = run_cli("scan", str(path), env={"WATCHTOWER_HINTS": str(user)})
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_a_log_with_nothing_to_explain_is_scanned_without_reading_the_hints(monkeypatch):
    from tui.core import hints

    def refuse(text, source):
        raise AssertionError(f"{source} parsed")

    monkeypatch.setattr(hints, "_builtin", None)
    monkeypatch.setattr(hints, "parse", refuse)
    state, found = scan_with_hints(str(FIXTURES / "case_vllm_v2_runner_eagle3_ready.log"))
    assert state.ready_line is not None and found == []
    with pytest.raises(AssertionError, match="hints.toml parsed"):  # a log with an error to explain reads them
        scan_with_hints(str(FIXTURES / "vllm_kv_failure.log"))


def test_versions_rules_compare_release_numbers():
    kb = parse('[[versions]]\nid = "v"\npackage = "a"\nbelow = "0.6.4"\nwith = "b"\nwith_at_least = "2.5"\nwhy = "w"\n', "t")
    assert [r.id for r in kb.bad_versions({"a": "0.6.3.post1", "b": "2.5.1+cu124"})] == ["v"]
    assert kb.bad_versions({"a": "0.6.4", "b": "2.5.1"}) == []
    assert kb.bad_versions({"a": "0.6.3", "b": "2.4.0"}) == []
    assert kb.bad_versions({"a": "0.6.3"}) == []


# ------------------------------------------------------------------ command lines and fixes


def test_parse_sglang_vllm_trtllm_command_lines():
    sg = cmdline.parse(
        ["env", "CUDA_VISIBLE_DEVICES=0,1", "python3", "-m", "sglang.launch_server", "--model-path", "/m", "--tp", "8",
         "--speculative-algorithm", "eagle3", "--speculative-draft-model-path=/d", "--context-length", "262144",
         "--mem-fraction-static", "0.85", "--port", "31000", "--nnodes", "2", "--dist-init-addr", "10.0.0.1:5000",
         "--some-unknown-flag", "x"]
    )
    assert (sg.server, sg.python, sg.model, sg.tp, sg.draft, sg.spec_algorithm) == ("sglang", "python3", "/m", 8, "/d", "EAGLE3")
    assert (sg.context_length, sg.mem_fraction, sg.port, sg.nnodes, sg.dist_port) == (262144, 0.85, 31000, 2, 5000)
    assert sg.env == {"CUDA_VISIBLE_DEVICES": "0,1"} and sg.gpus_needed == 4
    vl = cmdline.parse(["vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2", "--max-model-len", "32768",
                        "--speculative-config", '{"method": "eagle3", "model": "/draft"}'])
    assert (vl.server, vl.model, vl.tp, vl.context_length, vl.port, vl.draft) == ("vllm", "Qwen/Qwen3-8B", 2, 32768, 8000, "/draft")
    dpa = cmdline.parse(["sglang", "serve", "--model-path", "/m", "--tp", "8", "--dp", "8", "--enable-dp-attention"])
    assert (dpa.dp, dpa.gpus_needed) == (8, 8)
    assert cmdline.parse(["sglang", "serve", "--model-path", "/m", "--tp", "2", "--dp", "4"]).gpus_needed == 8
    tr = cmdline.parse(["trtllm-serve", "/m", "--tp_size", "4", "--max_seq_len", "8192"])
    assert (tr.server, tr.model, tr.tp, tr.context_length) == ("trtllm", "/m", 4, 8192)
    assert cmdline.parse(["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]).server == "vllm"


def test_apply_replaces_a_flag_in_any_spelling_and_sets_env():
    argv = ["python", "-m", "sglang.launch_server", "--mem_fraction_static=0.9", "--tp", "8", "--disable-cuda-graph"]
    actions = [Action.parse("set_flag --mem-fraction-static 0.85"), Action.parse("set_env A=1"),
               Action.parse("drop_flag --disable-cuda-graph"), Action.parse("kill_gpu_holders")]
    words, env = cmdline.apply(argv, {"B": "2"}, actions)
    assert words == ["python", "-m", "sglang.launch_server", "--tp", "8", "--mem-fraction-static", "0.85"]
    assert env == {"B": "2", "A": "1"}
    words, _ = cmdline.apply(["vllm", "serve", "m", "--tensor-parallel-size", "2"], {}, [Action.parse("set_flag -tp 4")])
    assert words == ["vllm", "serve", "m", "-tp", "4"]


@pytest.mark.parametrize("text", ["set_env =1", "set_flag max 1", "free_port x", "kill_gpu_holders now", "rm -rf"])
def test_bad_actions_are_refused(text):
    with pytest.raises(ValueError):
        Action.parse(text)


# ------------------------------------------------------------------ the dashboard


async def test_header_shows_the_hint_under_failed_and_the_report_lists_it():
    from tests.app_support import demo_session, make_app
    from tui.app.header import VerdictHeader
    from tui.present.report import build_report

    session = demo_session("crash-context", upto=None)
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        header = app.query_one(VerdictHeader)
        await until(lambda: "hint: " in screen_text(app), pilot=pilot)
        assert header.verdict.word == "FAILED" and header.size.height == 4  # the hint takes two rows
        assert [h.id for h in header.hints] == ["context-length-override"]
        hint = " ".join(" ".join(screen_text(app).splitlines()[2:4]).split())
        # at 80 columns the fix comes first, so no ellipsis can hide what to do
        assert hint.startswith("hint: fix: set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 in the server's environment")  # no F in a demo
    wide = make_app(session)
    async with wide.run_test(size=(140, 42)) as pilot:
        await until(lambda: "hint: " in screen_text(wide), pilot=pilot)
        hint = " ".join(" ".join(screen_text(wide).splitlines()[2:4]).split())
        assert hint.startswith("hint: the draft's context (163840)") and "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in hint
    report = build_report(session)
    hints_at = report.index("Hints\n")
    assert "  hint: the draft's context (163840) is shorter than the target's (262144)" in report[hints_at:]
    assert report.index("Hints\n") < report.index("Phases\n")


async def test_header_stays_two_rows_without_a_hint():
    from tests.app_support import demo_session, make_app
    from tui.app.header import VerdictHeader

    app = make_app(demo_session("ready", upto=None))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: "READY" in screen_text(app), pilot=pilot)
        await pilot.pause()  # a hint row would come with the next refresh
        header = app.query_one(VerdictHeader)
        assert header.verdict.word == "READY" and header.hints == [] and header.size.height == 2


async def test_a_warning_that_predicts_a_long_silence_is_noted_while_starting():
    from tests.app_support import feed, fixed_session, make_app
    from tui.app.header import VerdictHeader

    session = fixed_session(SG.encode())
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: "STARTING" in screen_text(app), pilot=pilot)
        header = app.query_one(VerdictHeader)
        assert header.judging.verdict.word == "STARTING" and header.judging.last.note is None
        feed(session, b"[2026-03-04 11:00:01 TP0] Load weight begin. avail mem=78.00 GB\n"
                      b"[2026-03-04 11:00:02] WARNING: Entering DeepGEMM JIT Pre-Compile session. It may take a "
                      b"long time (typically 10-20 mins) if you have not run `sglang.compile_deep_gemm`.\n")
        await until(lambda: "note (line 3): slow, not stuck" in screen_text(app), pilot=pilot)
        note = header.judging.last.note  # diagnosed once, by the judging stage, and pushed
        assert header.verdict.word == "STARTING" and note is not None and note.id == "deepgemm-precompile"
        assert header.size.height == 3 and "note (line 3): slow, not stuck" in screen_text(app)


def test_a_warning_sglang_logs_without_its_level_still_carries_its_note(tmp_path):
    """SGLang's lines name no level: its DeepGEMM logger.warning reads like an INFO line, and is
    still the warning it is (the profile says which lines are)."""
    log = tmp_path / "dg.log"
    log.write_text(SG + "[2026-03-04 11:00:01 TP0] Load weight begin. avail mem=78.00 GB\n"
                   "[2026-03-04 11:00:02 TP0] Entering DeepGEMM JIT Pre-Compile session. It may take a long time "
                   "(typically 10-20 mins) if you have not run `sglang.compile_deep_gemm`.\n")
    state, hints = scan_with_hints(str(log))
    assert state.warnings == 1 and [h.id for h in hints] == ["deepgemm-precompile"] and hints[0].line == 3


async def test_a_silent_hub_download_is_noted_while_the_log_is_quiet_after_it():
    """vLLM prints nothing while it downloads from the Hub: the header says so while that line is
    the last, and no longer once the download is over."""
    from tests.app_support import feed, fixed_session, make_app
    from tests.support import screen_text, until
    from tui.app.header import VerdictHeader

    session = fixed_session(VL.encode() + b"INFO 08-14 11:00:01 [gpu_model_runner.py:1953] Starting to load model Qwen/Qwen3-8B...\n")
    app = make_app(session)
    note = "note (line 3): downloading the weights from the Hugging Face Hub"
    async with app.run_test(size=(120, 30)) as pilot:
        header = app.query_one(VerdictHeader)
        await until(lambda: "STARTING" in screen_text(app), pilot=pilot)
        assert header.size.height == 2
        feed(session, b"INFO 08-14 11:00:02 [weight_utils.py:296] Using model weights format ['*.safetensors']\n")
        await until(lambda: header.size.height == 3 and note in screen_text(app), pilot=pilot, what="the note")
        feed(session, b"INFO 08-14 11:09:02 [weight_utils.py:312] Time spent downloading weights for Qwen/Qwen3-8B: 540.1 seconds\n")
        await until(lambda: header.size.height == 2 and "Hugging Face" not in screen_text(app), pilot=pilot,
                    what="the note gone")


async def test_a_restart_that_compiles_cold_again_is_noted_while_it_compiles():
    from tests.app_support import fixed_session, make_app
    from tests.support import screen_text, until
    from tui.app.header import VerdictHeader

    session = fixed_session((FIXTURES / "case_vllm_compile_key_changed_on_restart.log").read_bytes())
    app = make_app(session)
    note = "note: torch.compile starts cold again: its cache key changed since the previous attempt"
    async with app.run_test(size=(160, 30)) as pilot:
        await until(lambda: note in screen_text(app), pilot=pilot, what="the note")
        assert app.query_one(VerdictHeader).size.height == 3


def test_watch_plain_prints_a_warnings_hint_once(tmp_path):
    log = tmp_path / "w.log"
    warning = (b"[2026-03-04 11:00:02] WARNING: Entering DeepGEMM JIT Pre-Compile session. It may take a long time "
               b"(typically 10-20 mins) if you have not run `sglang.compile_deep_gemm`.\n")
    log.write_bytes(SG.encode() + warning + warning + b"[2026-03-04 11:20:00] The server is fired up and ready to roll!\n")
    out = run_cli("watch", "--plain", "--timeout", "20", str(log), timeout=60).stdout
    assert out.count("hint (line 2): slow, not stuck: DeepGEMM compiles its kernels") == 1


def test_a_renamed_kind_still_matches_through_the_message():
    """The classifier's kinds may be renamed (``nccl_timeout`` → something else): hints that say
    ``match = "any"`` still find the failure by its words."""
    from tui.core.state import ErrorReport, StartupState

    message = ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE) ran for 600003 "
               "milliseconds before timing out.")
    for kind in ("nccl_timeout", "collective_timeout", "NcclWatchdogTimeout"):
        state = StartupState(server="sglang", outcome="failed", errors=[ErrorReport(line=9, kind=kind, message=message)])
        assert ids(knowledge().diagnose(state)) == ["collective-timeout"], kind
    other = StartupState(server="sglang", outcome="failed", errors=[ErrorReport(line=9, kind="nccl_timeout", message="x")])
    assert ids(knowledge().diagnose(other)) == ["collective-timeout"]  # and the kind alone still does


def test_a_watch_reads_the_hints_only_once_it_has_a_line_to_explain(monkeypatch):
    """A watch's first frame is drawn before any line is read: the quiet note it asks for needs no
    hints file (parsing it is 15 ms of the first paint); once a line is the last, it is read."""
    import tui.core.hints
    from tests.app_support import feed, fixed_session

    read = []
    monkeypatch.setattr(tui.core.hints, "knowledge", lambda: read.append(1) or knowledge())
    session = fixed_session()
    assert session.quiet_note() is None and read == []
    feed(session, VL.encode() + b"INFO 08-14 11:00:02 [weight_utils.py:296] Using model weights format ['*.safetensors']\n")
    assert session.quiet_note() is not None and read == [1]


def test_a_dashboard_imports_the_hints_module_only_once_a_line_needs_it():
    """The hints module (with what it imports: the hint rules, restart evidence) was imported before a
    watch's first frame by the several-node code, the report and the session, none of which needs it
    until a line is read: a fresh interpreter that imports all a dashboard draws with has not."""
    code = (
        "import sys\n"
        "import tui.app.app, tui.cli, tui.cluster, tui.wiring.watch\n"
        "from tui.commands.parser import build_parser\n"
        "build_parser()\n"
        "print('tui.core.hints' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_no_sentence_of_a_hint_is_one_an_earlier_one_always_says_first():
    """A hint says the first of its sentences whose names all have values: a later sentence that names
    everything an earlier one names (and more) can never be said. A web page saved as the GGUF was told
    it was a Git LFS pointer this way (round 4 R8): its two sentences named no value at all."""
    def names(template: str) -> set[str]:
        return {field.split("*")[0].split("/")[0] for _, field, _, _ in string.Formatter().parse(template) if field}

    for hint in knowledge().hints:
        for later in range(1, len(hint.why)):
            for earlier in range(later):
                assert not names(hint.why[earlier]) <= names(hint.why[later]), (hint.id, earlier, later)
