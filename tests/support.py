"""What every kind of test needs, written once: wait for a condition (``until``), run the real CLI
(``run_cli``, ``start_cli``), read the dashboard's screen as text (``screen_text``), wait for a
launch's verdict (``launch_verdict``); and in-memory stand-ins for a source and a runner
(``MemorySource``, ``MemoryRunner``) for fast tests of the logic above them."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tui.core.events import LogChunk
from tui.launch.runner import AttemptRun, Emit, ProcessRef, Runner
from tui.launch.spec import LaunchError

REPO = Path(__file__).resolve().parent.parent
T = TypeVar("T")

# ---------------------------------------------------------------------------------------- waiting


def described(condition: Callable[[], object]) -> str:
    """The condition's own source text (a lambda's line), else its name: what was awaited."""
    try:
        text = " ".join(inspect.getsource(condition).split())
    except (OSError, TypeError):
        text = getattr(condition, "__qualname__", repr(condition))
    return text if len(text) <= 300 else text[:297] + "..."


async def until(
    condition: Callable[[], T],
    *,
    timeout: float = 20.0,
    what: str | None = None,
    seen: Callable[[], object] | None = None,
    pilot: Any = None,
    every: float = 0.02,
) -> T:
    """Until ``condition()`` is truthy; returns that value. Between looks the event loop runs (the
    app, the session, the sources): through ``pilot.pause`` for an app under ``App.run_test()``,
    whose screen is then up to date. On timeout it fails saying what was awaited (``what``, else
    the condition's source) and what was seen (``seen()``; for an app, its screen)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    if seen is None and pilot is not None:
        seen = lambda: screen_text(pilot.app)  # noqa: E731
    while True:
        value = condition()
        if value:
            return value
        if loop.time() >= deadline:
            saw = f"\nseen: {seen()}" if seen is not None else ""
            raise AssertionError(f"waited {timeout:g} s for: {what or described(condition)}{saw}")
        if pilot is not None:
            await pilot.pause(every)
        else:
            await asyncio.sleep(every)


def updates_of(nodes: Any) -> asyncio.Event:
    """An event set at each update of a node set (``ClusterSession.subscribe``): what a test that
    waits for the nodes to change waits on (clear it, then wait)."""
    changed = asyncio.Event()
    nodes.subscribe(lambda _node, _update: changed.set())
    return changed


async def launch_verdict(launch: Any, predicate: Callable[[Any], object], *, timeout: float = 20.0,
                         judge: bool = True) -> Any:
    """A launch's verdict once it satisfies ``predicate``: judged afresh at each look (``judge``), or
    as the launch itself last judged it (judging here can run ahead of an exit's way through the
    session: the process is known dead before the log's last words are read)."""

    def found() -> Any:
        verdict = launch.evaluate() if judge else launch.verdict_now
        return verdict if verdict is not None and predicate(verdict) else None

    return await until(found, timeout=timeout, what=f"a verdict with {described(predicate)}",
                       seen=lambda: launch.verdict_now)


# ---------------------------------------------------------------------------------------- the CLI


def cli_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """This process's environment with ``env`` on top (what the CLI in a test sees)."""
    return {**os.environ, **(env or {})}


def run_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | str = REPO,
    timeout: float = 60,
    prefix: Sequence[str] = (),
    input: str | bytes | None = None,  # noqa: A002 - subprocess's own name for it
    **popen: Any,
) -> subprocess.CompletedProcess[Any]:
    """``python -m tui.cli ARGS`` as a real process (``prefix`` in front, e.g. to run it as another
    user), ``input`` on its stdin (else none: bytes in, bytes out), ``env`` on top of this process's
    environment; its exit status and output. One still running after ``timeout`` seconds is killed
    and fails the test with what it had printed."""
    argv = [*prefix, sys.executable, "-m", "tui.cli", *map(str, args)]
    stdin = subprocess.DEVNULL if input is None else subprocess.PIPE
    with subprocess.Popen(argv, cwd=cwd, env=cli_env(env), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=not isinstance(input, bytes), **popen) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"watchtower {' '.join(argv[len(prefix) + 3:])}: still running after {timeout:g} s\n"
                                 f"stdout: {out[-2000:]!r}\nstderr: {err[-2000:]!r}") from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


