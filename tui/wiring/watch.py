"""`watch LOG`: the dashboard or the plain lines over one log, and the ``--server`` profile every front end loads."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from tui.core.errors import UsageError
from tui.core.options import MetricsOptions, WatchOptions
from tui.session import SessionInfo, WatchSession

if TYPE_CHECKING:
    from tui.history.watched import WatchedStartups


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


def log_session(options: WatchOptions, *, live: bool = True, scrollback: int = 100_000) -> WatchSession:
    """The session of `watch LOG`: its tailer (local, or over SSH with ``--host``), GPUs, ``--health``
    and ``--smoke``; ``live``: the server behind the log is looked for (not a replay's: its writer is
    the replay itself). ``scrollback``: lines kept (the plain lines keep a few, the dashboard many)."""
    from tui.sources.factory import log_tailer, make_gpu_source, writer_source

    session = WatchSession(
        log=log_tailer(options.log, host=options.host, from_end=options.from_end, writers=True),
        gpu=make_gpu_source(options.gpus.kind, options.host, options.gpus.interval),  # loading or stalled?
        profile=load_profile(options.server),
        info=SessionInfo(server=options.server, host=options.host or "localhost", log_path=str(options.log)),
        stall_limits=options.stall_limits,
        scrollback=scrollback,
    )
    if live and (writers := writer_source(options.log, host=options.host)) is not None:
        session.add_source(writers)  # the server behind the log (tui.core.events.WritersFound …)
    if options.health:
        session.probe_health(options.health, options.host)
    if options.smoke:
        session.want_smoke(options.host)
    return session


def remembered(session: WatchSession) -> WatchedStartups:
    """The phase times of this server, model and TP size (``WatchedStartups``), kept as the session's
    state changes: the stall limits of the next watch. Its writes finish when the session stops."""
    from tui.history.watched import WatchedStartups

    memory = WatchedStartups()
    session.expected = memory.longest
    session.subscribe(lambda update: memory.update(session.state) if "state" in update.topics else None)
    session.close_with(memory.close)
    return memory


def watch_dashboard(options: WatchOptions) -> int:
    """`watchtower watch LOG` in the dashboard; returns 0 ready, 1 failed, 3 still starting."""
    from tui.app.dashboard import build_app

    session = log_session(options)
    remembered(session)
    gpus_enabled = (options.gpus.kind or "auto").lower() != "none"  # --gpus none: no GPU panel
    session.timeout = options.timeout  # --timeout: the session keeps its own deadline
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
    from tui.present.plain import PlainPresenter

    session = log_session(options, scrollback=10)
    presenter = PlainPresenter(ClusterSession.of_one(session), json=json, timeout=options.timeout, echo=options.echo)

    async def served() -> int:
        remembered(session)
        async with serving_metrics(options.metrics, one_log(session), watch_labels(options)):
            return await presenter.run()

    try:
        return asyncio.run(served())
    except KeyboardInterrupt:
        presenter.interrupted()  # the verdict so far, as a last line: Ctrl-C is how many watches end
        return 130
