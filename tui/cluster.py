"""One startup across several nodes: a :class:`~tui.session.WatchSession` per node, and the
attempt they make together.

Each node keeps its own session (its tailer and GPU source, reconnecting on its own; its
tracker; its scrollback). :class:`ClusterSession` adds what spans the nodes: the barrier
view and the verdict (``tui.core.cluster``), a log merged across nodes by timestamp, and —
for ``watch --slurm`` — the Slurm job, whose pending state is phase zero ("queued") and
whose end is a verdict. For a Slurm job the nodes appear when it starts running: the
job's per-task output files (``srun -o …%t``) become the nodes' logs.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import heapq
import math
import shlex
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from tui.core import cluster as core
from tui.core.events import ConnectionState, SlurmJobState
from tui.core.multinode import suspects
from tui.core.options import SMOKE_TIMEOUT_S, NodeSpec
from tui.core.slurm import ACTIVE, ENDED, GONE, POLITE_ENDS, QUEUED, job_words, queued_words
from tui.core.state import FAILED, READY, STARTING, StartupState
from tui.core.wording import clock
from tui.core.verdict import (
    DEAD,
    LOADING,
    STALLED,
    STOPPING,
    TIMEOUT,
    ProcessStatus,
    Verdict,
    smoke_verdict,
)
from tui.core.verdict import FAILED as FAILED_KIND
from tui.core.verdict import READY as READY_KIND
from tui.core.verdict import STARTING as STARTING_KIND
from tui.core.verdict import STOPPED as STOPPED_KIND
from tui.core.limits import StallLimits
from tui.core.profiles import Profile
from tui.session import LogEntry, Scrollback, SessionEvent, SessionInfo, Topic, Update, WatchSession
from tui.sources.base import EventSource
from tui.sources.slurm import SlurmJobSource
from tui.session.judging import Judging

if TYPE_CHECKING:
    from tui.core.hints import Diagnosis

#: Lines kept in the merged log (each node's own scrollback keeps more).
MERGED_LINES = 20_000


class MergedScrollback:
    """Every node's lines in one bounded list, read like a node's own ``Scrollback`` (the log view
    draws either): each entry is a (node, seq) of that node's scrollback, so a line a node styles
    later (an error block) is styled here too.

    Ordered by the lines' own times from the first line on: a node's backlog (the log it had before
    it was watched, or while it was out of reach) goes where its times put it among the lines
    already there, not below them as a block. A line's key is its time, then when its node's
    timestamped line was pulled, then its place in its node's log:

    - a line without a time (a traceback's) keeps its place right after its node's previous line;
      a node's first lines before any time go with the node's first timed line of the same pull,
      else at the end, where they arrived (a log that prints no times reads in arrival order);
    - a node's own order is never changed: a line stamped earlier than its node's previous line
      (another rank's buffered write) takes that line's time.

    A line's timestamp is the one its node read, once, by the node's profile (``Scrollback.times``):
    nothing is parsed here.
    """

    def __init__(self, nodes: dict[str, WatchSession], capacity: int = MERGED_LINES) -> None:
        self.nodes = nodes
        self.capacity = capacity
        self._keys: list[tuple[float, int, int]] = []  # (time, pull order of its timed line, node seq), ascending
        self._refs: list[tuple[str, int]] = []  # (node, node seq), in the keys' order
        self.dropped = 0
        self.progress: LogEntry | None = None  # (a node's live bar stays in its own view)
        self._seen: dict[str, int] = {}
        self._last: dict[str, tuple[float, int]] = {}  # node -> (time, pull order) its latest line took
        self._order = 0  # timed lines pulled so far: what puts lines of one time in the order they came
        self._widest_inserted = 0  # the longest line put above the end (the view measures only the end)

    def pull(self) -> int:
        """Take what each node appended since the last pull, each line where its time puts it; how
        many lines that was."""
        end = self._keys[-1][0] if self._keys else -math.inf  # where lines of no known time go
        batches = []
        for name, session in self.nodes.items():
            start = self._seen.get(name, 0)
            self._seen[name] = session.scrollback.end_seq
            batch = self._keyed(name, session.scrollback.times(start), end)
            if batch:
                batches.append(batch)
        if not batches:
            return 0
        count = sum(map(len, batches))
        new = batches[0] if len(batches) == 1 else list(heapq.merge(*batches))
        keys, refs = self._keys, self._refs
        at = bisect.bisect_right(keys, new[0][0])
        if at < len(keys):  # some go above lines already there: the tail is merged with them
            tail = list(zip(keys[at:], refs[at:]))
            self._widest_inserted = max(self._widest_inserted, *(self._width(ref) for _, ref in new))
            del keys[at:], refs[at:]
            new = list(heapq.merge(tail, new))
        keys.extend(key for key, _ in new)
        refs.extend(ref for _, ref in new)
        overflow = len(keys) - self.capacity
        if overflow > 0:
            del keys[:overflow], refs[:overflow]
            self.dropped += overflow
        return count

    def _keyed(self, name: str, times: Iterable[tuple[int, float]], end: float) -> list[tuple[tuple[float, int, int], tuple[str, int]]]:
        """A node's new lines with their keys (in its own order, so ascending)."""
        last = self._last.get(name)
        batch: list[tuple[tuple[float, int, int], tuple[str, int]]] = []
        before: list[int] = []  # lines before the node's first time
        for seq, own in times:
            if not math.isnan(own):
                self._order += 1
                last = (own if last is None else max(own, last[0]), self._order)
                batch.extend(((last[0], last[1], early), (name, early)) for early in before)
                before = []
            elif last is None:
                before.append(seq)
                continue
            batch.append(((last[0], last[1], seq), (name, seq)))
        if before:  # no time yet: at the end, as they arrived (and the node's later lines no higher)
            self._order += 1
            last = (end, self._order)
            batch.extend(((end, self._order, seq), (name, seq)) for seq in before)
        if last is not None:
            self._last[name] = last
        return batch

    def _width(self, ref: tuple[str, int]) -> int:
        entry = self.nodes[ref[0]].scrollback.get(ref[1])
        return 0 if entry is None else len(entry.text)

    # ---------------------------------------------------------------- the Scrollback's reading side

    def __len__(self) -> int:
        return len(self._refs)

    @property
    def first_seq(self) -> int:
        return self.dropped

    @property
    def end_seq(self) -> int:
        return self.dropped + len(self._refs)

    def get(self, seq: int) -> LogEntry | None:
        index = seq - self.dropped
        if not 0 <= index < len(self._refs):
            return None
        node, node_seq = self._refs[index]
        entry = self.nodes[node].scrollback.get(node_seq)
        if entry is None:  # that node's own scrollback let it go already
            return None
        return dataclasses.replace(entry, seq=seq, node=node)

    def entries(self, start: int = 0, stop: int | None = None) -> list[LogEntry]:
        end = self.end_seq if stop is None else min(stop, self.end_seq)
        found = (self.get(seq) for seq in range(max(start, self.first_seq), end))
        return [entry for entry in found if entry is not None]

    def widest(self, start: int) -> int:
        """The longest line from ``start`` on, or put above it since (its backlog's)."""
        return max(self._widest_inserted, max((len(entry.text) for entry in self.entries(start)), default=0))

    def find_line(self, number: int, node: str | None = None) -> LogEntry | None:
        """The entry of ``node``'s line ``number`` (its current file), if still kept here."""
        for name, session in self.nodes.items():
            if node is not None and name != node:
                continue
            own = session.scrollback.find_line(number)
            if own is None:
                continue
            for index in range(len(self._refs) - 1, -1, -1):  # recent lines are looked for most
                if self._refs[index] == (name, own.seq):
                    return self.get(self.dropped + index)
        return None

    def anchor(self, seq: int) -> object:
        """What finds the line ``seq`` again after lines were put above it (``seq_of``): its key
        (a seq here is a place in the order, and a backlog inserted above moves every line below)."""
        index = seq - self.dropped
        return self._keys[index] if 0 <= index < len(self._keys) else None

    def seq_of(self, anchor: object) -> int | None:
        """The seq the line ``anchor`` names has now, None once it is no longer kept."""
        if not isinstance(anchor, tuple):
            return None
        index = bisect.bisect_left(self._keys, anchor)
        return self.dropped + index if index < len(self._keys) and self._keys[index] == anchor else None

    def notable_seqs(self) -> list[int]:
        """Merged seqs of the error, phase and marker lines (styles as the nodes have them now)."""
        notable = {name: set(session.scrollback.notable_seqs()) for name, session in self.nodes.items()}
        return [self.dropped + i for i, (name, seq) in enumerate(self._refs) if seq in notable.get(name, ())]

    def view(self, node: str | None = None) -> list[LogEntry]:
        """The kept lines (of one node): for tests and reports."""
        return [entry for entry in self.entries() if node is None or entry.node == node]


def connection_words(conn: ConnectionState) -> str:
    """``127.0.0.3 retrying in 8s: connection refused`` — the host once, the state once."""
    detail = conn.detail.removeprefix(f"{conn.host}: ") if conn.detail else ""
    state = f"retrying in {conn.retry_in:.0f}s" if conn.state == "retrying" and conn.retry_in else conn.state
    return f"{conn.host} {state}" + (f": {detail}" if detail else "")


ClusterSubscriber = Callable[[str | None, Update], None]  # (node or None for the cluster, update)
NodeHearer = Callable[[str, SessionEvent], None]  # (node, one of its events)
JobEvent = SlurmJobState | ConnectionState  # what the Slurm job's own source says: its state, its poller's connection
JobHearer = Callable[[JobEvent], None]


class ClusterSession:
    """Nodes in, one attempt out. ``subscribe``, then ``start()`` inside a running loop.

    A single log is the variant :class:`OneLog` (``of_one``): what differs for it is overridden
    there, not branched on here."""

    #: A single log (:class:`OneLog`): presenters show no node names, barrier or node rows for it.
    single: ClassVar[bool] = False

    def __init__(
        self,
        nodes: list[NodeSpec] | None = None,
        *,
        make_session: Callable[[NodeSpec], WatchSession],
        job: SlurmJobSource | None = None,
        job_outputs: Callable[[SlurmJobState], Awaitable[list[NodeSpec]]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.make_session = make_session
        self.clock = clock
        self.specs: dict[str, NodeSpec] = {}
        self.nodes: dict[str, WatchSession] = {}
        self.attempt = 1  # which attempt of a launch it follows (each node's header says it)
        self.merged = MergedScrollback(self.nodes)  # the log across the nodes, by timestamp
        self.job: SlurmJobState | None = None
        self.job_connection: ConnectionState | None = None
        self.cancelled_by: str | None = None  # set by whoever cancels the job (the Slurm runner)
        self.task_deaths: dict[str, str] = {}  # node -> how its process died ("task 1: Killed (srun)")
        self.died_at: dict[str, float] = {}  # node -> when its task's death was learnt (the first to go is the cause)
        self.task_lost: str | None = None  # a task of the job gone on a node Slurm does not name from here
        #: The serving node is ready only once every worker is set up (vLLM over Ray): a worker is then
        #: set up when it is, whatever its own lines show (``core.cluster.worker_done``).
        self.workers_join_serving = False
        self.suspects: dict[str, str] = {}  # node -> why its command is suspect (tui.core.multinode)
        self.commands: dict[str, list[str]] = {}  # node -> its command as launched (a launch sets it)
        self.launch_env: dict[str, str] | None = None  # the environment the launch gave the nodes
        self._suspects_of: tuple[tuple[Any, ...], dict[str, str]] = ((), {})  # writers' commands -> suspects
        self.launched = False  # its processes are ours (a launch): alive until their runner says not
        self.stopping = False  # the launch is stopping them (x): their exits and last words are no failure
        self.stopped: dict[str, str] = {}  # node -> how the stop ended it ("stopped (SIGKILL after …)")
        self._read_to_end: set[str] = set()  # nodes whose task ended and whose final log was read to its end
        self._job_source = job
        self._job_outputs = job_outputs
        self._subscribers: list[ClusterSubscriber] = []
        self._tasks: list[asyncio.Task] = []
        self._started = False
        self.started_at: float | None = None  # when it began to be watched
        self._hearers: list[tuple[NodeHearer, bool]] = []  # ``hear``: (told each node's events, with its lines)
        self._job_hearers: list[JobHearer] = []  # ``hear_job``: told each of the job's own events
        #: ``--timeout``: seconds the startup was given; ``timed_out`` once they passed undecided.
        self.timeout: float | None = None
        self.timed_out = False
        #: The attempt's verdict, decided once per turn of updates and once a second, and pushed.
        self.judging = Judging(self.own_verdict, self.failing_node_hints, self.node_note)
        self._about: str | None = None  # the node the verdict last decided is about
        self._elapsed_at_verdict: float | None = None  # the attempt's time when its verdict became final
        self._judge_due = False
        self._clock_taken = False  # a dashboard's clock decides once a second (``take_clock``), not ``_tick``
        #: Inside ``instant``: the statuses asked for so far, by what was asked (else None).
        self._instant: dict[tuple[bool, bool], list[core.NodeStatus]] | None = None
        self._deadline: asyncio.TimerHandle | None = None  # --timeout's, from start()
        self.health_url: str | None = None  # --health: asked from the serving node's machine
        for spec in nodes or []:
            self.add_node(spec)

    @staticmethod
    def of_one(session: WatchSession, name: str = "local") -> OneLog:
        """A single log watched as a node set of one: the one stack for 1..N nodes (:class:`OneLog`)."""
        return OneLog(session, name)

    @property
    def scrollback(self) -> Scrollback | MergedScrollback:
        """The log the dashboard shows: every node's, merged (``MergedScrollback``)."""
        return self.merged

    @property
    def only(self) -> WatchSession | None:
        """The node of a single log (None for a node set, even one of a single node so far)."""
        return None

    # ---------------------------------------------------------------- nodes

    def hear(self, put: NodeHearer, *, lines: bool = False) -> None:
        """``put`` is told each node's tracker events and source notices (``WatchSession.hear``,
        lossless, in each node's order) with the node's name, for text presenters; a node added
        later (a Slurm job's task) too, from when it is added."""
        self._hearers.append((put, lines))
        for name, session in self.nodes.items():
            session.hear(partial(put, name), lines=lines)

    def hear_job(self, put: JobHearer) -> None:
        """``put`` is told each of the Slurm job's own events, in order, none dropped: its state as
        polled (or as the launch's cancel left it) and its poller's connection."""
        self._job_hearers.append(put)

    def _job_said(self, event: JobEvent, *topics: Topic) -> None:
        for put in self._job_hearers:
            put(event)
        self._notify(None, Update(frozenset({"job", *topics})))

    def add_node(self, spec: NodeSpec) -> WatchSession:
        session = self.make_session(spec)
        session.info.attempt = self.attempt
        self.specs[spec.name] = spec
        self.nodes[spec.name] = session
        for put, lines in self._hearers:
            session.hear(partial(put, spec.name), lines=lines)
        session.subscribe(partial(self._node_update, spec.name))
        if self._started:
            session.start()
        if self.health_url is not None and len(self.specs) == 1:  # (a Slurm job's nodes come with its tasks)
            self._probe_serving()
        return session

    def probe_health(self, url: str) -> None:
        """``--health URL``: the serving node (declared so, else the first) is ready only once it
        answers 200 too, asked from that node's machine; now, or once the nodes are known."""
        self.health_url = url
        if self.specs:
            self._probe_serving()

    def _probe_serving(self) -> None:
        assert self.health_url is not None
        serving = next((s for s in self.specs.values() if s.role == "serving"), next(iter(self.specs.values())))
        self.nodes[serving.name].probe_health(self.health_url, serving.host)

    def subscribe(self, callback: ClusterSubscriber) -> None:
        self._subscribers.append(callback)

    def start(self) -> None:
        self._started = True
        self.started_at = self.clock()
        for session in self.nodes.values():
            session.start()
        if self._job_source is not None:
            self._tasks.append(asyncio.create_task(self._follow_job(self._job_source)))
        self._tasks.append(asyncio.create_task(self._tick()))
        if self.timeout is not None:
            self._deadline = asyncio.get_running_loop().call_later(self.timeout, self.time_out)

    async def _tick(self) -> None:
        """Quiet times and stall limits move on while nothing arrives: decide once a second, until
        a caller takes the clock (``take_clock``: then this one ends, and wakes no more)."""
        while not self._clock_taken:
            await asyncio.sleep(1.0)
            if self.judging.subscribed and not self._clock_taken:
                self.judging.evaluate()

    def take_clock(self) -> None:
        """From now on the caller's once-a-second clock decides, calling ``tick`` inside ``instant``
        with its own drawing: the dashboard's nodes are read once a second for the verdict and the
        node panels both, where two clocks read them twice (issue 35)."""
        self._clock_taken = True

    def tick(self) -> None:
        """A second passed on the clock taken (``take_clock``): decide, if anyone follows."""
        if self._clock_taken and self.judging.subscribed:
            self.judging.evaluate()

    @contextmanager
    def instant(self) -> Iterator[None]:
        """One instant: the nodes' statuses are read once inside, however often asked (by the
        verdict and by each panel); an update told meanwhile reads them again."""
        self._instant = {}
        try:
            yield
        finally:
            self._instant = None

    async def stop(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self._job_source is not None:
            await self._job_source.close()
        for session in self.nodes.values():
            await session.stop()

    # ---------------------------------------------------------------- the job

    async def _follow_job(self, source: SlurmJobSource) -> None:
        async for event in source.events():
            if isinstance(event, ConnectionState):
                self.job_connection = event
            else:
                self.job_connection = None
                self.job = event
                ran = event.state in ACTIVE or event.state in ENDED and bool(event.nodes)  # (a fast failure: ended unseen running)
                if ran and not self.nodes and self._job_outputs is not None:
                    specs = await self._job_outputs(event)
                    for spec in specs:
                        self.add_node(spec)
                    if event.stdout and event.stdout not in {spec.log for spec in specs}:
                        self._tasks.append(asyncio.create_task(self._follow_batch_output(event.stdout)))
                    if event.state in ACTIVE:
                        self._tasks.append(asyncio.create_task(self._follow_task_ends(source, event)))
            self._job_said(event)

    async def _follow_batch_output(self, path: str) -> None:
        """srun reports a task that died ("srun: error: n2: task 1: Killed") in the batch output:
        often the only word of a node whose process was killed, while the job itself runs on."""
        from tui.core.lines import Line, LineAssembler
        from tui.core.events import LogChunk
        from tui.core.slurm import task_failures
        from tui.sources.local import LocalTailer

        tailer = LocalTailer(path)
        assembler = LineAssembler()
        try:
            async for event in tailer.events():
                if not isinstance(event, LogChunk):
                    continue
                for item in assembler.feed(event.data):
                    if isinstance(item, Line) and item.text.startswith("srun: error: "):
                        for words in task_failures(item.text):
                            node, what = words.split(" ", 1)
                            self.node_died(node, f"{what} (srun)")
        finally:
            await tailer.close()

    async def _follow_task_ends(self, source: SlurmJobSource, job: SlurmJobState) -> None:
        """A task that died silently while its job runs on, as Slurm's step state shows it."""
        async for ended in source.task_ends(job):
            if ended.node is None:
                self.task_lost = ended.detail
                self._notify(None, Update(frozenset({"state"})))
            elif ended.node in self.nodes:
                self.node_died(ended.node, ended.detail)

    def node_stopped(self, node: str, words: str) -> None:
        """A node's processes are gone because the launch stopped them (``x``, a relaunch)."""
        if node not in self.stopped:
            self.stopped[node] = words
            self._notify(node, Update(frozenset({"state"})))

    def job_cancelled(self, job_id: str, by: str) -> None:
        """The launch cancelled the job and saw it leave the queue: over now, whatever the next poll
        says (Watchtower may quit before it comes)."""
        job = self.job or SlurmJobState(job_id, "CANCELLED")
        self.job = dataclasses.replace(job, state="CANCELLED", cancelled_by=by)
        self.cancelled_by = by
        self._job_said(self.job, "state")

    def node_died(self, node: str, words: str) -> None:
        """A node's server process is gone (its runner saw it, or srun said so)."""
        if node not in self.task_deaths:
            self.task_deaths[node] = words
            self.died_at[node] = self.clock()
            self._notify(node, Update(frozenset({"state"})))

    # ---------------------------------------------------------------- models

    def statuses(self, *, deaths: bool = True, closed: bool = True) -> list[core.NodeStatus]:
        """Each node as the barrier view and the verdict see it, with its own verdict (``deaths``:
        with the tasks srun said died; not once the job has ended, when every task ends; ``closed``:
        a node still undecided when its job ended is closed as such, its task gone with the job)."""
        instant = self._instant
        key = (deaths, closed and self.job_ended)  # (closing changes nothing before the job ends)
        if instant is not None and key in instant:
            return list(instant[key])
        logs = self._log_statuses()
        roles = core.roles(logs)
        serving = next((n.state for n in logs if roles[n.name] == core.SERVING), None)
        statuses = [dataclasses.replace(n, verdict=self._node_verdict(n, roles[n.name], serving, deaths, closed))
                    for n in logs]
        if instant is not None:
            instant[key] = statuses
        return list(statuses)

    def _log_statuses(self) -> list[core.NodeStatus]:
        out = []
        writers = self._writer_commands()
        for name, session in self.nodes.items():
            state = session.state
            quiet = None
            if state.outcome == STARTING:
                last = session.times.last_output_at or self.started_at
                quiet = None if last is None else max(0.0, self.clock() - last)
            waiting = session.waiting
            conn = session.connection
            if conn is not None and conn.state != "connected":
                waiting = session.blind() or connection_words(conn)  # "never connected to …" says more
            suspect = self.suspects.get(name) or self._writer_suspects(writers).get(name)
            launched = name in self.commands
            command = self.commands[name] if launched else writers.get(name, [])
            out.append(core.NodeStatus(name, state, quiet_for=quiet, waiting=waiting, suspect=suspect,
                                       role=self.specs[name].role, joins_serving=self.workers_join_serving,
                                       command=tuple(command), env=self.launch_env if launched else None,
                                       ended_at=self._ended_at(name)))
        return out

    def _ended_at(self, name: str) -> float | None:
        """When the node's server process was seen gone: its task's death, its writer's, its exit."""
        session = self.nodes[name]
        gone = session.process.writers.main_gone or session.process.writers.lost
        times = [t for t in (self.died_at.get(name), gone.at if gone is not None else None,
                             session.process.exit.at if session.process.exit is not None else None) if t]
        return min(times, default=None)

    def _writer_suspects(self, commands: dict[str, list[str]]) -> dict[str, str]:
        """For servers started by hand: each node's command line as its writer discovery shows it,
        checked for what the nodes must agree on (the dist-init address, model, node count, ranks)."""
        key = tuple(sorted((name, tuple(argv)) for name, argv in commands.items()))
        if key != self._suspects_of[0]:
            self._suspects_of = (key, suspects(commands) if len(commands) > 1 else {})
        return self._suspects_of[1]

    def _writer_commands(self) -> dict[str, list[str]]:
        """Each node's server command line as its writer discovery shows it (servers started by hand)."""
        commands: dict[str, list[str]] = {}
        for name, session in self.nodes.items():
            writers = session.process.writers
            main = next((p for p in writers.processes if p.pid == writers.main_pid), None)
            if main is not None and main.command:
                try:
                    commands[name] = shlex.split(main.command)
                except ValueError:  # (a masked or cut command line)
                    continue
        return commands

    def node_verdict(self, name: str) -> Verdict:
        """One node's own verdict: starting, loading (log quiet, GPU memory moving), stalled?, ready,
        failed, or dead (its process gone); a worker node whose set-up is done is not stalled."""
        for status in self.statuses():
            if status.name == name:
                assert status.verdict is not None
                return status.verdict
        raise KeyError(name)

    def _node_verdict(self, node: core.NodeStatus, role: str, serving: StartupState | None, deaths: bool,
                      closed: bool = True) -> Verdict:
        verdict = self._open_node_verdict(node, role, serving, deaths)
        if closed and self.job_ended and verdict.kind in (STARTING_KIND, LOADING, STALLED):  # its task ended with the job
            return Verdict(DEAD, f"its task ended with the job: {self.job_words()}")
        return verdict

    def _open_node_verdict(self, node: core.NodeStatus, role: str, serving: StartupState | None,
                           deaths: bool) -> Verdict:
        session = self.nodes[node.name]
        if node.name in self.stopped:
            return Verdict(STOPPED_KIND, self.stopped[node.name])
        if self.stopping:
            return Verdict(STOPPING, "stopping its processes")
        death = self.task_deaths.get(node.name) if deaths else None
        if death is not None and session.state.outcome != FAILED:
            reading = self._final_log(node.name)
            if reading is not None:
                return Verdict(STARTING_KIND, f"{death}: {reading} before judging")
            if session.state.outcome != FAILED:  # (the end of the log may have held the cause)
                return Verdict(DEAD, death)
        self._tell_process(node.name, session)
        verdict = session.verdict()  # its writers (discovery), GPUs, silence and limits: as `watch` judges one node
        if role == core.WORKER and serving is not None and verdict.kind in (STARTING_KIND, LOADING, STALLED):
            passed = core.worker_done(node, serving)
            if passed == 0:  # (its lines folded into other workers' by Ray: the serving node's ready says it)
                return Verdict(READY_KIND, "worker, set up: the serving node is ready")
            if passed:  # its log ends after its set-up: silence is all a healthy worker has left to say
                past = core.PAST[core.MILESTONES[passed - 1][0]]
                if serving.outcome == READY:
                    return Verdict(READY_KIND, f"worker past {past}")
                return Verdict(STARTING_KIND, f"worker past {past}, waiting for the serving node")
        return verdict

    def _final_log(self, name: str) -> str | None:
        """A node whose task has ended (srun said so, or its job ended): its output file is final, and
        is read to its end — the tracker judging every line — before the node is judged: what is left
        ("reading the rest of the log (380 MB)"), None once read. The file's end is then the log's
        end: an open traceback or unterminated last line is taken as it is (``finish``, once) — only
        where it is known read to its end (a local file: over SSH the last lines may be on their way)."""
        session = self.nodes[name]
        reading = session.rest.words()
        if reading is None and name not in self._read_to_end and session.rest.unread_bytes() == 0:
            self._read_to_end.add(name)
            session.finish()
        return reading

    def _reading_final_logs(self, ended: bool) -> tuple[str, str] | None:
        """(node, words) of the first node whose task ended — every node's, once the job ended — whose
        log is still being read to its end."""
        for name in self.nodes:
            if ended or name in self.task_deaths:
                reading = self._final_log(name)
                if reading is not None:
                    return name, reading
        return None

    @property
    def processes_known(self) -> bool:
        """Whether the nodes' processes are known to run: launched by us (until their job ended), or
        a running job's tasks."""
        return (self.launched and not self.job_ended) or (self.job is not None and self.job.state in ACTIVE)

    def startup_elapsed(self) -> float | None:
        """The attempt's time so far, whichever node is shown: its longest-running node's (each in
        its own log's time); stopped at the attempt's verdict (a node the attempt's verdict closed —
        its task gone with the job — never decided its own, and its clock would run on)."""
        if self._elapsed_at_verdict is not None:
            return self._elapsed_at_verdict
        return max((e for session in self.nodes.values() if (e := session.startup_elapsed()) is not None), default=None)

    def place(self, session: WatchSession) -> str:
        """Where a node runs, as the header names it: its host, or its Slurm job and the job's nodes
        (a task's log is read on this machine, but the task ran on its node: not "localhost")."""
        job = self.job
        if job is None:
            return session.info.host
        return f"Slurm job {job.job_id}" + (f" ({','.join(job.nodes)})" if job.nodes else "")

    def barrier(self) -> list[core.BarrierRow]:
        return core.barrier(self.statuses())

    def time_out(self) -> None:
        """The ``--timeout`` passed: an attempt still undecided stays 'timed out' from now on."""
        if not self.verdict().final:
            self.timed_out = True
            self._notify(None, Update(frozenset({"state"})))

    def verdict(self) -> Verdict:
        """The attempt's verdict now, as the judging stage decides it (and pushes it, if it changed)."""
        return self.judging.evaluate().verdict

    def failing_node_hints(self, verdict: Verdict) -> list[Diagnosis]:
        """The known-failure hints of the node ``verdict`` is about (its own diagnosis)."""
        node = self.nodes.get(verdict.node or "")
        return list(node.judging.evaluate().hints) if node is not None else []

    def node_note(self) -> Diagnosis | None:
        """While starting, a node's note as its own watch shows it (what a quiet server is doing,
        a warning that predicts trouble: "Ray sees 8 GPUs of 16"): the node's the verdict is about
        first, else the first node that has one."""
        names = sorted(self.nodes, key=lambda name: name != self._about)
        return next((note for name in names if (note := self.nodes[name].judging.evaluate().note) is not None), None)

    def own_verdict(self) -> Verdict:
        """The nodes' verdict and the job's; past ``--timeout`` an undecided one says so (exit status 3)."""
        verdict = self._verdict()
        self._about = verdict.node
        if self.timed_out and not verdict.final:
            verdict = Verdict(TIMEOUT, f"after {clock(self.timeout, unknown='—')}, still starting · {verdict.text}")
        if not verdict.final:
            self._elapsed_at_verdict = None
        elif self._elapsed_at_verdict is None:
            self._elapsed_at_verdict = self.startup_elapsed()
        return verdict

    def _verdict(self) -> Verdict:
        """The nodes' verdict, and the Slurm job's: queued is phase zero, an ended job decides."""
        job = self.job
        if job is not None and job.state in QUEUED and not self.nodes:
            return Verdict(STARTING_KIND, queued_words(job))
        ended = self.job_ended
        if ended and self.stopping:  # the launch cancelled it: a stop, whatever the tasks said as they went
            return Verdict(STOPPED_KIND, self.job_words())
        reading = self._reading_final_logs(ended) if not self.stopping else None
        if reading is not None:  # not judged before its last line is read: the cause is often there
            node, words = reading
            gone = self.job_words() if ended else self.task_deaths[node]
            return Verdict(STARTING_KIND, f"{gone}: {words} before judging", node=node)
        nodes = core.verdict(self.statuses(closed=False)) if self.nodes else None  # (the job's end says it)
        if nodes is not None and nodes.kind == READY_KIND:
            nodes = self._smoke_weighed(nodes)
        if ended and nodes is not None and core.verdict(self.statuses(deaths=False)).kind == READY_KIND:
            if job is None or job.state in POLITE_ENDS or job.state == GONE:  # every task ends with its job (how, when
                # Slurm forgot the job, is not known: no death is claimed)
                return Verdict(STOPPED_KIND, f"stopped after ready: {self.job_words()}")
            return self._died_after_ready(nodes)
        if job is not None and ended and (nodes is None or nodes.kind not in (READY_KIND, FAILED_KIND, STOPPED_KIND)):
            return self._job_end(job, nodes)  # its tasks went with it: the job's own end is the word
        if nodes is not None and nodes.kind in (READY_KIND, FAILED_KIND, DEAD, STOPPED_KIND):
            return nodes
        if self.task_lost is not None and not ended:  # no node named: the job's words, not "starting"
            return Verdict(DEAD, f"{self.job_words()}: {self.task_lost}")
        if nodes is None:
            return Verdict(STARTING_KIND, self.job_words() if job is not None else "no nodes")
        return nodes

    def _died_after_ready(self, nodes: Verdict) -> Verdict:
        """A job Slurm ended for a failure after its server was ready (a task killed, a node lost, out
        of memory, its time limit): dead after ready — as one server killed after ready is, not
        stopped — with the first node to go named and Slurm's word for the job."""
        first = nodes if nodes.kind == DEAD and nodes.node else None
        cause = f"{first.detail} · " if first is not None else ""
        return Verdict(DEAD, f"{cause}after ready · {self.job_words()}", node=first.node if first is not None else None)

    def _job_end(self, job: SlurmJobState, nodes: Verdict | None) -> Verdict:
        """A job that ended (CANCELLED, TIMEOUT, FAILED, COMPLETED…) before its server was ready:
        Slurm's word for it, the first node to go named in the words (a cancelled job's tasks all
        die; the job, not one of them, is what ended it). Dead (exit status 1) when Slurm ended it
        from outside (a cancel, its time limit), failed otherwise."""
        before = ", before the server was ready" if job.state == "COMPLETED" else ""
        first = f" · first gone: {nodes.node} ({nodes.detail})" if nodes is not None and nodes.kind == DEAD and nodes.node else ""
        kind = DEAD if job.state in ("CANCELLED", "TIMEOUT", "PREEMPTED", "DEADLINE") else FAILED_KIND
        label = job.state if job.state in ENDED else None  # (one Slurm forgot has no word of its own)
        return Verdict(kind, self.job_words() + before + first, label=label)

    def _smoke_weighed(self, ready: Verdict) -> Verdict:
        """``--smoke``: READY once each node whose log said ready answered its one completion — the
        serving node (workers serve no HTTP and print no ready line: none is sent to them)."""
        for name, session in self.nodes.items():
            if not session.smoke.wanted or session.state.outcome != READY:
                continue
            if session.smoke.status is None:
                waiting = f"{session.health.url} to answer, then " if session.health is not None else ""
                return Verdict(STARTING_KIND, f"ready marker seen on {name}; --smoke: waiting for {waiting}one completion",
                               ("smoke test",), node=name)
            weighed = smoke_verdict(ready, session.smoke.status)
            if weighed.kind != READY_KIND:
                return dataclasses.replace(weighed, node=name)
            ready = weighed
        return ready

    def _tell_process(self, name: str, session: WatchSession) -> None:
        """A job that runs, or a launch of ours: its processes live until their runner, srun or the
        job's end says not (a failed node's task that srun saw end is not "still running")."""
        alive = self.processes_known and name not in self.task_deaths
        session.process.launched_as(ProcessStatus(alive=True) if alive else None, since=self.started_at)

    def error_entries(self) -> list[LogEntry]:
        """Each node's errors' exception lines in the merged log (``WatchSession.error_entries``)."""
        merged = self.merged
        found = (merged.find_line(error.end_line or error.line, name) or merged.find_line(error.line, name)
                 for name, node in self.nodes.items() for error in node.state.errors)
        return [entry for entry in found if entry is not None]

    def verdict_node(self, verdict: Verdict) -> WatchSession | None:
        """The node a verdict is about."""
        return self.nodes.get(verdict.node or "")

    def first_error(self, verdict: Verdict) -> str | None:
        """The root cause the verdict's node logged, for the history."""
        node = self.verdict_node(verdict)
        state = node.state if node is not None else None
        error = state.first_error if state is not None else None
        return error.title if error is not None else None

    @property
    def job_ended(self) -> bool:
        """Its Slurm job has ended (or Slurm forgot it): every task with it."""
        return self.job is not None and (self.job.state in ENDED or self.job.state == GONE)

    def job_words(self) -> str:
        if self.job is None:
            return ""
        return job_words(self.job, by=self.cancelled_by or self.job.cancelled_by)

    # ---------------------------------------------------------------- notifying

    def flush(self) -> None:
        """Every node's pending update now (before a verdict is printed, so nothing trails it)."""
        for session in self.nodes.values():
            session.flush()

    def _node_update(self, name: str, update: Update) -> None:
        if "log" in update.topics:
            self.merged.pull()
        self._notify(name, update)

    def _notify(self, node: str | None, update: Update) -> None:
        if self._instant:  # (what was read this instant may have changed)
            self._instant.clear()
        if self._judges_updates(update):
            # every node's updates of one turn judged once; a GPU sample alone waits for the tick (each
            # node samples on its own second: judged once a second, not N times)
            self._judge_due = True
            try:
                asyncio.get_running_loop().call_soon(self._evaluate_now)
            except RuntimeError:
                self._evaluate_now()
        for callback in list(self._subscribers):
            callback(node, update)

    def _judges_updates(self, update: Update) -> bool:
        return self.judging.subscribed and not self._judge_due and not update.samples_only

    def _evaluate_now(self) -> None:
        self._judge_due = False
        self.judging.evaluate()


class OneLog(ClusterSession):
    """A single log as a node set of one. Its verdict is its node's own (the node's judging stage,
    which a launch takes over: it tells the node its process, ``Launch._tell_process``), so is its
    ``--timeout`` deadline, and its log is the node's scrollback (no merged copy is kept)."""

    single = True

    def __init__(self, session: WatchSession, name: str = "local") -> None:
        super().__init__(make_session=lambda _spec: session)
        self.attempt = session.info.attempt  # (the node keeps its own attempt: a launch's retries move it on)
        self.judging = session.judging
        self.node = session
        host = None if session.info.host == "localhost" else session.info.host
        self.add_node(NodeSpec(name, session.info.log_path or "", host))

    @property
    def scrollback(self) -> Scrollback:
        return self.node.scrollback

    @property
    def only(self) -> WatchSession:
        return self.node

    def start(self) -> None:
        self._started = True
        self.started_at = self.clock()
        if self.timeout is not None:
            self.node.limits.timeout = self.timeout  # (the node keeps the deadline the set was given)
        self.node.start()

    def _tell_process(self, name: str, session: WatchSession) -> None:
        pass  # (its launch tells its node)

    def take_clock(self) -> None:
        pass  # (its node decides on its own second: no panel reads it again)

    def verdict_node(self, verdict: Verdict) -> WatchSession:
        return self.node

    def error_entries(self) -> list[LogEntry]:
        return self.node.error_entries()

    def _node_update(self, name: str, update: Update) -> None:
        self._notify(name, update)

    def _judges_updates(self, update: Update) -> bool:
        return False  # (its judging stage is its node's, judged on the node's own turn)


def default_session(spec: NodeSpec, *, profile: Profile | None = None, from_end: bool = False, gpu_interval: float = 1.0,
                    max_rate: float = 15.0, writers: bool = False, stall_limits: StallLimits | None = None,
                    smoke: bool = False, smoke_timeout: float = SMOKE_TIMEOUT_S,
                    log: EventSource | None = None) -> WatchSession:
    """A node's session: its tailer (local or over SSH; ``log``: another source of its lines, a
    share of a log several nodes write), its GPU source and — with ``writers``, for servers
    Watchtower did not start — the discovery of the processes writing its log, so that a node
    whose server dies is named as `watch` names one (a launch knows its own processes)."""
    from tui.sources.factory import log_tailer, make_gpu_source, writer_source

    gpu = make_gpu_source(spec.gpus, spec.host, gpu_interval)
    info = SessionInfo(host=spec.host or "localhost", log_path=spec.log, title=spec.name)
    if log is None:
        log = log_tailer(spec.log, host=spec.host, from_end=from_end, writers=writers)
    session = WatchSession(log=log, gpu=gpu, profile=profile, info=info, max_rate=max_rate, stall_limits=stall_limits)
    if writers and (found := writer_source(spec.log, host=spec.host)) is not None:
        session.add_source(found)
    if smoke:  # --smoke: sent by the node whose log says ready, to its host
        session.smoke.want(spec.host, smoke_timeout)
    return session


def ray_cluster(log: str, host: str | None, make_session: Callable[..., WatchSession], *, gpus: str = "none",
                from_end: bool = False) -> ClusterSession:
    """vLLM served over Ray: the head's one log holds every node's lines. The head (its own lines,
    and its local actors') serves; each worker node (its actors' lines, which Ray leads with
    ``ip=``) is a node of its own, added with its first line, so the barrier and the verdict see
    each. ``make_session(spec, log=…, writers=…)`` makes a node's session (``default_session``)."""
    from tui.sources.factory import log_tailer
    from tui.sources.ray import RaySplit

    def on_node(ip: str) -> None:
        cluster.add_node(NodeSpec(ip, log, host, "none", role=core.WORKER))

    split = RaySplit(log_tailer(log, host=host, from_end=from_end, writers=True), on_node)

    def node_session(spec: NodeSpec) -> WatchSession:
        if spec.role == core.SERVING:  # the head reads the log: its writers are the driver's processes
            return make_session(spec, log=split.head(), writers=True)
        return make_session(spec, log=split.feed(spec.name), writers=False)

    cluster = ClusterSession([NodeSpec("head", log, host, gpus, role=core.SERVING)], make_session=node_session)
    cluster.workers_join_serving = True  # vLLM's engine serves only once every actor is set up
    return cluster
