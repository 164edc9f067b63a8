"""Where the startup's time went, once it is ready: pure, from the startup state.

Each phase's time and share of the whole (to the ready line), its slowest rank, the time no
phase accounts for (a stretch between two phases that nobody logged), the bytes per GPU the
log says the weights took and their rate, and the same figures of the previous good attempt
beside them. :func:`evidence` names what the figures show that could make the next start
faster (a torch.compile cache that changed since the previous attempt: a cold compile; a weight
load that waited on its storage); the advice itself is data (``tui/profiles/hints.toml``,
``kind = "speed"``). Where what the load's processes read was watched (:func:`with_load`), the
profile says whether the checkpoint came from the page cache (warm) or the storage (cold) —
and that a warm load beside a cold one is not like for like.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tui.core.loading import LoadFacts, LoadReads, gb, page_cache, page_cache_words
from tui.core.state import PHASE_TITLES, PHASES, StartupState, origin
from tui.core.wording import duration

#: A stretch between two phases at least this long is reported as unaccounted (seconds).
GAP_S = 5.0
#: Graph capture worth advice: at least this long, this share of the startup, this many sizes.
GRAPH_S, GRAPH_SHARE, GRAPH_SIZES = 30.0, 0.25, 8
#: A download during the weight load worth advice: at least this long (seconds).
DOWNLOAD_S = 10.0
#: A weight load worth storage advice: at least this long (seconds); storage-bound: cold, and its
#: device had I/O in flight for at least STORAGE_BUSY of the load's time.
STORAGE_S, STORAGE_BUSY = 20.0, 0.9
_CACHE = re.compile(r"torch_compile_cache/(?P<hash>[0-9a-f]{6,})")
_TOOK = re.compile(r"took (?P<n>[\d.]+) ?(?P<unit>GiB|GB)")
_AVAIL = re.compile(r"avail[ _]mem=\s*(?P<n>[\d.]+) ?GB")


def compile_cache(state: StartupState) -> str | None:
    """The torch.compile cache key this startup used (``torch_compile_cache/<hash>`` in its log)."""
    phase = state.phase("compile")
    if phase is None:
        return None
    return cache_key(phase.first_detail) or cache_key(phase.detail)


def cache_key(text: str) -> str | None:
    found = _CACHE.search(text)
    return found.group("hash") if found is not None else None


def for_state(state: StartupState) -> StartupProfile | None:
    """The profile of the log's current startup beside its previous good one in the same log."""
    # a good attempt got to ready: "stopped" is a ready server that was shut down later
    previous = next((a for a in reversed(state.earlier) if a.outcome in ("ready", "stopped") and a.phases), None)
    if previous is None:
        return build(state)
    profile = build(state, dict(previous.phases), cache_key(previous.compile_detail), previous.seconds)
    return None if profile is None else dataclasses.replace(profile, previous_attempt=previous.number)


def with_load(profile: StartupProfile, load: LoadFacts | None) -> StartupProfile:
    """The profile with what was watched of the weight load: a download during it, what its
    processes read (and the previous good attempt's, where it was watched too)."""
    if load is None:
        return profile
    previous = load.earlier.get(profile.previous_attempt) if profile.previous_attempt is not None else None
    return dataclasses.replace(profile, download=load.download, reads=load.reads, page_cache=page_cache(load.reads),
                               previous_page_cache=page_cache(previous))


def weight_bytes(state: StartupState) -> int | None:
    """Bytes per GPU the weights took, as the log says: vLLM's "Model loading took 7.65 GiB",
    SGLang's free memory before and after the load ("avail mem=78.12 GB" → "70.40 GB")."""
    phase = state.phase("weight_load")
    if phase is None or not phase.done:
        return None
    found = _TOOK.search(phase.detail)
    if found is not None:
        return int(float(found.group("n")) * (2**30 if found.group("unit") == "GiB" else 1e9))
    before, after = _AVAIL.search(phase.first_detail), _AVAIL.search(phase.detail)
    if before is not None and after is not None and phase.first_detail != phase.detail:
        grown = float(before.group("n")) - float(after.group("n"))
        return int(grown * 1e9) if grown > 0 else None
    return None


