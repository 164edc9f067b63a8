"""Filling in a hint's templates: the values a ``{name}`` may name beyond its pattern's groups,
and the arithmetic behind them (the memory fraction that would fit, what an allocation lacked).

Every value is computed from the log and the command only when a template asks for it; one
that cannot be known is None, and the template is left out (``tui.core.hints``).
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Collection, Mapping, Sequence

from tui.core.cmdline import ServerCommand
from tui.core.state import Phase

#: Memory fraction a server uses when the command sets none (SGLang's depends on the GPU: unknown).
DEFAULT_FRACTION = {"vllm": 0.9, "trtllm": 0.9}
#: Servers whose argument line names every value the run changed (vLLM's "non-default args",
#: its older "args: Namespace(…)"): where it names no memory fraction, the default was used.
ARGS_NAME_CHANGES = frozenset({"vllm"})
#: Never advise a memory fraction above this: the CUDA context and activations need the rest.
MAX_FRACTION = 0.95

_FIGURE = re.compile(r"avail[ _]mem=\s*(?P<gb>[\d.]+)")
_OOM = re.compile(
    r"Tried to allocate (?P<tried>[\d.]+) (?P<tu>[GM])iB.{0,200}?total capacity of (?P<total>[\d.]+) GiB"
    r".{0,40}?of which (?P<free>[\d.]+) (?P<fu>[GM])iB is free"
)
# vLLM: "(36.00 GiB KV cache is needed, which is larger than the available KV cache memory (20.51 GiB)"
_KV = re.compile(r"(?P<needed>[\d.]+) GiB KV cache is needed, which is larger than the available KV cache memory \((?P<free>[\d.]+) GiB\)")
# vLLM: "Free memory on device (60.12/79.19 GiB) on startup is less than desired GPU memory
# utilization (0.9, 71.27 GiB)"; newer versions name the device ("… on device cuda:0 (…)")
_FREE = re.compile(r"Free memory on device (?:\S+ )?\((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\)")
# vLLM over Ray: the placement group it asks for, one bundle a worker ("specs=[{'GPU': 1.0,
# 'node:10.0.0.1': 0.001}, {'GPU': 1.0}, …]", "placement_group_specs=[…]"), or newer its sum
# ("a placement group requiring 16.0 GPUs"); a list cut off by the line's end counts nothing.
_SPECS = re.compile(r"specs=\[(?P<body>[^\]]*)\]")
_REQUIRING = re.compile(r"placement group requiring (?P<gpus>\d+)(?:\.0)? GPUs")
# torch: "GPU 0 has a total capacity of 79.19 GiB" (before 2.1: "(GPU 0; 79.35 GiB total capacity;");
# vLLM: "Free memory on device cuda:0 (6.1/79.19 GiB)"
_TOTAL = re.compile(
    r"total capacity of (?P<total>[\d.]+) GiB|Free memory on device (?:\S+ )?\([\d.]+/(?P<total2>[\d.]+) GiB"
    r"|\(GPU \d+; (?P<total3>[\d.]+) GiB total capacity;"
)
_MINE = re.compile(r"this process has (?P<mine>[\d.]+) (?P<mu>[GM])iB memory in use")
_OOM_KINDS = frozenset({"cuda_oom", "outofmemoryerror"})
_OOM_WORDS = re.compile(r"(?i)out of memory|OutOfMemoryError|cudaErrorMemoryAllocation")
_QUANTISED_NAME = re.compile(r"(?i)(?<![a-z0-9])(?:fp8|fp4|nvfp4|mxfp4|awq|gptq|int4|int8|w4a16|w8a8|gguf|bnb|4bit|8bit)(?![a-z0-9])")
# a model's size in its name: "Llama-3-70B", "Qwen3-235B-A22B" (the total, not the active "A22B")
_PARAMS = re.compile(r"(?i)(?<![a-z0-9.])(?P<billions>\d+(?:\.\d+)?)b(?![a-z0-9])")
_BYTES_PER_PARAM = ((("fp4", "int4", "awq", "gptq", "w4a16", "4bit", "gguf"), 0.5), (("fp8", "int8", "w8a8", "8bit"), 1.0))
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# Python's "No module named 'cv2'": the top-level module a package installs
_MODULE = re.compile(r"No module named '(?P<mod>(?P<top>\w+)[\w.]*)'")
#: Import names and the PyPI package that installs each, checked one by one (issue 32: a package is
#: named only where this table knows it; a module not here is said missing, with no pip line). Left
#: out on purpose: GPU kernels and compiled parts (flash_attn, flashinfer, xformers, triton, sgl_kernel,
#: vllm._C …), whose right build depends on the torch, CUDA or ROCm installed, and servers' own modules.
PACKAGE_OF_MODULE = {
    # named otherwise on PyPI
    "cv2": "opencv-python", "PIL": "Pillow", "yaml": "PyYAML", "sklearn": "scikit-learn", "attr": "attrs",
    "bs4": "beautifulsoup4", "dateutil": "python-dateutil", "jwt": "PyJWT", "zmq": "pyzmq",
    "OpenSSL": "pyOpenSSL", "google.protobuf": "protobuf", "dotenv": "python-dotenv", "multipart": "python-multipart",
    "fitz": "PyMuPDF", "docx": "python-docx", "skimage": "scikit-image", "serial": "pyserial", "git": "GitPython",
    "websocket": "websocket-client", "pynvml": "nvidia-ml-py", "huggingface_hub": "huggingface-hub",
    "sentencepiece": "sentencepiece", "qwen_vl_utils": "qwen-vl-utils", "mistral_common": "mistral-common",
    "partial_json_parser": "partial-json-parser", "prometheus_client": "prometheus-client", "cuda": "cuda-python",
    # the same name on PyPI
    "transformers": "transformers", "accelerate": "accelerate", "einops": "einops", "tiktoken": "tiktoken",
    "peft": "peft", "safetensors": "safetensors", "datasets": "datasets", "numpy": "numpy", "scipy": "scipy",
    "pandas": "pandas", "psutil": "psutil", "requests": "requests", "aiohttp": "aiohttp", "uvicorn": "uvicorn",
    "fastapi": "fastapi", "pydantic": "pydantic", "openai": "openai", "timm": "timm", "librosa": "librosa",
    "soundfile": "soundfile", "blobfile": "blobfile", "orjson": "orjson", "uvloop": "uvloop", "msgspec": "msgspec",
    "modelscope": "modelscope", "jinja2": "Jinja2", "packaging": "packaging", "setuptools": "setuptools",
    "gguf": "gguf", "decord": "decord", "tokenizers": "tokenizers", "protobuf": "protobuf",
}
# a compiled part of a package ("vllm._C", "fused_ext", "flash_attn_2_cuda"): its name is no package's
_COMPILED_PART = re.compile(r"(?i)(?:^_|_c$|_cuda$|_ext$|_ops$|_kernels?$)")
# Python's ENOENT naming a path
_ENOENT = re.compile(r"\[Errno 2\] No such file or directory: '(?P<path>[^']{1,300})'")
# the package a traceback's frame runs in: an installed one ("…/site-packages/sglang/…"), or a
# source checkout's ("…/src/llamafactory/…")
_FRAME_PACKAGE = re.compile(r'^\s*File "[^"]*?[/\\](?:site-packages|dist-packages|src)[/\\](?P<pkg>[A-Za-z_]\w*)[/\\]')
#: Values an argument line prints for "not set".
_UNSET = frozenset({"", "none", "null", "false"})
_FIELD = re.compile(r"^(?P<name>\w+)(?:(?P<op>\*|//)(?P<n>\d+))?$")


# vLLM's refusal of an architecture, its supported list printed whole
_ARCH_REFUSED = re.compile(r"Model architectures \['(?P<arch>\w+)'\] are not supported for now\. Supported architectures: "
                           r"(?:dict_keys\()?\[(?P<supported>[^\]]{0,20000})\]")
# a LoRA adapter's file name ("smollm2-sql-lora-f16.gguf", "adapter_model.gguf")
_ADAPTER_NAME = re.compile(r"(?i)(?:^|[-_.])(?:q?lora|adapter)(?:[-_.]|$)")


def _slip(typed: str, name: str) -> bool:
    """Whether ``typed`` is ``name`` with a slip of the keyboard: a letter's case, two neighbouring
    letters swapped, or one lowercase letter dropped or added (not a digit or a capital: those name
    other models)."""
    if typed.lower() == name.lower():  # (two names that differ in case alone are one model's)
        return typed != name
    if len(typed) == len(name):
        diff = [i for i, (a, b) in enumerate(zip(typed, name)) if a != b]
        return len(diff) == 2 and diff[1] == diff[0] + 1 and typed[diff[0]] == name[diff[1]] and typed[diff[1]] == name[diff[0]]
    short, long = sorted((typed, name), key=len)
    if len(long) - len(short) != 1:
        return False
    at = next((i for i, (a, b) in enumerate(zip(short, long)) if a != b), len(short))
    return long[at].islower() and long[:at] + long[at + 1 :] == short


class Context:
    """Values a template may name beyond its pattern's groups, computed only when asked for."""

    def __init__(
        self,
        message: str,
        phases: Sequence[Phase],
        command: ServerCommand | None,
        server: str | None,
        identity: Mapping[str, str] | None = None,
        *,
        block: Sequence[str] = (),
        kinds: Collection[str] = (),
        phase: Phase | None = None,
    ) -> None:
        self.message = message
        self.phases = phases
        self.command = command
        self.server = server or (command.server if command else None)
        self.identity = identity or {}
        self.block = block  # the error's traceback lines (a sample: its first and last)
        self.kinds = frozenset(k.lower() for k in kinds)  # the error's kind and category
        self.phase = phase  # the phase the error came in

    def get(self, name: str) -> str | None:
        method = getattr(self, f"_{name}", None)
        value = method() if method is not None else None
        return None if value is None else _text(value)

    def fact(self, name: str) -> str | None:
        """What a hint's precondition reads (``when``): a computed value, else what the log's argument
        lines or printed environment said (``[identity]``); None where the log did not say. A value
        that means "not set" (None, null, False, an empty string) is None too."""
        value = self.get(name)
        if value is None:
            value = self.identity.get(name)
        return None if value is None or value.strip().lower() in _UNSET else value

    def _texts(self) -> list[str]:
        return [self.message, *self.block]

    def _oom(self) -> str | None:
        """"yes" when the error is an out-of-memory (its kind, or its words); otherwise not set."""
        if self.kinds & _OOM_KINDS or any(_OOM_WORDS.search(t) for t in self._texts()):
            return "yes"
        return None

    def _avail_gib(self) -> float | None:
        """GiB the GPU still had free at the error: torch's "of which … is free", SGLang's
        "avail_mem=" on the error's lines, else the last figure of the phase it came in."""
        found = _OOM.search(self.message)
        if found is not None:
            return float(found["free"]) / (1024 if found["fu"] == "M" else 1)
        for text in self._texts():
            figure = _FIGURE.search(text)
            if figure is not None:
                return float(figure["gb"])
        figure = _FIGURE.search(self.phase.detail) if self.phase is not None else None
        return float(figure["gb"]) if figure is not None else None

    def _gpu_gib(self) -> float | None:
        """The GPU's whole memory (GiB), as torch's OOM or vLLM's memory lines printed it."""
        for text in self._texts():
            found = _TOTAL.search(text)
            if found is not None:
                return float(found["total"] or found["total2"] or found["total3"])
        said = self.identity.get("gpu_gib")
        return float(said) if said is not None and _NUMBER.fullmatch(said) else None

    def _others_gib(self) -> float | None:
        """GiB other processes held when torch ran out ("… of which F is free. … this process has
        P GiB memory in use"): total − free − this process's; None below half a GiB (free GPUs)."""
        total, used = _OOM.search(self.message), _MINE.search(self.message)
        if total is None or used is None:
            return None
        free = float(total["free"]) / (1024 if total["fu"] == "M" else 1)
        mine = float(used["mine"]) / (1024 if used["mu"] == "M" else 1)
        others = float(total["total"]) - free - mine
        return round(others, 2) if others >= 0.5 else None

    def _weights_gib(self) -> float | None:
        """GiB of weights on each GPU: what the log printed once they were in, else an estimate from
        the model's name ("Llama-3-70B": 70 × 10⁹ parameters) × bytes per parameter (2, or what
        its quantisation says) ÷ the tensor-parallel size; None where neither is printed."""
        said = self.identity.get("weights_gib")
        if said is not None and _NUMBER.fullmatch(said):
            return float(said)
        size, tp = _PARAMS.search(self.identity.get("model", "")), self._tp_size()
        if size is None or not tp:
            return None
        quantised = (self._quantization() or "").lower()
        width = next((w for names, w in _BYTES_PER_PARAM if any(n in quantised for n in names)), 2.0)
        return round(float(size["billions"]) * 1e9 * width / 2**30 / tp, 1)

    def _weights_room_gib(self) -> float | None:
        """GiB of the GPU the weights alone leave (``gpu_gib`` − ``weights_gib``; below 0 where they do
        not fit): under 2 there is no room for activations and a KV cache, whatever the memory settings
        (7B models' 14.25 GiB on a 14.56 GiB T4, 14.19 GiB on a 15.47 GiB RTX 5080: both ran out in the
        profile run, where a lower --gpu-memory-utilization cannot help); None where either is unknown."""
        weights, gpu = self._weights_gib(), self._gpu_gib()
        return round(gpu - weights, 2) if weights is not None and gpu else None

    def _arch_near(self) -> str | None:
        """The architecture vLLM's printed list has that the refused one misspells: a letter's case,
        two neighbouring letters swapped, or one lowercase letter dropped or added ("LlamaForCasualLM" for
        LlamaForCausalLM); None where none is (a digit or a capital more names another model:
        Qwen2/Qwen3, Phi3/Phi3V)."""
        for text in self._texts():
            found = _ARCH_REFUSED.search(text)
            if found is not None:
                names = re.findall(r"'(\w+)'", found["supported"])
                return next((name for name in names if _slip(found["arch"], name)), None)
        return None

    def _model_adapter(self) -> str | None:
        """The GGUF -m gave, where its file name says it is a LoRA adapter ("…-lora-f16.gguf",
        "adapter_model.gguf"): an adapter has none of a model's hyperparameters."""
        path = self.identity.get("model_gguf") or ""
        return path if _ADAPTER_NAME.search(path.rsplit("/", 1)[-1]) else None

    def _kv_deficit_gib(self) -> float | None:
        """GiB the KV cache's budget fell below zero (vLLM's "Available KV cache memory: -37.31 GiB");
        None where it did not. A deficit larger than the weights is not theirs: memory another
        process holds on the GPU counts against --gpu-memory-utilization's share of it."""
        said = self.identity.get("kv_available_gib")
        if said is None or not _NUMBER.fullmatch(said.lstrip("-")):
            return None
        value = float(said)
        return round(-value, 2) if value < 0 else None

    def _quantization(self) -> str | None:
        """The checkpoint's quantisation: the one the arguments printed, else one its name says
        (an FP8 / AWQ / GPTQ / GGUF checkpoint is quantised whatever the arguments say)."""
        said = self.identity.get("quantization")
        if said is not None and said.strip().lower() not in _UNSET:
            return said
        named = _QUANTISED_NAME.search(self.identity.get("model", ""))
        return named.group(0).lower() if named is not None else None

    def _tp_size(self) -> int | None:
        """The tensor-parallel size: the command's, else the one the log's arguments printed."""
        if self.command is not None:
            return self.command.tp
        said = self.identity.get("tp_size")
        return int(said) if said is not None and said.isdigit() else None

    def _fraction(self) -> float | None:
        """The memory fraction this run used: the command's, else the one its argument line printed,
        else the server's fixed default, but only where the log printed its arguments (a run whose
        arguments are unknown may have set any value: advice "lower it to X" could point up)."""
        if self.command is not None and self.command.mem_fraction is not None:
            return self.command.mem_fraction
        logged = self.identity.get("mem_fraction")
        if logged is not None:
            try:
                value = float(logged)
            except ValueError:
                return None
            return value if 0.0 < value <= 1.0 else None
        if self.command is None and (
            self.server not in ARGS_NAME_CHANGES or not any(p.name == "server_args" for p in self.phases)
        ):
            return None
        return DEFAULT_FRACTION.get(self.server or "")

    def _package(self) -> str | None:
        """The PyPI package of a missing top-level module, where ``PACKAGE_OF_MODULE`` knows it
        (cv2 → opencv-python, transformers → transformers); None for any other module, a compiled
        part, or a submodule of a package the table does not name."""
        found = _MODULE.search(self.message) or next(filter(None, (_MODULE.search(t) for t in self.block)), None)
        if found is None or _COMPILED_PART.search(found["top"]):
            return None
        return PACKAGE_OF_MODULE.get(found["mod"]) or PACKAGE_OF_MODULE.get(found["top"])

    def _path_given(self) -> str | None:
        """"yes" when the path Python could not find (ENOENT) is one the run was given: a word of
        the command line (``--chat-template /t.jinja``, ``--x=/p``) or a value the log's argument
        lines printed (the model, the tokenizer, the chat template); else not set (the path may be
        the server's own, built from its defaults: a bug or an incomplete install, not a typo)."""
        found = next(filter(None, (_ENOENT.search(t) for t in self._texts())), None)
        if found is None:
            return None
        path = _path_key(found["path"])
        given = list(self.identity.values())
        if self.command is not None:
            given += [word.split("=", 1)[-1] for word in self.command.argv]
        return "yes" if path and any(_path_key(word) == path for word in given) else None

    def _importer(self) -> str | None:
        """The package whose code made the failing import: the last frame of the traceback that
        runs in an installed package or a source checkout's src/ (None where no frame names one)."""
        for text in reversed(self.block):
            found = _FRAME_PACKAGE.match(text)
            if found is not None:
                return found["pkg"]
        return None

    def _server(self) -> str | None:
        return self.server

    def _port(self) -> int | None:
        return self.command.port if self.command is not None else None

    def _tp(self) -> int | None:
        return self.command.tp if self.command is not None else None

    def _world_size(self) -> int | None:
        """The GPUs the run asks Ray for: its placement group as the message lists it, else tensor ×
        pipeline parallel size from the command or the log's argument line."""
        specs = _SPECS.search(self.message)
        if specs is not None and "GPU" in specs["body"]:
            return specs["body"].count("'GPU'")
        requiring = _REQUIRING.search(self.message)
        if requiring is not None:
            return int(requiring["gpus"])
        if self.command is not None:
            return self.command.tp * self.command.pp
        tp, pp = self.identity.get("tp_size"), self.identity.get("pp_size", "1")
        return int(tp) * int(pp) if tp is not None and tp.isdigit() and pp.isdigit() else None

    def _ray_gpus(self) -> int | None:
        """The GPUs Ray has, as the log's ``ray status`` said them before the server started."""
        said = self.identity.get("ray_gpus")
        try:
            return None if said is None else int(float(said))
        except ValueError:
            return None

    def _ray_short_by(self) -> int | None:
        """How many GPUs Ray lacks for the run; None unless both are known and it lacks some."""
        asked, seen = self._world_size(), self._ray_gpus()
        return asked - seen if asked is not None and seen is not None and asked > seen else None

    def _avail_before(self) -> float | None:
        """GB free when the weights began to load (SGLang's "Load weight begin. avail mem=")."""
        phase = next((p for p in self.phases if p.name == "weight_load"), None)
        found = _FIGURE.search(phase.first_detail) if phase is not None else None
        return float(found["gb"]) if found else None

    def _avail_after(self) -> float | None:
        """GB free once the weights were in ("Load weight end. … avail mem=")."""
        phase = next((p for p in self.phases if p.name == "weight_load" and p.done), None)
        found = _FIGURE.search(phase.detail) if phase is not None else None
        return float(found["gb"]) if found else None

    def _fraction_min(self) -> float | None:
        """SGLang sizes the KV pool as avail_after − total × (1 − fraction): above this it is not empty."""
        before, after = self._avail_before(), self._avail_after()
        # the same figure twice is one line read as both ends (a log whose load shows only its end
        # line): the weights' share is not known, and 1 − after/before would say 0
        if not before or after is None or after >= before:
            return None
        return _round_up(1 - after / before)

    def _fraction_up(self) -> float | None:
        """A higher fraction that leaves the KV pool room: the minimum plus 0.03, or the current plus 0.05."""
        current, least = self._fraction(), self._fraction_min()
        target = least + 0.03 if least is not None else (current + 0.05 if current is not None else None)
        if target is None:
            return None
        if current is not None:
            target = max(target, current + 0.01)
        return round(min(target, MAX_FRACTION), 2) if current is None or current < MAX_FRACTION else None

    def _short_gib(self) -> float | None:
        """How much the failed allocation lacked (GiB), from torch's OOM message."""
        found = _OOM.search(self.message)
        if found is None:
            return None
        tried = float(found["tried"]) / (1024 if found["tu"] == "M" else 1)
        free = float(found["free"]) / (1024 if found["fu"] == "M" else 1)
        return max(tried - free, 0.0)

    def _kv(self, name: str) -> str | None:
        found = _KV.search(self.message)
        return found[name] if found is not None else None

    def _kv_needed(self) -> str | None:
        """GiB of KV cache one request of the longest length needs, as vLLM's message prints it."""
        return self._kv("needed")

    def _kv_free(self) -> str | None:
        """GiB of KV cache the memory budget left, as vLLM's message prints it."""
        return self._kv("free")

    def _kv_short(self) -> str | None:
        needed, free = self._kv_needed(), self._kv_free()
        if needed is None or free is None or float(needed) <= float(free):
            return None
        return f"{float(needed) - float(free):.2f}"

    def _fraction_fit(self) -> float | None:
        """The largest memory fraction that fits in what was free at start (vLLM's free-memory
        check), 1 % below it; only when it is below the run's own fraction."""
        found = _FREE.search(self.message)
        if found is None or not float(found["total"]):
            return None
        fit = math.floor((float(found["free"]) / float(found["total"]) - 0.01) * 100) / 100
        current = self._fraction()
        return fit if fit > 0.05 and (current is None or fit < current) else None

    def _gib_held(self) -> str | None:
        """GiB other processes held when the server started (total − free, vLLM's free-memory check)."""
        found = _FREE.search(self.message)
        return None if found is None else f"{float(found['total']) - float(found['free']):.2f}"

    def _fraction_delta(self) -> float | None:
        """How much lower the static fraction must go to free what the allocation lacked (+1 %)."""
        found = _OOM.search(self.message)
        short = self._short_gib()
        if found is None or short is None:
            return None
        return _round_up(short / float(found["total"]) + 0.01)

    def _fraction_down(self) -> float | None:
        current = self._fraction()
        if current is None:
            return None
        delta = self._fraction_delta() or 0.05
        lower = round(current - delta, 2)
        return lower if lower > 0.1 else None


def _path_key(path: str) -> str:
    """A path as compared: without quotes, a leading "./" or a trailing "/"."""
    path = path.strip().strip("'\"")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/\\") or path


def _round_up(value: float) -> float:
    return math.ceil(round(value * 100, 6)) / 100


def _text(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".") if value < 10 else f"{value:.1f}".rstrip("0").rstrip(".")
    return str(value)


def render(template: str, values: dict[str, str], context: Context) -> str | None:
    """``template`` with its ``{name}`` / ``{name*2}`` / ``{name//2}`` fields filled, or None if one is unknown."""
    out = []
    for literal, field_name, _, _ in string.Formatter().parse(template):
        out.append(literal)
        if field_name is None:
            continue
        parsed = _FIELD.match(field_name)
        if parsed is None:
            return None
        value = values.get(parsed["name"]) or context.fact(parsed["name"])
        if value is None:
            return None
        if parsed["op"]:
            try:
                number = float(value)
            except ValueError:
                return None
            factor = int(parsed["n"])
            result = number * factor if parsed["op"] == "*" else number // factor
            value = str(int(result)) if result == int(result) else _text(result)
        out.append(value)
    return "".join(out)
