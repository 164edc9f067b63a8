"""Plain text for one startup across several nodes (``watch --plain`` with several nodes or a
Slurm job): one line per event, each led by its node; a line when every rank of every node has
passed a milestone; the barrier view (who is not there yet) with the verdict or the timeout."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any, assert_never

from tui.core.cluster import BarrierRow
from tui.core.events import (
    CacheGrowth,
    DiskBusy,
    CheckpointFound,
    ConnectionState,
    ErrorFound,
    GpuSample,
    GpuUnavailable,
    HealthStatus,
    LogChunk,
    LogGap,
    LogMoved,
    LogRestart,
    LogTruncated,
    LogWaiting,
    NewStartup,
    NoWriter,
    PhaseEnded,
    PhaseProgress,
    PhaseStarted,
    ProcessExited,
    ProcessStarted,
    ProcessStopping,
    ReadCounters,
    Ready,
    ServerDetected,
    SlurmJobState,
    SlurmTaskEnded,
    SmokeAnswered,
    Stopped,
    WarningFound,
    WriterGone,
    WritersFound,
)
from tui.core.lines import Line
from tui.core.lines import clean
from tui.core.verdict import (
    DEAD, EXIT_FAILED, EXIT_READY, EXIT_STARTING, EXIT_USAGE, FAILED, READY, STALLED, STARTING, STOPPED,
)
from tui.core.wording import clock, duration
from tui.present.event_words import EventWords, hint_said
from tui.present.records import JsonLines, Said
from tui.session import SessionEvent
from tui.session.judging import NoteFound

#: After the first failure, this long for the root cause to follow before the verdict.
FAIL_SETTLE_S = 0.5


def barrier_lines(rows: list[BarrierRow], limit: int = 4) -> list[str]:
    """The barrier view as text: per milestone not everyone reached, who is missing, laggard first."""
    out = []
    said: tuple[str, ...] = ()
    for row in rows:
        if row.done:
            continue
        labels = tuple(lag.label for lag in row.missing)
        if labels == said:  # the same ranks as the row above: not the same long list again
            out.append(f"{row.words}: {row.reached}/{row.total} ranks; not yet: the same {len(labels)}")
            continue
        said = labels
        who, suspected = [], set()
        for lag in row.missing[:limit]:
            quiet = f", quiet {clock(lag.quiet_for)}" if lag.quiet_for is not None else ""
            line = f" line {lag.last_line}" if lag.last_line else ""
            text = f": {lag.last_text[:80]}" if lag.last_text else ""
            why = f" [suspect: {lag.suspect}]" if lag.suspect and lag.node not in suspected else ""  # once a node
            if lag.suspect:
                suspected.add(lag.node)
            who.append(f"{lag.label} ({line.strip() or 'no line'}{quiet}{text}){why}")
        more = f", +{len(row.missing) - limit} more" if len(row.missing) > limit else ""
        out.append(f"{row.words}: {row.reached}/{row.total} ranks; not yet: {'; '.join(who)}{more}")
    return out


class PlainCluster:
    """One line per event, each led by its node; the barrier view when it decides or times out."""

    def __init__(self, session, *, timeout: float | None = None, title: str = "", json: bool = False) -> None:
        self.session = session
        self.timeout = timeout
        self.title = title
        self.started = time.monotonic()
        self.done_milestones: set[str] = set()
        self.last_job: str | None = None
        self.failed_at: float | None = None
        self.stalled: str | None = None  # the node the last "stalled?" line named
        self.said_reading: set[str] = set()  # nodes whose final log is being read to its end, said once
        self.words: dict[str, EventWords] = {}  # each node's events in the one wording, led by its node
        self.seen: dict[str, set[int]] = {}  # each node's writer processes already named
        self.queues: dict = {}  # node -> its events, none lost (ClusterSession.listen)
        self.json = JsonLines(started=self.started) if json else None  # --json: the records, not the words

    def say(self, text: str, node: str | None = None) -> None:
        minutes, secs = divmod(time.monotonic() - self.started, 60)
        where = f"[{node}] " if node else ""
        stamp = f"{time.strftime('%H:%M:%S')}  +{int(minutes):02d}:{secs:04.1f}"
        for i, line in enumerate(text.split("\n")):  # \n only (a hint's link): clean() shows the rest
            line = clean(f"{where}{line}")  # names and log text alike: no escape sequence reaches the terminal
            print(f"{stamp}  {line}" if i == 0 else f"{' ' * len(stamp)}  {line}")

    def emit(self, said: Said, node: str | None = None) -> None:
        """One record: its words led by its node (plain), or a JSON line with a ``node`` field."""
        if self.json is not None:
            self.json.write(said, node)
        elif said.text:
            self.say(said.indent + said.text, node)

    def verdict(self, verdict, text: str | None = None, node: str | None = None, kind: str | None = None,
                **more) -> None:
        """A verdict change (the whole startup's, or ``node``'s) as a record."""
        self.emit(Said("verdict", verdict.text if text is None else text, fields={
            "verdict": kind or str(verdict.kind), "detail": verdict.detail,
            "node": verdict.node if node is None else node, "final": verdict.final, **more}), node)

    async def run(self) -> int:
        status = await self.follow()
        self.emit(Said("exit", fields={"exit": status, "verdict": str(self.session.verdict().kind)}))
        sys.stdout.flush()
        return status

    async def follow(self) -> int:
        session = self.session
        refused: list[tuple[str, Any]] = []

        self.queues = session.listen()

        def on_update(node, update) -> None:
            if node is None:  # the job's own events (the nodes' come through their queues, none lost)
                for event in update.events:
                    self.word(node, event)
            self.drain()
            if node is not None and session.nodes[node].connection is not None:
                conn = session.nodes[node].connection
                if conn.state == "refused":
                    refused.append((node, conn))

        session.subscribe(on_update)
        self.emit(Said("start", self.title or "watching " + ", ".join(
            f"{s.name} ({s.host + ':' if s.host else ''}{s.log})" for s in session.specs.values()), fields={
                "nodes": [{"node": s.name, "host": s.host, "log": s.log} for s in session.specs.values()]}))
        session.start()
        deadline = None if self.timeout is None else self.started + self.timeout
        try:
            while True:
                wait = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
                session.changed.clear()
                try:
                    async with asyncio.timeout(wait):
                        await session.changed.wait()
                except TimeoutError:
                    pass
                if refused:
                    node, conn = refused[0]
                    self.emit(Said("connection", f"{conn.host}: connection refused: {conn.detail}", fields={
                        "host": conn.host, "state": conn.state, "detail": conn.detail}), node)
                    return EXIT_USAGE
                self.barrier_news()
                status = self.check(deadline)
                sys.stdout.flush()
                if status is not None:
                    return status
        finally:
            sys.stdout.flush()
            await session.stop()

    def word(self, node: str | None, event: SessionEvent) -> None:
        """The job's events here; a node's in the words `watch --plain` uses for one node, led by the node."""
        match event:
            case SlurmJobState():
                words = self.session.job_words()
                if words != self.last_job:
                    self.last_job = words
                    self.emit(Said("slurm_job", words, fields={
                        "job": event.job_id, "state": event.state, "reason": event.reason, "nodes": list(event.nodes),
                        "exit_code": event.exit_code, "ahead": event.ahead}))
            case ConnectionState() if node is None:
                self.emit(Said("connection", f"slurm: {event.state}" + (f": {event.detail}" if event.detail else ""),
                               fields={"host": "slurm", "state": event.state, "detail": event.detail}))
            case _ if node is None:
                pass  # the job's source says nothing else
            case WritersFound() | WriterGone() | NoWriter():
                self.node_words(node).process(event, self.seen.setdefault(node, set()))
            case SmokeAnswered():  # --smoke: the serving node's answer
                self.node_words(node).smoke(event)
            case Ready() if self.session.nodes[node].smoke_wanted:
                health = self.session.nodes[node].health
                self.node_words(node).ready_marker(event, health.url if health is not None else None)
            case (ServerDetected() | PhaseStarted() | PhaseEnded() | PhaseProgress() | ErrorFound() | WarningFound()
                  | Ready() | Stopped() | NewStartup() | NoteFound()):
                self.node_words(node).show(event)
            case (Line() | LogChunk() | LogGap() | LogRestart() | LogTruncated() | LogWaiting() | LogMoved()
                  | ConnectionState() | ReadCounters() | CheckpointFound() | GpuSample() | GpuUnavailable()
                  | ProcessStarted() | ProcessExited() | ProcessStopping() | HealthStatus() | CacheGrowth() | DiskBusy() | SlurmTaskEnded()):
                pass  # a node's connection, log and process notices: its row in the barrier view says them
            case _:
                assert_never(event)

    def drain(self) -> None:
        """Say every node's events so far, in each node's order."""
        for name, queue in self.queues.items():
            while not queue.empty():
                self.word(name, queue.get_nowait())

    def node_words(self, node: str) -> EventWords:
        words = self.words.get(node)
        if words is None:
            words = self.words[node] = EventWords(lambda said: self.emit(said, node),
                                                  lambda: self.session.nodes[node].state,
                                                  count=lambda: self.session.nodes[node].count_estimate())
        return words

    def barrier_news(self) -> None:
        """A milestone every rank of every node has now reached."""
        if not self.session.nodes:
            return
        for row in self.session.barrier():
            if row.done and row.milestone not in self.done_milestones and row.milestone != "ready":
                self.done_milestones.add(row.milestone)
                self.emit(Said("barrier", f"barrier: {row.words} on all {row.total} ranks of {len(self.session.nodes)} nodes",
                               fields={"milestone": row.milestone, "ranks": row.total, "nodes": len(self.session.nodes)}))

    def node_verdicts(self) -> None:
        for name in self.session.nodes:
            self.verdict(self.session.node_verdict(name), node=name, final=True)

    def barrier_report(self) -> None:
        """Who is not there yet, per milestone, with the verdict or the timeout."""
        rows = self.session.barrier()
        if self.json is not None:
            for row in rows:
                if not row.done:
                    self.emit(Said("barrier_missing", fields={
                        "milestone": row.milestone, "reached": row.reached, "ranks": row.total,
                        "missing": [{"rank": lag.label, "last_line": lag.last_line, "quiet_for": lag.quiet_for,
                                     "suspect": lag.suspect} for lag in row.missing]}))
            return
        for line in barrier_lines(rows):
            self.say(line)

    def profile(self) -> None:
        """After READY: where the time went, each phase's slowest node and rank (one ``profile`` record)."""
        from tui.core.cluster import SERVING, roles
        from tui.present.startup import nodes_profile

        statuses = self.session.statuses()
        serving = next((name for name, role in roles(statuses).items() if role == SERVING), None)
        states = {name: session.state for name, session in self.session.nodes.items()}
        found = nodes_profile(states, serving) if serving is not None else None
        if found is None:
            return
        lines, fields = found
        if self.json is not None:
            self.emit(Said("profile", "\n".join(lines), fields=fields))
            return
        for line in lines:
            self.say(f"  {line}")

    def check(self, deadline: float | None) -> int | None:
        verdict = self.session.verdict()
        if verdict.final or (deadline is not None and time.monotonic() >= deadline):
            self.session.flush()  # the nodes' last events before the verdict
            self.drain()
        now = time.monotonic()
        if verdict.kind == STALLED and verdict.node != self.stalled:  # said once per silent node, not every second
            self.verdict(verdict)
        self.stalled = verdict.node if verdict.kind == STALLED else None
        reading = self.session.nodes[verdict.node].reading_rest if verdict.node in self.session.nodes else None
        if verdict.kind == STARTING and reading and verdict.node not in self.said_reading:  # its task ended
            self.said_reading.add(verdict.node)
            self.emit(Said("reading_rest", verdict.detail, fields={"bytes": reading}), verdict.node)
        if verdict.kind in (READY, STOPPED):
            self.verdict(verdict)
            if verdict.kind == READY:
                self.profile()
            return EXIT_READY
        if verdict.kind in (FAILED, DEAD):
            if self.failed_at is None:
                self.failed_at = now
            if now - self.failed_at >= FAIL_SETTLE_S:
                change = self.session.judging.evaluate()  # the root cause may have arrived meanwhile
                self.verdict(change.verdict)
                for hint in change.hints:  # the failing node's, as the judging stage diagnosed them
                    self.emit(hint_said(hint), change.verdict.node)
                self.node_verdicts()
                self.barrier_report()
                return EXIT_FAILED
            return None
        if deadline is not None and now >= deadline:
            self.verdict(verdict, f"TIMEOUT after {duration(self.timeout)}: {verdict.text}", kind="timeout", final=True)
            self.node_verdicts()
            self.barrier_report()
            return EXIT_STARTING
        return None
