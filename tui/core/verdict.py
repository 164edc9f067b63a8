"""One verdict from three witnesses: the log, the process, the GPUs.

Silence in a startup log means either "still loading" or "crashed silently". The
log alone cannot tell; the process table and the GPUs can. ``judge`` combines what
the tracker read (``StartupState``), whether the launched process is alive, and
recent GPU samples into the one word the header shows:

- ``dead``: the process exited (code or signal) without a classified error;
- ``failed``: the log holds a fatal error;
- ``loading``: the log is quiet but GPU memory is changing or the GPUs are busy;
- ``stalled?``: silent past the phase's limit (``tui.core.limits``: ``--stall-limit``,
  history, the profile), GPUs idle, process alive — with the ranks that have not
  finished the phase;
- ``starting`` / ``ready`` / ``stopping`` / ``stopped``.

Ready needs the log's ready marker *and*, when a health URL is watched, a 200
from it; the verdict says which one is still pending. Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
import signal as _signal
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from tui.core.events import GpuSample
from tui.core.limits import NO_LIMITS, StallLimits
from tui.core.state import FAILED, PHASE_TITLES, READY, STOPPED, StartupState
from tui.core.wording import clock

STARTING, LOADING, STALLED, DEAD, STOPPING = "starting", "loading", "stalled?", "dead", "stopping"

#: Exit statuses shared by every command: 0 ready / success, 1 failed or dead, 2 usage error,
#: 3 still starting / incomplete / timed out.
EXIT_READY, EXIT_FAILED, EXIT_USAGE, EXIT_STARTING = 0, 1, 2, 3

#: Log silence (s) after which the GPUs are consulted at all.
QUIET_AFTER = 10.0
#: GPU memory moving faster than this (bytes/s, either way) means work is going on.
MEM_RATE_ACTIVE = 64 * 2**20
#: Any GPU this busy (percent) means work is going on.
UTIL_ACTIVE = 20
#: GPU samples older than this (s) say nothing about now.
GPU_WINDOW = 10.0

_SIGNAL_NOTES = {
    _signal.SIGKILL: "possibly the OOM killer",
    _signal.SIGSEGV: "segmentation fault",
    _signal.SIGABRT: "aborted",
    _signal.SIGBUS: "bus error",
}


def signal_name(signum: int) -> str:
    try:
        return _signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def describe_exit(returncode: int | None, signum: int | None) -> str:
    """``killed by SIGKILL (possibly the OOM killer)``, ``exited with code 1`` …

    A shell reports a child killed by signal N as 128+N; that is read as the signal.
    """
    if signum is None and returncode is not None:
        if returncode < 0:
            signum = -returncode
        elif 128 < returncode < 160 and returncode - 128 in _SIGNAL_NOTES:
            signum = returncode - 128
    if signum is not None:
        note = _SIGNAL_NOTES.get(signum)
        return f"killed by {signal_name(signum)}" + (f" ({note})" if note else "")
    if returncode is None:
        return "exited (status unknown)"
    return f"exited with code {returncode}"


@dataclass(frozen=True, slots=True)
class ProcessStatus:
    """What is known about the server's process: the launched one, or the writer of a watched
    log (``tui.core.writers``), then ``who`` names it and its exit status may be unknown."""

    alive: bool
    returncode: int | None = None
    signal: int | None = None
    stopped_by_user: bool = False
    exit_known: bool = True  # False: not our child, its exit status cannot be known
    who: str | None = None  # "main process pid 4242 (python -m sglang.launch_server …)"
    lost: str | None = None  # alive, but a rank's process is gone: says which, in words
    lost_rank: str | None = None

    @property
    def exit_text(self) -> str:
        if not self.exit_known:
            return "exit status unknown (not started by Watchtower)"
        return describe_exit(self.returncode, self.signal)

    @property
    def end_text(self) -> str:
        """How it ended, naming the process when it is not the launched one."""
        return self.exit_text if self.who is None else f"{self.who} is gone, {self.exit_text}"


@dataclass(frozen=True, slots=True)
class HealthStatus:
    """The ``--health URL`` probe: ``ok`` once it answered 200; ``detail`` says what it got last."""

    url: str
    ok: bool = False
    detail: str = "not checked yet"


@dataclass(frozen=True, slots=True)
class GpuActivity:
    mem_rate: float | None  # bytes/s summed over GPUs, over the recent window
    max_util: int | None  # percent, busiest GPU in the latest sample
    gpus: int
    of_server: bool = False  # the rate is that of the server's own processes

    @property
    def active(self) -> bool:
        return (self.mem_rate is not None and abs(self.mem_rate) >= MEM_RATE_ACTIVE) or (
            self.max_util is not None and self.max_util >= UTIL_ACTIVE
        )

    @property
    def text(self) -> str:
        parts = []
        if self.mem_rate is not None and abs(self.mem_rate) >= MEM_RATE_ACTIVE:
            parts.append(f"{'its GPU mem' if self.of_server else 'GPU mem'} {self.mem_rate / 2**30:+.1f} GiB/s")
        if self.max_util is not None and self.max_util >= UTIL_ACTIVE:
            parts.append(f"GPUs busy {self.max_util}%")
        return ", ".join(parts) or "GPUs idle"


def _server_memory(sample: GpuSample, pids: Collection[int]) -> int | None:
    """GPU memory the server's processes hold in ``sample``; None when it lists no process of theirs."""
    held = [p.used_bytes for g in sample.gpus for p in g.processes if p.pid in pids and p.used_bytes is not None]
    return sum(held) if held else None