@dataclass(frozen=True, slots=True)
class PhaseShare:
    name: str
    seconds: float | None
    share: float | None  # of the whole startup, 0..1
    slowest: str | None
    previous: float | None = None  # the previous good attempt's seconds


@dataclass(frozen=True, slots=True)
class Gap:
    """Time between two phases that no phase accounts for: nobody logged what happened."""

    seconds: float
    after: str  # the phase that ended (or "start")
    before: str  # the phase that began
    from_line: int
    to_line: int


@dataclass(frozen=True, slots=True)
class Overlap:
    """Two phases that ran at once (SGLang 0.5.18+ loads weights during graph capture; a JIT
    compile inside it): their shares add up past the whole."""

    seconds: float
    first: str
    second: str


@dataclass(frozen=True, slots=True)
class StartupProfile:
    total: float | None
    phases: tuple[PhaseShare, ...]
    gaps: tuple[Gap, ...] = ()
    previous_total: float | None = None
    compile_cache: str | None = None
    previous_cache: str | None = None
    weight_bytes: int | None = None  # per GPU, as the log says
    weight_seconds: float | None = None
    extra: dict[str, str] = field(default_factory=dict)
    server: str | None = None  # whose flags a speed hint names
    graph_sizes: int | None = None  # the sizes graph capture's bar counted
    overlaps: tuple[Overlap, ...] = ()
    download: tuple[int, float] | None = None  # (bytes, seconds) downloaded during the weight load, as watched
    reads: LoadReads | None = None  # what the weight load's processes read, as watched
    previous_attempt: int | None = None  # the previous good attempt's number in the log
    page_cache: str | None = None  # the weight load came from the page cache ("warm") or the storage ("cold")
    previous_page_cache: str | None = None  # ... the previous good attempt's (None: cannot be told)

    @property
    def weight_rate(self) -> float | None:
        if self.weight_bytes and self.weight_seconds:
            return self.weight_bytes / self.weight_seconds
        return None

    def unlike_loads(self) -> str | None:
        """The weight-load times beside each other are not like for like: this load and the
        previous good attempt's came one from the page cache, the other from the storage (or
        this one's is known and that one's cannot be told)."""
        now, before = self.page_cache, self.previous_page_cache
        if now is None or not any(p.name == "weight_load" and p.previous is not None for p in self.phases):
            return None
        if before == now:
            return None
        if before is None:
            return (f"this weight load was {now}; the previous attempt's page cache cannot be told, so its time "
                    "beside this one may not be like for like")
        return (f"this weight load was {now}, the previous attempt's {before}: their times are not like for like "
                "(a warm load skips the storage)")

    def to_json(self) -> dict[str, object]:
        return {
            "total_s": _r(self.total),
            "previous_total_s": _r(self.previous_total),
            "phases": [
                {"name": p.name, "seconds": _r(p.seconds), "share": None if p.share is None else round(p.share, 3),
                 "slowest_rank": p.slowest, "previous_seconds": _r(p.previous)}
                for p in self.phases
            ],
            "unaccounted": [
                {"seconds": _r(g.seconds), "after": g.after, "before": g.before, "from_line": g.from_line,
                 "to_line": g.to_line}
                for g in self.gaps
            ],
            "weight_load": None if self.weight_bytes is None else {
                "bytes_per_gpu": self.weight_bytes, "seconds": _r(self.weight_seconds),
                "bytes_per_s": None if self.weight_rate is None else round(self.weight_rate),
            },
            "compile_cache": self.compile_cache,
            "previous_compile_cache": self.previous_cache,
            "overlaps": [{"seconds": _r(o.seconds), "phases": [o.first, o.second]} for o in self.overlaps],
            "graph_sizes": self.graph_sizes,
            "download": None if self.download is None else {"bytes": self.download[0], "seconds": _r(self.download[1])},
            "page_cache": None if self.reads is None else {
                "verdict": self.page_cache, "disk_bytes": self.reads.disk, "read_bytes": self.reads.read,
                "checkpoint_bytes": self.reads.total, "filesystem": self.reads.filesystem,
                "device_busy": None if self.reads.busy is None else round(self.reads.busy, 3),
                "previous_verdict": self.previous_page_cache,
            },
        }

    def lines(self) -> list[str]:
        """The profile as text rows (scan, the report, history)."""
        beside = any(p.previous is not None for p in self.phases) or self.previous_total is not None
        head = (f"  {'phase':<13} {'took':>8} {'share':>6}  {'slowest':<12}" + (f" {'before':>8}" if beside else "")).rstrip()
        out = [f"startup profile (to ready: {duration(self.total, unknown='cannot tell')}"
               + (f"; the previous good attempt: {duration(self.previous_total)}" if beside else "") + ")", head]
        for p in self.phases:
            share = "" if p.share is None else f"{p.share * 100:.0f}%"
            row = f"  {PHASE_TITLES.get(p.name, p.name):<13} {duration(p.seconds):>8} {share:>6}  {p.slowest or '-':<12}"
            if beside:
                row += f" {duration(p.previous, unknown='-'):>8}"
            out.append(row.rstrip())
        for gap in self.gaps:
            out.append(f"  {'unaccounted':<13} {duration(gap.seconds):>8}  between {gap.after} (line {gap.from_line}) and "
                       f"{gap.before} (line {gap.to_line}): no line says what happened")
        if self.download is not None:
            size, seconds = self.download
            out.append(f"  {'downloaded':<13} {duration(seconds):>8}  {size / 1e9:.1f} GB from the Hugging Face hub during "
                       f"the weight load ({size / max(seconds, 1e-9) / 1e9:.2f} GB/s, the cache folder watched)")
        for overlap in self.overlaps:
            out.append(f"  {'overlap':<13} {duration(overlap.seconds):>8}  {overlap.first} and {overlap.second} ran at once "
                       "(their shares add up past the whole)")
        if self.reads is not None:
            out.append(f"  {'page cache':<13} {'':>8}  {page_cache_words(self.reads)}")
        if (unlike := self.unlike_loads()) is not None:
            out.append(f"  {'page cache' if self.reads is None else '':<13} {'':>8}  {unlike}")
        if self.weight_bytes is not None and self.weight_rate is not None:
            out.append(f"  weights: {self.weight_bytes / 1e9:.1f} GB per GPU in {duration(self.weight_seconds)}"
                       f" ({self.weight_rate / 1e9:.2f} GB/s per GPU, as the log says)")
        return out


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def phase_seconds(state: StartupState) -> dict[str, float]:
    """Each ended phase's seconds (what an attempt's summary keeps for the next one's profile)."""
    return {p.name: round(p.seconds, 3) for p in state.phases if p.seconds is not None}


