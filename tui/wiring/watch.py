"""`watch LOG`: the dashboard or the plain lines over one log, and the ``--server`` profile every front end loads."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from tui.core.errors import Terminated, UsageError, interruption
from tui.core.options import MetricsOptions, WatchOptions
from tui.session import SessionInfo, WatchSession

if TYPE_CHECKING:
    from tui.history.watched import WatchedStartups

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # a scheduler's stop, a terminal gone: each ends a run as Ctrl-C does
ENDING_WORDS = tuple(signum.name for signum in ENDING_SIGNALS)


def load_profile(server: str | None) -> Any:
    """``--server NAME|PATH`` as the tracker's profile; None lets the tracker auto-detect."""
    if not server:
        return None
    from tui.core.profiles import ProfileError, load_profile as load

    try:
        return load(server)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None


def serving_metrics(metrics: MetricsOptions, watched: Any, labels: dict[str, str]) -> AbstractAsyncContextManager[None]:
    """``--metrics HOST:PORT`` / ``--metrics-textfile PATH``: the ``watched`` startup
    (``tui.present.metrics.one_log`` or ``node_set``) exported while the block runs."""
    from tui.present.metrics import exporting

    return exporting(metrics.address, metrics.textfile, watched, labels, metrics.linger)


# ---------------------------------------------------------------- watch


def stoppable(main: Coroutine[Any, Any, int]) -> int:
    """``asyncio.run(main)``, which SIGTERM and SIGHUP end as Ctrl-C does: the main task is cancelled
    (what it says on its way out — the verdict so far, what keeps running — it says), then
    :class:`Terminated` (a KeyboardInterrupt) is raised for the caller's Ctrl-C ending, with the
    signal's exit status (128 + the signal)."""

    async def guarded() -> int:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        received: list[signal.Signals] = []

        def on_signal(signum: signal.Signals) -> None:
            received.append(signum)
            task.cancel(signum.name)  # (what is cancelled can say what ended it: ``ended_by``)

        for signum in ENDING_SIGNALS:
            loop.add_signal_handler(signum, on_signal, signum)
        try:
            return await main
        except asyncio.CancelledError:
            if received:
                raise Terminated(received[0].name, 128 + received[0]) from None
            raise
        finally:
            for signum in ENDING_SIGNALS:
                loop.remove_signal_handler(signum)

    return asyncio.run(guarded())


def ended_by(cancelled: asyncio.CancelledError) -> str:
    """What cancelled the main task, in words: SIGTERM or SIGHUP (``stoppable``), else Ctrl-C."""
    return next((word for word in ENDING_WORDS if word in cancelled.args), "Ctrl-C")


def ending_status(cancelled: asyncio.CancelledError) -> int:
    """The exit status the process ends with when ``cancelled``: 128 + the signal (Ctrl-C's 130)."""
    word = ended_by(cancelled)
    return 130 if word == "Ctrl-C" else 128 + signal.Signals[word]


def log_session(options: WatchOptions, *, live: bool = True, scrollback: int = 100_000,
                timeout: float | None = None) -> WatchSession:
    """The session of `watch LOG`: its tailer (local, or over SSH with ``--host``), GPUs, ``--health``
    and ``--smoke``; ``live``: the server behind the log is looked for (not a replay's: its writer is
    the replay itself). ``scrollback``: lines kept (the plain lines keep a few, the dashboard many).
    ``timeout``: a deadline the session keeps itself (the dashboard's; plain output's ending keeps its own)."""
    from tui.sources.factory import log_tailer, make_gpu_source, writer_source

    session = WatchSession(
        log=log_tailer(options.log, host=options.host, from_end=options.from_end, writers=True),
        gpu=make_gpu_source(options.gpus.kind, options.host, options.gpus.interval),  # loading or stalled?
        profile=load_profile(options.server),
        info=SessionInfo(server=options.server, host=options.host or "localhost", log_path=str(options.log)),
        stall_limits=options.stall_limits,
        timeout=timeout,
        scrollback=scrollback,
    )
    if live and (writers := writer_source(options.log, host=options.host)) is not None:
        session.add_source(writers)  # the server behind the log (tui.core.events.WritersFound …)
    if options.health:
        session.probe_health(options.health, options.host)
    if options.smoke:
        session.smoke.want(options.host, options.smoke_timeout)
    return session


def remembered(session: WatchSession) -> WatchedStartups:
    """The phase times of this server, model and TP size (``WatchedStartups``), kept as the session's
    state changes: the stall limits of the next watch. Its writes finish when the session stops."""
    from tui.history.watched import WatchedStartups

    memory = WatchedStartups()
    session.limits.expect(memory.longest)
    session.subscribe(lambda update: memory.update(session.state) if "state" in update.topics else None)
    session.close_with(memory.close)
    return memory


def watch_dashboard(options: WatchOptions) -> int:
    """`watchtower watch LOG` in the dashboard; returns 0 ready, 1 failed, 3 still starting."""
    from tui.app.dashboard import build_app

    session = log_session(options, timeout=options.timeout)  # --timeout: the session keeps its own deadline
    remembered(session)
    gpus_enabled = (options.gpus.kind or "auto").lower() != "none"  # --gpus none: no GPU panel
    app = build_app(session, theme=options.theme, gpus_enabled=gpus_enabled)
    if not options.metrics:
        return int(app.run() or 0)

    async def served() -> int:
        from tui.present.metrics import one_log

        async with serving_metrics(options.metrics, one_log(session), watch_labels(options)):
            return int(await app.run_async() or 0)

    return asyncio.run(served())


def watch_labels(options: WatchOptions) -> dict[str, str]:
    """The metrics' labels of a watch of one log: the log and its host."""
    return {"log": str(options.log), "host": options.host or "localhost"}


def watch_plain(options: WatchOptions, *, json: bool = False) -> int:
    """`watchtower watch LOG --plain`: one line per event (``--json``: one JSON object); the verdict's exit status."""
    from tui.cluster import ClusterSession
    from tui.present.metrics import one_log
    from tui.present.plain import LogPresenter

    session = log_session(options, scrollback=10)
    presenter = LogPresenter(ClusterSession.of_one(session), json=json, timeout=options.timeout, echo=options.echo)

    async def served() -> int:
        remembered(session)
        async with serving_metrics(options.metrics, one_log(session), watch_labels(options)):
            return await presenter.run()

    try:
        return stoppable(served())
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM: the verdict so far, as a last line
        return presenter.interrupted(*interruption(exc))