def gpu_activity(
    samples: Sequence[GpuSample], now: float, window: float = GPU_WINDOW, pids: Collection[int] | None = None
) -> GpuActivity | None:
    """Memory change rate and utilisation from the samples of the last ``window`` seconds.

    ``pids``: the server's processes (a watched log's writers): where the samples list the
    memory per process, the rate is theirs alone (another job's allocations say nothing).
    """
    recent = [s for s in samples if now - s.at <= window and s.gpus]
    if not recent:
        return None
    last = recent[-1]
    utils = [g.utilization for g in last.gpus if g.utilization is not None]
    rate = None
    first = recent[0]
    if pids and last.at - first.at > 0:
        before, after = _server_memory(first, pids), _server_memory(last, pids)
        if before is not None and after is not None:
            return GpuActivity((after - before) / (last.at - first.at), max(utils) if utils else None, len(last.gpus),
                               of_server=True)
    if last.at - first.at > 0:
        indices = {g.index for g in first.gpus if g.memory_used is not None} & {
            g.index for g in last.gpus if g.memory_used is not None
        }
        if indices:
            used = lambda s: sum(g.memory_used or 0 for g in s.gpus if g.index in indices)  # noqa: E731
            rate = (used(last) - used(first)) / (last.at - first.at)
    return GpuActivity(rate, max(utils) if utils else None, len(last.gpus))


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: str  # starting, loading, stalled?, ready, failed, dead, stopped
    detail: str  # one line, already masked text from the log
    pending: tuple[str, ...] = ()  # readiness parts not yet met: "log ready marker", "health 200"
    ranks: tuple[str, ...] = ()  # ranks that have not finished the current phase (stalled)
    silence: float | None = None

    @property
    def title(self) -> str:
        return self.kind.upper()

    @property
    def final(self) -> bool:
        return self.kind in (READY, FAILED, DEAD, STOPPED)

    @property
    def text(self) -> str:
        return f"{self.title}: {self.detail}" if self.detail else self.title


#: Error kinds the tracker makes up from a process exit rather than reads in the log.
EXIT_KINDS = frozenset({"killed", "exited"})


def log_error(state: StartupState):
    """The root-cause error the log itself holds (not one made up from the process's exit)."""
    fatal = [e for e in state.errors if e.fatal and e.kind not in EXIT_KINDS]
    primary = [e for e in fatal if not getattr(e, "secondary", False)]
    return (primary or fatal or [None])[0]


def unfinished_ranks(state: StartupState) -> tuple[str, ...]:
    """Ranks that have not ended the running phase, including ranks that never began it."""
    phase = state.current_phase
    if phase is None:
        return ()
    pending = sorted((r.rank for r in phase.ranks.values() if r.end_line is None), key=_natural)
    pending += sorted((r for r in state.ranks if r not in phase.ranks and r != "main"), key=_natural)
    return tuple(pending)


