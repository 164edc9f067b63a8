"""What a server's command line asks for, read without running it; and fixes applied to it.

Understands ``python -m sglang.launch_server``, ``sglang serve``, ``vllm serve``,
``python -m vllm.entrypoints.openai.api_server`` and ``trtllm-serve`` (also behind
``env K=V …``): the model, the parallel sizes, host and port, speculative decoding,
context length, memory fraction and multi-node rendezvous. Unknown flags are ignored.
Flags are compared with ``_`` read as ``-`` (``--tp_size`` is ``--tp-size``).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

SGLANG, VLLM, TRTLLM = "sglang", "vllm", "trtllm"

#: field -> the flags that set it, per server (the first is the canonical spelling).
_FLAGS: dict[str, dict[str, tuple[str, ...]]] = {
    SGLANG: {
        "model": ("--model-path", "--model"),
        "tp": ("--tp-size", "--tp", "--tensor-parallel-size"),
        "dp": ("--dp-size", "--dp", "--data-parallel-size"),
        "ep": ("--ep-size", "--ep", "--expert-parallel-size"),
        "pp": ("--pp-size", "--pp", "--pipeline-parallel-size"),
        "host": ("--host",),
        "port": ("--port",),
        "spec_algorithm": ("--speculative-algorithm",),
        "draft": ("--speculative-draft-model-path", "--speculative-draft-model"),
        "context_length": ("--context-length",),
        "mem_fraction": ("--mem-fraction-static",),
        "nnodes": ("--nnodes",),
        "node_rank": ("--node-rank",),
        "dist_init_addr": ("--dist-init-addr", "--nccl-init-addr"),
    },
    VLLM: {
        "model": ("--model",),
        "tp": ("--tensor-parallel-size", "-tp"),
        "dp": ("--data-parallel-size", "-dp"),
        "pp": ("--pipeline-parallel-size", "-pp"),
        "host": ("--host",),
        "port": ("--port",),
        "context_length": ("--max-model-len",),
        "mem_fraction": ("--gpu-memory-utilization",),
        "nnodes": ("--nnodes",),
        "node_rank": ("--node-rank",),
        "dist_init_addr": ("--master-addr",),
        "speculative_config": ("--speculative-config",),
    },
    TRTLLM: {
        "model": ("--model",),
        "tp": ("--tp-size",),
        "pp": ("--pp-size",),
        "ep": ("--ep-size",),
        "host": ("--host",),
        "port": ("--port",),
        "context_length": ("--max-seq-len",),
        "mem_fraction": ("--kv-cache-free-gpu-memory-fraction",),
    },
}
DEFAULT_PORT = {SGLANG: 30000, VLLM: 8000, TRTLLM: 8000}
#: Flags that never take a value (so a following word is not swallowed as one).
_SWITCHES = frozenset({
    "--trust-remote-code", "--enable-expert-parallel", "--enforce-eager", "--disable-cuda-graph",
    "--disable-custom-all-reduce", "--enable-torch-compile", "--disable-radix-cache",
    "--enable-dp-attention", "--skip-server-warmup", "--disable-log-requests", "--enable-prefix-caching",
})


def norm(flag: str) -> str:
    """``--tp_size`` → ``--tp-size``: the spelling flags are compared in."""
    return flag[:2] + flag[2:].replace("_", "-") if flag.startswith("--") else flag


@dataclass(frozen=True, slots=True)
class ServerCommand:
    """What one server command line asks for. ``None``: not given (the server's default)."""

    argv: tuple[str, ...]
    server: str | None  # sglang, vllm, trtllm; None: not a server command we know
    python: str | None  # the interpreter that runs it (its packages are the server's)
    program: str | None  # the console script (``sglang``, ``vllm``, ``trtllm-serve``) when no python
    env: dict[str, str] = field(default_factory=dict)  # the command's own env words and --env
    model: str | None = None
    draft: str | None = None
    spec_algorithm: str | None = None
    tp: int = 1
    dp: int = 1
    ep: int = 1
    pp: int = 1
    host: str | None = None
    port: int | None = None
    context_length: int | None = None
    mem_fraction: float | None = None
    nnodes: int = 1
    node_rank: int = 0
    dist_init_addr: str | None = None
    dp_attention: bool = False  # SGLang's --enable-dp-attention: the DP ranks share the TP GPUs

    @property
    def gpus_needed(self) -> int:
        """GPUs this node must see: TP × DP × PP over the nodes (EP, and DP attention, share the TP GPUs)."""
        dp = 1 if self.dp_attention else self.dp
        return max(1, self.tp * dp * self.pp // max(1, self.nnodes))

    @property
    def dist_port(self) -> int | None:
        _, sep, port = (self.dist_init_addr or "").rpartition(":")
        return int(port) if sep and port.isdigit() else None

    def value(self, name: str) -> str | None:
        """The value the command gives a flag (any of its spellings), or None."""
        aliases = _aliases(self.server, name)
        return flag_value(self.argv, aliases)


def _aliases(server: str | None, flag: str) -> tuple[str, ...]:
    flag = norm(flag)
    for spellings in _FLAGS.get(server or "", {}).values():
        if flag in spellings:
            return spellings
    return (flag,)


def flag_value(argv: Sequence[str], flags: Sequence[str]) -> str | None:
    """The last value given to any of ``flags`` (``--x V`` or ``--x=V``)."""
    found = None
    for i, word in enumerate(argv):
        name, eq, inline = word.partition("=")
        if norm(name) in flags:
            if eq:
                found = inline
            elif i + 1 < len(argv):
                found = argv[i + 1]
    return found


def split_env(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Leading ``env K=V …`` / ``K=V …`` words, and the command after them."""
    words = list(argv)
    env: dict[str, str] = {}
    if words and os.path.basename(words[0]) == "env":
        words = words[1:]
    while words and "=" in words[0] and not words[0].startswith(("-", "/")) and words[0].split("=")[0].isidentifier():
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def _server_of(words: list[str]) -> tuple[str | None, str | None, str | None, list[str]]:
    """(server, python, program, the server's own arguments)."""
    if not words:
        return None, None, None, []
    first = os.path.basename(words[0])
    if first.startswith("python"):
        if len(words) > 2 and words[1] == "-m":
            module = words[2]
            if module.startswith("sglang"):
                return SGLANG, words[0], None, words[3:]
            if module.startswith("vllm"):
                rest = words[3:]
                if module == "vllm.entrypoints.cli.main" and rest[:1] == ["serve"]:
                    rest = rest[1:]
                return VLLM, words[0], None, rest
            if module.startswith("tensorrt_llm"):
                return TRTLLM, words[0], None, words[3:]
        return None, words[0], None, words[1:]
    if first in ("sglang", "vllm") and words[1:2] == ["serve"]:
        return (SGLANG if first == "sglang" else VLLM), None, words[0], words[2:]
    if first == "trtllm-serve":
        rest = words[1:]
        if rest[:1] == ["serve"]:
            rest = rest[1:]
        return TRTLLM, None, words[0], rest
    return None, None, None, words[1:]


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _num(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def parse(argv: Sequence[str], env: Mapping[str, str] | None = None) -> ServerCommand:
    """Read a server command line (never run). ``env``: variables the launch adds (``--env``)."""
    own_env, words = split_env(argv)
    server, python, program, args = _server_of(words)
    merged = {**own_env, **(env or {})}
    flags = _FLAGS.get(server or "", {})

    def get(name: str) -> str | None:
        spellings = flags.get(name)
        return flag_value(args, spellings) if spellings else None

    model = get("model")
    if model is None and server in (VLLM, TRTLLM) and args and not args[0].startswith("-"):
        model = args[0]  # ``vllm serve MODEL`` / ``trtllm-serve MODEL``
    draft, algorithm = get("draft"), get("spec_algorithm")
    spec = get("speculative_config")
    if spec:
        try:
            config = json.loads(spec)
        except ValueError:
            config = {}
        if isinstance(config, dict):
            draft = config.get("model") or draft
            algorithm = config.get("method") or algorithm
    ep = _int(get("ep"), 1)
    if server == VLLM and any(norm(w) == "--enable-expert-parallel" for w in args):
        ep = _int(get("tp"), 1) * _int(get("dp"), 1)
    port = get("port")
    return ServerCommand(
        argv=tuple(argv),
        server=server,
        python=python,
        program=program,
        env=merged,
        model=model,
        draft=draft,
        spec_algorithm=algorithm.upper() if algorithm else None,
        tp=_int(get("tp"), 1),
        dp=_int(get("dp"), 1),
        ep=ep,
        pp=_int(get("pp"), 1),
        host=get("host"),
        port=_int(port, DEFAULT_PORT[server]) if server else None,
        context_length=_int(get("context_length"), 0) or None,
        mem_fraction=_num(get("mem_fraction")),
        nnodes=_int(get("nnodes"), 1),
        node_rank=_int(get("node_rank"), 0),
        dist_init_addr=get("dist_init_addr"),
        dp_attention=server == SGLANG and any(norm(w) == "--enable-dp-attention" for w in args),
    )


# ------------------------------------------------------------------ fixes


@dataclass(frozen=True, slots=True)
class Action:
    """One structured fix: ``set_env K=V``, ``set_flag --x V``, ``drop_flag --x``,
    ``kill_gpu_holders``, ``free_port N``. The last two act on the host, not the command."""

    verb: str
    target: str = ""
    value: str = ""

    VERBS = ("set_env", "set_flag", "drop_flag", "kill_gpu_holders", "free_port")

    @classmethod
    def parse(cls, text: str) -> Action:
        """``"set_flag --max-model-len 121840"`` → Action; ValueError with the reason otherwise."""
        words = shlex.split(text)
        if not words or words[0] not in cls.VERBS:
            raise ValueError(f"unknown fix action {text!r} (known: {', '.join(cls.VERBS)})")
        verb, rest = words[0], words[1:]
        if verb == "set_env":
            if len(rest) != 1 or "=" not in rest[0] or not rest[0].split("=")[0].isidentifier():
                raise ValueError(f"{text!r}: expected set_env NAME=VALUE")
            key, _, value = rest[0].partition("=")
            return cls(verb, key, value)
        if verb == "set_flag":  # a switch (--disable-cuda-graph) takes no value
            if len(rest) not in (1, 2) or not rest[0].startswith("-"):
                raise ValueError(f"{text!r}: expected set_flag --flag [VALUE]")
            return cls(verb, rest[0], rest[1] if len(rest) == 2 else "")
        if verb == "drop_flag":
            if len(rest) != 1 or not rest[0].startswith("-"):
                raise ValueError(f"{text!r}: expected drop_flag --flag")
            return cls(verb, rest[0])
        if verb == "free_port":
            if len(rest) != 1 or not rest[0].isdigit():
                raise ValueError(f"{text!r}: expected free_port NUMBER")
            return cls(verb, rest[0])
        if rest:
            raise ValueError(f"{text!r}: kill_gpu_holders takes no argument")
        return cls(verb)

    @property
    def text(self) -> str:
        if self.verb == "set_env":
            return f"set_env {shlex.quote(f'{self.target}={self.value}')}"
        return " ".join(w for w in (self.verb, self.target, shlex.quote(self.value) if self.value else "") if w)

    @property
    def on_host(self) -> bool:
        return self.verb in ("kill_gpu_holders", "free_port")


def apply(argv: Sequence[str], env: Mapping[str, str], actions: Sequence[Action]) -> tuple[list[str], dict[str, str]]:
    """The command and environment with the fixes' command/env actions applied (host actions skipped).

    A flag is replaced where the command already gives it (in any spelling), else appended.
    """
    words, new_env = list(argv), dict(env)
    server = parse(words).server
    for action in actions:
        if action.verb == "set_env":
            new_env[action.target] = action.value
        elif action.verb in ("set_flag", "drop_flag"):
            aliases = _aliases(server, action.target)
            words = _without(words, aliases)
            if action.verb == "set_flag":
                words += [action.target, action.value] if action.value else [action.target]
    return words, new_env


def _without(words: list[str], flags: Sequence[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        name, eq, _ = word.partition("=")
        if norm(name) in flags:
            nxt = words[i + 1] if i + 1 < len(words) else None
            skip = not eq and norm(name) not in _SWITCHES and nxt is not None and not nxt.startswith("--")
            continue
        out.append(word)
    return out
