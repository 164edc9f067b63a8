"""The several-node side of ``watch``: ``--host N:/log`` (repeated), ``--cluster FILE.toml`` and
``--slurm JOBID``, printed plainly (``--plain``) or shown in the cluster dashboard.

A cluster file names the nodes::

    [[node]]
    name = "n1"                  # shown in the node column; default: the host
    host = "user@10.0.0.1"       # [user@]host[:port] over SSH; absent: this machine
    log = "/var/log/sglang.log"
    gpus = "auto"                # as --gpus (default: the command's --gpus)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
import tomllib
from pathlib import Path

from tui.commands import EXIT_FAILED, EXIT_READY, EXIT_STARTING, EXIT_USAGE, UsageError
from tui.core.cluster import BarrierRow
from tui.core.events import ConnectionState, ErrorFound, PhaseEnded, Ready, ServerDetected, SlurmJobState, Stopped
from tui.core.state import FAILED, PHASE_TITLES, READY, STARTING, STOPPED
from tui.core.wording import clock, duration

#: ``[user@]host[:port]:/path`` — the path starts with / ~ or . (a port is digits only).
_HOST_LOG = re.compile(r"^(?P<host>[^/]+?):(?P<path>[/~.].*)$")
#: After the first failure, this long for the root cause to follow before the verdict.
FAIL_SETTLE_S = 0.5


def wants_cluster(args: argparse.Namespace) -> bool:
    """Several nodes (or a Slurm job) rather than one log."""
    hosts = getattr(args, "hosts", None) or []
    return bool(getattr(args, "slurm", None) or getattr(args, "cluster", None) or len(hosts) > 1
                or any(_HOST_LOG.match(h) for h in hosts))


def node_specs(args: argparse.Namespace):
    """The nodes a watch names: ``--host N:/log`` each, or the ``--cluster`` file's."""
    from tui.cluster import NodeSpec

    gpus = getattr(args, "gpus", None) or "none"
    if args.cluster:
        return cluster_file(args.cluster, gpus)
    specs = []
    for value in args.hosts or []:
        match = _HOST_LOG.match(value)
        if match is None:
            if not args.log:
                raise UsageError(f"--host {value}: with several hosts, each is HOST:/path/to/log")
            host, path = value, args.log
        else:
            host, path = match.group("host"), match.group("path")
        local = host in ("localhost", "local")
        specs.append(NodeSpec(_node_name(host), path, None if local else host, gpus))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise UsageError(f"two nodes with one name: {', '.join(names)} (use a --cluster file to name them)")
    return specs