async def start_cli(*args: str, env: Mapping[str, str] | None = None,
                    cwd: Path | str = REPO) -> asyncio.subprocess.Process:
    """``python -m tui.cli ARGS`` started as a real process whose output is read as it comes
    (unbuffered), for tests that act while it runs."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tui.cli", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=cwd, env=cli_env({"PYTHONUNBUFFERED": "1", **(env or {})}),
    )


# ---------------------------------------------------------------------------------------- the app


def screen_text(app: Any) -> str:
    """What the terminal shows, as plain text lines, from the real compositor (modal screens
    with what shows through from the screens below them)."""
    from textual._context import visible_screen_stack

    token = visible_screen_stack.set(app._background_screens)  # noqa: SLF001
    try:
        strips = app.screen._compositor.render_strips()  # noqa: SLF001
    finally:
        visible_screen_stack.reset(token)
    return "\n".join(strip.text.rstrip() for strip in strips)


# ---------------------------------------------------------------------------------------- in memory

_END = object()


class MemorySource:
    """An :class:`~tui.sources.base.EventSource` the test feeds by hand: ``put`` any event, ``say``
    log bytes (as ``LogChunk`` events at growing offsets), ``end`` the stream; ``close`` ends it
    too. ``path`` is what a tailer would follow (an attempt's log reads its size: none there, so
    nothing is left to drain)."""

    def __init__(self, source: str = "memory", path: str = "") -> None:
        self.source = source
        self.path = path or source
        self.offset = 0  # bytes said so far
        self.closed = False
        self._queue: asyncio.Queue[object] = asyncio.Queue()

    def put(self, event: object) -> None:
        self._queue.put_nowait(event)

    def say(self, text: str | bytes, at: float | None = None) -> None:
        data = text.encode() if isinstance(text, str) else text
        self.put(LogChunk(self.source, self.offset, data, time.time() if at is None else at))
        self.offset += len(data)

    def end(self) -> None:
        self._queue.put_nowait(_END)

    async def events(self) -> AsyncIterator[object]:
        while (event := await self._queue.get()) is not _END:
            yield event

    async def close(self) -> None:
        self.closed = True
        self.end()


#: The stop's signals in the order a stop sends them: a process that dies at one dies at any later.
ESCALATION = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)


class MemoryRunner(Runner):
    """A :class:`~tui.launch.runner.Runner` whose attempts are made-up processes the test drives,
    for the lifecycle's logic without processes or clocks: the test says what an attempt's log
    says (``log(run).say``), ends it (``exit``), picks the signal that stops it (``dies_at``) and
    lets a stop's grace period pass (``let_grace_pass``). It keeps what it was asked: ``started``,
    ``signals`` (attempt, signal), ``graces`` and ``killed``. Pids are ones no process has here.
    ``refuse`` makes ``start`` fail with that LaunchError; ``still_running`` is what ``reattach``
    finds, by attempt; ``exits`` what ``exit_status`` finds, by pid file."""

    def __init__(self, emit: Emit, *, dies_at: int = signal.SIGINT, first_pid: int = 3_900_000) -> None:
        super().__init__(emit)
        self.dies_at = dies_at
        self.refuse: str | None = None
        self.started: list[AttemptRun] = []
        self.signals: list[tuple[int, int]] = []
        self.graces: list[float] = []
        self.killed: list[tuple[int, int]] = []
        self.still_running: dict[int, AttemptRun] = {}
        self.exits: dict[str, tuple[int | None, int | None]] = {}
        self._next_pid = first_pid
        self._logs: dict[int, MemorySource] = {}
        self._grace_over = asyncio.Event()

    # ------------------------------------------------------------ what the test does

    def log(self, run: AttemptRun) -> MemorySource:
        """The attempt's log, to say lines in."""
        return self._logs[run.attempt]

    def exit(self, run: AttemptRun, returncode: int | None = None, signum: int | None = None) -> None:
        """The attempt's main process ends (on its own, or at a signal)."""
        self._emit(run.exited(returncode, signum))

    def let_grace_pass(self) -> None:
        """The grace period the stop waits in (or will wait in next) runs out."""
        self._grace_over.set()

    # ------------------------------------------------------------ the Runner

    async def start(self, attempt: int, command: Sequence[str], env: Mapping[str, str], log_path: Path,
                    pid_path: Path, cwd: str | None = None) -> AttemptRun:
        if self.refuse is not None:
            raise LaunchError(self.refuse)
        run = AttemptRun(attempt, tuple(command), dict(env), log_path, pid_path, host=self.host,
                         pid=self._next_pid, pgid=self._next_pid, started_at=time.time())
        self._next_pid += 1
        self.started.append(run)
        return self._running(run)

    async def reattach(self, attempt: int, command: Sequence[str], log_path: Path, pid_path: Path) -> AttemptRun | None:
        run = self.still_running.pop(attempt, None)
        return None if run is None else self._running(run)

    def _running(self, run: AttemptRun) -> AttemptRun:
        self._logs[run.attempt] = MemorySource(str(run.log_path))
        self._emit(run.started_event())
        return run

    async def signal(self, run: AttemptRun, sig: int) -> bool:
        if not run.alive:
            return False
        self.signals.append((run.attempt, sig))
        if ESCALATION.index(sig) >= ESCALATION.index(self.dies_at):
            self.exit(run, signum=sig)
        return True

    async def wait(self, run: AttemptRun, timeout: float) -> bool:
        self.graces.append(timeout)
        if run.alive:
            ended, passed = asyncio.ensure_future(run.wait()), asyncio.ensure_future(self._grace_over.wait())
            await asyncio.wait({ended, passed}, return_when=asyncio.FIRST_COMPLETED)
            ended.cancel()
            passed.cancel()
            self._grace_over.clear()
        return not run.alive

    async def alive(self, run: AttemptRun) -> bool:
        return run.alive

    def processes(self, run: AttemptRun) -> list[ProcessRef]:
        return [ProcessRef(self.host, run.pid, " ".join(run.command))] if run.alive and run.pid else []

    async def exit_status(self, pid_path: Path) -> tuple[int | None, int | None] | None:
        return self.exits.get(str(pid_path))

    async def kill_pids(self, pids: Sequence[int], sig: int) -> list[str]:
        self.killed += [(pid, sig) for pid in pids]
        return []

    def tailer(self, run: AttemptRun) -> MemorySource:
        return self._logs[run.attempt]
