"""Preflight as a whole: probe the host, take one GPU sample, judge (``tui.core.preflight``).

What ``watchtower check`` prints, what ``run`` runs before launching (refusing on a ✗
unless ``--no-check``) and what a relaunch runs again. The probe runs where the server
will (``tui.sources.probe``); the GPU sample comes from the same source the dashboard uses.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from tui.core import cmdline, preflight
from tui.core.errors import UsageError
from tui.core.events import GpuSample, GpuUnavailable
from tui.core.hints import load_knowledge
from tui.core.preflight import Check

#: Longest wait for the one GPU sample the checks need.
GPU_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class Report:
    command: cmdline.ServerCommand
    host: str
    checks: list[Check]
    seconds: float
    python: str | None = None

    @classmethod
    def unavailable(cls, argv: list[str], env: dict[str, str], host: str | None, reason: str) -> Report:
        """The report of checks that could not run at all: one ⚠ saying why (a launch goes on)."""
        check = Check("preflight", preflight.WARN, f"cannot run the checks: {reason}")
        return cls(cmdline.parse(argv, env), host or "localhost", [check], 0.0)

    @property
    def exit_status(self) -> int:
        return preflight.exit_status(self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == preflight.FAIL]

    @property
    def summary(self) -> str:
        """``preflight ✓ 12 · ⚠ 2 · ✗ 0 (0.31 s)``: phase zero's line."""
        counts = " · ".join(f"{preflight.GLYPH[s]} {sum(c.status == s for c in self.checks)}"
                            for s in (preflight.OK, preflight.WARN, preflight.FAIL))
        return f"preflight {counts} ({self.seconds:.2f} s)"

    def text(self) -> str:
        server = self.command.server or "unknown server"
        where = f" ({self.python})" if self.python else ""
        out = [f"preflight: {server} on {self.host}{where}, {self.seconds:.2f} s"]
        out += [f"  {c.line}" for c in self.checks]
        return "\n".join(out)

    def to_json(self) -> dict:
        return {"host": self.host, "server": self.command.server, "python": self.python,
                "exit": self.exit_status, "seconds": round(self.seconds, 3),
                "checks": [c.to_json() for c in self.checks]}


async def _one_sample(kind: str, host: str | None) -> tuple[GpuSample | None, str | None]:
    from tui.sources.factory import make_gpu_source

    source = make_gpu_source(kind, host)
    if source is None:
        return None, "--gpus none"
    try:
        async with asyncio.timeout(GPU_TIMEOUT):
            async for event in source.events():
                if isinstance(event, GpuSample):
                    return event, None
                if isinstance(event, GpuUnavailable):
                    return None, event.reason
    except TimeoutError:
        return None, f"no GPU sample within {GPU_TIMEOUT:g} s"
    finally:
        await source.close()
    return None, "the GPU source ended"


async def preflight_report(
    argv: list[str], env: dict[str, str] | None = None, *, host: str | None = None, gpus: str = "auto",
    shm: str | None = None,
) -> Report:
    """Run every check for ``argv`` (with ``env``) on ``host``; ``UsageError`` if the probe cannot run."""
    from tui.sources.probe import ProbeError, probe_local, probe_remote

    started = time.monotonic()
    command = cmdline.parse(argv, env)
    hints = load_knowledge()
    probe = probe_remote(host, command, shm) if host else probe_local(command, shm)
    try:
        facts, (sample, reason) = await asyncio.gather(probe, _one_sample(gpus, host))
    except ProbeError as exc:
        raise UsageError(str(exc)) from None
    checks = preflight.judge(command, facts, sample, hints, gpu_reason=reason)
    label = host or "localhost"
    python = f"python {facts.get('python_version')} {facts.get('python')}" if facts.get("python") else None
    return Report(command, label, checks, time.monotonic() - started, python)


