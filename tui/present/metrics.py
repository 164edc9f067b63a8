"""`--metrics HOST:PORT` and `--metrics-textfile PATH`: the startup as Prometheus metrics, served
by ``prometheus_client`` while Watchtower watches or runs (``watch``, ``run``, ``attach``; one log
or several nodes, a Slurm job; any output), or written for node_exporter's textfile collector.

Read at collection time, never pushed: each scrape (or textfile tick) asks the event loop that owns
the sessions for a snapshot (the sessions are the loop's alone; the HTTP server has a thread of its
own), so the numbers are exactly what the dashboard or ``--plain`` would say at that moment.

Per node (labelled ``node`` when several nodes or a Slurm job's tasks are watched):

    watchtower_phase_seconds{phase}             a finished phase's duration (log time)
    watchtower_phase_rank_seconds{phase,rank}   each rank's part of it
    watchtower_phase_progress_ratio{phase}      the running phase's progress, 0–1 (when a bar says)
    watchtower_phase{watchtower_phase=…}        the current phase, as a state set
    watchtower_errors{kind}                     fatal errors so far, by kind
    watchtower_ready_seconds                    log time from the first line to ready, once ready
    watchtower_weight_load_loaded_bytes         the running weight load: bytes loaded, where known
    watchtower_weight_load_total_bytes          … of how many (the checkpoint's share), where known
    watchtower_weight_load_remaining_seconds{bound}  … time left, a range (low, high), once the rate is stable
    watchtower_node_verdict{watchtower_node_verdict=…}   each node's own verdict (several nodes)

The weight-load series say where the bytes came from (``signal``: read, gpu, log) and
``simulated="true"`` when a simulated GPU source made them; each is absent, never 0, when unknown.

Of the attempt:

    watchtower_verdict{watchtower_verdict=…}    starting, loading, stalled?, ready, failed, dead …
    watchtower_attempt                          the attempt (a launch's vN, else the startup's number in the log)
    watchtower_build_info{version,profile}      1: Watchtower's version and the server profile read (unknown: "")

Units end the names (``_seconds``, ``_bytes``, ``_ratio``); ``promtool check metrics`` finds nothing.

A run that ends (``--plain``/``--json`` exit about half a second after READY) keeps serving until
a scrape has read its final state, at most ``--metrics-linger`` seconds (a scraper at any usual
interval would otherwise never see the verdict); the textfile is written last, after that.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tui.core.errors import UsageError
from tui.core.options import LINGER_S
from tui.core.state import PHASES
from tui.core.verdict import Verdict, VerdictKind
from tui.cluster import ClusterSession
from tui.session import WatchSession

SNAPSHOT_WAIT_S = 2.0
#: Seconds between two writes of ``--metrics-textfile`` (node_exporter reads it at its own scrapes).
TEXTFILE_EVERY_S = 2.0


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9400`` for IPv6; ``:9400`` is every address) as (host, port); ValueError."""
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--metrics {text!r}: expected HOST:PORT, e.g. 127.0.0.1:9400")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


@dataclass(frozen=True, slots=True)
class Watched:
    """What the metrics read, on the loop's thread: the sessions by node (``{None: session}`` for one
    log: no ``node`` label), the attempt's verdict, each node's own, and the attempt's number."""

    sessions: Callable[[], Mapping[str | None, WatchSession]]
    verdict: Callable[[], Verdict]
    attempt: Callable[[], int | None] = lambda: None
    node_verdict: Callable[[str], Verdict] | None = None  # several nodes: each one's own verdict

    @property
    def several(self) -> bool:
        return self.node_verdict is not None


def one_log(session: WatchSession, verdict: Callable[[], Verdict] | None = None,
            attempt: Callable[[], int | None] | None = None) -> Watched:
    """One log's startup (``watch LOG``, ``run``): ``verdict`` the launch's where it judges with its process."""
    return Watched(lambda: {None: session}, verdict or session.verdict, attempt or (lambda: None))


