"""What every kind of test needs, written once: wait for a condition (``until``), run the real CLI
(``run_cli``, ``start_cli``), read the dashboard's screen as text (``screen_text``), wait for a
launch's verdict (``launch_verdict``)."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

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