def build(
    state: StartupState, previous: Mapping[str, float] | None = None, previous_cache: str | None = None,
    previous_total: float | None = None,
) -> StartupProfile | None:
    """The profile of a startup that got to ready (None before); ``previous``: the previous good
    attempt's phase seconds (and its compile cache key and total), to set beside."""
    if state.ready_line is None:
        return None
    start = origin(state)
    ready = state.phase("ready")
    end = None
    if ready is not None:
        end = ready.end_ts if ready.end_ts is not None else ready.start_ts
    total = None if start is None or end is None or not runs_forward(state) else max(0.0, end - start)
    shares = []
    for phase in state.phases:
        if phase.name == "ready":
            continue
        seconds = phase.seconds
        share = seconds / total if seconds is not None and total else None
        shares.append(PhaseShare(phase.name, seconds, share, phase.slowest_rank,
                                 (previous or {}).get(phase.name)))
    weight = state.phase("weight_load")
    return StartupProfile(
        total=total,
        phases=tuple(shares),
        gaps=tuple(_gaps(state)),
        overlaps=tuple(_overlaps(state)),
        previous_total=previous_total,
        compile_cache=compile_cache(state),
        previous_cache=previous_cache,
        weight_bytes=weight_bytes(state),
        weight_seconds=weight.seconds if weight is not None else None,
        server=state.server,
        graph_sizes=graph.count if (graph := state.phase("cuda_graph")) is not None else None,
    )


