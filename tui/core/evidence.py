"""What the verdict is decided from: one frozen record of every witness's reading. Pure.

Each node's session owns its evidence (``WatchSession.evidence``): its GPU samples, its
process status (writer discovery, or the runner's started/stopping/exited events), ``--health``
and ``--smoke``, the silence limits given at construction and history's phase times. A launch
or a node set adds what only it knows (the launched process, the time left) to that record with
``dataclasses.replace`` — never a second assembly — and :func:`judge` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from tui.core.verdict import GpuActivity, ProcessStatus, SmokeStatus, Verdict
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


def judge(state: StartupState, evidence: Evidence) -> Verdict:
    """The verdict of ``state`` weighed with ``evidence``."""
    return weigh(state, **{f.name: getattr(evidence, f.name) for f in fields(Evidence)})
