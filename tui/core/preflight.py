"""Preflight: will this command start? Judged from facts, before the 10-minute launch.

``judge`` turns what the probe found on the host (:mod:`tui.sources.probe_agent`: ports,
models, the installed SGLang's model classes, /dev/shm, disks, limits, package versions)
and one GPU sample into checks, each ✓ / ⚠ / ✗ with one line of why and the fix as
actions. A ✗ is a failure the server would hit for certain (the seed's v1 and v2); a ⚠
is a risk or something that cannot be told from here ("cannot tell" beats a false
all-clear). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tui.core.cmdline import SGLANG, VLLM, Action, ServerCommand
from tui.core.events import GpuInfo, GpuSample
from tui.core.hint_fill import MAX_FRACTION
from tui.core.verdict import REFUSED, Verdict

if TYPE_CHECKING:
    from tui.core.hints import Diagnosis, KnowledgeBase

OK, WARN, FAIL = "ok", "warn", "fail"
GLYPH = {OK: "✓", WARN: "⚠", FAIL: "✗"}
EXIT_OK, EXIT_FAIL, EXIT_WARN = 0, 1, 4
GIB = 1 << 30
#: NCCL's shared-memory transport needs more than Docker's 64 MB default per GPU pair.
SHM_FAIL, SHM_WARN = 512 << 20, 2 << 30
DISK_FAIL, DISK_WARN = 2 * GIB, 20 * GIB
NOFILE_WANTED = 65535
#: Below this many open files a server with many connections runs out ("Too many open files");
#: above it (20000 is common) a limit under NOFILE_WANTED is only said, not warned about.
NOFILE_LOW = 8192
ENV_OVERRIDE = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
#: SGLang's order of the keys that give a model's context length (model_config.get_context_length).
CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: str  # ok, warn, fail
    why: str
    fix: tuple[Action, ...] = ()

    @property
    def line(self) -> str:
        fixes = "; ".join(a.text for a in self.fix)
        return f"{GLYPH[self.status]} {self.name}: {self.why}" + (f" — {fixes}" if fixes else "")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "why": self.why, "fix": [a.text for a in self.fix]}

    def diagnosis(self) -> Diagnosis:
        """The check as a hint: what the header shows under a refusal, and what ``F`` applies — the
        command, environment and port changes; killing GPU holders is ``k``'s, named in the check.
        (The hints module is imported here, not with this one: a dashboard imports this one before its
        first frame, through the several-node code, and the hints module is a few ms of that frame.)"""
        from tui.core.hints import Diagnosis

        ident = "preflight-" + re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")
        fix = tuple(a for a in self.fix if a.verb != "kill_gpu_holders")
        return Diagnosis(ident, f"preflight {GLYPH[self.status]} {self.name}: {self.why}", fix, "")


def refusal(checks: Sequence[Check]) -> Verdict:
    """``REFUSED · ✗ draft context: …``: a launch its preflight stopped; the first ✗ first, then how
    many more there are (each one, and every ⚠, is listed by the dashboard's checks panel and ``--plain``)."""
    failed = [c for c in checks if c.status == FAIL]
    warned = sum(c.status == WARN for c in checks)
    if not failed:
        return Verdict(REFUSED, "the preflight refused the launch")
    first = failed[0]
    more = [f"{len(failed) - 1} more ✗"] if len(failed) > 1 else []
    more += [f"{warned} ⚠"] if warned else []
    tail = f" (+{', '.join(more)})" if more else ""
    return Verdict(REFUSED, f"{GLYPH[FAIL]} {first.name}: {first.why}{tail} · nothing was launched")


def exit_status(checks: Sequence[Check]) -> int:
    if any(c.status == FAIL for c in checks):
        return EXIT_FAIL
    return EXIT_WARN if any(c.status == WARN for c in checks) else EXIT_OK


def gib(n: float | None) -> str:
    return "?" if n is None else f"{n / GIB:.1f} GiB"


def derived_context(config: Mapping[str, Any] | None) -> int | None:
    """The context length SGLang derives from a config.json (rope scaling included)."""
    if not config:
        return None
    nested = config.get("text_config")
    text: Mapping[str, Any] = nested if isinstance(nested, dict) else config
    rope = text.get("rope_scaling") if isinstance(text.get("rope_scaling"), dict) else None
    factor = 1.0
    if rope and "original_max_position_embeddings" not in rope and rope.get("rope_type") != "llama3":
        factor = float(rope.get("factor", 1) or 1)
    for key in CONTEXT_KEYS:
        value = text.get(key)
        if isinstance(value, int) and value > 0:
            return int(factor * value)
    return None


def visible(gpus: Sequence[GpuInfo], devices: str | None) -> list[GpuInfo]:
    """The GPUs a process sees under ``CUDA_VISIBLE_DEVICES`` (indices or UUIDs), in its order."""
    if devices is None:
        return list(gpus)
    out = []
    for token in (t.strip() for t in devices.split(",")):
        if not token:
            break
        match = next((g for g in gpus if (token.isdigit() and g.index == int(token)) or
                      (g.uuid and g.uuid.startswith(token))), None)
        if match is None:
            break  # CUDA stops at the first invalid entry
        out.append(match)
    return out


def judge(
    command: ServerCommand,
    facts: Mapping[str, Any],
    gpus: GpuSample | None,
    hints: KnowledgeBase,
    *,
    gpu_reason: str | None = None,
) -> list[Check]:
    checks: list[Check] = []
    if command.server is None:
        checks.append(Check("command", WARN, "not an SGLang, vLLM or TensorRT-LLM command line: only the machine is checked"))
    checks += _ports(command, facts)
    checks += _gpus(command, facts, gpus, gpu_reason)
    checks += _leftovers(facts)
    checks += _models(command, facts, gpus)
    checks += _speculative(command, facts)
    checks += _machine(command, facts)
    checks += _versions(command, facts, hints)
    if gpus is not None and gpus.simulated:
        checks = [_simulated(c) for c in checks]
    return checks


#: The checks that rest on the GPU sample.
GPU_CHECKS = ("GPUs", "GPU memory", "GPU holders", "weights")


def _simulated(check: Check) -> Check:
    """A check read off simulated GPUs (``--gpus sim``) says nothing about this machine: never ✓ or
    ✗, always ⚠ and labelled, and no fix (its GPU holders are made up)."""
    if check.name not in GPU_CHECKS:
        return check
    return Check(check.name, WARN, f"simulated GPUs (--gpus sim), not this machine's: {check.why}")


# ---------------------------------------------------------------- ports


def _ports(command: ServerCommand, facts: Mapping[str, Any]) -> list[Check]:
    out = []
    for i, port in enumerate(facts.get("ports", [])):
        name = "port" if i == 0 else "dist-init port"
        number, host = port.get("port"), port.get("host")
        if port.get("free"):
            out.append(Check(f"{name} {number}", OK, f"free on {host}"))
        elif port.get("in_use"):
            holder = port.get("holder") or {}
            who = f"pid {holder['pid']} ({holder.get('cmd') or '?'})" if holder.get("pid") else holder.get("cmd", "another process")
            out.append(Check(f"{name} {number}", FAIL, f"in use on {host}, held by {_short(who)}",
                             (Action("free_port", str(number)),)))
        else:
            out.append(Check(f"{name} {number}", WARN, f"cannot tell whether it is free on {host}: {port.get('error')}"))
    return out


def _short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- GPUs


def _fraction(command: ServerCommand) -> float | None:
    if command.mem_fraction is not None:
        return command.mem_fraction
    return 0.9 if command.server == VLLM else None


def _gpus(command: ServerCommand, facts: Mapping[str, Any], sample: GpuSample | None, reason: str | None) -> list[Check]:
    if sample is None or not sample.gpus:
        return [Check("GPUs", WARN, f"cannot tell: {reason or 'no GPU data'}")]
    devices = command.env.get("CUDA_VISIBLE_DEVICES", facts.get("env", {}).get("CUDA_VISIBLE_DEVICES"))
    seen = visible(sample.gpus, devices)
    need = command.gpus_needed
    parts = f"TP{command.tp}" + (f"×DP{command.dp}" if command.dp > 1 else "") + (f"×PP{command.pp}" if command.pp > 1 else "")
    if command.nnodes > 1:
        parts += f" over {command.nnodes} nodes"
    under = f" (CUDA_VISIBLE_DEVICES={devices})" if devices is not None else ""
    out = []
    if len(seen) < need:
        out.append(Check("GPUs", FAIL, f"{len(seen)} visible{under}, {parts} needs {need}"))
    else:
        out.append(Check("GPUs", OK, f"{len(seen)} visible{under}, {parts} needs {need}"))
    used = seen[:need]
    fraction = _fraction(command)
    short = [g for g in used if g.memory_total and g.memory_used is not None and fraction is not None
             and g.memory_total - g.memory_used < g.memory_total * fraction]
    free = [(g.memory_total or 0) - (g.memory_used or 0) for g in used if g.memory_total]
    if short:
        flag = "--gpu-memory-utilization" if command.server == VLLM else "--mem-fraction-static"
        worst = min(short, key=lambda g: (g.memory_total or 0) - (g.memory_used or 0))
        total, free_bytes = worst.memory_total or 0, (worst.memory_total or 0) - (worst.memory_used or 0)
        out.append(Check("GPU memory", FAIL, f"GPU {worst.index} has {gib(free_bytes)} free of {gib(total)} "
                         f"({free_bytes / total:.2f}), less than {flag} {fraction}",
                         (Action("kill_gpu_holders"),)))
    elif free:
        out.append(Check("GPU memory", OK, f"{gib(min(free))} free on the fullest of {len(free)} GPU(s)"))
    holders = [(g, p) for g in used for p in g.processes if (p.used_bytes or 0) > 0]
    if holders:
        listed = ", ".join(f"pid {p.pid} {p.name or '?'} {gib(p.used_bytes)} on GPU {g.index}" for g, p in holders[:4])
        more = f" and {len(holders) - 4} more" if len(holders) > 4 else ""
        out.append(Check("GPU holders", WARN, f"other processes hold GPU memory: {listed}{more}", (Action("kill_gpu_holders"),)))
    return out


def _leftovers(facts: Mapping[str, Any]) -> list[Check]:
    found = facts.get("processes") or []
    if not found:
        return [Check("leftover servers", OK, "none of this user's server processes holds a GPU or the server's port")]
    orphans = [p for p in found if p.get("ppid") == 1]
    listed = ", ".join(f"pid {p['pid']} {_short(p['cmd'], 40)}{_held(p)}" for p in found[:3])
    note = f"; {len(orphans)} re-parented to PID 1 (orphans)" if orphans else ""
    return [Check("leftover servers", WARN, f"{len(found)} server process(es) already running: {listed}{note}",
                  (Action("kill_gpu_holders"),))]


def _held(process: Mapping[str, Any]) -> str:
    held = process.get("holds") or []
    return f" (holds {' and '.join('a GPU' if h == 'GPU' else 'the port' for h in held)})" if held else ""


# ---------------------------------------------------------------- models


def _model(role: str, info: Mapping[str, Any] | None, offline: bool) -> Check:
    title = "model" if role == "target" else "draft model"
    if not info:
        return Check(title, FAIL if role == "target" else WARN, "not given on the command line")
    name = info.get("name")
    if info.get("path") is None:
        how = info.get("how", "")
        if how.startswith("not in the Hugging Face cache") and not offline:
            return Check(title, WARN, f"{name} is {how}: the server will download it first")
        return Check(title, FAIL, f"{name}: {how}" + (" and HF_HUB_OFFLINE is set" if offline and "cache" in how else ""))
    if "config_error" in info:
        return Check(title, FAIL, f"{info['path']}/config.json: {info['config_error']}")
    config = info.get("config") or {}
    arch = ", ".join(config.get("architectures") or []) or config.get("model_type") or "unknown architecture"
    where = "in the Hugging Face cache" if info.get("how") == "hf-cache" else "local"
    size = f", {info['weight_bytes'] / 1e9:.1f} GB of weights" if info.get("weight_bytes") else ""
    return Check(title, OK, f"{name} ({where}): {arch}{size}")


def _models(command: ServerCommand, facts: Mapping[str, Any], sample: GpuSample | None) -> list[Check]:
    if command.server is None:
        return []
    models = facts.get("models") or {}
    env = {**facts.get("env", {}), **command.env}
    offline = env.get("HF_HUB_OFFLINE", "") not in ("", "0") or env.get("TRANSFORMERS_OFFLINE", "") not in ("", "0")
    out = [_model("target", models.get("target"), offline)]
    if command.draft:
        out.append(_model("draft", models.get("draft"), offline))
    target = models.get("target") or {}
    weights = target.get("weight_bytes")
    gpus = visible(sample.gpus, env.get("CUDA_VISIBLE_DEVICES")) if sample is not None else []
    totals = [g.memory_total for g in gpus[: command.gpus_needed] if g.memory_total]
    if weights and not totals:
        split = max(1, command.tp * command.pp)
        out.append(Check("weights", WARN, f"{weights / split / 1e9:.1f} GB per GPU (÷ TP×PP {split}): "
                         "cannot tell whether they fit without GPU data"))
    if weights and totals:
        split = max(1, command.tp * command.pp)
        share = weights / split
        fraction = _fraction(command)
        room = min(totals) * (fraction if fraction is not None else MAX_FRACTION)
        said = f"--mem-fraction-static {fraction}" if fraction is not None and command.server == SGLANG else (
            f"fraction {fraction}" if fraction is not None else f"at most {MAX_FRACTION}")
        text = f"{share / 1e9:.1f} GB per GPU (÷ TP×PP {split}) against {room / 1e9:.1f} GB ({gib(min(totals))} × {said})"
        if share > room:
            need = -(-int(weights) // int(room)) if room else None
            more = f": needs at least {need} GPUs' worth, or a quantised checkpoint" if need else ""
            out.append(Check("weights", FAIL, f"do not fit: {text}{more}"))
        elif share > 0.85 * room:
            out.append(Check("weights", WARN, f"fit, with little left for the KV cache: {text}"))
        else:
            out.append(Check("weights", OK, f"fit: {text}"))
    return out


def _speculative(command: ServerCommand, facts: Mapping[str, Any]) -> list[Check]:
    if command.spec_algorithm is None:
        return []
    out = []
    models = facts.get("models") or {}
    env = {**facts.get("env", {}), **command.env}
    override = env.get(ENV_OVERRIDE, "").lower() in ("1", "true", "yes")
    if command.draft is None and command.spec_algorithm.startswith("EAGLE") and command.server == SGLANG:
        out.append(Check("draft model", FAIL, f"{command.spec_algorithm} without --speculative-draft-model-path: "
                         "the target is loaded as its own draft and the start crashes"))
    target_ctx = derived_context((models.get("target") or {}).get("config"))
    asked = command.context_length or target_ctx
    if command.server == SGLANG and command.context_length and target_ctx and command.context_length > target_ctx:
        status = WARN if override else FAIL
        fix = () if override else (Action("set_flag", "--context-length", str(target_ctx)),)
        out.append(Check("target context", status, f"--context-length {command.context_length} is longer than the "
                         f"model's own ({target_ctx})" + (f"; {ENV_OVERRIDE} lets it through" if override else ""), fix))
    draft_ctx = derived_context((models.get("draft") or {}).get("config"))
    if command.draft and draft_ctx and asked:
        if draft_ctx >= asked:
            out.append(Check("draft context", OK, f"the draft's context ({draft_ctx}) covers the target's ({asked})"))
        elif command.server == SGLANG and not override:
            out.append(Check("draft context", FAIL, f"the draft's context ({draft_ctx}) is shorter than the target's "
                             f"({asked}): SGLang refuses the draft", (Action("set_env", ENV_OVERRIDE, "1"),)))
        else:
            out.append(Check("draft context", WARN, f"the draft's context ({draft_ctx}) is shorter than the target's "
                             f"({asked}): allowed, but long requests may cause illegal memory accesses"))
    eagle = facts.get("eagle3")
    if eagle is not None:
        out.append(_eagle3(eagle, facts))
    return out


def _eagle3(eagle: Mapping[str, Any], facts: Mapping[str, Any]) -> Check:
    name, arch = "EAGLE-3 hook", eagle.get("arch")
    status = eagle.get("status")
    chain = eagle.get("chain") or []
    where = f" ({eagle['file']})" if eagle.get("file") else ""
    method = "set_eagle3_layers_to_capture"
    if status == "defines":
        return Check(name, OK, f"{arch}{where} defines {method}")
    if status == "inherits":
        via = next((c for c in chain[1:] if not c.endswith(" not found")), "a base class")
        return Check(name, OK, f"{arch}{where} inherits {method} (from {via.split(' (')[0]})")
    if status == "missing":
        version = (facts.get("versions") or {}).get("sglang")
        return Check(name, FAIL, f"{arch}{where} has no {method} in the installed SGLang {version or ''}".rstrip()
                     + ": EAGLE-3 fails at start with an AttributeError — upgrade SGLang or use another algorithm")
    if status == "no-sglang":
        return Check(name, FAIL, f"SGLang is not installed for {facts.get('python')}")
    if status == "no-class":
        return Check(name, WARN, f"the installed SGLang has no model class {arch}: cannot tell")
    return Check(name, WARN, f"cannot tell whether {arch} has {method}: {'; '.join(chain[-1:]) or eagle.get('detail', '')}")


# ---------------------------------------------------------------- the machine


def _machine(command: ServerCommand, facts: Mapping[str, Any]) -> list[Check]:
    out = []
    shm = facts.get("shm") or {}
    multi = command.gpus_needed > 1
    if "error" in shm or not shm.get("exists", True):
        out.append(Check("/dev/shm", FAIL if multi else WARN, f"{shm.get('path')}: {shm.get('error', 'missing')}"))
    elif shm.get("total") is not None:
        size = shm["total"]
        text = f"{gib(size)} at {shm.get('path')}" + (f", {gib(shm.get('free'))} free" if shm.get("free") != size else "")
        if multi and size < SHM_FAIL:
            out.append(Check("/dev/shm", FAIL, f"{text}: too small for NCCL across {command.gpus_needed} GPUs "
                             "(Docker's default is 64 MB; run with --shm-size=16g or --ipc=host)"))
        elif multi and size < SHM_WARN:
            out.append(Check("/dev/shm", WARN, f"{text}: small for NCCL (16 GiB or --ipc=host is safe)"))
        else:
            out.append(Check("/dev/shm", OK, text))
    for disk in facts.get("disks") or []:
        caches = [c.removesuffix(" cache") for c in disk.get("caches") or ["cache"]]
        what = f"{caches[0]} cache" if len(caches) == 1 else "caches: " + ", ".join(caches)
        if "error" in disk:
            out.append(Check(f"disk ({what})", WARN, f"{disk['path']}: {disk['error']}"))
            continue
        free = disk.get("free") or 0
        text = f"{gib(free)} free at {disk.get('at')}"
        status = FAIL if free < DISK_FAIL else WARN if free < DISK_WARN else OK
        out.append(Check(f"disk ({what})", status, text + ("" if status == OK else ": compile and download caches need room")))
    out += _logind(facts.get("logind"))
    soft, hard = (facts.get("nofile") or [None, None])[:2]
    if soft is not None:
        limit = max(soft, hard) if hard is not None and hard >= 0 else soft
        if 0 <= limit < NOFILE_LOW and not (hard is not None and hard < 0):
            out.append(Check("open files", WARN, f"limit {soft} (hard {hard}): many connections will fail with "
                             f"'Too many open files' (ulimit -n {NOFILE_WANTED})"))
        elif 0 <= limit < NOFILE_WANTED and not (hard is not None and hard < 0):
            out.append(Check("open files", OK, f"limit {soft} (hard {hard}): enough for thousands of connections "
                             f"(ulimit -n {NOFILE_WANTED} for more)"))
        else:
            out.append(Check("open files", OK, f"limit {soft} (hard {'unlimited' if hard is not None and hard < 0 else hard})"))
    return out


#: logind leaves the IPC of users up to this uid alone (systemd's SYSTEM_UID_MAX as most distributions build it).
SYSTEM_UID_MAX = 999
_YES = ("yes", "true", "on", "1")


def _logind(logind: Mapping[str, Any] | None) -> list[Check]:
    """Will systemd-logind delete the server's shared memory and semaphores when the user's last
    session ends (RemoveIPC=yes: the workers then die in SemLock._rebuild, the head waits on
    shm_broadcast)? Nothing to say without systemd."""
    if not logind:
        return []
    user, uid = logind.get("user") or "?", logind.get("uid")
    name = "IPC at logout"
    if uid is not None and uid <= SYSTEM_UID_MAX:
        return [Check(name, OK, f"{user} (uid {uid}) is a system user: logind leaves its IPC alone")]
    if logind.get("linger"):
        return [Check(name, OK, f"{user} lingers (loginctl enable-linger): logind keeps its IPC after logout")]
    setting = logind.get("remove_ipc")
    if setting is not None and setting not in _YES:
        return [Check(name, OK, f"RemoveIPC={setting}: logind keeps {user}'s IPC after logout")]
    said = f"RemoveIPC={setting}" if setting is not None else "RemoveIPC unset, logind's default is yes"
    return [Check(name, WARN, f"{said} and {user} does not linger: when {user}'s last session ends (the SSH "
                  "session that started the server), logind deletes its shared memory and semaphores and the "
                  f"server's workers die — `loginctl enable-linger {user}`, or RemoveIPC=no in /etc/systemd/logind.conf")]


# ---------------------------------------------------------------- versions


_PIN = re.compile(r"^\s*(?P<name>[A-Za-z0-9_.-]+)\s*(?:\[[^\]]*\])?\s*==\s*(?P<version>[\w.+!-]+)\s*(?:;.*)?$")
_SERVER_PACKAGE = {"sglang": "sglang", "vllm": "vllm", "trtllm": "tensorrt_llm"}


def _versions(command: ServerCommand, facts: Mapping[str, Any], hints: KnowledgeBase) -> list[Check]:
    versions = {k: v for k, v in (facts.get("versions") or {}).items() if v}
    out = []
    package = _SERVER_PACKAGE.get(command.server or "")
    if package is not None:
        if package not in versions:
            where = (facts.get("modules") or {}).get(package)
            if where:  # importable without a distribution: a source checkout on the path
                out.append(Check("versions", WARN, f"{package} is found at {where} without package metadata: its version cannot be told"))
            else:
                out.append(Check("versions", FAIL, f"{package} is not installed for {facts.get('python')} (no module {package} on its path)"))
            return out
        listed = ", ".join(f"{k} {versions[k]}" for k in (package, "torch", "transformers") if k in versions)
        pins = []
        for requirement in (facts.get("requires") or {}).get(package, []):
            pin = _PIN.match(requirement)
            if pin and pin["name"].lower() in ("torch", "transformers"):
                have = versions.get(pin["name"].lower())
                if have is not None and have.split("+")[0] != pin["version"].split("+")[0]:
                    pins.append(f"{package} {versions[package]} requires {pin['name']}=={pin['version']}, {have} is installed")
        if pins:
            out.append(Check("versions", FAIL, "; ".join(pins)))
        else:
            out.append(Check("versions", OK, listed))
    for rule in hints.bad_versions(versions):
        fix = (Action.parse(rule.fix),) if rule.fix else ()
        out.append(Check(f"versions ({rule.id})", FAIL, rule.why, fix))
    return out


#: Checks of the machine the server would run on rather than of its command and files: for a
#: Slurm job, which runs where Slurm puts it, the submitting host's answers would mislead.
MACHINE_CHECKS = ("port", "dist-init port", "GPUs", "GPU memory", "GPU holders", "leftover servers",
                  "/dev/shm", "open files", "disk", "weights", "IPC at logout")


def portable(checks: list[Check]) -> list[Check]:
    """The checks that hold wherever the command runs (its model, draft, contexts, hooks, versions)."""
    return [c for c in checks if not c.name.startswith(MACHINE_CHECKS)]
