#!/usr/bin/env python3
"""A pretend SGLang server for the launch tests: real processes, real logs, no GPUs.

It prints an SGLang 0.5.23-style startup (see log-formats.md §1.2 P10/P9) to its
stdout/stderr, starts ``--tp`` child processes in its own process group (like the
per-rank schedulers, titled ``sglang::scheduler_TPn``), allocates nothing real, and ends as told:

  --outcome ready     ... "The server is fired up and ready to roll!", then serve until stopped
  --outcome raise     ... a ValueError about the context length in a scheduler, unless
                          SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 is set (then: ready)
  --outcome hang      ... stop printing in the middle of weight loading and wait forever
  --outcome sigkill   ... die by SIGKILL in the middle of weight loading, with no error text
  --outcome segv      ... die by SIGSEGV in the middle of weight loading
  --outcome seed      ... the seed's evening, one failure per attempt until each is fixed: an
                          AttributeError (EAGLE-3 hook) unless ``--hook-file`` holds the method,
                          then the draft's ValueError unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1,
                          then an NCCL watchdog timeout in weight loading unless
                          TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC is set; then ready

``--ignore-sigint`` makes the main process and its children ignore SIGINT (a stop
must escalate); ``--stubborn`` makes them ignore SIGTERM too (only SIGKILL works).
``--orphans`` leaves children that do not die with the main process (stale GPU
holders). ``--pid-file`` writes "main child child …" pids once the children run.
``--first-rank N`` (or ``--node-rank R``: R × tp) names the ranks TP{N}… (a later node of a
multi-node run); as SGLang's, a node with ``--node-rank`` ≥ 1 prints no ready line and serves no HTTP: its
log ends after its CUDA graphs. ``--port`` opens a tiny HTTP server answering /health with 200 once ready
(and /v1/models, /v1/completions: ``--completion-delay`` s, ``--completion-status``).
``--bind-port`` fails at once, as uvicorn does, when that port is taken.
``--api-key`` and ``--echo-env NAME`` print secrets back in ``server_args`` (as SGLang does).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
DERIVED_CONTEXT = 131072  # the simulated model's own context length (its config.json's)

# The child: a "scheduler" that lives until its parent goes (stdin EOF), or forever (--orphans).
CHILD = """
import signal, sys, time
if {ignore_int}: signal.signal(signal.SIGINT, signal.SIG_IGN)
if {ignore_term}: signal.signal(signal.SIGTERM, signal.SIG_IGN)
if {orphan}:
    while True: time.sleep(3600)
try:
    sys.stdin.buffer.read()
except KeyboardInterrupt:
    pass
"""


def stamp(rank: str | None = None) -> str:
    ts = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"[{ts} {rank}]" if rank else f"[{ts}]"


def say(text: str, rank: str | None = None, stream=None) -> None:
    stream = stream or sys.stdout
    stream.write(f"{stamp(rank)} {text}\n")
    stream.flush()


def raw(text: str, stream=None) -> None:
    stream = stream or sys.stderr
    stream.write(text)
    stream.flush()


def serve_health(port: int, ready: threading.Event, delay: float = 0.0, status: int = 200,
                 bind: str = "127.0.0.1") -> None:
    """``GET /health``: 503 until ready, then 200. Enough HTTP for the health probe; once ready,
    ``/v1/models`` names a model and ``/v1/completions`` answers after ``delay`` s with ``status``
    (a completion for 200, an OpenAI-style error otherwise): enough for ``--smoke``."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((bind, port))
    sock.listen(8)

    def loop() -> None:
        while True:
            conn, _ = sock.accept()
            with conn:
                words = conn.recv(65536).split(b" ", 2)
                path = words[1].decode() if len(words) > 1 else "/"
                answer = "200 OK" if ready.is_set() else "503 Service Unavailable"
                body = b"ok" if ready.is_set() else b"starting"
                if ready.is_set() and path == "/v1/models":
                    body = b'{"object": "list", "data": [{"id": "sim/model", "object": "model"}]}'
                elif ready.is_set() and path == "/v1/completions":
                    time.sleep(delay)
                    answer = f"{status} {'OK' if status == 200 else 'Error'}"
                    body = (b'{"object": "text_completion", "choices": [{"index": 0, "text": " hi"}]}' if status == 200
                            else b'{"object": "error", "message": "sim: the engine is not serving", "code": %d}' % status)
                conn.sendall(
                    f"HTTP/1.1 {answer}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
                )

    threading.Thread(target=loop, daemon=True).start()


