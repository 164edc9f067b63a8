"""One startup across several nodes: the barrier view and the attempt's verdict. Pure.

Each node has its own log and its own :class:`~tui.core.state.StartupState` (a node's log
restarts, numbers its lines and names its ranks on its own). A rank is a (node, rank)
pair: SGLang prints global TP ranks on a multi-node run (TP8…TP15 on the second node of
two), vLLM one rank per worker process (``Worker_TP2`` on the second node of a TP4 run, the
same worker as its ``Worker pid=N`` lines before device init) — either way the pair is unique.

The **barrier view** answers "who is not there yet": for each milestone (dist-init done,
weight load done, memory pool, CUDA graphs, ready) the (node, rank) pairs that have not
reached it, furthest behind first, with what their node said last and how long ago. The
first failure on any node is the attempt's failure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tui.core.state import FAILED, PHASES, READY, STARTING, STOPPED, ErrorReport, Outcome, StartupState

#: (milestone, words): a milestone is reached by a rank that ended the phase of that name,
#: or began any later phase (a log that prints no distributed init: the rank began loading
#: weights). A rank stuck in "Init torch distributed begin" has neither.
MILESTONES: tuple[tuple[str, str], ...] = (
    ("dist_init", "dist-init done"),
    ("weight_load", "weight load done"),
    ("memory_pool", "memory pool done"),
    ("cuda_graph", "CUDA graphs done"),
    ("ready", "ready"),
)
#: The rank name of a node whose log names none (one process) or has said nothing yet.
WHOLE_NODE = "—"


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """What the barrier view needs of one node: its startup state, and its log's liveliness."""

    name: str
    state: StartupState
    quiet_for: float | None = None  # seconds since the node's log last grew (None: never / decided)
    waiting: str | None = None  # why its log is not being read yet
    last_text: str = ""  # what its log said last
    suspect: str | None = None  # why this node is likely the culprit (its command disagrees)


@dataclass(frozen=True, slots=True)
class Laggard:
    node: str
    rank: str
    reached: int  # how many milestones this rank has reached
    last_line: int | None
    last_text: str
    quiet_for: float | None
    suspect: str | None = None

    @property
    def label(self) -> str:
        return self.node if self.rank == WHOLE_NODE else f"{self.node} {self.rank}"


@dataclass(frozen=True, slots=True)
class BarrierRow:
    milestone: str
    words: str
    reached: int  # (node, rank) pairs past it
    total: int
    missing: tuple[Laggard, ...]  # furthest behind first

    @property
    def done(self) -> bool:
        return not self.missing


@dataclass(frozen=True, slots=True)
class ClusterVerdict:
    outcome: Outcome  # starting, ready, failed, stopped
    words: str
    node: str | None = None  # the failing node
    error: ErrorReport | None = None


def node_ranks(state: StartupState) -> list[str]:
    """The ranks a node has shown doing a rank's work (a part in some phase), in a stable order;
    a node that named none is one rank. A process that only serves the others (vLLM's API
    server, an engine core beside its workers) is no rank: it never loads weights."""
    ranks = {rank for phase in state.phases for rank in phase.ranks if rank != "main"}
    return sorted(ranks, key=_rank_key) or [WHOLE_NODE]


def milestones_reached(state: StartupState, rank: str) -> int:
    """How many of MILESTONES, in order, this rank of this node has reached."""
    if state.outcome in (READY, STOPPED):
        return len(MILESTONES)
    count = 0
    for milestone, _ in MILESTONES[:-1]:
        if not _reached(state, rank, milestone):
            break
        count += 1
    return count


def _reached(state: StartupState, rank: str, milestone: str) -> bool:
    key = "main" if rank == WHOLE_NODE else rank
    later = PHASES[PHASES.index(milestone) + 1 :]
    for phase in state.phases:
        entry = phase.ranks.get(key)
        if phase.name == milestone and (phase.done or (entry is not None and entry.end_line is not None)):
            return True
        # a later phase begun on this rank, or one the server logs once for all its ranks
        if phase.name in later and (entry is not None or all(name == "main" for name in phase.ranks)):
            return True
    return False


def _rank_last_line(state: StartupState, rank: str) -> int | None:
    lines = [
        n
        for phase in state.phases
        for entry in [phase.ranks.get(rank)]
        if entry is not None
        for n in (entry.last_line, entry.end_line, entry.start_line)
        if n is not None
    ]
    return max(lines, default=None)


def barrier(nodes: Mapping[str, NodeStatus] | list[NodeStatus]) -> list[BarrierRow]:
    """One row per milestone: who has not reached it, furthest behind (then quietest) first."""
    statuses = list(nodes.values()) if isinstance(nodes, Mapping) else list(nodes)
    pairs: list[Laggard] = []
    for node in statuses:
        for rank in node_ranks(node.state):
            # a rank with no phase yet (its tag seen on other lines) is where its node's log is
            last_line = (_rank_last_line(node.state, rank) if rank != WHOLE_NODE else None) or node.state.last_line
            text = node.last_text or node.state.last_text
            if node.waiting and not node.state.lines:
                text = f"(no log yet: {node.waiting})"
            pairs.append(
                Laggard(node.name, rank, milestones_reached(node.state, rank), last_line, text, node.quiet_for,
                        node.suspect)
            )
    # furthest behind first; among equals a node whose command disagrees, then the quietest
    pairs.sort(key=lambda p: (p.reached, p.suspect is None, -(p.quiet_for or 0.0), p.node, _rank_key(p.rank)))
    rows = []
    for index, (milestone, words) in enumerate(MILESTONES):
        missing = tuple(p for p in pairs if p.reached <= index)
        rows.append(BarrierRow(milestone, words, len(pairs) - len(missing), len(pairs), missing))
    return rows


def laggard(nodes: Mapping[str, NodeStatus] | list[NodeStatus]) -> tuple[BarrierRow, Laggard] | None:
    """The first milestone someone has not reached, and who is furthest behind on it."""
    for row in barrier(nodes):
        if row.missing:
            return row, row.missing[0]
    return None


def verdict(nodes: Mapping[str, NodeStatus] | list[NodeStatus]) -> ClusterVerdict:
    """The attempt's verdict: the first failure on any node (by log time), else ready when all are."""
    statuses = list(nodes.values()) if isinstance(nodes, Mapping) else list(nodes)
    failures = [
        (node, node.state.first_error) for node in statuses if node.state.outcome == FAILED
    ]
    if failures:
        node, error = min(failures, key=lambda f: (f[1].ts if f[1] is not None and f[1].ts is not None else float("inf")))
        if error is None:
            return ClusterVerdict(FAILED, f"FAILED on {node.name}", node.name)
        rank = f" {error.rank}" if error.rank else ""
        others = [n.name for n, _ in failures if n is not node]
        also = f" (also failed: {', '.join(others)})" if others else ""
        return ClusterVerdict(FAILED, f"FAILED on {node.name}{rank} at line {error.line}: {error.title}{also}",
                              node.name, error)
    if statuses and all(n.state.outcome in (READY, STOPPED) for n in statuses):
        if any(n.state.outcome == STOPPED for n in statuses):
            return ClusterVerdict(STOPPED, "stopped after ready")
        return ClusterVerdict(READY, f"READY on all {len(statuses)} nodes")
    ready = sum(1 for n in statuses if n.state.outcome == READY)
    return ClusterVerdict(STARTING, f"starting: {ready}/{len(statuses)} nodes ready")


def _rank_key(rank: str) -> tuple[int | str, ...]:
    """"TP10" after "TP9": digit runs compare as numbers."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", rank))
