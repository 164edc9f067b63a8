"""Server profiles: what a server's log looks like, as data (TOML files in ``tui/profiles/``).

A profile says how to recognise the server, how to split a line into its prefix
(timestamp, rank tag, level) and message, which patterns begin, end and advance
each canonical phase, which lines mean ready / stopped, and the server's own error
signatures. ``common.toml`` holds what every server shares (CUDA, NCCL, OOM,
Python warnings, benign lines) and is merged into each profile. A user's own
``.toml`` file works exactly like the built-in ones. A user's regex is compiled here, so a
bad file raises ``ProfileError`` with one line naming the key at fault; a built-in one on its
first use (most are never used by one run: another server's, a hint for another failure).
The per-line first test over many patterns is ``tui.core.quicktest``.
"""

from __future__ import annotations

import contextvars
import pkgutil
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tui.core.files import read_text
from tui.core.limits import parse_duration
from tui.core.linear import LinearError, compile_linear
from tui.core.quicktest import QuickTest as QuickTest, any_of as any_of  # (where the tracker finds them)
from tui.core.state import PHASES
from tui.core.timestamps import ELAPSED
from tui.core.kept import PROGRAMS, TABLES, parse_toml

BUILTIN = ("sglang", "vllm", "trtllm", "tgi", "llamacpp")
COMMON = "common"

Pattern = re.Pattern[str]


class ProfileError(Exception):
    """A profile could not be loaded: the message is one line naming the file and key."""


@dataclass(frozen=True, slots=True)
class Signature:
    """A one-line error signature. ``kind`` is the category ("cuda_oom", "nccl", ...).

    ``secondary``: a consequence of another error (the parent's "child failed", a
    wrapper's "see root cause above"): it fails a startup on its own, but never
    hides a root cause reported before or after it.
    """

    kind: str
    regex: Pattern
    fatal: bool = True
    secondary: bool = False
    fallback: bool = False  # tried after all others (a catch-all such as "SomeError: …")
    #: not fatal by itself, but the root cause if the startup fails before it makes progress
    #: (NVSHMEM's "init failed for transport: IBGDA", an "NCCL WARN"): the failure is its follow-on
    cause: bool = False
    #: a cause that may come right after the failure it explains, too: a compiler's words that the
    #: exception carries in its message, or that a paste put below it ("Python.h: No such file")
    after: bool = False