def traceback(rank: str, frames: list[str], final: str) -> None:
    body = "".join(f'  File "/sgl/python/sglang/srt/{f}.py", line 100, in __init__\n    {f.rsplit("/", 1)[-1]}()\n'
                   for f in frames)
    say(f"Scheduler hit an exception: Traceback (most recent call last):\n{body}{final}", rank)


def seed_failure(args, ranks: list[str], children) -> bool:
    """The seed's failures, in the order they were met (see --outcome seed); True if one happened."""
    hook = ""
    if args.hook_file:
        with open(args.hook_file) as f:
            hook = f.read()
    if "def set_eagle3_layers_to_capture" not in hook:
        for r in ranks:
            traceback(r, ["managers/scheduler", "speculative/eagle_worker", "model_executor/model_runner"],
                      "AttributeError: 'Qwen3MoeForCausalLM' object has no attribute 'set_eagle3_layers_to_capture'")
    elif os.environ.get(CONTEXT_ENV) != "1":
        traceback(ranks[0], ["managers/scheduler", "speculative/eagle_worker", "configs/model_config"],
                  "ValueError: Target model's context_length (262144) is greater than the derived context_length "
                  f"(131072). This may lead to incorrect model outputs or CUDA errors. To allow overriding this "
                  f"maximum, set the env var {CONTEXT_ENV}=1")
    elif not os.environ.get("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"):
        for r in ranks:
            say("Load weight begin. avail mem=78.12 GB", r)
        say("[rank1]:[E1201 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 600003 milliseconds before timing out.", ranks[-1])
    else:
        return False
    say("Received sigquit from a child process. It usually means the child failed.")
    for c in children:
        c.kill()
    return True


