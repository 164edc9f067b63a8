"""What the history keeps and what is read from it, without the database: one attempt's
record (and its one-line summary), the command-line diff between attempts, a startup's phase
times, and the ETAs of the last success."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tui.core.state import PHASE_TITLES, QUEUED, StartupState
from tui.core.wording import clock


@dataclass(slots=True)
class AttemptRecord:
    name: str
    attempt: int
    host: str
    command: list[str]  # masked
    env: dict[str, str]  # masked overrides
    started_at: float
    log_path: str
    env_diff: list[str] = field(default_factory=list)
    command_diff: list[str] = field(default_factory=list)
    ended_at: float | None = None
    phases: dict[str, float] = field(default_factory=dict)
    outcome: str = "starting"
    first_error: str | None = None
    ready_seconds: float | None = None
    pid: int | None = None
    exit_text: str | None = None
    applied: str | None = None  # id of the hint whose fix started this attempt
    page_cache: str | None = None  # its weight load came from the page cache ("warm") or the storage ("cold")
    gpu_source: str | None = None  # NVML, nvidia-smi, simulated, none (None: recorded before it was kept)
    id: int | None = None

    @property
    def label(self) -> str:
        return f"v{self.attempt}"

    @property
    def duration(self) -> float | None:
        if self.ready_seconds is not None:
            return self.ready_seconds
        return None if self.ended_at is None else self.ended_at - self.started_at

    @property
    def summary(self) -> str:
        """``v1 ✗ AttributeError 0:12`` / ``v4 ✓ ready 11:02`` / ``v5 … starting``."""
        if self.outcome == "ready":
            return f"{self.label} ✓ ready {clock(self.duration)}"
        if self.outcome in ("starting", "running"):
            return f"{self.label} … {self.outcome}"
        if self.outcome == "stopped":
            return f"{self.label} ■ stopped {clock(self.duration)}"
        if self.first_error:
            what = self.first_error.split(":", 1)[0]
        elif self.exit_text and self.exit_text.startswith(("killed by ", "stopped with ")):
            what = self.exit_text.split()[2]  # the signal's name
        elif self.exit_text and self.exit_text.startswith("exited with code "):
            what = f"{self.outcome} (exit {self.exit_text.rsplit(' ', 1)[-1]})"
        else:
            what = self.outcome
        return f"{self.label} ✗ {what} {clock(self.duration)}"

    @property
    def changes(self) -> list[str]:
        applied = [f"{self.label}: applied {self.applied}"] if self.applied else []
        return applied + self.command_diff + self.env_diff

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "attempt": self.attempt,
            "host": self.host,
            "command": self.command,
            "env": self.env,
            "env_diff": self.env_diff,
            "command_diff": self.command_diff,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "phases": self.phases,
            "outcome": self.outcome,
            "first_error": self.first_error,
            "ready_seconds": self.ready_seconds,
            "log_path": self.log_path,
            "pid": self.pid,
            "exit": self.exit_text,
            "applied": self.applied,
            "gpu_source": self.gpu_source,
        }


def command_diff(old: Sequence[str] | None, new: Sequence[str]) -> list[str]:
    """Words added to / removed from the command line: ``["+--tp 8", "---mem-fraction-static 0.9"]``.

    Compares flag/value pairs so ``--tp 4`` → ``--tp 8`` reads as one change.
    """
    if old is None:
        return []

    def pairs(argv: Sequence[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(argv):
            word = argv[i]
            if word.startswith("--") and "=" not in word and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out.append(f"{word} {argv[i + 1]}")
                i += 2
            else:
                out.append(word)
                i += 1
        return out

    a, b = pairs(old), pairs(new)
    removed = [w for w in a if w not in b]
    added = [w for w in b if w not in a]
    return [f"-{w}" for w in removed] + [f"+{w}" for w in added]


def phase_seconds(state: StartupState) -> dict[str, float]:
    return {p.name: p.seconds for p in state.phases if p.seconds is not None}


@dataclass(slots=True)
class Expectations:
    """The last successful attempt of the same command and host, and each phase's longest run."""

    last_success: AttemptRecord | None
    longest: dict[str, float]

    def expected(self, phase: str) -> float | None:
        if self.last_success is None:
            return None
        return self.last_success.phases.get(phase)

    def eta(self, phase: str | None, phase_elapsed: float | None, attempt_elapsed: float) -> str | None:
        """``weight load 4:51 of ~10:28 · ready in ~6:40`` for the running phase, or None (a wait for
        resources has no usual length: the verdict says what it waits for)."""
        if phase is None or phase == QUEUED:
            return None
        text = PHASE_TITLES.get(phase, phase)
        if phase_elapsed is not None:
            text += f" {clock(phase_elapsed)}"
        expected = self.expected(phase)
        if expected is not None:
            text += f" of ~{clock(expected)}"
        total = self.last_success.ready_seconds if self.last_success else None
        if total is not None:
            remaining = total - attempt_elapsed
            text += f" · ready in ~{clock(remaining)}" if remaining > 0 else " · past the usual time"
        return text