def _natural(rank: str) -> tuple:
    """TP2 before TP10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", rank))


def judge(
    state: StartupState,
    *,
    now: float,
    last_activity: float | None,
    last_line: str | None = None,
    process: ProcessStatus | None = None,
    gpu: GpuActivity | None = None,
    health: HealthStatus | None = None,
    expected_phase: float | None = None,
    limits: StallLimits | None = None,
    eta: str | None = None,
) -> Verdict:
    """The verdict for this instant.

    ``last_activity``: when the log last grew (or the attempt started, before any
    line). ``expected_phase``: the longest the running phase has taken in history.
    ``limits``: ``--stall-limit`` (default and per phase), which override history;
    the profile's own per-phase limits come with ``state``. ``eta``: text such as
    "weight load 4:51 of ~10:28" to show while starting.
    """
    said = f"log said last: {last_line!r}" if last_line else "the log is empty"
    error = log_error(state)
    failed = state.outcome == FAILED and error is not None
    error_text = None
    if error is not None:
        error_text = f"{error.kind}: {error.message}" if error.kind not in error.message else error.message
        if error.rank:
            error_text += f" ({error.rank})"

    if process is not None and process.alive and process.stopped_by_user:
        # what the server prints while we stop it (a KeyboardInterrupt traceback) is no failure
        return Verdict(STOPPING, "stopping the process group")

    if process is not None and not process.alive:
        how = process.end_text
        if process.stopped_by_user:
            return Verdict(STOPPED, f"stopped, {how}")
        if failed and error_text:
            return Verdict(FAILED, f"{error_text}; {how}")
        if state.outcome in (READY, STOPPED) or state.ready_line is not None:
            polite = process.returncode == 0 or process.signal in (_signal.SIGINT, _signal.SIGTERM)
            if polite or (not process.exit_known and state.outcome == STOPPED):  # the log said it stops
                return Verdict(STOPPED, f"stopped after ready, {how}")
            return Verdict(DEAD, f"{how} after ready; {said}")
        return Verdict(DEAD, f"{how}; {said}")

    if process is not None and process.lost and not process.stopped_by_user:
        ranks = (process.lost_rank,) if process.lost_rank else ()
        if failed and error_text:
            return Verdict(FAILED, f"{error_text}; {process.lost}", ranks=ranks)
        if state.outcome in (READY, STOPPED):
            return Verdict(DEAD, f"{process.lost}, after ready; {said}", ranks=ranks)
        return Verdict(FAILED, f"{process.lost}; {said}", ranks=ranks)
    if failed:
        tail = "; the process is still running" if process is not None else ""
        return Verdict(FAILED, (error_text or "failed") + tail)
    if state.outcome == STOPPED:
        return Verdict(STOPPED, state.stop_reason or "stopped")

    log_ready = state.outcome == READY
    pending = tuple(
        p for p, met in (("log ready marker", log_ready), ("health 200", health is None or health.ok)) if not met
    )
    if not pending:
        total = (state.last_ts - state.first_ts) if (state.first_ts and state.last_ts) else None
        return Verdict(READY, f"ready in {clock(total)}" if total is not None else "ready")

    silence = None if last_activity is None else max(0.0, now - last_activity)
    if log_ready:  # only the health check is missing
        return Verdict(STARTING, f"ready marker seen; waiting for {health.url}: {health.detail}", pending, (), silence)

    phase = state.current_phase
    phase_title = PHASE_TITLES.get(phase.name, phase.name) if phase else None
    where = eta or (phase_title or "starting")
    if health is not None and not health.ok:
        where += f" · health: {health.detail}"
    threshold, why = (limits or NO_LIMITS).threshold(
        phase.name if phase else None, expected=expected_phase, profile=state.stall_after
    )
    if silence is None or silence < min(QUIET_AFTER, threshold):
        return Verdict(STARTING, where, pending, (), silence)

    quiet = f"log quiet {clock(silence)}"
    if gpu is not None and gpu.active:
        return Verdict(LOADING, f"{quiet} · {gpu.text} · {where}", pending, (), silence)
    if silence > threshold and (process is None or process.alive):
        ranks = unfinished_ranks(state)
        parts = [f"log silent {clock(silence)}, {why}", gpu.text if gpu is not None else "no GPU data"]
        if ranks:
            parts.append(f"{', '.join(ranks)} not done with {phase_title or 'the phase'}")
        if process is not None:
            parts.append("its process alive")
        return Verdict(STALLED, " · ".join(parts), pending, ranks, silence)
    return Verdict(STARTING, f"{quiet} · {where}", pending, (), silence)
