"""``--smoke``: ready means it answers. A real local HTTP server (stdlib http.server) in a
process of its own plays an OpenAI-compatible server: one that answers the first completion
after a delay gives a time to the first token and READY after it; one answering 500 gives a
failure naming the status and its message; one that streams its answer (server-sent events, as
some servers do even unasked) is answered at its first chunk; without --smoke nothing is sent;
--smoke-timeout bounds each request."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import run_cli
from tui.core.verdict import FAILED, READY, STARTING, SmokeStatus, Verdict, listening_port, smoke_verdict
from tui.sources.smoke import server_message, smoke

pytestmark = pytest.mark.timeout(60)

# The fake server: GET /v1/models names the model; POST /v1/completions answers after DELAY s
# with STATUS; every request is appended to a file (what was asked, in order). STREAM "sse": the
# completion as server-sent events (HTTP/1.0, the body ends at the close), "sse-chunked" the same
# in HTTP/1.1 chunks; either way the first chunk comes after DELAY s and the rest only 30 s later.
FAKE = r'''
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port, delay, status, journal, stream = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with open(journal, "a") as f:
            f.write("GET " + self.path + "\n")
        if self.path == "/v1/models":
            self.answer(200, {"object": "list", "data": [{"id": "fake/llama-8b", "object": "model"}]})
        else:
            self.answer(404, {"detail": "Not Found"})

    def stream(self, model):
        chunked = stream == "sse-chunked"
        if chunked:
            self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(data):
            event = ("data: " + data + "\n\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event) if chunked else event)
            self.wfile.flush()

        time.sleep(delay)
        send(json.dumps({"id": "cmpl-1", "object": "text_completion", "model": model,
                         "choices": [{"index": 0, "text": " world", "finish_reason": None}]}))
        time.sleep(30)  # the rest of the answer: a smoke test that waited for it would time out
        send("[DONE]")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open(journal, "a") as f:
            f.write("POST " + self.path + " " + json.dumps(body, sort_keys=True) + "\n")
        if stream:
            return self.stream(body["model"])
        time.sleep(delay)
        if status != 200:
            self.answer(status, {"object": "error", "message": "CUDA error: an illegal memory access was encountered",
                                 "type": "InternalServerError", "code": status})
        else:
            self.answer(200, {"id": "cmpl-1", "object": "text_completion", "model": body["model"],
                              "choices": [{"index": 0, "text": " world", "finish_reason": "length"}]})

server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
print("listening", flush=True)
server.serve_forever()
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeServer:
    def __init__(self, tmp_path: Path, delay: float, status: int = 200, stream: str = "") -> None:
        self.port = free_port()
        self.journal = tmp_path / f"requests-{self.port}"
        self.journal.touch()
        script = tmp_path / "fake_openai.py"
        script.write_text(FAKE)
        self.proc = subprocess.Popen([sys.executable, str(script), str(self.port), str(delay), str(status), str(self.journal),
                                      stream],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "listening"

    def requests(self) -> list[str]:
        return self.journal.read_text().splitlines()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def fake(tmp_path: Path, request: pytest.FixtureRequest):
    servers: list[FakeServer] = []

    def make(delay: float, status: int = 200, stream: str = "") -> FakeServer:
        servers.append(FakeServer(tmp_path, delay, status, stream))
        return servers[-1]

    yield make
    for server in servers:
        server.stop()


def test_a_completion_after_a_delay_gives_the_time_to_the_first_token(fake) -> None:
    server = fake(0.6)
    answer = asyncio.run(smoke("127.0.0.1", server.port))
    assert answer.ok and answer.model == "fake/llama-8b" and answer.status == 200
    assert answer.ttft is not None and 0.6 <= answer.ttft < 5.0
    get, post = server.requests()
    assert get == "GET /v1/models"
    sent = json.loads(post.split(" ", 2)[2])
    assert sent["max_tokens"] == 1 and sent["model"] == "fake/llama-8b"


def test_a_500_is_a_failure_naming_the_status_and_the_message(fake) -> None:
    server = fake(0.0, 500)
    answer = asyncio.run(smoke("127.0.0.1", server.port))
    assert not answer.ok and answer.status == 500
    assert "HTTP 500" in answer.detail and "illegal memory access" in answer.detail
    verdict = smoke_verdict(Verdict(READY, "in 1:02"), SmokeStatus(answer.url, answer))
    assert verdict.kind == FAILED and "HTTP 500" in verdict.detail


@pytest.mark.parametrize("stream", ["sse", "sse-chunked"])
def test_a_streamed_answer_is_answered_at_its_first_chunk(fake, stream: str) -> None:
    """A server that streams its completion: the first `data:` chunk is the first token (its time
    the TTFT); the rest of the stream, 30 s later, is not waited for."""
    server = fake(0.5, stream=stream)
    started = time.monotonic()
    answer = asyncio.run(smoke("127.0.0.1", server.port, timeout=10))
    assert answer.ok, answer.detail
    assert answer.ttft is not None and 0.5 <= answer.ttft < 5.0
    assert answer.detail == "streamed its first chunk ' world'"
    assert time.monotonic() - started < 8.0


def test_nobody_listening_and_a_timeout_are_failures(fake) -> None:
    port = free_port()
    answer = asyncio.run(smoke("127.0.0.1", port))
    assert not answer.ok and "connection refused" in answer.detail
    server = fake(3.0)
    answer = asyncio.run(smoke("127.0.0.1", server.port, timeout=0.5))
    assert not answer.ok and answer.status is None and "timeout" in answer.detail


def test_the_verdict_waits_for_the_answer_and_the_port_comes_from_the_log() -> None:
    assert smoke_verdict(Verdict(READY, "x"), SmokeStatus("http://127.0.0.1:1")).kind == STARTING
    assert smoke_verdict(Verdict(READY, "x"), SmokeStatus(None, why_not="no port")).kind == FAILED
    assert listening_port(["[2026-02-22 23:41:53] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"]) == 30000
    assert listening_port(["(APIServer pid=700) INFO 03-02 09:01:39 [api_server.py:1920] Starting vLLM API server 0 on http://0.0.0.0:8000"]) == 8000
    assert listening_port(["GET http://example.com/ 200"]) is None
    assert server_message('{"detail": "Not Found"}') == "Not Found"
    assert server_message("<html>Bad Gateway</html>") == "<html>Bad Gateway</html>"


# ---------------------------------------------------------------- the CLI, end to end

def startup_log(port: int) -> str:
    return (
        "[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n"
        "[2026-02-22 23:38:59] Load weight begin. avail mem=78.12 GB\n"
        "[2026-02-22 23:39:06] Load weight end. type=LlamaForCausalLM, avail mem=70.40 GB, mem usage=7.72 GB.\n"
        f"[2026-02-22 23:39:19] INFO:     Uvicorn running on http://0.0.0.0:{port} (Press CTRL+C to quit)\n"
        "[2026-02-22 23:39:21] The server is fired up and ready to roll!\n"
    )


def watch(log: Path, *extra: str) -> tuple[int, str, float]:
    started = time.monotonic()
    out = run_cli("watch", "--plain", "--gpus", "none", "--timeout", "20", *extra, str(log), timeout=40)
    return out.returncode, out.stdout + out.stderr, time.monotonic() - started


def test_watch_smoke_is_ready_only_after_the_answer(fake, tmp_path: Path) -> None:
    server = fake(1.0)
    log = tmp_path / "server.log"
    log.write_text(startup_log(server.port))
    code, out, _ = watch(log, "--smoke")
    assert code == 0, out
    marker = out.index("ready marker (line 5)")
    answered = out.index("smoke test: fake/llama-8b answered")
    ready = out.index("READY: ")
    assert marker < answered < ready, out
    assert "READY (line" not in out  # the marker alone is not called ready
    ttft = float(out[answered:].split(" in ", 1)[1].split(" s", 1)[0])
    assert 1.0 <= ttft < 10.0
    assert "first token in" in out[ready:]


def test_smoke_timeout_bounds_each_request_and_is_checked(fake, tmp_path: Path) -> None:
    server = fake(6.0)  # the completion answers after 6 s: over a 1 s --smoke-timeout
    log = tmp_path / "server.log"
    log.write_text(startup_log(server.port))
    code, out, took = watch(log, "--smoke", "--smoke-timeout", "1")
    assert code == 1, out
    assert "smoke test FAILED: POST /v1/completions: no answer in 1 s (timeout; --smoke-timeout sets it)" in out
    assert took < 6.0, took  # it gave up at 1 s, not at the answer nor the 60 s default
    for bad, said in ((("--smoke", "--smoke-timeout", "0"), "expected a finite number greater than 0"),
                      (("--smoke", "--smoke-timeout", "soon"), "expected a number, got 'soon'"),
                      (("--smoke-timeout", "5"), "--smoke-timeout without --smoke")):
        refused = run_cli("watch", "--plain", "--gpus", "none", *bad, str(log))
        assert refused.returncode == 2 and said in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
    for command in ("watch", "run", "attach"):
        assert "--smoke-timeout S" in run_cli(command, "--help").stdout


def test_watch_smoke_500_fails_naming_it(fake, tmp_path: Path) -> None:
    server = fake(0.0, 500)
    log = tmp_path / "server.log"
    log.write_text(startup_log(server.port))
    code, out, _ = watch(log, "--smoke")
    assert code == 1, out
    assert "smoke test FAILED: POST /v1/completions: HTTP 500: CUDA error: an illegal memory access" in out
    assert "FAILED: ready marker seen, but the smoke test failed" in out
    assert "5: [2026-02-22 23:39:21] The server is fired up" in out  # the log around it


def test_without_smoke_nothing_is_sent(fake, tmp_path: Path) -> None:
    server = fake(0.0)
    log = tmp_path / "server.log"
    log.write_text(startup_log(server.port))
    code, out, _ = watch(log)
    assert code == 0 and "READY (line 5)" in out, out
    assert server.requests() == []


SIM = str(Path(__file__).with_name("server_sim.py"))


def run_sim(tmp_path: Path, port: int, *sim: str, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "WATCHTOWER_DATA_DIR": str(tmp_path / "data")}
    return run_cli("run", "--plain", "--name", "smoke", "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
                   "--no-check", "--timeout", "30", *extra, "--", sys.executable, SIM, "--step", "0.01", "--port",
                   str(port), *sim, env=env, timeout=60)


@pytest.fixture
def stop_sims(tmp_path: Path):
    yield
    from tests.launch_helpers import kill_attempts

    kill_attempts(tmp_path / "logs")


@pytest.mark.slow
def test_run_smoke_after_health_gives_ready_with_the_time_to_the_first_token(tmp_path: Path, stop_sims) -> None:
    port = free_port()
    out = run_sim(tmp_path, port, "--completion-delay", "0.4",
                  extra=("--smoke", "--health", f"http://127.0.0.1:{port}/health"))
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "--smoke: waiting for" in text and "smoke test: sim/model answered" in text
    assert text.index("smoke test: sim/model answered") < text.index("READY")
    assert "first token in" in text


@pytest.mark.slow
def test_run_smoke_500_is_a_failure(tmp_path: Path, stop_sims) -> None:
    port = free_port()
    out = run_sim(tmp_path, port, "--completion-status", "503", extra=("--smoke",))
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "HTTP 503: sim: the engine is not serving" in text


def test_watch_json_smoke_gives_records_a_script_can_read(fake, tmp_path: Path) -> None:
    server = fake(0.3)
    log = tmp_path / "server.log"
    log.write_text(startup_log(server.port))
    out = run_cli("watch", "--json", "--gpus", "none", "--smoke", str(log), timeout=40)
    records = [json.loads(line) for line in out.stdout.splitlines()]
    events = [r["event"] for r in records]
    assert "ready" not in events and events.index("ready_marker") < events.index("smoke") < events.index("profile")
    (answer,) = [r for r in records if r["event"] == "smoke"]
    assert answer["ok"] and answer["model"] == "fake/llama-8b" and answer["ttft_s"] >= 0.3
    final = [r for r in records if r["event"] == "verdict" and r.get("final")][-1]
    assert final["verdict"] == "ready" and final["ttft_s"] == answer["ttft_s"]
    assert records[-1] == {**records[-1], "event": "exit", "exit": 0}