def node_set(cluster: Callable[[], ClusterSession | None], attempt: Callable[[], int | None] | None = None) -> Watched:
    """Several nodes or a Slurm job's tasks (``cluster()``: the ClusterSession of now; a relaunch
    makes another): each node's own metrics, labelled ``node``, and the attempt's verdict."""

    def sessions() -> Mapping[str | None, WatchSession]:
        now = cluster()
        return {name: node for name, node in now.nodes.items()} if now is not None else {}

    def verdict() -> Verdict:
        now = cluster()
        return now.verdict() if now is not None else Verdict(VerdictKind.STARTING, "not started yet")

    def node_verdict(name: str) -> Verdict:
        now = cluster()
        return now.node_verdict(name) if now is not None else Verdict(VerdictKind.STARTING, "not started yet")

    return Watched(sessions, verdict, attempt or (lambda: None), node_verdict)


def node_snapshot(session: WatchSession) -> dict[str, Any]:
    """One node's part of the metrics (on the loop's thread)."""
    state = session.state
    current = state.current_phase
    return {
        "phases": [(p.name, p.seconds, [(r.rank, r.seconds) for r in p.ranks.values() if r.seconds is not None])
                   for p in state.phases if p.done],
        "current": None if current is None else current.name,
        "progress": None if current is None else (current.name, current.progress),
        "errors": Counter(e.kind for e in state.errors if e.fatal),
        "ready_seconds": state.summary().seconds if state.ready_line is not None else None,
        "load": session.weight.estimate(),
        "attempt": state.attempt,
        "profile": None if session.tracker.profile is None else session.tracker.profile.name,
    }


def snapshot(watched: Watched) -> dict[str, Any]:
    """What the metrics say now (on the loop's thread)."""
    sessions = watched.sessions()
    nodes = {name: node_snapshot(session) for name, session in sessions.items()}
    node_verdict = watched.node_verdict
    return {
        "verdict": str(watched.verdict().kind),
        "node_verdicts": {name: str(node_verdict(name).kind) for name in nodes if name is not None}
        if node_verdict is not None else {},
        "attempt": watched.attempt() or max((n["attempt"] for n in nodes.values()), default=None),
        "nodes": nodes,
    }


