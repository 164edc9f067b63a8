"""What an attempt's end leaves behind: its history record, the terminal bell, the title, hooks.

:class:`Outcome` subscribes to a launch (``tui.launch.controller``) and does the
writing, so that the controller only runs the attempt lifecycle.

The bell makes tmux and screen flag the window; the title (OSC 2, and tmux's own
window-name sequence inside tmux) shows the verdict in the window list. Hooks
(``--on-ready CMD`` / ``--on-fail CMD``) run through the shell with the verdict in
``WATCHTOWER_*`` variables — and with every secret-looking variable removed from
their environment: a hook never gets a token.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Protocol

from tui.core.events import PhaseEnded, ProcessExited
from tui.core.lines import clean
from tui.core.loading import page_cache
from tui.core.secrets import Masker, is_secret_name
from tui.core.state import READY, STOPPED
from tui.core.verdict import log_error
from tui.history import AttemptRecord, History, HistoryError, phase_seconds
from tui.launch.events import AttemptFinished, AttemptRecorded, LaunchEvent, Note
from tui.launch.spec import LaunchError, LaunchSpec

BELL = "\a"


def _plain(text: str, limit: int = 120) -> str:
    """Safe inside an escape sequence: no control characters at all."""
    text = clean(text).replace("\t", " ")
    text = "".join(ch for ch in text if ch.isprintable())
    return text[:limit]


def title_sequence(title: str, in_tmux: bool | None = None) -> str:
    """OSC 2 (xterm-style window title); inside tmux also the window name (``ESC k … ESC \\``)."""
    title = _plain(title)
    seq = f"\x1b]2;{title}\x07"
    if in_tmux if in_tmux is not None else bool(os.environ.get("TMUX")):
        seq += f"\x1bk{title}\x1b\\"
    return seq


def hook_env(
    values: Mapping[str, str | int | float | None],
    masker: Masker | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a hook: ``base`` (default: ours) minus secrets, plus ``WATCHTOWER_<KEY>``."""
    masker = masker or Masker()
    env = {k: v for k, v in (os.environ if base is None else base).items() if not is_secret_name(k)}
    for key, value in values.items():
        env[f"WATCHTOWER_{key.upper()}"] = "" if value is None else masker.text(str(value))
    return env


async def run_hook(command: str, env: Mapping[str, str], timeout: float = 120.0) -> tuple[int | None, str]:
    """Run a hook through the shell; ``(exit status, first line of its output)``; never raises."""
    try:
        proc = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return None, f"hook could not start: {exc.strerror or exc}"
    try:
        async with asyncio.timeout(timeout):
            out, _ = await proc.communicate()
    except asyncio.TimeoutError:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the shell and whatever it started
        except ProcessLookupError:
            pass
        await proc.wait()
        return None, f"hook timed out after {timeout:g} s"
    first = out.decode("utf-8", "replace").strip().splitlines()
    return proc.returncode, (first[0] if first else "")


