"""`--metrics HOST:PORT`: the startup as Prometheus metrics, served by ``prometheus_client``
while Watchtower watches or runs (``watch``, ``run``, ``attach``, any output).

Read at scrape time, never pushed: each scrape asks the event loop that owns the session for
a snapshot (the session is the loop's alone; the HTTP server has a thread of its own), so the
numbers are exactly what the dashboard or ``--plain`` would say at that moment.

    watchtower_phase_seconds{phase}             a finished phase's duration (log time)
    watchtower_phase_rank_seconds{phase,rank}   each rank's part of it
    watchtower_phase_progress{phase}            the running phase's progress, 0–1 (when a bar says)
    watchtower_phase{watchtower_phase=…}        the current phase, as a state set
    watchtower_verdict{watchtower_verdict=…}    starting, loading, stalled?, ready, failed, dead …
    watchtower_errors{kind}                     fatal errors so far, by kind
    watchtower_attempt                          the attempt (a launch's vN, else the startup's number in the log)
    watchtower_ready_seconds                    log time from the first line to ready, once ready
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from tui.core.state import PHASES
from tui.core.verdict import VerdictKind

SNAPSHOT_WAIT_S = 2.0


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9400`` for IPv6; ``:9400`` is every address) as (host, port); ValueError."""
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--metrics {text!r}: expected HOST:PORT, e.g. 127.0.0.1:9400")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


def snapshot(session: Any, attempt: Callable[[], int | None] | None = None) -> dict[str, Any]:
    """What the metrics say, read from ``session`` (on the loop's thread)."""
    state = session.state
    verdict = session.verdict()
    current = state.current_phase
    summary = state.summary()
    return {
        "phases": [(p.name, p.seconds, [(r.rank, r.seconds) for r in p.ranks.values() if r.seconds is not None])
                   for p in state.phases if p.done],
        "current": None if current is None else current.name,
        "progress": None if current is None else (current.name, current.progress),
        "verdict": str(verdict.kind),
        "errors": Counter(e.kind for e in state.errors if e.fatal),
        "attempt": (attempt() if attempt is not None else None) or state.attempt,
        "ready_seconds": summary.seconds if state.ready_line is not None else None,
    }


class StartupCollector:
    """A ``prometheus_client`` collector over one session, snapshot per scrape."""

    def __init__(self, session: Any, loop: asyncio.AbstractEventLoop, labels: dict[str, str],
                 attempt: Callable[[], int | None] | None = None) -> None:
        self.session = session
        self.loop = loop
        self.labels = labels
        self.attempt = attempt
        self.last: dict[str, Any] | None = None

    def take(self) -> dict[str, Any]:
        """A snapshot made on the loop's thread; the last one once the loop has stopped."""
        if threading.current_thread() is threading.main_thread() and not self.loop.is_running():
            self.last = snapshot(self.session, self.attempt)
            return self.last
        future: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()

        def make() -> None:
            try:
                future.set_result(snapshot(self.session, self.attempt))
            except Exception as exc:  # noqa: BLE001  (a scrape gets the error, the watch goes on)
                future.set_exception(exc)

        try:
            self.loop.call_soon_threadsafe(make)
            self.last = future.result(SNAPSHOT_WAIT_S)
        except (RuntimeError, concurrent.futures.TimeoutError):  # the loop is closed or busy: the last one
            if self.last is None:
                raise
        return self.last

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily, StateSetMetricFamily

        snap = self.take()
        keys, values = list(self.labels), list(self.labels.values())
        phase = GaugeMetricFamily("watchtower_phase_seconds", "A finished startup phase's duration (log time)",
                                  labels=[*keys, "phase"])
        rank = GaugeMetricFamily("watchtower_phase_rank_seconds", "Each rank's part of a finished phase",
                                 labels=[*keys, "phase", "rank"])
        for name, seconds, ranks in snap["phases"]:
            if seconds is not None:
                phase.add_metric([*values, name], seconds)
            for label, took in ranks:
                rank.add_metric([*values, name, label], took)
        yield phase
        yield rank
        progress = GaugeMetricFamily("watchtower_phase_progress", "The running phase's progress (0-1)",
                                     labels=[*keys, "phase"])
        if snap["progress"] is not None and snap["progress"][1] is not None:
            progress.add_metric([*values, snap["progress"][0]], snap["progress"][1])
        yield progress
        names = list(dict.fromkeys([*PHASES, *(p[0] for p in snap["phases"]),
                                    *([snap["current"]] if snap["current"] else [])]))
        current = StateSetMetricFamily("watchtower_phase", "The phase the startup is in", labels=keys)
        current.add_metric(values, {name: name == snap["current"] for name in names})
        yield current
        verdict = StateSetMetricFamily("watchtower_verdict", "The verdict (starting, ready, failed …)", labels=keys)
        verdict.add_metric(values, {str(kind): str(kind) == snap["verdict"] for kind in VerdictKind})
        yield verdict
        errors = GaugeMetricFamily("watchtower_errors", "Fatal errors in the log, by kind", labels=[*keys, "kind"])
        for kind, count in sorted(snap["errors"].items()):
            errors.add_metric([*values, kind], count)
        yield errors
        attempt = GaugeMetricFamily("watchtower_attempt", "The attempt number", labels=keys)
        attempt.add_metric(values, snap["attempt"])
        yield attempt
        ready = GaugeMetricFamily("watchtower_ready_seconds", "Log time from the first line to ready", labels=keys)
        if snap["ready_seconds"] is not None:
            ready.add_metric(values, snap["ready_seconds"])
        yield ready


class MetricsServer:
    """The HTTP endpoint: a registry of its own holding the collector (no process metrics mixed in)."""

    def __init__(self, address: str) -> None:
        self.host, self.port = parse_address(address)
        self.server: Any = None
        self.thread: Any = None

    def start(self, session: Any, labels: dict[str, str], attempt: Callable[[], int | None] | None = None) -> None:
        """Serve ``session``'s metrics; call on the loop that owns the session. OSError: the address is taken."""
        from prometheus_client import CollectorRegistry, start_http_server

        registry = CollectorRegistry(auto_describe=False)
        registry.register(StartupCollector(session, asyncio.get_running_loop(), labels, attempt))  # type: ignore[arg-type]
        self.server, self.thread = start_http_server(self.port, addr=self.host, registry=registry)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
