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

**Node roles.** Only one node serves: SGLang's node_rank 0 prints "The server is fired up";
the other nodes end their log after their last set-up step (CUDA graph capture) and print
nothing more. vLLM's head alike (``--headless`` nodes and Ray workers never print
``Application startup complete``). So the attempt is READY when the serving node is ready and
every worker node has passed the set-up milestones the serving node passed, its process not
known to be gone. The role comes from the cluster file (``role = "serving" | "worker"``), else
the log (``node_rank=`` in the server's arguments, ``headless``), else the first node serves.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tui.core.multinode import logged_suspects, never_joined_causes
from tui.core.state import FAILED, PHASES, QUEUED, READY, STOPPED, Phase, StartupState
from tui.core.verdict import DEAD, STALLED, STOPPING, Verdict, VerdictKind
from tui.core.wording import clock, phase_words

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
#: A node's part in a multi-node server: the one that serves HTTP, or one that only computes.
SERVING, WORKER = "serving", "worker"
ROLES = (SERVING, WORKER)
#: What a worker that passed a milestone has done, for the READY words.
PAST = {"dist_init": "dist-init", "weight_load": "weight load", "memory_pool": "memory pool", "cuda_graph": "CUDA graphs"}


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """What the barrier view needs of one node: its startup state, and its log's liveliness."""

    name: str
    state: StartupState
    quiet_for: float | None = None  # seconds since the node's log last grew (None: never / decided)
    waiting: str | None = None  # why its log is not being read yet
    last_text: str = ""  # what its log said last
    suspect: str | None = None  # why this node is likely the culprit (its command disagrees)
    role: str | None = None  # SERVING or WORKER as declared (cluster file); None: from the log, else by order
    #: The node's own verdict where its processes or its silence say more than its log: DEAD (its
    #: server process gone), FAILED (a rank's process gone), STALLED? (silent past its limit).
    verdict: Verdict | None = None
    #: A worker the serving node cannot be ready without (vLLM's engine over Ray waits for every
    #: actor before it serves): set up once the serving node is ready, whatever its own lines show.
    joins_serving: bool = False
    #: Its server command line, as launched or as its writer runs it (empty: not known), and the
    #: environment the launch gave it (None: not known, a server started by hand): what the causes
    #: of a node that never joined are read from (``tui.core.multinode.never_joined_causes``).
    command: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    #: When its server process was seen gone (its task's death, its writer's, its runner's exit):
    #: the first node to go is the attempt's cause, whatever the nodes' order.
    ended_at: float | None = None


@dataclass(frozen=True, slots=True)
class Laggard:
    node: str
    rank: str
    reached: int  # how many milestones this rank has reached
    last_line: int | None
    last_text: str
    quiet_for: float | None
    suspect: str | None = None
    #: Why it will not get there: its node is out (``dead``, ``failed``, ``stopped``), not waited for.
    out: str | None = None

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


def node_ranks(state: StartupState) -> list[str]:
    """The ranks a node has shown doing a rank's work (a part in some phase), in a stable order;
    a node that named none is one rank. A process that only serves the others (vLLM's API
    server, an engine core beside its workers) is no rank: it never loads weights."""
    ranks = {rank for phase in state.phases for rank in phase.ranks if rank != "main"}
    return sorted(ranks, key=_rank_key) or [WHOLE_NODE]


def milestones_reached(state: StartupState, rank: str, shape: PhaseShape | None = None) -> int:
    """How many of MILESTONES, in order, this rank of this node has reached."""
    if state.outcome in (READY, STOPPED):
        return len(MILESTONES)
    return set_up_reached(state, rank, shape)


def set_up_reached(state: StartupState, rank: str, shape: PhaseShape | None = None) -> int:
    """How many of the set-up milestones (all but ready), in order, this rank has passed (``shape``:
    the state's, when asked for each of its ranks)."""
    shape = shape or PhaseShape.of(state)
    count = 0
    for milestone, _ in MILESTONES[:-1]:
        if not _reached(state, rank, milestone, shape):
            break
        count += 1
    return count


@dataclass(frozen=True, slots=True)
class PhaseShape:
    """What a rank's milestones ask of every rank of a phase, found once per look at a node, not
    once per rank: a log naming thousands of ranks (spoofed prefixes) would make each look cost
    their square. By index in ``state.phases``: ``ended``, phases some rank has ended; ``shared``,
    phases logged once for all ranks (only "main" in them)."""

    ended: frozenset[int]
    shared: frozenset[int]

    @classmethod
    def of(cls, state: StartupState) -> PhaseShape:
        phases = list(enumerate(state.phases))
        return cls(frozenset(i for i, p in phases if any(e.end_line is not None for e in p.ranks.values())),
                   frozenset(i for i, p in phases if all(name == "main" for name in p.ranks)))


def node_role(node: NodeStatus, first: bool) -> str:
    """Serving or worker: as declared, else as the log says (``node_rank``, ``headless``), else
    the first node serves."""
    if node.role in ROLES:
        return node.role
    identity = node.state.identity
    if identity.get("headless"):
        return WORKER
    rank = identity.get("node_rank")
    if rank is not None and rank.isdigit():
        return SERVING if int(rank) == 0 else WORKER
    return SERVING if first else WORKER


def roles(statuses: list[NodeStatus]) -> dict[str, str]:
    """Each node's role; when the log names none as serving, the first node serves."""
    found = {node.name: node_role(node, False) for node in statuses}
    if statuses and SERVING not in found.values():
        found[statuses[0].name] = node_role(statuses[0], True)
    return found


def worker_passed(worker: StartupState, serving: StartupState) -> int | None:
    """The set-up milestones a worker node has passed, once it has passed every one the serving
    node passed and has no phase still running (its log ends there: its set-up is done); else None."""
    if worker.outcome == FAILED or not worker.phases or any(_running(phase) for phase in worker.phases):
        return None
    shapes = PhaseShape.of(serving), PhaseShape.of(worker)
    needed = min((set_up_reached(serving, rank, shapes[0]) for rank in node_ranks(serving)), default=0)
    passed = min((set_up_reached(worker, rank, shapes[1]) for rank in node_ranks(worker)), default=0)
    return passed if passed >= needed and passed > 0 else None


def worker_done(node: NodeStatus, serving: StartupState) -> int | None:
    """The set-up milestones a worker node has passed (``worker_passed``), or 0 for one that
    ``joins_serving`` once the serving node is ready though its own lines do not show them (Ray
    folds like lines of several workers into one: "[repeated 3x across cluster]"); None: not yet."""
    passed = worker_passed(node.state, serving)
    if passed is None and node.joins_serving and serving.outcome == READY and node.state.outcome != FAILED:
        return 0
    return passed


def _reached(state: StartupState, rank: str, milestone: str, shape: PhaseShape) -> bool:
    key = "main" if rank == WHOLE_NODE else rank
    later = PHASES[PHASES.index(milestone) + 1 :]
    mine = next((i for i, phase in enumerate(state.phases) if phase.name == milestone), None)
    own = state.phases[mine] if mine is not None else None
    entry = own.ranks.get(key) if own is not None else None
    if own is not None and not own.done and entry is not None and entry.end_line is None and mine not in shape.ended:
        # still under way on this rank, whatever began beside it (phases can overlap); once some
        # rank has ended it, one that never says so may be a rank that does not print its end
        # (vLLM's info_once lines): a later phase begun there counts, as before
        return False
    for index, phase in enumerate(state.phases):
        entry = phase.ranks.get(key)
        if phase.name == milestone and (phase.done or (entry is not None and entry.end_line is not None)):
            return True
        # a later phase begun on this rank, or one the server logs once for all its ranks
        if phase.name in later and (entry is not None or index in shape.shared):
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
    role = roles(statuses)
    serving = next((n.state for n in statuses if role[n.name] == SERVING), None)
    logged = logged_suspects(_logged_addresses(statuses))  # (a node whose command is known says it there)
    pairs: list[Laggard] = []
    for node in statuses:
        # a worker never prints ready: it is there when the serving node is and its set-up is done
        arrived = (role[node.name] == WORKER and serving is not None and serving.outcome == READY
                   and not _gone(node) and worker_done(node, serving) is not None)
        shape = PhaseShape.of(node.state)
        for rank in node_ranks(node.state):
            # a rank with no phase yet (its tag seen on other lines) is where its node's log is
            last_line = (_rank_last_line(node.state, rank) if rank != WHOLE_NODE else None) or node.state.last_line
            text = node.last_text or node.state.last_text
            if node.waiting and not node.state.lines:
                text = f"(no log yet: {node.waiting})"
            pairs.append(
                Laggard(node.name, rank, len(MILESTONES) if arrived else milestones_reached(node.state, rank, shape), last_line,
                        text, node.quiet_for, node.suspect or logged.get(node.name), _out(node))
            )
    # a node that failed or whose process is gone first (it is what holds the others up), then the
    # furthest behind; among equals a node whose command disagrees, then the quietest
    out = {n.name for n in statuses if _gone(n) or n.state.outcome == FAILED}
    pairs.sort(key=lambda p: (p.node not in out, p.reached, p.suspect is None, -(p.quiet_for or 0.0), p.node,
                              _rank_key(p.rank)))
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


def verdict(nodes: Mapping[str, NodeStatus] | list[NodeStatus]) -> Verdict:
    """The attempt's verdict: the first failure on any node (by log time), a node whose process
    is gone, else READY when the serving node is ready and every worker's set-up is done."""
    statuses = list(nodes.values()) if isinstance(nodes, Mapping) else list(nodes)
    ours = [n for n in statuses if n.verdict is not None and n.verdict.kind in (STOPPING, VerdictKind.STOPPED)]
    if statuses and len(ours) == len(statuses):  # a stop of the launch's: what the servers said meanwhile is no failure
        if all(n.verdict is not None and n.verdict.kind == VerdictKind.STOPPED for n in ours):
            return Verdict(VerdictKind.STOPPED, f"stopped on {'every node' if len(ours) > 1 else ours[0].name}")
        left = [n.name for n in ours if n.verdict is not None and n.verdict.kind == STOPPING]
        return Verdict(STOPPING, f"stopping: {', '.join(left)} still running")
    failures = [
        (node, node.state.first_error) for node in statuses if node.state.outcome == FAILED and node not in ours
    ]
    if failures:
        node, error = min(failures, key=lambda f: (f[1].ts if f[1] is not None and f[1].ts is not None else float("inf")))
        others = [n.name for n, _ in failures if n is not node]
        also = f" (also failed: {', '.join(others)})" if others else ""
        if error is None:
            return Verdict(VerdictKind.FAILED, (node.state.stop_reason or "the server died") + also, node=node.name)
        where = " · ".join(p for p in (error.rank or "", f"line {error.line}") if p)
        return Verdict(VerdictKind.FAILED, f"{where} · {error.title}{also}", node=node.name)
    role = roles(statuses)
    serving = [n for n in statuses if role[n.name] == SERVING]
    ready = [n for n in serving if n.state.outcome in (READY, STOPPED)]
    gone = [n for n in statuses if _gone(n)]
    if gone and not any(n.state.outcome == STOPPED for n in serving):  # (a shutdown the log said is a stop)
        node = first_gone(gone)
        assert node.verdict is not None
        return dataclasses.replace(node.verdict, node=node.name)
    answering = next((n for n in serving if n.state.outcome == READY and n.verdict is not None
                      and n.verdict.kind == VerdictKind.STARTING), None)
    if answering is not None and answering.verdict is not None and len(ready) == len(serving):
        return dataclasses.replace(answering.verdict, node=answering.name)  # its ready line, not yet its --health
    if serving and len(ready) == len(serving):
        workers = [n for n in statuses if role[n.name] == WORKER]
        passed = {n.name: worker_done(n, serving[0].state) for n in workers}
        if all(count is not None for count in passed.values()):
            if any(n.state.outcome == STOPPED for n in serving):
                return Verdict(VerdictKind.STOPPED, "stopped after ready")
            words = [f"{n.name} serving" for n in serving]
            words += [f"{name} worker" + (f" past {PAST[MILESTONES[count - 1][0]]}" if count else "")
                      for name, count in passed.items()]
            return Verdict(VerdictKind.READY, ", ".join(words))
    for node in statuses:  # a node silent past its limit, while the others wait for it or not
        if node.verdict is not None and node.verdict.kind == STALLED:
            behind = laggard(statuses)
            if behind is not None and behind[0].milestone == "dist_init":  # the classic hang: say it as such
                row, who = behind
                never = next(n for n in statuses if n.name == who.node)
                if never.waiting and not never.state.lines:  # it never started: no network cause reads into that
                    return Verdict(STALLED, f"its log never appeared ({never.waiting})", node=who.node)
                return Verdict(STALLED, _not_joined(row, who, statuses), node=who.node)
            return dataclasses.replace(node.verdict, node=node.name)
    unreached = next((n for n in statuses if n.waiting and not n.state.lines and _out(n) is None), None)
    if unreached is not None:  # never reached, its log's directory missing, its SSH down: the headline
        return Verdict(VerdictKind.STARTING, unreached.waiting or "", node=unreached.name)
    loading = next((n for n in statuses if n.verdict is not None and n.verdict.kind == VerdictKind.LOADING), None)
    if loading is not None and loading.verdict is not None:  # quiet, its bytes still moving: as one node's says
        return dataclasses.replace(loading.verdict, node=loading.name)
    if serving and len(ready) == len(serving):
        setting_up = [n.name for n in statuses if role[n.name] == WORKER and worker_done(n, serving[0].state) is None]
        return Verdict(VerdictKind.STARTING, f"{', '.join(n.name for n in serving)} ready; "
                       f"{', '.join(setting_up)} still setting up")
    for node in statuses:  # waiting for resources (vLLM's Ray placement group): phase zero, as a queued job's
        phase = node.state.current_phase
        if phase is not None and phase.name == QUEUED:
            return Verdict(VerdictKind.STARTING, phase_words(phase), node=node.name)
    behind = laggard(statuses)
    if behind is None:
        return Verdict(VerdictKind.STARTING, "starting")
    row, who = behind
    waited = next(n for n in statuses if n.name == who.node)
    # a node with no line yet: why (never connected to its host, its log's directory missing, …)
    why = f" ({waited.waiting})" if waited.waiting and not waited.state.lines else ""
    return Verdict(VerdictKind.STARTING, f"{row.words}: {row.reached}/{row.total} ranks · waiting for {who.label}{why}")


def _not_joined(row: BarrierRow, who: Laggard, statuses: list[NodeStatus]) -> str:
    """The classic multi-node hang, in words: ranks waiting in the distributed init for a node that
    never joins, and its likely causes with their checks (the node's odd command first; then the
    logs' addresses, the network interface variables, a firewall on the port)."""
    nodes = list(dict.fromkeys(lag.node for lag in row.missing))
    quiet = clock(who.quiet_for, unknown="—")
    if row.reached:
        words = f"{who.node} never joined: {row.reached}/{row.total} ranks past dist-init, {who.node} quiet {quiet}"
    else:
        words = f"no rank past dist-init, quiet {quiet}, on {', '.join(nodes)}: the nodes never met at the dist-init address"
    env = next((n.env for n in statuses if n.env is not None), None)
    causes = never_joined_causes({n.name: n.command for n in statuses if n.command}, env, _logged_addresses(statuses),
                                 who.node if row.reached else "each node", said=who.suspect or "")
    if who.suspect:
        return f"{words} · {who.suspect} · other causes: {'; '.join(causes)}"
    return f"{words} · likely causes: {'; '.join(causes)}"


#: Ray's prefix on a line an actor on another node printed, as the driver streams it: "(RayWorkerWrapper
#: pid=1234, ip=10.0.0.2) …" (ANSI-coloured in files too; vLLM's actor is RayWorkerVllm up to 0.3.2).
#: An actor on the driver's own node is "(RayWorkerWrapper pid=1234)": no ip, the head's line. A
#: node's raylet speaks as "(raylet, ip=10.0.0.2) …" (a worker it saw die, killed for memory).
_RAY_IP = re.compile(rb"^(?:\x1b\[[\d;]*m)*\((?:(?:[\w.]+ )?pid=\d+|raylet), ip=(?P<ip>[0-9A-Fa-f.:]+)\)")


def ray_node(line: bytes) -> str | None:
    """The node (its ip) a line of a Ray driver's log came from; None: the head's own line."""
    match = _RAY_IP.match(line)
    return match["ip"].decode() if match is not None else None


def _logged_addresses(statuses: list[NodeStatus]) -> dict[str, str]:
    """The dist-init address each node's log printed in its server arguments, where it did."""
    return {n.name: addr for n in statuses if (addr := n.state.identity.get("dist_init_addr"))}


def _running(phase: Phase) -> bool:
    """Whether a phase is still under way on some rank (a phase whose every rank ended it may stay
    open, waiting for ranks the node does not have)."""
    return not phase.done and (not phase.ranks or any(entry.end_line is None for entry in phase.ranks.values()))


def _out(node: NodeStatus) -> str | None:
    """Why a node will reach no further milestone (its own verdict's word), or None while it may."""
    if node.verdict is not None and node.verdict.kind in (DEAD, VerdictKind.FAILED, VerdictKind.STOPPED):
        return str(node.verdict.kind)
    return "failed" if node.state.outcome == FAILED else None


def first_gone(nodes: list[NodeStatus]) -> NodeStatus:
    """The node whose process went first, by time (list order among those of unknown time)."""
    return min(nodes, key=lambda n: (n.ended_at is None, n.ended_at or 0.0))


def _gone(node: NodeStatus) -> bool:
    """Whether the node's processes say it is out: its server process or a rank's is gone."""
    return node.verdict is not None and node.verdict.kind in (DEAD, VerdictKind.FAILED)


@functools.lru_cache(maxsize=4096)
def _rank_key(rank: str) -> tuple[int | str, ...]:
    """"TP10" after "TP9": digit runs compare as numbers (kept: a barrier sorts its ranks each second)."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", rank))