@dataclass(frozen=True, slots=True)
class PhaseSpec:
    """The patterns of one canonical phase (see the profile format in README)."""

    name: str
    index: int  # position in PHASES
    begin: tuple[Pattern, ...] = ()
    end: tuple[Pattern, ...] = ()
    step: tuple[Pattern, ...] = ()  # activity inside the phase (e.g. "KV Cache is allocated")
    implicit_begin: tuple[Pattern, ...] = ()  # no begin line: the last match on a rank is the start
    progress: tuple[Pattern, ...] = ()  # tqdm bars: groups pct, or n and total
    ranked: bool = True  # False: every line counts as one rank ("main")
    settle: bool = False  # several begin/end pairs per rank: over only once a later phase shows
    once: bool = False  # a begin line after it ended does not reopen it (the arguments, printed once)
    repeat_is_draft: bool = False  # a rank's 2nd begin / end belongs to draft_init
    #: a rank's begin after it ended this phase belongs to draft_init once the draft began there
    #: since (old EAGLE: the draft's graphs say "Capture cuda graph begin" as the target's did)
    repeat_after_draft_is_draft: bool = False
    requires_begin: bool = False  # end / step lines count only on a rank that began the phase
    all_ranks: bool = False  # every rank tag seen prints this phase: over when all of them ended it
    #: a barrier (joining the distributed group): no rank gets through before every rank is in,
    #: so one rank's end is every rank's (vLLM prints some of its lines on one rank only)
    collective: bool = False
    # A line this phase and one of these phases both claim belongs to that phase while it runs
    # on the line's rank (SGLang's "Compiling a graph …" inside piecewise graph capture).
    yield_to: tuple[str, ...] = ()
    #: its lines count only once one of these phases is over (llama.cpp listens before it loads:
    #: that "listening" is no ready phase beside the load, nor one on a start whose load failed)
    after: tuple[str, ...] = ()
    stall_after: float | None = None  # seconds of log silence in this phase before "stalled?"
    #: lines that each say one item of the phase is done (vLLM's torch.compile ranges): groups
    #: ``seconds`` (the item's own time) and ``cached`` (it came from a cache, not made afresh)
    items: tuple[Pattern, ...] = ()
    #: an ``[identity]`` key whose value lists the items to do: its count of numbers is the total
    items_total: str | None = None


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    title: str
    source: str  # the file it came from
    detect: tuple[Pattern, ...] = ()  # weak evidence: a line of this server's shape (scored)
    identify: tuple[Pattern, ...] = ()  # definitive: a line only this server prints
    headers: tuple[Pattern, ...] = ()
    timestamp: str | None = None  # strptime format of the header's ts group, or ``timestamps.ELAPSED``
    rank_token: Pattern | None = None  # findall over the ranks / proc group: (kind, index)
    rank_order: tuple[str, ...] = ()
    bar_rank: str = "main"  # bars carry no rank: their phase's rank until a real one shows
    warning_levels: frozenset[str] = frozenset()
    #: a ``lvl`` the server gives its errors (llama.cpp's ``E``): such a line no signature knows
    #: explains a failure that follows (held back as a ``Signature.cause`` is), else it is a warning
    error_levels: frozenset[str] = frozenset()
    phases: tuple[PhaseSpec, ...] = ()
    ready: tuple[Pattern, ...] = ()
    #: a ready line counts only once one of these phases has begun (another program's "Application
    #: startup complete." before anything loaded is not the server's)
    ready_after: tuple[str, ...] = ()
    #: lines that must come too, before or after a ready line (llama.cpp: the model loaded and the
    #: server listening, in either order): whichever comes second is the ready line
    ready_with: tuple[Pattern, ...] = ()
    close: tuple[Pattern, ...] = ()  # every phase before ready is over (e.g. max_total_num_tokens=)
    stop: tuple[Pattern, ...] = ()  # after ready: the server is shutting down
    startup: tuple[Pattern, ...] = ()  # a (new) startup begins: after an ended one, a new attempt
    figures: tuple[Pattern, ...] = ()  # "avail mem=… GB": shown as a phase's detail
    signatures: tuple[Signature, ...] = ()
    warnings: tuple[Pattern, ...] = ()
    carry_on: tuple[Pattern, ...] = ()  # the line says the server goes on: a warning, whatever it names
    benign: tuple[Pattern, ...] = ()
    prefilter: tuple[str, ...] = ()
    max_detect_lines: int = 5000
    examples: tuple[str, ...] = ()  # sample lines: a self-test, and the tracker's warm-up
    # what a startup is, from its argument lines: ("model", patterns), ("tp_size", …); each
    # pattern's (?P<value>…) group is the value. History keys `watch`'s phase times by them.
    identity: tuple[tuple[str, tuple[Pattern, ...]], ...] = ()
    #: ``[processes]``: (role, title patterns) — a process whose title (``/proc/PID/comm`` or
    #: ``argv[0]``, as setproctitle sets them) matches claims that role (``PROCESS_ROLES``)
    process_titles: tuple[tuple[str, tuple[Pattern, ...]], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    #: where this server's own pages live ("github.com/vllm-project/vllm", "docs.vllm.ai"): a hint's
    #: link to another server's site is not shown for this server's log (``tui.core.hints``)
    sites: tuple[str, ...] = ()

    def phase(self, name: str) -> PhaseSpec | None:
        for spec in self.phases:
            if spec.name == name:
                return spec
        return None

    @property
    def stall_after(self) -> dict[str, float]:
        """Each phase's ``stall_after`` (seconds), for the phases that set one."""
        return {spec.name: spec.stall_after for spec in self.phases if spec.stall_after is not None}


# ------------------------------------------------------------------ loading

_TOP_KEYS = {
    "name", "title", "detect", "prefix", "phases", "markers", "signatures", "warnings",
    "benign", "prefilter", "options", "examples", "identify", "identity", "processes", "sites",
}
#: ``[processes]``: the roles a process title can claim, in the order they are tried.
PROCESS_ROLES = ("detokenizer", "rank", "engine")
_PREFIX_KEYS = {"headers", "timestamp", "rank_token", "rank_order", "bar_rank", "warning_levels", "error_levels"}
_PHASE_KEYS = {
    "begin", "end", "step", "implicit_begin", "progress", "ranked", "settle", "repeat_is_draft", "repeat_after_draft_is_draft",
    "requires_begin", "all_ranks", "yield_to", "after", "stall_after", "once", "collective", "items", "items_total",
}
_MARKER_KEYS = {"ready", "close", "stop", "figures", "startup", "ready_after", "ready_with"}
_SIGNATURE_KEYS = {"kind", "pattern", "fatal", "secondary", "fallback", "cause", "after"}
_OPTION_KEYS = {"max_detect_lines"}


def _compile(where: str, pattern: Any, *, any_line: bool = False) -> Pattern:
    """A pattern of a built-in file (``trusted_patterns``), or the same text as one: Python's
    ``re``. Any other (a user's profile or hints file): the linear-time engine, or refused; refused
    too where it matches the empty line (it would say every line is an error, a marker, a warning),
    unless it is one that takes any line apart (``any_line``: a prefix header)."""
    if not isinstance(pattern, str):
        raise ProfileError(f"{where}: expected a regex string, got {type(pattern).__name__}")
    if "(?P=" in pattern:
        raise ProfileError(f"{where}: back-references are not allowed in {pattern!r}")
    try:
        if _trusted.get():
            return cast(Pattern, _Deferred(pattern))
        compiled = re.compile(pattern) if pattern in _vetted() else compile_linear(pattern)
    except re.error as exc:
        raise ProfileError(f"{where}: bad pattern {pattern!r}: {exc}") from None
    except LinearError as exc:
        raise ProfileError(
            f"{where}: pattern {pattern!r} refused: {exc} (a user's patterns run on a linear-time engine, RE2, so none can freeze the tool)"
        ) from None
    if not any_line and compiled.search("") is not None:  # '' or 'x*'
        raise ProfileError(f"{where}: pattern {pattern!r} matches every line (even an empty one)")
    return compiled


class _Deferred:
    """A built-in pattern, compiled by Python's ``re`` on its first use (a start-up of `scan` would
    otherwise compile some 500 patterns, a third of its fixed cost), from the program an earlier run
    kept where there is one (``tui.core.kept``). Once compiled, its methods and attributes are
    the compiled pattern's own, looked up as fast."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def __getattr__(self, name: str) -> Any:  # only for what is not set yet: the first use
        if name.startswith("__"):  # (copy and pickle ask for hooks it does not have)
            raise AttributeError(name)
        compiled = PROGRAMS.compile(self.pattern)
        for attr in _PATTERN_ATTRS:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Deferred) and other.pattern == self.pattern

    def __copy__(self) -> _Deferred:  # immutable, as a compiled pattern is
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Deferred:
        return self

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"re.compile({self.pattern!r})"


def _checked(pattern: Pattern) -> bool:
    """Whether a profile's load checks ``pattern``'s groups: not a built-in one's before its first use
    (the check would compile it, and `scan` uses few of the other servers'; the tests load every
    built-in file as a user's, which checks them all)."""
    return not isinstance(pattern, _Deferred)


_PATTERN_ATTRS = ("search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split", "groupindex", "groups", "flags")

_trusted: contextvars.ContextVar[bool] = contextvars.ContextVar("trusted_patterns", default=False)
_vetted_cache: frozenset[str] | None = None


@contextmanager
def trusted_patterns() -> Iterator[None]:
    """Patterns compiled inside run on Python's ``re``: the built-in files, whose every pattern
    the tests run against pathological lines (a user's file never loads inside this)."""
    token = _trusted.set(True)
    try:
        yield
    finally:
        _trusted.reset(token)


def _vetted() -> frozenset[str]:
    """The text of every built-in profile pattern: a user's profile copied from a built-in one
    keeps its vetted patterns (look-arounds included) on Python's faster ``re``."""
    global _vetted_cache
    if _vetted_cache is None:
        found: set[str] = set()
        for profile in builtin_profiles():
            found.update(p.pattern for p in all_patterns(profile))
            found.update(p.pattern for p in profile.headers)
            if profile.rank_token is not None:
                found.add(profile.rank_token.pattern)
        _vetted_cache = frozenset(found)
    return _vetted_cache


def all_patterns(profile: Profile) -> list[Pattern]:
    """Every pattern a profile runs on a line's message (headers and rank token apart)."""
    out = [*profile.detect, *profile.identify, *profile.ready, *profile.close, *profile.stop, *profile.startup]
    out += [*profile.figures, *profile.warnings, *profile.carry_on, *profile.benign, *(s.regex for s in profile.signatures)]
    for spec in profile.phases:
        out += [*spec.begin, *spec.end, *spec.step, *spec.implicit_begin, *spec.progress, *spec.items]
    for _key, patterns in profile.identity:
        out += patterns
    return out


def _patterns(where: str, value: Any, *, any_line: bool = False) -> tuple[Pattern, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ProfileError(f"{where}: expected a list of regex strings")
    return tuple(_compile(f"{where}[{i}]", p, any_line=any_line) for i, p in enumerate(value))


def _strings(where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProfileError(f"{where}: expected a list of strings")
    return tuple(value)


def _table(where: str, value: Any, allowed: set[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProfileError(f"{where}: expected a table")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ProfileError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(allowed))})")
    return value


def _phase_names(where: str, value: Any) -> tuple[str, ...]:
    names = _strings(where, value)
    for name in names:
        if name not in PHASES:
            raise ProfileError(f"{where}: unknown phase {name!r} (known: {', '.join(PHASES)})")
    return names


def _bool(where: str, value: Any, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ProfileError(f"{where}: expected true or false")
    return value


def _parse(data: dict[str, Any], source: str, common: dict[str, Any] | None) -> Profile:
    where = source
    _table(where, data, _TOP_KEYS)
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise ProfileError(f"{where}: 'name' must be a string (a short name such as \"sglang\"), not {type(name).__name__}")
    if not name:
        raise ProfileError(f"{where}: 'name' is missing (a short name such as \"sglang\")")
    prefix = _table(f"{where}: prefix", data.get("prefix"), _PREFIX_KEYS)
    markers = _table(f"{where}: markers", data.get("markers"), _MARKER_KEYS)
    options = _table(f"{where}: options", data.get("options"), _OPTION_KEYS)
    phases_raw = _table(f"{where}: phases", data.get("phases"), set(PHASES))

    phases = []
    for pname, body in phases_raw.items():
        pw = f"{where}: phases.{pname}"
        body = _table(pw, body, _PHASE_KEYS)
        phases.append(
            PhaseSpec(
                name=pname,
                index=PHASES.index(pname),
                begin=_patterns(f"{pw}.begin", body.get("begin")),
                end=_patterns(f"{pw}.end", body.get("end")),
                step=_patterns(f"{pw}.step", body.get("step")),
                implicit_begin=_patterns(f"{pw}.implicit_begin", body.get("implicit_begin")),
                progress=_patterns(f"{pw}.progress", body.get("progress")),
                ranked=_bool(f"{pw}.ranked", body.get("ranked"), True),
                settle=_bool(f"{pw}.settle", body.get("settle"), False),
                once=_bool(f"{pw}.once", body.get("once"), False),
                repeat_is_draft=_bool(f"{pw}.repeat_is_draft", body.get("repeat_is_draft"), False),
                repeat_after_draft_is_draft=_bool(
                    f"{pw}.repeat_after_draft_is_draft", body.get("repeat_after_draft_is_draft"), False
                ),
                requires_begin=_bool(f"{pw}.requires_begin", body.get("requires_begin"), False),
                all_ranks=_bool(f"{pw}.all_ranks", body.get("all_ranks"), False),
                collective=_bool(f"{pw}.collective", body.get("collective"), False),
                yield_to=_phase_names(f"{pw}.yield_to", body.get("yield_to")),
                after=_phase_names(f"{pw}.after", body.get("after")),
                stall_after=_duration(f"{pw}.stall_after", body.get("stall_after")),
                items=_patterns(f"{pw}.items", body.get("items")),
                items_total=_identity_key(f"{pw}.items_total", body.get("items_total")),
            )
        )

    headers = _patterns(f"{where}: prefix.headers", prefix.get("headers"), any_line=True)
    for i, h in enumerate(headers):
        if _checked(h) and "msg" not in h.groupindex:
            raise ProfileError(f"{where}: prefix.headers[{i}]: needs a (?P<msg>…) group for the message")
    timestamp = prefix.get("timestamp")
    if timestamp is not None and not isinstance(timestamp, str):
        raise ProfileError(f"{where}: prefix.timestamp: expected a strptime format string (or \"{ELAPSED}\")")
    rank_token = prefix.get("rank_token")
    rank_token_re = _compile(f"{where}: prefix.rank_token", rank_token) if rank_token else None
    if rank_token_re is not None and rank_token_re.groups != 2:
        raise ProfileError(f"{where}: prefix.rank_token: needs exactly two groups (kind, index)")
    bar_rank = prefix.get("bar_rank", "main")
    if not isinstance(bar_rank, str):
        raise ProfileError(f"{where}: prefix.bar_rank: expected a string")

    sigs = _signatures(where, data.get("signatures"))
    warnings_table = _table(f"{where}: warnings", data.get("warnings"), {"patterns", "carry_on"})
    warnings = _patterns(f"{where}: warnings.patterns", warnings_table.get("patterns"))
    carry_on = _patterns(f"{where}: warnings.carry_on", warnings_table.get("carry_on"))
    benign = _patterns(f"{where}: benign.patterns", _table(f"{where}: benign", data.get("benign"), {"patterns"}).get("patterns"))
    words = _strings(f"{where}: prefilter.words", _table(f"{where}: prefilter", data.get("prefilter"), {"words"}).get("words"))
    if any(not w for w in words):
        raise ProfileError(f"{where}: prefilter.words: empty word")
    max_detect = options.get("max_detect_lines", 5000)
    if not isinstance(max_detect, int) or max_detect < 1:
        raise ProfileError(f"{where}: options.max_detect_lines: expected a positive integer")

    if common is not None:  # what every server shares
        sigs = _catch_alls_last(sigs + common["signatures"])
        warnings = warnings + common["warnings"]
        carry_on = carry_on + common["carry_on"]
        benign = benign + common["benign"]
        words = words + common["prefilter"]
        own = data.get("identity") or {}
        identity = _identity(where, own) + tuple((k, p) for k, p in common["identity"] if k not in own)
    else:
        identity = _identity(where, data.get("identity"))

    title = data.get("title", name)
    return Profile(
        name=name,
        title=title if isinstance(title, str) else name,
        source=source,
        detect=_patterns(f"{where}: detect", data.get("detect")),
        identify=_patterns(f"{where}: identify", data.get("identify")),
        headers=headers,
        timestamp=timestamp,
        rank_token=rank_token_re,
        rank_order=_strings(f"{where}: prefix.rank_order", prefix.get("rank_order")),
        bar_rank=bar_rank,
        warning_levels=frozenset(_strings(f"{where}: prefix.warning_levels", prefix.get("warning_levels"))),
        error_levels=frozenset(_strings(f"{where}: prefix.error_levels", prefix.get("error_levels"))),
        phases=tuple(phases),
        ready=_patterns(f"{where}: markers.ready", markers.get("ready")),
        ready_after=_phase_names(f"{where}: markers.ready_after", markers.get("ready_after")),
        ready_with=_patterns(f"{where}: markers.ready_with", markers.get("ready_with")),
        close=_patterns(f"{where}: markers.close", markers.get("close")),
        stop=_patterns(f"{where}: markers.stop", markers.get("stop")),
        startup=_startup(where, markers.get("startup"), phases),
        figures=_patterns(f"{where}: markers.figures", markers.get("figures")),
        signatures=sigs,
        warnings=warnings,
        carry_on=carry_on,
        benign=benign,
        prefilter=tuple(dict.fromkeys(words)),
        max_detect_lines=max_detect,
        examples=_strings(f"{where}: examples", data.get("examples")),
        identity=identity,
        process_titles=_process_titles(where, data.get("processes")),
        sites=_sites(f"{where}: sites", data.get("sites")),
    )


def _sites(where: str, value: Any) -> tuple[str, ...]:
    """Host and path prefixes without a scheme: ``docs.vllm.ai``, ``github.com/vllm-project/vllm``."""
    sites = _strings(where, value)
    for site in sites:
        if not re.fullmatch(r"[A-Za-z0-9.-]+\.[A-Za-z]{2,}(?:/[^\s/]+)*", site):
            raise ProfileError(f"{where}: expected a host and path such as \"github.com/vllm-project/vllm\", not {site!r}")
    return sites


#: the ``sites`` of each user's profile file loaded so far (``--server PATH.toml``), by its name
_loaded_sites: dict[str, tuple[str, ...]] = {}


def server_sites() -> dict[str, tuple[str, ...]]:
    """Each server's own sites, by its name (which hint links are its own): the built-in profiles',
    and those of the user's profile files loaded so far (a file's over a built-in one of its name)."""
    return {**{profile.name: profile.sites for profile in builtin_profiles()}, **_loaded_sites}


def _process_titles(where: str, value: Any) -> tuple[tuple[str, tuple[Pattern, ...]], ...]:
    table = _table(f"{where}: processes", value, set(PROCESS_ROLES))
    return tuple((role, _patterns(f"{where}: processes.{role}", table[role])) for role in PROCESS_ROLES if role in table)


def process_titles(profiles: list[Profile] | None = None) -> dict[str, tuple[Pattern, ...]]:
    """Every role's title patterns, over ``profiles`` (default: the built-in ones), in
    ``PROCESS_ROLES`` order: what the writer discovery reads a title by before it knows the server
    (a title is only a claim: ``tui.sources.writers`` weighs it with how the process came to be)."""
    merged: dict[str, tuple[Pattern, ...]] = {role: () for role in PROCESS_ROLES}
    for profile in builtin_profiles() if profiles is None else profiles:
        for role, patterns in profile.process_titles:
            merged[role] += patterns
    return merged


#: What the log says of the run that a hint's preconditions read (``hints.toml`` ``when``): the
#: nodes, expert-parallel size, quantisation, the server's version, chunked prefill, remote code
#: trusted, the network interfaces (and vLLM's worker start method) the printed environment set, and the figures
#: of memory (GiB) the log printed.
PRECONDITION_IDENTITY = frozenset({
    "nnodes", "ep_size", "quantization", "version", "chunked_prefill", "trust_remote_code", "gloo_socket_ifname",
    "nccl_socket_ifname", "hf_hub_offline", "vllm_worker_multiproc_method", "fallback", "weights_gib", "gpu_gib", "inspection_failed", "import_ignored",
    "tokenizer", "chat_template", "generation_config", "tokenizer_mode", "worker_cls", "flash_missing_module", "kv_cache_bytes",
    "kv_cache_gib", "given_args", "model_gguf", "model_not_gguf", "model_safetensors", "load_format",
    "host_with_port", "host_url", "pipeline_copies", "override_gpu", "kv_gpu", "kv_available_gib", "quantization_arg",
})
#: Identity keys that lines after the first phases give (the weights' size once loaded, a model's
#: fallback to a generic implementation as its load begins): read from every line until found.
LATE_IDENTITY = frozenset({"weights_gib", "gpu_gib", "fallback", "inspection_failed", "import_ignored",
                           "flash_missing_module", "kv_cache_gib", "model_gguf", "model_not_gguf", "model_safetensors",
                           "pipeline_copies", "override_gpu", "kv_gpu", "kv_available_gib"})
#: What ``[identity]`` may name (``compile_items``: the torch.compile ranges and sizes to compile).
IDENTITY_KEYS = frozenset({"model", "tp_size", "mem_fraction", "node_rank", "headless", "pp_size", "port",
                           "draft_model", "compile_items", "ray_gpus", "dist_init_addr", *PRECONDITION_IDENTITY})
#: Identity keys a job script's own lines give, before the server's first line and on lines no
#: phase claims (``ray status``, the environment it printed): read from any line, the last one before the server counting. The
#: others come from the server's argument lines only, the first one counting.
SCRIPT_IDENTITY = frozenset({"ray_gpus", "gloo_socket_ifname", "nccl_socket_ifname", "hf_hub_offline",
                             "vllm_worker_multiproc_method"})
#: Identity keys read from lines of their own (a job script's, the figures printed later): their
#: patterns make a line a marker line, the others are only read on one.
OWN_LINE_IDENTITY = SCRIPT_IDENTITY | LATE_IDENTITY


def _identity_key(where: str, value: Any) -> str | None:
    if value is None:
        return None
    if value not in IDENTITY_KEYS:
        raise ProfileError(f"{where}: expected one of the [identity] keys ({', '.join(sorted(IDENTITY_KEYS))})")
    return str(value)


def _identity(where: str, value: Any) -> tuple[tuple[str, tuple[Pattern, ...]], ...]:
    table = _table(f"{where}: identity", value, set(IDENTITY_KEYS))
    out = []
    for key, patterns in table.items():
        compiled = _patterns(f"{where}: identity.{key}", patterns)
        for i, p in enumerate(compiled):
            if _checked(p) and "value" not in p.groupindex:
                raise ProfileError(f"{where}: identity.{key}[{i}]: needs a (?P<value>…) group")
        out.append((key, compiled))
    return tuple(out)


def _startup(where: str, value: Any, phases: list[PhaseSpec]) -> tuple[Pattern, ...]:
    """``markers.startup``; a profile without it: the server_args phase's begin lines."""
    if value is not None:
        return _patterns(f"{where}: markers.startup", value)
    args = next((spec for spec in phases if spec.name == "server_args"), None)
    return args.begin if args is not None else ()


def _duration(where: str, value: Any) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ProfileError(f"{where}: {exc}") from None


def _signatures(where: str, value: Any) -> tuple[Signature, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ProfileError(f"{where}: signatures: expected an array of tables ([[signatures]])")
    out = []
    for i, body in enumerate(value):
        sw = f"{where}: signatures[{i}]"
        body = _table(sw, body, _SIGNATURE_KEYS)
        kind = body.get("kind")
        if kind is not None and not isinstance(kind, str):
            raise ProfileError(f"{sw}: 'kind' must be a string (a category such as \"cuda_oom\"), not {type(kind).__name__}")
        if not kind:
            raise ProfileError(f"{sw}: 'kind' is missing (a category such as \"cuda_oom\")")
        out.append(
            Signature(
                kind=kind,
                regex=_compile(f"{sw}.pattern ({kind})", body.get("pattern")),
                fatal=_bool(f"{sw}.fatal", body.get("fatal"), True),
                secondary=_bool(f"{sw}.secondary", body.get("secondary"), False),
                fallback=_bool(f"{sw}.fallback", body.get("fallback"), False),
                cause=_bool(f"{sw}.cause", body.get("cause"), False),
                after=_bool(f"{sw}.after", body.get("after"), False),
            )
        )
        if out[-1].after and not out[-1].cause:
            raise ProfileError(f"{sw}.after: only a 'cause' line can explain a failure it comes after")
    return tuple(out)


def _catch_alls_last(sigs: tuple[Signature, ...]) -> tuple[Signature, ...]:
    """``sigs`` in the order a profile tries them: the named ones in file order, then the catch-alls
    (``fallback``: "SomeError: …"), so that a named signature reads a line first."""
    return tuple(s for s in sigs if not s.fallback) + tuple(s for s in sigs if s.fallback)


def _read_toml(text: str, source: str) -> dict[str, Any]:
    """``text``'s table (an earlier run's parse of the same text where one was kept: ``tui.core.kept``);
    ``ProfileError`` with one line where it is not TOML."""
    try:
        return TABLES.parse(text, parse_toml)
    except ValueError as exc:  # (TOMLDecodeError)
        raise ProfileError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ProfileError(f"{source}: not valid TOML: nested too deeply") from None


def _builtin_text(name: str) -> str:
    """The built-in file ``name``.toml of tui/profiles, read by the package's loader (with
    ``pkgutil``: importlib.resources' readers import zipfile, 3 ms of every `scan`)."""
    data = pkgutil.get_data("tui.profiles", f"{name}.toml")
    if data is None:  # a loader that cannot read its package's files
        raise ProfileError(f"{name}.toml: the built-in file cannot be read")
    return data.decode("utf-8")


_common_cache: dict[str, Any] | None = None
_builtin_cache: dict[str, Profile] = {}


def _common() -> dict[str, Any]:
    global _common_cache
    if _common_cache is None:
        with trusted_patterns():
            _common_cache = _load_common()
    return _common_cache


def _load_common() -> dict[str, Any]:
    source = "common.toml"
    data = _read_toml(_builtin_text(COMMON), source)
    _table(source, data, {"signatures", "warnings", "benign", "prefilter", "identity"})
    return {
        "identity": _identity(source, data.get("identity")),
        "signatures": _signatures(source, data.get("signatures")),
        "warnings": _patterns(f"{source}: warnings.patterns", (data.get("warnings") or {}).get("patterns")),
        "carry_on": _patterns(f"{source}: warnings.carry_on", (data.get("warnings") or {}).get("carry_on")),
        "benign": _patterns(f"{source}: benign.patterns", (data.get("benign") or {}).get("patterns")),
        "prefilter": _strings(f"{source}: prefilter.words", (data.get("prefilter") or {}).get("words")),
    }


def generic_profile() -> Profile:
    """Errors only: no prefix, no phases; what runs before (or without) detection."""
    common = _common()
    return Profile(
        name="generic",
        title="unknown server",
        source="common.toml",
        signatures=_catch_alls_last(common["signatures"]),
        warnings=common["warnings"],
        carry_on=common["carry_on"],
        benign=common["benign"],
        prefilter=tuple(dict.fromkeys(common["prefilter"])),
    )


def load_profile(name_or_path: str | Path) -> Profile:
    """A built-in profile by name ("sglang", "vllm") or a user's profile file (``*.toml``)."""
    key = str(name_or_path)
    if key in BUILTIN:
        if key not in _builtin_cache:
            with trusted_patterns():
                _builtin_cache[key] = _parse(_read_toml(_builtin_text(key), f"{key}.toml"), f"{key}.toml", _common())
        return _builtin_cache[key]
    path = Path(key)
    if path.suffix != ".toml" and not path.exists():
        raise ProfileError(f"unknown server {key!r}: use one of {', '.join(BUILTIN)} or a profile .toml file")
    try:
        text = read_text(path)  # a regular file, capped: not /dev/zero, not a FIFO
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such profile file") from None
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not a text file (expected a TOML profile)") from None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    profile = _parse(_read_toml(text, str(path)), str(path), _common())
    _loaded_sites[profile.name] = profile.sites
    return profile


def builtin_profiles() -> list[Profile]:
    return [load_profile(name) for name in BUILTIN]


def detect_server(lines: list[str], profiles: list[Profile] | None = None) -> Profile | None:
    """The server these lines come from: the first line only one server prints (``identify``)
    settles it; else the profile whose shape (``detect``) most lines have, the earliest on a tie."""
    candidates = builtin_profiles() if profiles is None else profiles
    evidence = Evidence(candidates)
    for text in lines:
        if evidence.weigh(text):
            break
    return evidence.best


class Evidence:
    """Scores the lines of a log for each candidate server until one is identified.

    ``detect`` patterns are weak (a line's shape: SGLang on ROCm prints a vLLM-shaped line
    first); one ``identify`` match is definitive and outweighs any score.
    """

    def __init__(self, candidates: list[Profile]) -> None:
        self.candidates = candidates
        self.scores = {p.name: 0 for p in candidates}
        self.first: dict[str, int] = {}  # name -> order of its first evidence (ties: earliest wins)
        self.identified: Profile | None = None

    def weigh(self, text: str) -> bool:
        """One line's evidence; True once a definitive marker has settled the server."""
        if self.identified is not None:
            return True
        for profile in self.candidates:
            if any(p.search(text) for p in profile.identify):
                self.identified = profile
                return True
        for profile in self.candidates:
            if any(p.search(text) for p in profile.detect):
                self.scores[profile.name] += 1
                self.first.setdefault(profile.name, len(self.first))
        return False

    @property
    def best(self) -> Profile | None:
        if self.identified is not None:
            return self.identified
        scored = [p for p in self.candidates if self.scores[p.name]]
        if not scored:
            return None
        return max(scored, key=lambda p: (self.scores[p.name], -self.first[p.name]))


def prefilter_words(profiles: list[Profile]) -> list[str]:
    """Literal, case-sensitive words: every line that can change a tracker's state has one.

    The fast scanner skips lines without any of them (while the tracker does not
    need every line). Covers the profiles' own words and the common error file.
    """
    words: dict[str, None] = dict.fromkeys(_common()["prefilter"])
    for profile in profiles:
        words.update(dict.fromkeys(profile.prefilter))
    return list(words)