def across_nodes(states: Mapping[str, StartupState], serving: str) -> StartupProfile | None:
    """Several nodes: the serving node's profile (its time to ready, gaps, overlaps), each phase's
    time that of its slowest node, named with that node's slowest rank ("n2 TP3")."""
    base = build(states[serving]) if serving in states else None
    if base is None:
        return None
    shares = []
    for share in base.phases:
        seconds, node, rank = share.seconds, serving, share.slowest
        for name, state in states.items():
            phase = state.phase(share.name)
            if phase is not None and phase.seconds is not None and (seconds is None or phase.seconds > seconds):
                seconds, node, rank = phase.seconds, name, phase.slowest_rank
        fraction = seconds / base.total if seconds is not None and base.total else None
        shares.append(dataclasses.replace(share, seconds=seconds, share=fraction,
                                          slowest=f"{node} {rank}" if rank else node))
    return dataclasses.replace(base, phases=tuple(shares))


def from_seconds(
    phases: Mapping[str, float], total: float | None, previous: Mapping[str, float] | None = None,
    previous_total: float | None = None,
) -> StartupProfile:
    """A profile from recorded phase seconds alone (history): times, shares, the previous beside."""
    order = [name for name in PHASES if name in phases and name != "ready"]
    order += [name for name in phases if name not in order and name != "ready"]
    shares = tuple(
        PhaseShare(name, phases[name], phases[name] / total if total else None, None, (previous or {}).get(name))
        for name in order
    )
    return StartupProfile(total=total, phases=shares, previous_total=previous_total)


def _overlaps(state: StartupState) -> list[Overlap]:
    """Pairs of phases that ran at once for GAP_S or more (log time)."""
    spans = [(p.start_ts, p.end_ts, PHASE_TITLES.get(p.name, p.name)) for p in state.phases
             if p.name != "ready" and p.start_ts is not None and p.end_ts is not None]
    out = []
    for i, (start, end, title) in enumerate(spans):
        for other_start, other_end, other in spans[i + 1:]:
            both = min(end, other_end) - max(start, other_start)
            if both >= GAP_S:
                out.append(Overlap(both, title, other))
    return out


def runs_forward(state: StartupState) -> bool:
    """Whether the log's clock runs forward: each phase begins no more than GAP_S before one that
    began on an earlier line (ranks' lines may interleave a little out of time). A log whose time
    goes back (a clock reset, lines pasted from another day, a made-up year) cannot time the gaps
    between its phases, nor the startup: a year-long "unaccounted" stretch would be its artefact."""
    latest = None
    for phase in sorted(state.phases, key=lambda p: p.start_line):
        if phase.start_ts is None:
            continue
        if latest is not None and phase.start_ts < latest - GAP_S:
            return False
        latest = phase.start_ts if latest is None else max(latest, phase.start_ts)
    return True


def _gaps(state: StartupState) -> list[Gap]:
    """Stretches of log time between phases that no phase covers (phases may overlap)."""
    if not all(p.start_ts is not None for p in state.phases) or not runs_forward(state):
        return []  # lines without a time of their own, or a clock that goes back: the gaps cannot be told
    spans = sorted(
        ((p.start_ts or 0.0, p.end_ts if p.end_ts is not None else p.start_ts or 0.0, i, p)
         for i, p in enumerate(state.phases)), key=lambda span: span[:3],
    )
    out: list[Gap] = []
    reach, last = None, None
    for start, end, _, phase in spans:
        if reach is not None and last is not None and start - reach >= GAP_S:
            out.append(Gap(start - reach, PHASE_TITLES.get(last.name, last.name), PHASE_TITLES.get(phase.name, phase.name),
                           last.end_line or last.start_line, phase.start_line))
        if reach is None or end >= reach:
            reach, last = end, phase
    return out


@dataclass(frozen=True, slots=True)
class Evidence:
    """A figure that says the next start could be faster: ``name`` is what a speed hint's
    ``evidence`` names; ``values`` fill its sentence."""

    name: str
    values: dict[str, str]