def cluster_file(path: str, gpus: str = "none"):
    from tui.cluster import NodeSpec

    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the cluster file: {getattr(exc, 'strerror', None) or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    nodes = data.get("node")
    if not isinstance(nodes, list) or not nodes:
        raise UsageError(f"{path}: no [[node]] tables")
    specs = []
    for index, node in enumerate(nodes, 1):
        unknown = set(node) - {"name", "host", "log", "gpus"}
        if unknown:
            raise UsageError(f"{path}: node {index}: unknown key {sorted(unknown)[0]!r} (name, host, log, gpus)")
        if not isinstance(node.get("log"), str) or not node["log"]:
            raise UsageError(f"{path}: node {index}: 'log' (the log's path) is required")
        host = node.get("host") or None
        specs.append(NodeSpec(str(node.get("name") or _node_name(host or "localhost")), node["log"], host,
                              str(node.get("gpus") or gpus)))
    if len({s.name for s in specs}) != len(specs):
        raise UsageError(f"{path}: two nodes with one name")
    return specs


def _node_name(host: str) -> str:
    """``user@n1.example:2222`` → ``n1.example``: the node column shows the machine."""
    return host.rsplit("@", 1)[-1].rsplit(":", 1)[0] if not host.startswith("[") else host


def make_cluster(args: argparse.Namespace, profile, *, max_rate: float = 15.0):
    """The ClusterSession a watch asks for (nodes named, or a Slurm job's tasks)."""
    from functools import partial

    from tui.cluster import ClusterSession, NodeSpec, default_session

    make = partial(default_session, profile=profile, from_end=args.from_end, gpu_interval=args.gpu_interval,
                   max_rate=max_rate)
    if args.slurm:
        from tui.sources.slurm import SlurmJobSource, missing_clients, task_logs

        missing = missing_clients()
        if missing:
            raise UsageError(f"--slurm needs the Slurm client commands ({', '.join(missing)} not found)")
        gpus = args.gpus or "none"

        async def outputs(job: SlurmJobState):
            return [NodeSpec(node, path, None, gpus) for node, path in await task_logs(job, args.task_output)]

        return ClusterSession(make_session=make, job=SlurmJobSource(args.slurm, interval=args.slurm_interval),
                              job_outputs=outputs)
    return ClusterSession(node_specs(args), make_session=make)


def run(args: argparse.Namespace, profile) -> int:
    if not args.plain:
        from tui.app.cluster import run_cluster_dashboard

        return run_cluster_dashboard(args, profile)
    try:
        return asyncio.run(PlainCluster(args, profile).run())
    except KeyboardInterrupt:
        return 130


def barrier_lines(rows: list[BarrierRow], limit: int = 4) -> list[str]:
    """The barrier view as text: per milestone not everyone reached, who is missing, laggard first."""
    out = []
    for row in rows:
        if row.done:
            continue
        who = []
        for lag in row.missing[:limit]:
            quiet = f", quiet {clock(lag.quiet_for)}" if lag.quiet_for is not None else ""
            line = f" line {lag.last_line}" if lag.last_line else ""
            text = f": {lag.last_text[:80]}" if lag.last_text else ""
            who.append(f"{lag.label} ({line.strip() or 'no line'}{quiet}{text})")
        more = f", +{len(row.missing) - limit} more" if len(row.missing) > limit else ""
        out.append(f"{row.words}: {row.reached}/{row.total} ranks; not yet: {'; '.join(who)}{more}")
    return out


class PlainCluster:
    """One line per event, each led by its node; the barrier view when it decides or times out."""

    def __init__(self, args: argparse.Namespace, profile) -> None:
        self.args = args
        self.profile = profile
        self.started = time.monotonic()
        self.done_milestones: set[str] = set()
        self.last_job: str | None = None
        self.failed_at: float | None = None

    def say(self, text: str, node: str | None = None) -> None:
        minutes, secs = divmod(time.monotonic() - self.started, 60)
        where = f"[{node}] " if node else ""
        print(f"{time.strftime('%H:%M:%S')}  +{int(minutes):02d}:{secs:04.1f}  {where}{text}")

    async def run(self) -> int:
        session = make_cluster(self.args, self.profile)
        self.session = session
        refused: list[str] = []

        def on_update(node, update) -> None:
            for event in update.events:
                self.word(node, event)
            if node is not None and session.nodes[node].connection is not None:
                conn = session.nodes[node].connection
                if conn.state == "refused":
                    refused.append(f"{conn.host}: connection refused: {conn.detail}")

        session.subscribe(on_update)
        if self.args.slurm:
            self.say(f"watching Slurm job {self.args.slurm}")
        else:
            self.say("watching " + ", ".join(f"{s.name} ({s.host + ':' if s.host else ''}{s.log})"
                                             for s in session.specs.values()))
        session.start()
        deadline = None if self.args.timeout is None else self.started + self.args.timeout
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
                    self.say(refused[0])
                    return EXIT_USAGE
                self.barrier_news()
                status = self.check(deadline)
                sys.stdout.flush()
                if status is not None:
                    return status
        finally:
            sys.stdout.flush()
            await session.stop()

    def word(self, node: str | None, event) -> None:
        if isinstance(event, SlurmJobState):
            words = self.session.job_words()
            if words != self.last_job:
                self.last_job = words
                self.say(words)
        elif isinstance(event, ConnectionState):
            self.say(f"slurm: {event.state}" + (f": {event.detail}" if event.detail else ""))
        elif isinstance(event, ServerDetected):
            self.say(f"server: {event.server}", node)
        elif isinstance(event, PhaseEnded):
            slowest = f", slowest {event.slowest_rank}" if event.slowest_rank and event.ranks > 1 else ""
            self.say(f"{PHASE_TITLES.get(event.phase, event.phase)} done in {duration(event.seconds)}{slowest}", node)
        elif isinstance(event, Ready):
            self.say(f"ready (line {event.line})", node)
        elif isinstance(event, Stopped):
            self.say(f"stopped (line {event.line}): {event.text}", node)
        elif isinstance(event, ErrorFound) and event.error.fatal and not event.error.secondary:
            error = event.error
            rank = f" [{error.rank}]" if error.rank else ""
            self.say(f"error: line {error.line}{rank}: {error.title}", node)

    def barrier_news(self) -> None:
        """A milestone every rank of every node has now reached."""
        if not self.session.nodes:
            return
        for row in self.session.barrier():
            if row.done and row.milestone not in self.done_milestones and row.milestone != "ready":
                self.done_milestones.add(row.milestone)
                self.say(f"barrier: {row.words} on all {row.total} ranks of {len(self.session.nodes)} nodes")

    def check(self, deadline: float | None) -> int | None:
        verdict = self.session.verdict()
        if verdict.outcome != STARTING or (deadline is not None and time.monotonic() >= deadline):
            self.session.flush()  # the nodes' last events before the verdict
        now = time.monotonic()
        if verdict.outcome in (READY, STOPPED):
            self.say(verdict.words)
            return EXIT_READY
        if verdict.outcome == FAILED:
            if self.failed_at is None:
                self.failed_at = now
            if now - self.failed_at >= FAIL_SETTLE_S:
                verdict = self.session.verdict()  # the root cause may have arrived meanwhile
                self.say(verdict.words)
                for line in barrier_lines(self.session.barrier()):
                    self.say(line)
                return EXIT_FAILED
            return None
        if deadline is not None and now >= deadline:
            self.say(f"TIMEOUT after {duration(self.args.timeout)}: {verdict.words}")
            for line in barrier_lines(self.session.barrier()):
                self.say(line)
            return EXIT_STARTING
        return None
