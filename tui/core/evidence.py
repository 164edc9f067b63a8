"""What the verdict is decided from: one frozen record of every witness's reading. Pure.

Each node's session assembles its evidence, once (``WatchSession.evidence``), from what it owns:
its GPU samples (``GpuBoard.samples``, the one buffer), its process status (writer
discovery, or what the process's runner told it: ``ProcessWitnesses``), ``--health`` and
``--smoke``, the silence limits given at its construction, history's phase times and the time
left (``Allowance.expect``). A launch or a node set tells the session facts (started, exited,
stopping, refused); it never assembles evidence of its own. The judging stage
(``tui.session.judging``) is the one caller of :func:`judge`: it is handed a :class:`Weighing`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from tui.core.verdict import FAILED, READY, STARTING, GpuActivity, ProcessStatus, SmokeStatus, Verdict
from tui.core.verdict import judge as weigh

if TYPE_CHECKING:
    from tui.core.events import HealthStatus
    from tui.core.limits import StallLimits
    from tui.core.state import StartupState


@dataclass(frozen=True, slots=True)
class Evidence:
    """The verdict's inputs for one instant (``tui.core.verdict.judge`` says what each means)."""

    process: ProcessStatus | None = None  # the server's process: launched, or its log's writer
    health: HealthStatus | None = None  # --health's last answer
    gpus: GpuActivity | None = None  # memory rate and utilisation over the recent window
    now: float | None = None
    last_activity: float | None = None  # when the log last grew
    last_line: str | None = None
    waiting: str | None = None  # why no line has come yet
    elapsed: float | None = None  # the startup's time so far
    expected_phase: float | None = None  # the longest the running phase took in history
    limits: StallLimits | None = None  # --stall-limit
    eta: str | None = None  # time left, from earlier attempts
    timed_out: float | None = None  # --timeout (s), once passed undecided
    blind: str | None = None  # why nothing can be seen now (a connection lost)
    loading: str | None = None  # the weight load's progress while its bytes move
    smoke: SmokeStatus | None = None  # --smoke's completion


@dataclass(frozen=True, slots=True)
class Weighing:
    """A startup to weigh with its evidence. ``pending``: the server's process is gone and its log,
    final now, is still being read — a verdict other than failed or ready waits, said so."""

    state: StartupState
    evidence: Evidence
    pending: str | None = None


def judge(state: StartupState, evidence: Evidence) -> Verdict:
    """The verdict of ``state`` weighed with ``evidence``."""
    return weigh(state, **{f.name: getattr(evidence, f.name) for f in fields(Evidence)})


def decide(reading: Verdict | Weighing) -> Verdict:
    """The verdict of what the owner read: weighed (:func:`judge`, its one call), or as decided.

    Called by the judging stage for every verdict it pushes, and by ``scan`` and ``--plain``'s
    last line for a log read alone (no process, GPU or health to weigh it with)."""
    if isinstance(reading, Verdict):
        return reading
    verdict = judge(reading.state, reading.evidence)
    if reading.pending is not None and verdict.kind not in (FAILED, READY):
        return Verdict(STARTING, reading.pending)
    return verdict