class StartupCollector:
    """A ``prometheus_client`` collector over the watched startup, snapshot per collection."""

    def __init__(self, watched: Watched, loop: asyncio.AbstractEventLoop, labels: dict[str, str]) -> None:
        self.watched = watched
        self.loop = loop
        self.labels = labels
        self.last: dict[str, Any] | None = None
        #: set (on the loop's thread) once the watch has ended: a snapshot made after it is the final state
        self.ended = False
        #: per HTTP request's thread: the snapshot it collected (``snap``)
        self.request = threading.local()
        #: the last snapshot a scraper was sent (set on the loop's thread)
        self.served: dict[str, Any] | None = None

    def take(self) -> dict[str, Any]:
        """A snapshot made on the loop's thread; the last one once the loop has stopped."""
        if threading.current_thread() is threading.main_thread() and not self.loop.is_running():
            self.last = snapshot(self.watched)
            return self.last
        future: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()

        def make() -> None:
            try:
                future.set_result({**snapshot(self.watched), "final": self.ended})
            except Exception as exc:  # noqa: BLE001  (a scrape gets the error, the watch goes on)
                future.set_exception(exc)

        try:
            self.loop.call_soon_threadsafe(make)
            self.last = future.result(SNAPSHOT_WAIT_S)
            self.request.snap = self.last
        except (RuntimeError, concurrent.futures.TimeoutError):  # the loop is closed or busy: the last one
            if self.last is None:
                raise
        return self.last

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily, StateSetMetricFamily

        snap = self.take()
        keys, values = list(self.labels), list(self.labels.values())
        node_keys = [*keys, "node"] if self.watched.several else keys

        def gauge(name: str, words: str, *extra: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, words, labels=[*node_keys, *extra])

        phase = gauge("watchtower_phase_seconds", "A finished startup phase's duration (log time)", "phase")
        rank = gauge("watchtower_phase_rank_seconds", "Each rank's part of a finished phase", "phase", "rank")
        progress = gauge("watchtower_phase_progress_ratio", "The running phase's progress (0-1)", "phase")
        current = StateSetMetricFamily("watchtower_phase", "The phase the startup is in", labels=node_keys)
        errors = gauge("watchtower_errors", "Fatal errors in the log, by kind", "kind")
        ready = gauge("watchtower_ready_seconds", "Log time from the first line to ready")
        loaded = gauge("watchtower_weight_load_loaded_bytes", "The running weight load's bytes loaded so far",
                       "signal", "simulated")
        total = gauge("watchtower_weight_load_total_bytes", "The bytes the running weight load has to load",
                      "signal", "simulated")
        left = gauge("watchtower_weight_load_remaining_seconds", "The running weight load's time left (a range)",
                     "signal", "simulated", "bound")
        for name, node in snap["nodes"].items():
            where = [*values, name] if self.watched.several else values
            for phase_name, seconds, ranks in node["phases"]:
                if seconds is not None:
                    phase.add_metric([*where, phase_name], seconds)
                for label, took in ranks:
                    rank.add_metric([*where, phase_name, label], took)
            if node["progress"] is not None and node["progress"][1] is not None:
                progress.add_metric([*where, node["progress"][0]], node["progress"][1])
            names = list(dict.fromkeys([*PHASES, *(p[0] for p in node["phases"]),
                                        *([node["current"]] if node["current"] else [])]))
            current.add_metric(where, {n: n == node["current"] for n in names})
            for kind, count in sorted(node["errors"].items()):
                errors.add_metric([*where, kind], count)
            if node["ready_seconds"] is not None:
                ready.add_metric(where, node["ready_seconds"])
            load = node["load"]
            if load is not None:
                how = [*where, load.signal, "true" if load.simulated else "false"]
                if load.loaded is not None:
                    loaded.add_metric(how, load.loaded)
                if load.total:
                    total.add_metric(how, load.total)
                if load.left is not None and load.moving:
                    left.add_metric([*how, "low"], load.left[0])
                    left.add_metric([*how, "high"], load.left[1])
        yield from (phase, rank, progress, current, errors, ready, loaded, total, left)
        if self.watched.several:
            node_verdict = StateSetMetricFamily("watchtower_node_verdict", "Each node's own verdict", labels=node_keys)
            for name, kind in snap["node_verdicts"].items():
                node_verdict.add_metric([*values, name], {str(k): str(k) == kind for k in VerdictKind})
            yield node_verdict
        verdict = StateSetMetricFamily("watchtower_verdict", "The attempt's verdict (starting, ready, failed …)",
                                       labels=keys)
        verdict.add_metric(values, {str(kind): str(kind) == snap["verdict"] for kind in VerdictKind})
        yield verdict
        attempt = GaugeMetricFamily("watchtower_attempt", "The attempt number", labels=keys)
        if snap["attempt"] is not None:
            attempt.add_metric(values, snap["attempt"])
        yield attempt
        from tui import __version__

        build = GaugeMetricFamily("watchtower_build_info", "Watchtower's version and the server profile it reads "
                                  "the log as (1)", labels=[*keys, "version", "profile"])
        profiles = sorted({n["profile"] for n in snap["nodes"].values() if n["profile"] is not None})
        build.add_metric([*values, __version__, ",".join(profiles)], 1)
        yield build