class HistoryWrites:
    """An attempt's history writes while its server runs: in a worker thread, one at a time, never
    on the event loop; a failure is said once (``note``) and watching goes on. Hooks run here too,
    so that quitting waits for the writes (``close``) but never for a hook."""

    def __init__(self, note: Callable[[str], None], written: Callable[[AttemptRecord], None]) -> None:
        self.note = note
        self.written = written  # an attempt's row, once a write of it has landed
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lock = asyncio.Lock()
        self._failed = ""  # the last write failure said

    def store(self, history: History | None, record: AttemptRecord | None, masker: Masker, **fields: Any) -> None:
        """Update ``record`` with ``fields`` (masked), in the background."""
        if history is not None and record is not None:
            self.spawn(self.stored(history.update, record, masker=masker, **fields))

    async def stored(self, update: Callable[..., Any], record: AttemptRecord, **kwargs: Any) -> None:
        """A history write of ``record``; said once it landed (``written``), a failure said once."""
        try:
            await self.db(update, record, **kwargs)
        except LaunchError as exc:
            if str(exc) != self._failed:
                self._failed = str(exc)
                self.note(f"history not updated: {exc}")
        else:
            self.written(record)

    async def db(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A history call in a worker thread, one at a time; a ``HistoryError`` comes out as a
        ``LaunchError`` (one line, never a traceback)."""
        async with self._lock:
            try:
                return await asyncio.to_thread(fn, *args, **kwargs)
            except HistoryError as exc:
                raise LaunchError(str(exc)) from None

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str | None = None) -> None:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Until the writes and hooks started so far have finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        writes = [t for t in self._tasks if not t.get_name().startswith("hook")]
        if writes:  # the history keeps what it was told; a hook keeps running on its own
            await asyncio.wait(writes, timeout=5.0)


def announce(terminal: Callable[[str], None] | None, name: str, attempt: int, outcome: str) -> None:
    """The bell and the window title of an attempt's final verdict (tmux flags the window)."""
    if terminal is not None:
        mark = "✓" if outcome == READY else "✗"
        terminal(BELL + title_sequence(f"{mark} {name} v{attempt} {outcome}"))


def run_outcome_hook(writes: HistoryWrites, command: str | None, values: Mapping[str, str | int | float | None],
                     masker: Masker) -> None:
    """``--on-ready`` / ``--on-fail``: ``command`` through the shell with ``values`` as ``WATCHTOWER_*``
    (secrets removed from its environment); how it went is said as a note."""
    if not command:
        return

    async def hook() -> None:
        code, first = await run_hook(command, hook_env(values, masker))
        said = f": {masker.text(first)}" if first else ""
        writes.note(f"hook {'ran' if code == 0 else 'failed'} ({'timeout' if code is None else f'exit {code}'}){said}")

    writes.spawn(hook(), name="hook")


class Launch(Protocol):
    """What an outcome reads of its launch (``tui.launch.controller.Launch``)."""

    spec: LaunchSpec
    history: History | None
    record: AttemptRecord | None
    masker: Masker
    session: Any  # the one log's session; None for an attempt across nodes
    clock: Callable[[], float]
    terminal: Callable[[str], None] | None

    @property
    def host_label(self) -> str: ...

    @property
    def nodes(self) -> Any: ...

    def subscribe(self, callback: Callable[[LaunchEvent], None]) -> None: ...

    def publish(self, event: LaunchEvent) -> None: ...


class Outcome:
    """A launch's subscriber that records and announces: history updates, bell and title, hooks."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.writes = HistoryWrites(lambda text: launch.publish(Note(text)),  # history updates and hooks
                                    lambda record: launch.publish(AttemptRecorded(record.attempt)))
        self._phases_due = False  # a store of the phase times is queued for this turn of the loop
        self._page_cache: str | None = None  # the weight load just ended from the page cache or storage
        launch.subscribe(self.on_event)

    def on_event(self, event: LaunchEvent) -> None:
        if isinstance(event, AttemptFinished):
            self._finished(event)

    def heard(self, event: object) -> None:
        """Each of the session's events, none dropped (``WatchSession.hear``): a phase that ended
        updates the record's phase times — once per turn of the event loop, however many phases a
        burst of lines ended (one history write, not one a phase); the weight load's end also
        whether the checkpoint came from the page cache (read now, while the load's counters are
        this attempt's)."""
        session = self.launch.session
        if not isinstance(event, PhaseEnded) or session is None:
            return
        if event.phase == "weight_load":
            self._page_cache = page_cache(session.weight.load.reading()) or self._page_cache
        if not self._phases_due:
            self._phases_due = True
            try:
                asyncio.get_running_loop().call_soon(self.store_due_phases)
            except RuntimeError:  # (no loop: fed by hand) stored now
                self.store_due_phases()

    def store_due_phases(self) -> None:
        """The phase times queued this turn, stored (once: ``settle`` may have stored them first)."""
        if not self._phases_due:
            return
        self._phases_due = False
        session, warm_or_cold = self.launch.session, self._page_cache
        self._page_cache = None
        if session is not None:
            self.store(phases=phase_seconds(session.state), **({"page_cache": warm_or_cold} if warm_or_cold else {}))

    def on_exit(self, event: ProcessExited, notified: bool) -> None:
        record = self.launch.record
        if notified and record is not None and record.attempt == event.attempt:
            # the verdict came first (an error in the log); the exit completes the record
            self.store(ended_at=event.at, exit_text=self._exit_text(event.detail))

    def _finished(self, event: AttemptFinished) -> None:
        """A final verdict for this attempt: record it, ring, retitle, run the hook."""
        launch, run, verdict = self.launch, event.run, event.verdict
        session = launch.session
        error_text, phases = None, None
        if verdict.kind == STOPPED:
            pass  # a traceback our SIGINT caused is no cause
        elif session is not None:
            error = log_error(session.state)
            error_text = error.title if error is not None else None
        else:  # across nodes: what the failing node logged
            error_text = launch.nodes.first_error(verdict)
        if session is not None:
            phases = phase_seconds(session.state)
        outcome = verdict.kind
        now = launch.clock()
        self.store(
            phases=phases,
            outcome=outcome,
            first_error=error_text,
            ended_at=None if outcome == READY else (run.exited_at or now),
            ready_seconds=(now - run.started_at) if outcome == READY else None,
            exit_text=self._exit_text(None if run.alive else run.exited_event().detail,
                                      verdict.text if launch.session is None else None),
        )
        if outcome == STOPPED:
            return
        ok = outcome == READY
        spec = launch.spec
        announce(launch.terminal, spec.name, run.attempt, outcome)
        run_outcome_hook(self.writes, spec.on_ready if ok else spec.on_fail, {
            "outcome": outcome,
            "verdict": verdict.text,
            "error": error_text or (verdict.detail if not ok else ""),
            "attempt": run.attempt,
            "name": spec.name,
            "host": launch.host_label,
            "node": verdict.node or "",
            "log": str(run.log_path),
            "pid": run.shown_pid,
            "exit": "" if run.alive else run.exited_event().detail,
            "seconds": f"{now - run.started_at:.1f}",
        }, launch.masker)

    def _exit_text(self, exited: str | None, otherwise: str | None = None) -> str | None:
        """How the attempt ended, in words: a Slurm job's own state first (``job 7 CANCELLED by …``)."""
        launch = self.launch
        job = launch.nodes.job_words() if launch.session is None and launch.nodes.job_ended else ""
        return job or exited or otherwise

    def store(self, **fields: Any) -> None:
        launch = self.launch
        self.writes.store(launch.history, launch.record, launch.masker, **fields)
