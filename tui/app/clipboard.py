"""Where copied text can go, and saying honestly where it went.

OSC 52 asks the terminal to set its clipboard; nothing tells whether it did. Inside
tmux the escape sequence is dropped unless ``set-clipboard`` is ``on`` (the default,
``external``, ignores it from applications), so there the text also goes into a tmux
buffer with ``tmux load-buffer -``, which does arrive: paste it with prefix ``]``.
"""

from __future__ import annotations

import asyncio
import os

#: Seconds a tmux command may take before the copy is reported without it.
TMUX_TIMEOUT = 2.0


async def _tmux(*args: str, data: bytes | None = None) -> tuple[int, str]:
    """Run ``tmux ARGS`` (the server of this pane, from $TMUX); (exit status, output or error)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            "tmux", *args,
            stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        return 127, exc.strerror or str(exc)
    try:
        async with asyncio.timeout(TMUX_TIMEOUT):
            out, err = await proc.communicate(data)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return 124, "tmux did not answer"
    return proc.returncode or 0, (out if proc.returncode == 0 else err).decode(errors="replace").strip()


async def copy_text(app, text: str, what: str) -> str:
    """Send ``text`` wherever it can reach; returns the sentence saying where it went.

    ``what`` names the text ("34 lines (ValueError, line 12)")."""
    app.copy_to_clipboard(text)  # OSC 52: reaches a terminal that honours it, also over SSH
    if not os.environ.get("TMUX"):
        return f"Sent {what} to the terminal clipboard (OSC 52; some terminals ignore it — w writes them to a file)"
    status, error = await _tmux("load-buffer", "-", data=text.encode())
    _, mode = await _tmux("show-options", "-gv", "set-clipboard")
    if status != 0:
        outer = "" if mode == "on" else f" (tmux's set-clipboard is {mode or 'unknown'}: it may not pass)"
        return f"tmux load-buffer failed ({error}); sent {what} by OSC 52 only{outer} — w writes them to a file"
    where = f"Copied {what} to the tmux buffer: paste with prefix ]"
    if mode == "on":
        return f"{where}; also sent to the terminal clipboard (OSC 52) — w writes a file"
    return f"{where}. tmux's set-clipboard is {mode or 'unknown'}: not the system clipboard — w writes a file"