def telling_scrapes(app: Callable[..., Any], collector: StartupCollector,
                    scraped: Callable[[dict[str, Any]], object]) -> Callable[..., Any]:
    """The metrics' WSGI ``app``, calling ``scraped(snapshot)`` (from the request's thread) once a
    response has been written to its scraper (WSGI closes the body after the last byte)."""

    def app_telling(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        collector.request.snap = None
        body = app(environ, start_response)

        class Body(list):  # type: ignore[type-arg]
            def close(self) -> None:
                if collector.request.snap is not None:
                    scraped(collector.request.snap)

        return Body(body)

    return app_telling


def same_state(served: dict[str, Any] | None, now: dict[str, Any]) -> bool:
    """Whether a scraper was last sent what the startup says ``now`` (a snapshot, "final" aside)."""
    return served is not None and {k: v for k, v in served.items() if k != "final"} == now


async def linger(final_scraped: asyncio.Event, seconds: float) -> None:
    """Serve on until a scrape has read the final state, at most ``seconds`` (said on stderr)."""
    if seconds <= 0 or final_scraped.is_set():
        return
    import sys

    print(f"metrics: serving the final state until it is scraped (at most {seconds:g} s; --metrics-linger)",
          file=sys.stderr, flush=True)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await final_scraped.wait()


def textfile_said(watched: Watched, words: str) -> None:
    """A word about the metrics file, where it is seen: stderr (the plain lines' terminal; the
    dashboard captures it) and each watched node's log view."""
    print(f"watchtower: {words}", file=sys.stderr, flush=True)
    for session in watched.sessions().values():
        session.scrollback.mark(f"⚠ {words}")


@contextlib.asynccontextmanager
async def exporting(address: str | None, textfile: str | None, watched: Watched,
                    labels: dict[str, str], linger_s: float = LINGER_S) -> AsyncIterator[None]:
    """``--metrics HOST:PORT`` served and ``--metrics-textfile PATH`` written (each tick, and once
    more at the very end: the final verdict stays there) while the block runs; enter on the loop
    that owns the sessions. When the block ends, the endpoint is served on until a scrape has read
    the final state, at most ``linger_s`` seconds. UsageError: the address is taken, the file
    cannot be written."""
    if not address and not textfile:
        yield
        return
    from prometheus_client import CollectorRegistry, start_http_server, write_to_textfile

    loop = asyncio.get_running_loop()
    registry = CollectorRegistry(auto_describe=False)  # of its own: no process metrics mixed in
    collector = StartupCollector(watched, loop, labels)
    registry.register(collector)  # type: ignore[arg-type]
    final_scraped = asyncio.Event()

    def served(snap: dict[str, Any]) -> None:  # (on the loop's thread)
        collector.served = snap
        if snap.get("final"):
            final_scraped.set()
    server: Any = None
    writer: asyncio.Task[None] | None = None

    async def write() -> None:  # (the file written in a thread: the snapshot is still the loop's)
        # temp file + rename in the file's directory (prometheus_client): node_exporter never reads half
        await asyncio.to_thread(write_to_textfile, str(textfile), registry)

    async def tick() -> None:
        """Each tick's write; one that fails (its directory turned read-only, removed, a full disk)
        is said once — node_exporter would serve the last state as if it were now — and again when
        the file is written once more."""
        failing: str | None = None
        kept = time.strftime("%H:%M:%S")
        while True:
            await asyncio.sleep(TEXTFILE_EVERY_S)
            try:
                await write()
            except OSError as exc:
                why = exc.strerror or str(exc)
                if why != failing:
                    failing = why
                    textfile_said(watched, f"--metrics-textfile {textfile}: cannot write it ({why}): it holds the state"
                                           f" of {kept} until it can; trying again every {TEXTFILE_EVERY_S:g} s")
            else:
                kept = time.strftime("%H:%M:%S")
                if failing is not None:
                    failing = None
                    textfile_said(watched, f"--metrics-textfile {textfile}: written again")

    try:
        if address:
            host, port = parse_address(address)
            try:
                server, _thread = start_http_server(port, addr=host, registry=registry)
            except OSError as exc:
                raise UsageError(f"--metrics {address}: {exc.strerror or exc}") from None
            server.set_app(telling_scrapes(server.get_app(), collector,
                                           lambda snap: loop.call_soon_threadsafe(served, snap)))
        if textfile:
            try:
                await write()
            except OSError as exc:
                raise UsageError(f"--metrics-textfile {textfile}: {exc.strerror or exc}") from None
            writer = asyncio.create_task(tick())
        yield
        collector.ended = True  # the watch ended by itself: what a scrape reads now is its final state
        if server is not None:
            if same_state(collector.served, snapshot(watched)):  # (a dashboard left long after its verdict)
                final_scraped.set()
            await linger(final_scraped, linger_s)
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
        if writer is not None:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
            with contextlib.suppress(OSError):
                await write()