def evidence(profile: StartupProfile) -> list[Evidence]:
    """What the profile shows, each with the figure it rests on and the expected saving."""
    out = []
    compile_now = next((p for p in profile.phases if p.name == "compile"), None)
    if (profile.compile_cache and profile.previous_cache and profile.compile_cache != profile.previous_cache
            and compile_now is not None and compile_now.seconds is not None):
        before = compile_now.previous
        saving = compile_now.seconds - before if before is not None else None
        if saving is None or saving > 0:
            out.append(Evidence("compile_cache_changed", {
                "before": profile.previous_cache, "after": profile.compile_cache,
                "compile": duration(compile_now.seconds),
                "previous_compile": duration(before, unknown="unknown"),
                "saving": duration(saving) if saving is not None else "its time",
            }))
    if profile.download is not None and profile.download[1] >= DOWNLOAD_S:
        size, seconds = profile.download
        out.append(Evidence("download_in_load", {
            "size": f"{size / 1e9:.1f} GB", "took": duration(seconds), "rate": f"{size / seconds / 1e9:.2f} GB/s",
            "saving": duration(seconds),
        }))
    out += _storage_evidence(profile)
    graph = next((p for p in profile.phases if p.name == "cuda_graph"), None)
    sizes = profile.graph_sizes
    if (graph is not None and graph.seconds is not None and graph.share is not None and sizes
            and graph.seconds >= GRAPH_S and graph.share >= GRAPH_SHARE and sizes >= GRAPH_SIZES):
        per_size = graph.seconds / sizes
        out.append(Evidence("graph_capture_many_sizes", {
            "server": profile.server or "", "capture": duration(graph.seconds), "share": f"{graph.share * 100:.0f}%",
            "sizes": str(sizes), "per_size": duration(per_size), "half": str(sizes // 2),
            "saving": duration(per_size * (sizes - sizes // 2)),
        }))
    return out


def _storage_evidence(profile: StartupProfile) -> list[Evidence]:
    """A weight load that waited on its storage: cold, long enough, and its block device had I/O
    in flight nearly the whole time — or one from a network filesystem (how busy it was cannot be
    read there, so it is said as that, not as storage-bound)."""
    reads = profile.reads
    if reads is None or reads.seconds < STORAGE_S:
        return []
    took, server = duration(reads.seconds), profile.server or ""
    if page_cache(reads) == "cold" and reads.busy is not None and reads.busy >= STORAGE_BUSY:
        return [Evidence("weight_load_storage_bound", {
            "server": server, "size": f"{gb(reads.disk)} GB", "filesystem": reads.filesystem or "filesystem unknown",
            "rate": f"{reads.disk / reads.seconds / 1e9:.2f} GB/s", "busy": f"{reads.busy * 100:.0f}%", "took": took,
        })]
    if reads.storage == "network" and reads.total and page_cache(reads) != "warm":
        return [Evidence("weight_load_network_filesystem", {
            "server": server, "size": f"{gb(reads.total)} GB", "filesystem": reads.filesystem or "",
            "rate": f"{reads.total / reads.seconds / 1e9:.2f} GB/s", "took": took,
        })]
    return []


def restart_evidence(state: StartupState) -> list[Evidence]:
    """What a startup not yet ready already shows: its torch.compile cache key differs from the
    one the previous attempt in the same log compiled with (whatever that attempt's end), so it
    compiles from scratch again — on every restart, where each one changes the key."""
    if state.ready_line is not None:
        return []
    now = compile_cache(state)
    previous = next((key for a in reversed(state.earlier) if (key := cache_key(a.compile_detail))), None)
    if now is None or previous is None or now == previous:
        return []
    keys = [key for a in state.earlier if (key := cache_key(a.compile_detail))] + [now]
    changes = sum(1 for a, b in zip(keys, keys[1:]) if a != b)
    return [Evidence("compile_cache_changed_on_restart", {
        "before": previous, "after": now, "changes": str(changes), "attempts": str(len(keys)),
    })]