def rendezvous(args) -> None:
    """torch.distributed's in miniature: node 0 listens on --dist-init-addr and waits for every
    other node; the others connect (retrying, silently, forever — a wrong address hangs here)."""
    host, _, port = (args.dist_init_addr or "127.0.0.1:29500").rpartition(":")
    if args.node_rank == 0:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, int(port)))
        server.listen(args.nnodes)
        peers = [server.accept()[0] for _ in range(args.nnodes - 1)]
        for peer in peers:
            peer.sendall(b"go")
            peer.close()
        server.close()
        return
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=2) as conn:
                if conn.recv(2) == b"go":
                    return
        except OSError:
            time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--outcome", default="ready", choices=["ready", "raise", "hang", "sigkill", "segv", "seed"])
    parser.add_argument("--hook-file", help="--outcome seed: the model file that must define the EAGLE-3 hook")
    parser.add_argument("--dist-timeout", type=int, help="accepted, as SGLang does")
    parser.add_argument("--bind-port", type=int, help="bind this port first; taken: uvicorn's Errno 98, exit 1")
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--first-rank", type=int, help="global rank of this node's first GPU")
    parser.add_argument("--node-rank", type=int, default=0, help="a multi-node run: first rank = node rank × tp")
    parser.add_argument("--nnodes", type=int, default=1)
    parser.add_argument("--dist-init-addr", help="HOST:PORT node 0 listens on and the others connect to")
    parser.add_argument("--model-path", default="sim/Model-547B")
    parser.add_argument("--step", type=float, default=0.02, help="seconds between log lines")
    parser.add_argument("--load-seconds", type=float, default=0.2, help="time spent loading weights")
    parser.add_argument("--capture-seconds", type=float, help="graph capture: 36 batch sizes at an even rate")
    parser.add_argument("--context-length", type=int, default=200000)
    parser.add_argument("--ignore-sigint", action="store_true")
    parser.add_argument("--stubborn", action="store_true")
    parser.add_argument("--orphans", action="store_true")
    parser.add_argument("--pid-file")
    parser.add_argument("--port", type=int)
    parser.add_argument("--host", default="127.0.0.1", help="the address --port is bound to (SGLang's default)")
    parser.add_argument("--completion-delay", type=float, default=0.0, help="seconds /v1/completions takes")
    parser.add_argument("--completion-status", type=int, default=200, help="the status /v1/completions answers")
    parser.add_argument("--api-key", help="printed back in server_args, as SGLang does")
    parser.add_argument("--echo-env", metavar="NAME", help="print this variable's value in server_args")
    args = parser.parse_args()

    if args.bind_port:
        probe = socket.socket()
        try:
            probe.bind(("127.0.0.1", args.bind_port))
        except OSError:
            say(f"ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', {args.bind_port}): "
                "address already in use")
            return 1
        finally:
            probe.close()
    if args.ignore_sigint or args.stubborn:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if args.stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready = threading.Event()
    if args.port and args.node_rank == 0:  # only node 0 serves HTTP
        serve_health(args.port, ready, args.completion_delay, args.completion_status, args.host)

    first = args.first_rank if args.first_rank is not None else args.node_rank * args.tp
    ranks = [f"TP{i}" for i in range(first, first + args.tp)]
    code = CHILD.format(
        ignore_int=args.ignore_sigint or args.stubborn, ignore_term=args.stubborn, orphan=args.orphans
    )
    children = [  # titled as SGLang's schedulers are (setproctitle: argv[0]), so a watcher sees ranks
        subprocess.Popen([f"sglang::scheduler_{rank}", "-c", code], executable=sys.executable, stdin=subprocess.PIPE,
                         close_fds=True) for rank in ranks
    ]
    if args.pid_file:
        with open(args.pid_file + ".tmp", "w") as f:
            f.write(" ".join(str(p) for p in [os.getpid(), *(c.pid for c in children)]) + "\n")
        os.replace(args.pid_file + ".tmp", args.pid_file)

    def pause(scale: float = 1.0) -> None:
        time.sleep(args.step * scale)

    echoed = os.environ.get(args.echo_env, "") if args.echo_env else None
    say(f"server_args={{'model_path': {args.model_path!r}, 'tp_size': {args.tp}, 'context_length': "
        f"{args.context_length}, 'nnodes': {args.nnodes}, 'node_rank': {args.node_rank}, "
        f"'api_key': {args.api_key!r}, 'hf_token': {echoed!r}}}")
    pause()
    for r in ranks:
        say("Init parallel begin.", r)
    pause()
    if args.nnodes > 1:
        rendezvous(args)
    for r in ranks:
        say("Init parallel ends. elapsed=1.84 s", r)

    if args.outcome == "seed" and seed_failure(args, ranks, children):
        return 1
    # SGLang's model_config refuses a context longer than the model's own (131072 here) unless allowed
    if args.outcome == "raise" and args.context_length > DERIVED_CONTEXT and os.environ.get(CONTEXT_ENV) != "1":
        say(
            "Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 6360, in run_scheduler_process\n'
            "    scheduler = Scheduler(server_args, port_args)\n"
            '  File "/sgl/python/sglang/srt/configs/model_config.py", line 312, in __init__\n'
            "    raise ValueError(\n"
            f"ValueError: User-specified context_length ({args.context_length}) is greater than the derived "
            "context_length (131072). This may lead to incorrect model outputs or CUDA errors. Note that the "
            "derived context_length may differ from max_position_embeddings in the model's config. To allow "
            f"overriding this maximum, set the env var {CONTEXT_ENV}=1",
            ranks[0],
        )
        say("Received sigquit from a child process. It usually means the child failed.")
        for c in children:
            c.kill()
        return 1

    for r in ranks:
        say("Load weight begin. avail mem=78.12 GB", r)
    shards = 8
    for i in range(1, shards + 1):
        pct = 100 * i // shards
        raw(f"\rLoading safetensors checkpoint shards: {pct:3d}% Completed | {i}/{shards} [00:0{i}<00:00,  1.55s/it]")
        time.sleep(args.load_seconds / shards)
        if i == shards // 2 and args.outcome in ("hang", "sigkill", "segv"):
            if args.outcome == "hang":
                while True:
                    time.sleep(3600)
            os.kill(os.getpid(), signal.SIGKILL if args.outcome == "sigkill" else signal.SIGSEGV)
            time.sleep(10)  # the signal arrives; never reached
    raw("\n")
    for r in ranks:
        say("Load weight end. elapsed=6.91 s, type=LlamaForCausalLM, avail mem=70.40 GB, mem usage=7.72 GB.", r)
    pause()
    for r in ranks:
        say("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 812345, K size: 24.79 GB, V size: 24.79 GB", r)
        say("Memory pool end. avail mem=19.80 GB", r)
    pause()
    for r in ranks:
        say("Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=19.60 GB", r)
    if args.capture_seconds:  # tqdm's own bar, one update per batch size (largest first), as SGLang draws it
        begun = time.monotonic()
        for i in range(37):
            spent = time.monotonic() - begun
            rate = f"{i / spent:5.2f}it/s" if i and spent else "?it/s"
            left = f"00:{round(spent / i * (36 - i)):02d}" if i and spent else "?"
            raw(f"\rCapturing batches (bs={max(1, 36 - i)} avail_mem=19.02 GB): {100 * i // 36:3d}%|██        | "
                f"{i}/36 [00:{round(spent):02d}<{left}, {rate}]")
            if i < 36:
                time.sleep(args.capture_seconds / 36)
    for i in () if args.capture_seconds else (9, 18, 27, 36):
        raw(f"\rCapturing batches (bs={37 - i} avail_mem=19.02 GB): {100 * i // 36:3d}%|██        | {i}/36 "
            "[00:09<00:00,  3.90it/s]")
        pause(0.5)
    raw("\n")
    for r in ranks:
        say("Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=9.60 s, mem usage=0.61 GB, "
            "avail mem=18.99 GB.", r)
    if args.node_rank > 0:  # as SGLang's worker nodes: no HTTP server, no ready line, nothing more to say
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:  # Ctrl-C (a stop's SIGINT): Python's own traceback, as a real worker prints it
            import traceback as tb

            sys.stderr.write("Traceback (most recent call last):\n" + "".join(tb.format_tb(sys.exc_info()[2]))
                             + "KeyboardInterrupt\n")
            sys.stderr.flush()
            return 130
    say("max_total_num_tokens=812345, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=4096, context_len=131072, available_gpu_mem=18.99 GB", ranks[0])
    say(f"INFO:     Started server process [{os.getpid()}]")
    say("INFO:     Waiting for application startup.")
    say("INFO:     Application startup complete.")
    say(f"INFO:     Uvicorn running on http://0.0.0.0:{args.port or 30000} (Press CTRL+C to quit)")
    pause()
    say('INFO:     127.0.0.1:51234 - "GET /model_info HTTP/1.1" 200 OK')
    say("Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, "
        "#queue-req: 0", ranks[0])
    say('INFO:     127.0.0.1:51240 - "POST /generate HTTP/1.1" 200 OK')
    ready.set()
    say("The server is fired up and ready to roll!")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        say("SIGQUIT received. signum=3, frame=None. It usually means one child failed.")
        return 0


if __name__ == "__main__":
    sys.exit(main())
