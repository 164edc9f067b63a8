#!/usr/bin/env python3
"""A pretend vLLM server whose process tree forks as a real one does: real processes, no GPUs.

The shape of a real vLLM start (issue 37): the API server (this script, the main process)
starts ``VLLM::EngineCore``, which starts ``VLLM::Worker``; the worker, while it "compiles",
forks a child that keeps its title for ~100 ms before it executes a helper (as a fork
beside a compiler probe does: until it executes, its ``comm`` and command line are its
parent's), and runs helpers by the dozen (``python -c …``, ``sh -c …``), each gone in a
fraction of a second. The titles are set as setproctitle sets them: ``argv[0]`` at exec
and ``/proc/self/comm`` through ``prctl(PR_SET_NAME)``.

    forking_server.py [--helpers N] [--no-prefix] [--hold S] [--helper-status K]

Its stdout and stderr are the log (the caller redirects them). It prints vLLM 0.32-style
lines (``(APIServer pid=N)``, ``(EngineCore pid=N)``, ``(Worker pid=N)``: with ``--no-prefix``
the worker's lines name no pid, so only its title and its own exec show it is a rank), the
helpers run during the "compile", then the ready line, and it serves (sleeps) until killed.
``--hold S`` waits S seconds before the ready line (a test can kill the worker meanwhile).
``--helper-status K``: the last helper exits with K (and the worker then logs an error).
Once the worker runs, ``PIDFILE`` (``$FORKING_SERVER_PIDS``) gets "main engine worker"; once
ready, ``PIDFILE.ready`` appears.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import time

PR_SET_NAME = 15
#: This Python (a process started with argv[0] = its title has no sys.executable of its own).
PYTHON = sys.executable or os.readlink("/proc/self/exe")


def set_title(title: str) -> None:
    """What setproctitle does to ``comm``: the kernel's name of the process (15 bytes)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(title.encode()[:15]), 0, 0, 0)


def line(who: str, pid: int | None, text: str, where: str = "core.py:100") -> None:
    prefix = f"({who} pid={pid}) " if pid is not None else ""
    stamp = time.strftime("%m-%d %H:%M:%S")
    sys.stdout.write(f"{prefix}INFO {stamp} [{where}] {text}\n")
    sys.stdout.flush()


def fork_clone_then_exec() -> int:
    """A child that keeps this process's title and command line for ~100 ms, then executes
    a helper (``true``): the shape that was read as a rank (issue 37)."""
    pid = os.fork()
    if pid == 0:
        try:
            time.sleep(0.1)
            os.execv("/bin/sh", ["sh", "-c", "true"])
        finally:
            os._exit(127)
    return pid


def worker(args: argparse.Namespace) -> None:
    set_title("VLLM::Worker")
    me = os.getpid()
    tag = None if args.no_prefix else me
    line("Worker", tag, "Starting to load model /models/SmolLM2-135M...", "gpu_model_runner.py:1953")
    line("Worker", tag, "Model loading took 0.26 GiB and 0.51 seconds", "gpu_model_runner.py:2007")
    with open(args.pid_file + ".tmp", "w") as f:
        f.write(f"{args.main} {os.getppid()} {me}\n")
    os.rename(args.pid_file + ".tmp", args.pid_file)
    line("Worker", tag, "Compiling a graph for compile range (1, 2048) takes a while", "backends.py:215")
    for i in range(args.helpers):
        clone = fork_clone_then_exec()
        status = args.helper_status if i == args.helpers - 1 else 0
        helper = [PYTHON, "-c", f"import ctypes, sys; ctypes.CDLL(None); sys.exit({status})"]
        code = subprocess.call(helper if i % 2 else ["sh", "-c", f"exit {status}"])
        os.waitpid(clone, 0)
        if code:
            sys.stdout.write(f"(Worker pid={me}) ERROR {time.strftime('%m-%d %H:%M:%S')} [backends.py:300] "
                             f"RuntimeError: the compiler helper exited with {code}\n")
            sys.stdout.flush()
    line("Worker", tag, "Compiling a graph for compile range (1, 2048) took 1.20 s", "backends.py:230")
    open(args.pid_file + ".done", "w").close()
    line("Worker", tag, "Graph capturing finished in 1 secs, took 0.01 GiB", "gpu_model_runner.py:2708")
    while True:
        time.sleep(3600)


def engine(args: argparse.Namespace) -> None:
    set_title("VLLM::EngineCore")
    line("EngineCore", os.getpid(), "Initializing a V1 LLM engine (v0.32.0) with config: model='/models/SmolLM2-135M'")
    child = ["VLLM::Worker", os.path.abspath(__file__), "--role", "worker", "--helpers", str(args.helpers),
             "--helper-status", str(args.helper_status), "--main", str(os.getppid())]
    child += ["--pid-file", args.pid_file]
    child += ["--no-prefix"] if args.no_prefix else []
    subprocess.Popen(child, executable=PYTHON)
    while True:
        time.sleep(3600)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", default="main", choices=("main", "engine", "worker"))
    parser.add_argument("--helpers", type=int, default=24)
    parser.add_argument("--helper-status", type=int, default=0)
    parser.add_argument("--no-prefix", action="store_true")
    parser.add_argument("--hold", type=float, default=0.0)
    parser.add_argument("--main", type=int)
    parser.add_argument("--pid-file", default=os.environ.get("FORKING_SERVER_PIDS"))
    args = parser.parse_args()
    if not args.pid_file:
        args.pid_file = f"/tmp/forking-server-{os.getpid()}.pids"
    if args.role == "worker":
        return worker(args)
    if args.role == "engine":
        return engine(args)
    me = os.getpid()
    line("APIServer", me, "vLLM API server version 0.32.0", "api_server.py:1805")
    line("APIServer", me, "non-default args: {'model': '/models/SmolLM2-135M'}", "utils.py:253")
    child = ["VLLM::EngineCore", os.path.abspath(__file__), "--role", "engine", "--helpers", str(args.helpers),
             "--helper-status", str(args.helper_status)]
    child += ["--pid-file", args.pid_file]
    child += ["--no-prefix"] if args.no_prefix else []
    subprocess.Popen(child, executable=PYTHON)
    while not os.path.exists(args.pid_file + ".done"):  # the worker's helpers have run
        time.sleep(0.05)
    time.sleep(args.hold)
    line("APIServer", me, "Starting vLLM API server 0 on http://0.0.0.0:8000", "launcher.py:37")
    sys.stdout.write(f"(APIServer pid={me}) INFO:     Application startup complete.\n")
    sys.stdout.flush()
    open(args.pid_file + ".ready", "w").close()  # for a bench: said without opening the log (a watcher's rescan)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
