"""Logs saved through docker compose, ``docker logs -t`` or ``kubectl logs --prefix``: the carrier's
label in front of each line is read past, so the server's own lines are read as they would be bare
(issue 32). The label shapes are the carriers' own (see ``tui.core.carriers``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support import run_cli
from tui.commands.scan import scan_file, to_json
from tui.core.carriers import label_end, service

FIXTURES = Path(__file__).parent / "fixtures"

# What each carrier writes in front of a line (one service, or one pod, throughout).
LABELS = {
    "compose v1": "sglang_1 | ",
    "compose v2": "vllm-1  | ",
    "compose v2, widest name": "server-1 | ",
    "compose v2 --timestamps": "vllm-1  | 2026-03-04T11:00:02.104217800Z ",
    "docker logs -t": "2026-03-04T11:00:02.104217800Z ",
    "kubectl --prefix": "[pod/llm-0/server] ",
    "kubectl --prefix --timestamps": "[pod/llm-0/server] 2026-03-04T11:00:02.1042178Z ",
    "GitHub Actions": "2026-03-04T11:00:02.1042178Z ",
    "Buildkite": "[2026-03-04T11:00:02.104Z] ",
    "journalctl": "Mar 04 11:00:02 gpu-3 vllm[4321]: ",
    "journalctl -o short-iso": "2026-03-04T11:00:02+0000 gpu-3 python3[4321]: ",
    "journalctl, a locale's month in lower case": "mar 04 11:00:02 gpu-3 vllm[4321]: ",
    "a wrapper's stderr logger": "2026-03-04 11:00:02 | ERROR | stderr | ",
    "mpirun --tag-output": "[1,0]<stderr>:",
    "mpirun --timestamp-output": "Wed Mar  4 11:00:02 2026[1,0]<stdout>:",    "Docker Desktop's log view": "2026-03-04 11:00:02 ",
}
# Bare fixtures of each server's start, ready and failed (TGI's headers begin with an RFC 3339 time).
BARE = [
    "sglang_eagle3_tp8_ready.log",
    "sglang_cuda_oom_graph.log",
    "case_vllm_cpu_ready.log",
    "case_vllm_graph_capture_oom.log",
    "case_vllm_tp8_tagged_lines_interleaved.log",
    "case_tgi_shard_oom.log",
    "case_tgi_two_shards_ready.log",
]


@pytest.mark.parametrize("label", LABELS.values(), ids=list(LABELS))
@pytest.mark.parametrize("name", BARE)
def test_a_carried_log_reads_as_the_bare_one(tmp_path, name, label):
    """Each line behind the label (a ``\\r``-joined bar gets one label per line, as compose writes
    it): the same verdict, phases, errors, times and hints as the bare log."""
    bare = FIXTURES / name
    carried = tmp_path / name
    carried.write_bytes(re.sub(rb"(?m)^(?!\Z)", label.encode(), bare.read_bytes()))
    assert to_json(scan_file(str(carried))) == to_json(scan_file(str(bare)))


def _scan_json(path: Path) -> dict:
    result = run_cli("scan", "--json", str(path))
    return json.loads(result.stdout)


def test_compose_v2_log_of_two_services_reads_the_servers_lines():
    """A router's lines between the server's (two services, one log): the server's phases per rank,
    their times from its own headers, ready; the router's lines and compose's own are no errors."""
    found = _scan_json(FIXTURES / "carriers" / "compose_v2_sglang_and_router.log")
    assert (found["server"], found["outcome"], found["ready_line"]) == ("sglang", "ready", 21)
    phases = {p["name"]: (p["start_line"], p["end_line"], p["seconds"], p["ranks"]) for p in found["phases"]}
    assert phases["weight_load"] == (7, 10, 12.0, 2)
    assert phases["cuda_graph"] == (14, 17, 11.0, 2)
    assert found["errors"] == []


def test_compose_v1_log_with_timestamps_reads_the_servers_failure():
    """``docker-compose logs -t`` (v1: ``vllm_1 | `` and the daemon's time): vLLM named, its phases
    timed by its own headers, the engine's failure and its OOM as the root cause."""
    found = _scan_json(FIXTURES / "carriers" / "compose_v1_vllm_timestamps.log")
    assert (found["server"], found["outcome"]) == ("vllm", "failed")
    phases = {p["name"]: (p["start_line"], p["end_line"], p["seconds"]) for p in found["phases"]}
    assert phases["weight_load"] == (5, 7, 10.0)
    assert [e["kind"] for e in found["errors"]] == ["engine_failed", "OutOfMemoryError"]
    assert found["errors"][1]["message"].startswith("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")


@pytest.mark.parametrize(
    ("text", "server_text"),
    [
        ("vllm-1  | INFO 03-04 11:00:02 [api_server.py:1] up", "INFO 03-04 11:00:02 [api_server.py:1] up"),
        ("sglang_1 | [2026-03-04 11:00:02 TP0] Load weight begin.", "[2026-03-04 11:00:02 TP0] Load weight begin."),
        ("my.svc_2 | x", "x"),
        ("  3: [2026-02-22 23:38:51] INFO:     Started", "[2026-02-22 23:38:51] INFO:     Started"),
        ("[pod/llm-0/server] INFO 03-04 11:00:02 [a.py:1] up", "INFO 03-04 11:00:02 [a.py:1] up"),
        ("2026-03-04T11:00:02.104217800Z INFO 03-04 11:00:02 [a.py:1] up", "INFO 03-04 11:00:02 [a.py:1] up"),
        ("[pod/llm-0/server] 2026-03-04T11:00:02Z INFO 03-04 11:00:02 [a.py:1] up", "INFO 03-04 11:00:02 [a.py:1] up"),
        ("tgi-1  | 2026-09-25T09:00:00.123456Z  INFO text_generation_launcher: Args", "2026-09-25T09:00:00.123456Z  INFO text_generation_launcher: Args"),
        # a container_name with no -N: compose v2 pads every name to the widest + 1, then " | "
        ("mysglang  | [2026-03-04 11:00:02 TP0] Load weight begin.", "[2026-03-04 11:00:02 TP0] Load weight begin."),
        ("ollama  | llama_model_load: error loading model", "llama_model_load: error loading model"),
        ("llm.server     | 2026-03-04T11:00:02.104217800Z x", "x"),
        ("2024-05-01T10:00:00.1234567Z INFO 05-01 10:00:00 [a.py:1] up", "INFO 05-01 10:00:00 [a.py:1] up"),
        ("[2025-11-06T02:10:00.702Z] [2025-11-06 02:10:00] Received sigquit", "[2025-11-06 02:10:00] Received sigquit"),
        ("[2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302] x", "ERROR 03-10 08:07:20 [core.py:302] x"),
        ("Dec  6 06:50:00 gpu-3 vllm[1234]: INFO 12-06 06:50:00 [a.py:1] up", "INFO 12-06 06:50:00 [a.py:1] up"),
        ("2024-04-27 10:13:05 | ERROR | stderr |   File \"/x.py\", line 1", '  File "/x.py", line 1'),
        ("Thu Jan 23 11:55:50 2025[1,1]<stderr>:    scheduler.event_loop_overlap()", "    scheduler.event_loop_overlap()"),
        ("2023-11-29 11:34:19   File \"/x.py\", line 1", '  File "/x.py", line 1'),
        ("2023-11-29 11:34:19 ", ""),
    ],
)
def test_a_carriers_label_is_read_past(text, server_text):
    assert text[label_end(text) :] == server_text


@pytest.mark.parametrize(
    "text",
    [
        "INFO 03-04 11:00:02 [api_server.py:1] route | method | path",  # ' | ' in the server's own line
        "[2026-03-04 11:00:32 TP0] max_total_num_tokens=200000 | note",
        "sglang | no container index, not compose's",
        "worker-1| no space before the bar",
        "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.02s/it]",
        "| model | size |",
        "2026-09-25T09:00:00.123456Z  INFO text_generation_launcher: Args",  # TGI's own header
        "2026-09-25T09:00:00.123456789Z ERROR text_generation_launcher: Error when initializing model",
        "[pod/llm-0] no container",
        "2026-03-04T11:00:02Z INFO 03-04 11:00:02 [a.py:1] docker's time always has nine digits",
        "vllm-1 exited with code 1",
        "total | 2 GPUs",  # one space and no -N: not compose's padding
        "GPU  0 | 80 GB",  # a space inside the name
        "2024-05-01T10:00:00.123456Z  INFO text_generation_launcher: Args",  # TGI's own, six digits
        "[2026-03-04 11:00:32 TP0] Load weight begin.",  # SGLang's own header: a space, not a T
        "Dec 06 06:50:00 gpu-3 kernel: no PID, no unit's process",
        "nov 02 10:34 a time with no seconds",
        "2024-04-27 10:13:05 | INFO | model_worker | the wrapper's own logger, not a relayed stream",
        "[1,0] not mpirun's stream tag",
        "2024-01-01 10:00:00 INFO a logger's own level after its time",
        "2024-01-01 10:00:00 - root - WARNING - a logger's own fields after its time",
        "2024-01-01 10:00:00,123 - lmdeploy - INFO - its milliseconds after a comma",
    ],
)
def test_a_look_alike_is_not_cut(text):
    assert label_end(text) == 0
    assert service(text) is None


@pytest.mark.parametrize(
    ("text", "name"),
    [("vllm-1  | x", "vllm-1"), ("sglang_1 | x", "sglang_1"), ("open-webui-1  | x", "open-webui-1"),
     ("mysglang  | x", "mysglang"), ("[pod/llm-0/server] x", None), ("  3: x", None)],
)
def test_the_compose_container_is_named(text, name):
    assert service(text) == name


def test_a_container_name_without_index_is_read_as_compose():
    """``container_name: mysglang`` (no ``-N``): the label is read past, so the server's phases and
    ready are its own (before, only the ready line was recognised, as its words are anywhere)."""
    found = _scan_json(FIXTURES / "carriers" / "compose_container_name_sglang.log")
    assert (found["server"], found["outcome"], found["ready_line"]) == ("sglang", "ready", 10)
    phases = {p["name"]: (p["start_line"], p["end_line"]) for p in found["phases"]}
    assert phases["weight_load"] == (4, 5)
    assert phases["cuda_graph"] == (7, 8)


def test_another_services_ready_words_are_not_the_servers_ready():
    """A web UI's uvicorn says "Application startup complete." while vLLM loads, then vLLM fails:
    FAILED at vLLM's own root cause, never ready, and the web UI's connection errors are no errors
    of the server's (before: READY at the web UI's line 8)."""
    found = _scan_json(FIXTURES / "carriers" / "compose_v2_vllm_and_webui_fails.log")
    assert (found["server"], found["outcome"], found["ready_line"]) == ("vllm", "failed", None)
    assert [(e["line"], e["kind"]) for e in found["errors"]] == [(14, "engine_failed"), (15, "OutOfMemoryError")]
    assert found["root_cause"]["line"] == 15
    phases = {p["name"]: (p["start_line"], p["end_line"]) for p in found["phases"]}
    assert phases["weight_load"][0] == 5 and "ready" not in phases


def test_another_services_lines_before_the_server_are_read_again_without_them():
    """The web UI's traceback and its uvicorn start come before vLLM's first line: once vLLM's
    container is known, the log is read again without them, so the server is ready at its own
    uvicorn line 24, not at the web UI's line 18, and the web UI's traceback is no error."""
    found = _scan_json(FIXTURES / "carriers" / "compose_v2_vllm_and_webui_before.log")
    assert (found["server"], found["outcome"], found["ready_line"]) == ("vllm", "ready", 24)
    assert found["errors"] == []
    phases = {p["name"]: (p["start_line"], p["end_line"]) for p in found["phases"]}
    assert phases["weight_load"] == (14, 17)


def test_watch_reads_a_compose_log_as_the_servers(tmp_path):
    """`watch --plain` on the same log: the server named, its phases, and FAILED at the root cause."""
    log = tmp_path / "compose.log"
    log.write_bytes((FIXTURES / "carriers" / "compose_v1_vllm_timestamps.log").read_bytes())
    out = run_cli("watch", "--plain", "--gpus", "none", "--timeout", "20", str(log), timeout=60).stdout
    assert "server: vllm (line 2)" in out
    assert "weight load done in 10.0 s (lines 5-7)" in out
    assert out.rstrip().splitlines()[-1].split("  ", 2)[-1].startswith("FAILED at line 11: OutOfMemoryError: CUDA out of memory.")
