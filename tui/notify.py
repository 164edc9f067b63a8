"""Tell the operator when a startup ends: terminal bell, window title, hooks.

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
from collections.abc import Mapping

from tui.core.lines import clean
from tui.core.secrets import Masker, is_secret_name

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
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the shell and whatever it started
        except ProcessLookupError:
            pass
        await proc.wait()
        return None, f"hook timed out after {timeout:g} s"
    first = out.decode("utf-8", "replace").strip().splitlines()
    return proc.returncode, (first[0] if first else "")
