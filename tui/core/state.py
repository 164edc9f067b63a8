"""The startup state the tracker builds and every view renders.

Plain dataclasses, no behaviour beyond derived figures: views read them, only the
tracker (``tui.core.tracker``) writes them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

#: Canonical phases, in their usual order. Views show them in this order; the
#: tracker reports them in the order they *started* (``StartupState.phases``).
#: ``compile`` is torch.compile / JIT kernel compilation outside graph capture (vLLM's
#: Dynamo + Inductor before KV sizing, SGLang's DeepGEMM pre-compile, TensorRT-LLM's
#: autotuner); many starts have none, and views show it only when it happened.
#: ``dist_init`` is each rank joining the distributed group (SGLang's "Init torch distributed",
#: vLLM's ``world_size=… rank=…`` / "rank N in world size M is assigned as …"): where a
#: multi-node start waits for its last node; shown only when the log printed it.
#: ``queued`` is a wait for resources the server asked a scheduler for, before any worker starts
#: (vLLM over Ray waiting for its placement group): the log's own phase zero, as a pending Slurm
#: job is the session's. Silence there is the wait, not work: never "loading" or "stalled?".
PHASES: tuple[str, ...] = (
    "server_args",
    "queued",
    "dist_init",
    "weight_load",
    "compile",
    "memory_pool",
    "cuda_graph",
    "draft_init",
    "ready",
)

#: The phase that is a wait for resources (see PHASES).
QUEUED = "queued"

PHASE_TITLES: dict[str, str] = {
    "server_args": "server args",
    "queued": "queued",
    "dist_init": "dist init",
    "weight_load": "weight load",
    "compile": "compile",
    "memory_pool": "memory pool",
    "cuda_graph": "CUDA graphs",
    "draft_init": "draft init",
    "ready": "ready",
}


class Outcome(StrEnum):
    """What the log says of the startup (the tracker's reading; the verdict adds the process)."""

    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    STOPPED = "stopped"
    #: an earlier startup in the same log that a new one cut short before it was ready or
    #: failed (a process killed without a word, restarted by systemd or a container)
    INTERRUPTED = "interrupted"


STARTING, READY, FAILED, STOPPED = Outcome.STARTING, Outcome.READY, Outcome.FAILED, Outcome.STOPPED
INTERRUPTED = Outcome.INTERRUPTED


@dataclass(slots=True)
class RankPhase:
    """One rank's part of a phase (``rank`` is e.g. "TP3", "DP0 TP7", "rank=3", or "main")."""

    rank: str
    start_line: int
    start_ts: float | None
    end_line: int | None = None
    end_ts: float | None = None
    last_line: int | None = None  # latest line of this rank in this phase (bars, steps)
    last_ts: float | None = None

    @property
    def seconds(self) -> float | None:
        if self.start_ts is None or self.end_ts is None:
            return None
        return max(0.0, self.end_ts - self.start_ts)


@dataclass(slots=True)
class Phase:
    name: str
    start_line: int
    start_ts: float | None
    end_line: int | None = None
    end_ts: float | None = None
    ranks: dict[str, RankPhase] = field(default_factory=dict)
    progress: float | None = None  # 0.0 .. 1.0 from a progress bar, when known
    detail: str = ""  # latest figure, e.g. "3/4 shards" or "avail mem=70.40 GB"
    first_detail: str = ""  # the first figure its lines printed (SGLang: free memory before the phase)
    failed: bool = False
    count: int | None = None  # the largest total its counting bars gave (graph capture: 36 batch sizes)

    @property
    def done(self) -> bool:
        return self.end_line is not None

    @property
    def seconds(self) -> float | None:
        if self.start_ts is None or self.end_ts is None:
            return None
        return max(0.0, self.end_ts - self.start_ts)

    @property
    def slowest_rank(self) -> str | None:
        """The rank that ended last (or, while running, one that has not ended yet)."""
        if not self.ranks:
            return None
        pending = [r for r in self.ranks.values() if r.end_line is None]
        if pending:
            return pending[0].rank
        return max(self.ranks.values(), key=lambda r: (r.end_ts or 0.0, r.end_line or 0)).rank


@dataclass(slots=True)
class ErrorReport:
    """One error: a whole traceback block or a one-line signature, with its cause."""

    line: int  # 1-based line number where the block starts (grep -n compatible)
    kind: str  # exception class name ("ValueError") or a category ("cuda_oom", "nccl", ...)
    message: str  # the final "SomeError: message" text, or the signature line
    rank: str | None = None
    end_line: int | None = None
    #: (line number, text) of a sample of the block: its first and last lines (bounded memory)
    block: list[tuple[int, str]] = field(default_factory=list)
    #: The whole block: [first, last] line-number runs (several when ranks' blocks interleave)
    spans: list[list[int]] = field(default_factory=list)
    offset: int | None = None  # byte offset of the block's first line in the stream read
    fatal: bool = True
    category: str | None = None  # signature category of a traceback's exception, e.g. "cuda_oom"
    secondary: bool = False  # a consequence ("child failed", "see root cause above"), not a cause
    ts: float | None = None  # when it was logged (log timestamp, else arrival)
    #: a line that explains a failure that follows (``Signature.cause``): held back until the
    #: startup fails, then the root cause, and the failure its follow-on
    cause: bool = False
    follow_on: int | None = None  # a root cause's follow-on: the line of the error it led to
    exc_line: int | None = None  # a traceback's exception line (blocks of several ranks interleave)

    @property
    def title(self) -> str:
        """The message, led by its kind unless it already names it: "ValueError: …", "cuda_oom: …"."""
        return self.message if self.message.startswith(self.kind) else f"{self.kind}: {self.message}"

    def numbers(self, after: int = 0) -> Iterator[int]:
        """Every line number of the block (past ``after``), in order."""
        spans = self.spans or [[n, n] for n, _ in self.block] or [[self.line, self.line]]
        start = max(0, bisect.bisect_right(spans, after, key=lambda span: span[0]) - 1)
        for first, last in spans[start:]:
            yield from range(max(first, after + 1), last + 1)

    @property
    def size(self) -> int:
        """How many lines the block has."""
        return sum(last - first + 1 for first, last in self.spans) if self.spans else max(1, len(self.block))

    def covers(self, number: int) -> bool:
        if not self.spans:
            return number == self.line or any(n == number for n, _ in self.block)
        index = bisect.bisect_right(self.spans, number, key=lambda span: span[0]) - 1
        return index >= 0 and self.spans[index][1] >= number


@dataclass(frozen=True, slots=True)
class AttemptSummary:
    """One startup in the log (a log may hold many: ``>>`` redirection, restarts)."""

    number: int  # 1, 2, … in this log
    start_line: int
    end_line: int
    outcome: str  # ready, failed, stopped, starting (the current one), interrupted
    first_error: str | None = None  # the root cause's title
    seconds: float | None = None  # log time from its first line to its last (to ready, if ready)
    #: each ended phase's seconds, and the compile phase's first figure (its torch.compile cache
    #: directory): the next attempt's startup profile sets them beside its own
    phases: tuple[tuple[str, float], ...] = ()
    compile_detail: str = ""

    def to_json(self) -> dict[str, object]:
        """For `scan --json` (no duration: a line without a timestamp of its own takes the last
        one the tracker saw, and the fast path sees fewer lines than a full read)."""
        return {
            "start_line": self.start_line,
            "end_line": self.end_line,
            "outcome": self.outcome,
            "first_error": self.first_error,
        }


@dataclass(slots=True)
class StartupState:
    server: str | None = None
    outcome: Outcome = STARTING
    phases: list[Phase] = field(default_factory=list)
    errors: list[ErrorReport] = field(default_factory=list)
    warnings: int = 0
    lines: int = 0
    ready_line: int | None = None
    first_ts: float | None = None
    last_ts: float | None = None
    ranks: set[str] = field(default_factory=set)
    stop_reason: str | None = None
    last_line: int | None = None  # the last non-empty line seen, and its text:
    last_text: str = ""  # what the log said last when the process died
    errors_dropped: int = 0  # errors past the cap on ``errors`` (memory stays bounded): counted only
    unparsed: int = 0  # lines the tracker failed on (skipped, warned about): 0 unless there is a bug
    first_unparsed: int | None = None  # ... and the first of them
    start_line: int = 1  # where this startup begins in the log
    attempt: int = 1  # this startup's number in the log: 2 once a new ``server_args=`` followed the first
    earlier: list[AttemptSummary] = field(default_factory=list)  # the log's earlier startups (the latest kept)
    stall_after: dict[str, float] = field(default_factory=dict)  # the profile's silence limits per phase (s)
    identity: dict[str, str] = field(default_factory=dict)  # what the startup is: {"model": …, "tp_size": "8"}

    def summary(self, outcome: str | None = None, end_line: int | None = None) -> AttemptSummary:
        """This startup in one row (``outcome`` overrides the state's own, e.g. interrupted)."""
        error = self.first_error
        end_ts = self.last_ts
        ready = self.phase("ready") if self.ready_line is not None else None
        if ready is not None and ready.end_ts is not None:
            end_ts = ready.end_ts
        seconds = None if self.first_ts is None or end_ts is None else max(0.0, end_ts - self.first_ts)
        compile_phase = self.phase("compile")
        return AttemptSummary(
            self.attempt,
            self.start_line,
            max(self.start_line, self.lines if end_line is None else end_line),
            outcome or self.outcome,
            error.title[:500] if error is not None else None,
            seconds,
            tuple((p.name, round(p.seconds, 3)) for p in self.phases if p.seconds is not None),
            compile_phase.first_detail[:300] if compile_phase is not None else "",
        )

    @property
    def attempts(self) -> list[AttemptSummary]:
        """Every startup in the log, this one last."""
        return [*self.earlier, self.summary()]

    def phase(self, name: str) -> Phase | None:
        for p in self.phases:
            if p.name == name:
                return p
        return None

    @property
    def current_phase(self) -> Phase | None:
        """The most recently started phase that has not ended."""
        running = [p for p in self.phases if not p.done]
        return running[-1] if running else None

    def follow_on(self, error: ErrorReport) -> ErrorReport | None:
        """The error ``error`` led to, when it is a root cause read from a line that explains a later
        failure (an NVSHMEM or NCCL line before the Python exception): that exception."""
        if error.follow_on is None:
            return None
        return next((e for e in self.errors if e.line == error.follow_on and e is not error), None)

    def root_cause_json(self) -> dict[str, object] | None:
        """The root cause and its follow-on, as ``scan --json`` reports them."""
        error = self.first_error
        if error is None:
            return None
        after = self.follow_on(error)
        return {
            "line": error.line,
            "kind": error.kind,
            "message": error.message,
            "rank": error.rank,
            "follow_on": None if after is None else {"line": after.line, "kind": after.kind, "message": after.message, "rank": after.rank},
        }

    @property
    def first_error(self) -> ErrorReport | None:
        """The root cause: the earliest fatal error that is not a mere consequence of another."""
        fatal = [e for e in self.errors if e.fatal]
        return earliest([e for e in fatal if not e.secondary]) or (fatal[0] if fatal else None)


def earliest(errors: list[ErrorReport]) -> ErrorReport | None:
    """The error that happened first among ``errors`` (in line order): a traceback counts from its
    exception line, so of two ranks' interleaved tracebacks the one whose exception came first
    wins, whichever began first. Errors that began after the first one's exception do not compete."""
    if not errors:
        return None
    first = errors[0]
    for error in errors[1:]:
        ends = first.exc_line or first.line
        if error.line > ends:
            break
        if (error.exc_line or error.line) < ends:
            first = error
    return first


def origin(state: StartupState) -> float | None:
    """Where the startup begins in log time: the first phase's start (lines before it may carry
    no timestamp and only an arrival time, which need not match the log's clock)."""
    for phase in state.phases:
        if phase.start_ts is not None:
            return phase.start_ts
    return state.first_ts


#: Phases shown only when the log had them (many starts compile nothing or wait for nothing, many
#: logs print no distributed init; a row of "skipped" for them would be noise).
OPTIONAL_PHASES = frozenset({"queued", "dist_init", "compile"})


def shown(state: StartupState, names: Iterable[str]) -> list[str]:
    """The phases a view lists: every canonical one, optional ones only once they happened."""
    return [n for n in names if n not in OPTIONAL_PHASES or state.phase(n) is not None]


def skipped(state: StartupState, name: str) -> bool:
    """A phase the server did not have: the server got to ready (or started serving) without it.

    Only the ready phase settles this: phases come in other orders (newer SGLang loads the
    draft's weights before any memory pool or graph), so a later phase starting proves nothing.
    """
    if state.phase(name) is not None or name == "ready":
        return False
    return state.outcome in (READY, STOPPED) or state.phase("ready") is not None


def overlapping(state: StartupState, phase: Phase) -> list[str]:
    """The phases that ran at the same time as ``phase`` (by log line; one still open runs on):
    SGLang loads weights while it captures graphs, DeepGEMM compiles inside capture, one rank
    captures while another still loads. Back to back (one ends on the line the next begins) is
    no overlap."""
    end = phase.end_line if phase.end_line is not None else state.lines + 1
    return [
        other.name for other in state.phases
        if other is not phase and other.start_line < end
        and phase.start_line < (other.end_line if other.end_line is not None else state.lines + 1)
    ]
