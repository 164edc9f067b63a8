"""One verdict from three witnesses: the log, the process, the GPUs — for every front end.

Silence in a startup log means either "still loading" or "crashed silently". The
log alone cannot tell; the process table and the GPUs can. ``judge`` combines what
the tracker read (``StartupState``), whether the server's process is alive, and
recent GPU samples into the one word the header, `--plain`, `scan` and `run` show,
and the exit status every command returns (``Verdict.exit_status``):

- ``dead``: the process exited (code or signal) without a classified error;
- ``failed``: the log holds a fatal error;
- ``loading``: the log is quiet but GPU memory is changing or the GPUs are busy;
- ``stalled?``: silent past the phase's limit (``tui.core.limits``: ``--stall-limit``,
  history, the profile), GPUs idle, process alive — with the ranks that have not
  finished the phase;
- ``starting`` / ``ready`` / ``stopping`` / ``stopped``;
- ``refused``: a launch's preflight found a ✗ and nothing was started (``tui.core.preflight.refusal``).

Without a process (a log read after the fact, or a watched server whose writer cannot
be seen) the verdict is the log's own reading — and, while it is watched live, its
silence weighed with the GPUs and the phase's limit (loading / stalled?), never dead.
A watched server's processes, once discovery names them (``tui.core.writers``), are a
process like a launched one's, with an exit status that may be unknown. Ready needs the log's ready marker *and*, when a
health URL is watched, a 200 from it; the verdict says which one is still pending.
Pure: no I/O, no clock. Every witness's reading is here, so that the one verdict every
front end shows is made in one place (``tui.session.judging`` decides when).

Extending it: a new witness is one more keyword argument of ``judge`` and, if it
brings new words, one more ``VerdictKind``; the exit status follows from the kind.
"""

from __future__ import annotations

import re
import signal as _signal
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from tui.core.limits import NO_LIMITS, StallLimits
from tui.core.state import PHASE_TITLES, QUEUED, ErrorReport, Outcome, StartupState, earliest, origin
from tui.core.wording import clock, phase_words

if TYPE_CHECKING:  # (annotations only: `scan` does without the source events' classes)
    from tui.core.events import GpuSample, HealthStatus, SmokeAnswered


class VerdictKind(StrEnum):
    STARTING = "starting"
    LOADING = "loading"  # log quiet, GPUs busy
    STALLED = "stalled?"  # silent longer than the phase ever took, GPUs idle
    READY = "ready"
    FAILED = "failed"
    DEAD = "dead"  # the process exited without an error in the log
    STOPPING = "stopping"
    STOPPED = "stopped"
    TIMEOUT = "timeout"  # --timeout passed while still starting
    REFUSED = "refused"  # the preflight found a ✗: nothing was launched



STARTING, LOADING, STALLED, DEAD, STOPPING = (
    VerdictKind.STARTING, VerdictKind.LOADING, VerdictKind.STALLED, VerdictKind.DEAD, VerdictKind.STOPPING,
)
READY, FAILED, STOPPED, TIMEOUT = VerdictKind.READY, VerdictKind.FAILED, VerdictKind.STOPPED, VerdictKind.TIMEOUT
REFUSED = VerdictKind.REFUSED

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

#: What a signal says by itself. A SIGKILL says nothing of who sent it: "the OOM killer" only
#: with evidence (``describe_exit``'s ``oom``), never as a guess.
_SIGNAL_NOTES: dict[int, str] = {
    _signal.SIGSEGV: "segmentation fault",
    _signal.SIGABRT: "aborted",
    _signal.SIGBUS: "bus error",
}
#: Signals a shell's 128+N exit status is read as.
_SHELL_SIGNALS = frozenset({_signal.SIGKILL, *_SIGNAL_NOTES})


def signal_name(signum: int) -> str:
    try:
        return _signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _signal_of(returncode: int | None, signum: int | None) -> int | None:
    """The signal an exit status says (a negative return code, or a shell's 128+N)."""
    if signum is None and returncode is not None:
        if returncode < 0:
            return -returncode
        if 128 < returncode < 160 and returncode - 128 in _SHELL_SIGNALS:
            return returncode - 128
    return signum


def describe_exit(
    returncode: int | None, signum: int | None, *, stopped: bool = False, oom: str | None = None
) -> str:
    """``killed by SIGKILL``, ``killed by SIGSEGV (segmentation fault)``, ``exited with code 1`` …

    ``stopped``: Watchtower sent the signals (a stop), so a SIGKILL is its own, after the
    grace periods — never the OOM killer. ``oom``: evidence that the OOM killer struck
    (the kernel log, the cgroup's count), named when there is some.
    A shell reports a child killed by signal N as 128+N; that is read as the signal.
    """
    signum = _signal_of(returncode, signum)
    if stopped:
        if signum == _signal.SIGKILL:
            return "stopped (SIGKILL after the grace period)"
        if signum is not None:
            return f"stopped ({signal_name(signum)})"
        return "stopped" + (f" (exited with code {returncode})" if returncode is not None else "")
    if signum == _signal.SIGKILL and oom:
        return f"killed by SIGKILL: the OOM killer ({oom})"
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
    oom_evidence: str | None = None  # what says the OOM killer struck (kernel log, cgroup count)
    pid: int | None = None  # the (main) process's pid, where known

    @property
    def cause(self) -> str:
        """``SIGKILL · pid 4242``, ``exit code 1 · pid 4242``: how it ended in a word or two, first in
        a DEAD verdict so that no width cuts it."""
        signum = _signal_of(self.returncode, self.signal)
        if not self.exit_known:
            word = "exit status unknown"
        elif signum is not None:
            word = signal_name(signum)
        elif self.returncode is not None:
            word = f"exit code {self.returncode}"
        else:
            word = "exit status unknown"
        return word + (f" · pid {self.pid}" if self.pid else "")

    def dead_text(self, after_ready: bool = False) -> str:
        """The cause (and ``after ready``), then the rest of how it ended where that says more (a
        note, evidence, the command)."""
        signum = _signal_of(self.returncode, self.signal)
        bare = {f"killed by {signal_name(signum)}" if signum is not None else "", f"exited with code {self.returncode}"}
        how = self.end_text
        head = self.cause + (" · after ready" if after_ready else "")
        return head if how in bare else f"{head} · {how}"

    @property
    def exit_text(self) -> str:
        if not self.exit_known:
            return "exit status unknown (not started by Watchtower)"
        return describe_exit(self.returncode, self.signal, stopped=self.stopped_by_user, oom=self.oom_evidence)

    @property
    def end_text(self) -> str:
        """How it ended, naming the process when it is not the launched one."""
        return self.exit_text if self.who is None else f"{self.who} is gone, {self.exit_text}"


#: Where a server says it listens, late in its log (``Uvicorn running on http://0.0.0.0:30000``,
#: vLLM's ``Starting vLLM API server 0 on http://0.0.0.0:8000``): the port ``--smoke`` asks.
LISTENING = re.compile(
    r"(?:Uvicorn running on|API server(?: \d+)? on|[Ll]istening on|[Ss]erving on)\s+"
    r"https?://(?:\[[^\]]+\]|[^\s/:]+):(?P<port>\d{1,5})\b"
)


def listening_port(lines: Iterable[str]) -> int | None:
    """The last port the lines say the server listens on, or None."""
    port = None
    for line in lines:
        if "http" in line and (found := LISTENING.search(line)) is not None and 0 < int(found.group("port")) < 65536:
            port = int(found.group("port"))
    return port


@dataclass(frozen=True, slots=True)
class SmokeStatus:
    """``--smoke``: ready only once one tiny completion answered. ``answer`` is None while it is
    under way; ``url`` None (with ``why_not``) when there is nowhere to send it."""

    url: str | None = None
    answer: SmokeAnswered | None = None
    why_not: str = ""

    @property
    def ok(self) -> bool:
        return self.answer is not None and self.answer.ok


def smoke_verdict(ready: Verdict, smoke: SmokeStatus) -> Verdict:
    """The ready verdict, weighed with ``--smoke``: READY with the time to the first token once it
    answered; a failure naming the status and the server's message; else still starting."""
    answer = smoke.answer
    if answer is None:
        if smoke.url is None:
            return Verdict(FAILED, f"ready marker seen, but --smoke cannot ask: {smoke.why_not}")
        return Verdict(STARTING, f"ready marker seen; smoke test: one completion sent to {smoke.url}",
                       ("smoke test",))
    if not answer.ok:
        return Verdict(FAILED, f"ready marker seen, but the smoke test failed: {answer.detail} ({answer.url})")
    ttft = f"{answer.ttft:.2f} s" if answer.ttft is not None else "?"
    return Verdict(READY, f"{ready.detail} · answers: first token in {ttft} ({answer.model})")


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
            def used(sample: GpuSample) -> int:
                return sum(g.memory_used or 0 for g in sample.gpus if g.index in indices)

            rate = (used(last) - used(first)) / (last.at - first.at)
    return GpuActivity(rate, max(utils) if utils else None, len(last.gpus))


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: VerdictKind
    detail: str  # one line, already masked text from the log (sanitise it before a terminal)
    pending: tuple[str, ...] = ()  # readiness parts not yet met: "log ready marker", "health 200"
    ranks: tuple[str, ...] = ()  # ranks that have not finished the current phase (stalled)
    silence: float | None = None
    node: str | None = None  # several nodes: the node it is about (the failing, dead or silent one)
    #: The word of whoever ended it, where that says more than the kind: a Slurm job's own end
    #: (CANCELLED, TIMEOUT, FAILED, COMPLETED). The kind still gives the exit status.
    label: str | None = None

    @property
    def word(self) -> str:
        return self.label or self.kind.upper()

    @property
    def final(self) -> bool:
        return self.kind in (READY, FAILED, DEAD, STOPPED, REFUSED)

    @property
    def text(self) -> str:
        word = f"{self.word} on {self.node}" if self.node else self.word
        return f"{word}: {self.detail}" if self.detail else word

    @property
    def exit_status(self) -> int:
        """0 ready (or stopped after ready), 1 failed or dead, 3 still starting: every command's."""
        if self.kind in (READY, STOPPED):
            return EXIT_READY
        if self.kind in (FAILED, DEAD, REFUSED):
            return EXIT_FAILED
        return EXIT_STARTING


#: Error kinds the tracker makes up from a process exit rather than reads in the log.
EXIT_KINDS = frozenset({"killed", "exited"})


def log_error(state: StartupState) -> ErrorReport | None:
    """The root-cause error the log itself holds (not one made up from the process's exit)."""
    fatal = [e for e in state.errors if e.fatal and e.kind not in EXIT_KINDS]
    primary = [e for e in fatal if not e.secondary]
    return earliest(primary) or (fatal[0] if fatal else None)


def unfinished_ranks(state: StartupState) -> tuple[str, ...]:
    """Ranks that have not ended the running phase, including ranks that never began it."""
    phase = state.current_phase
    if phase is None:
        return ()
    pending = sorted((r.rank for r in phase.ranks.values() if r.end_line is None), key=_natural)
    pending += sorted((r for r in state.ranks if r not in phase.ranks and r != "main"), key=_natural)
    return tuple(pending)


def _natural(rank: str) -> tuple[int | str, ...]:
    """TP2 before TP10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", rank))


def judge(
    state: StartupState,
    process: ProcessStatus | None = None,
    health: HealthStatus | None = None,
    gpus: GpuActivity | None = None,
    *,
    now: float | None = None,
    last_activity: float | None = None,
    last_line: str | None = None,
    waiting: str | None = None,
    elapsed: float | None = None,
    expected_phase: float | None = None,
    limits: StallLimits | None = None,
    eta: str | None = None,
    timed_out: float | None = None,
    blind: str | None = None,
    loading: str | None = None,
    smoke: SmokeStatus | None = None,
) -> Verdict:
    """The verdict for this instant.

    ``last_activity``: when the log last grew (or the attempt started, before any
    line). Without a process or a health URL, the log's own reading (a quiet log weighed
    with ``gpus`` and the limits): ``waiting`` says why no line has come yet, ``elapsed``
    is the startup's time when the log gives no ready time. Always: ``expected_phase`` is the longest the running phase has
    taken in history, ``limits`` the ``--stall-limit`` (default and per phase), which
    overrides history (the profile's own per-phase limits come with ``state``),
    ``eta`` text such as "weight load 4:51 of ~10:28" to show while starting.
    ``timed_out``: the ``--timeout`` (s), once it passed with the startup undecided.
    ``blind``: why neither the log nor the processes can be seen now (an SSH connection lost, or
    never made): an undecided startup is then "cannot tell", never stalled? or dead.
    ``loading``: the weight load's progress in words while its bytes still move (read by the
    server's processes, or GPU memory growing: ``tui.core.loading``) — a quiet log is then loading.
    ``smoke``: ``--smoke``'s completion — ready only once it answered (:func:`smoke_verdict`).
    """
    silence = None if last_activity is None or now is None else max(0.0, now - last_activity)
    undecided = state.outcome == Outcome.STARTING and (process is None or process.alive)
    if timed_out is not None:
        cannot = f"cannot tell: {blind} · " if blind and undecided else ""
        return Verdict(TIMEOUT, f"after {clock(timed_out, unknown='—')}, still starting · {cannot}"
                       + _starting_words(state, silence, waiting), silence=silence)
    if blind and undecided:
        return Verdict(STARTING, f"cannot tell: {blind} · last known: {_starting_words(state, None, waiting)}")
    if process is None and health is None:  # the log's reading; its silence weighed with the GPUs
        log = _log_verdict(state, silence, waiting, elapsed)
        if log.kind == READY and smoke is not None:
            return smoke_verdict(log, smoke)
        if log.kind != STARTING or not state.lines:
            return log
        if loading is not None:
            log = Verdict(STARTING, loading, silence=silence)
        phase = state.current_phase
        where = loading or (phase_words(phase) if phase else "starting")
        return _quiet_verdict(state, silence, None, gpus, expected_phase, limits, where, loading=loading) or log
    said = f"log said last: {last_line!r}" if last_line else "the log is empty"
    error = log_error(state)
    failed = state.outcome == Outcome.FAILED and error is not None
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
            return Verdict(STOPPED, how)  # "stopped (SIGKILL after the grace period)"
        if failed and error_text:
            return Verdict(FAILED, f"{error_text}; {how}")
        if state.outcome in (Outcome.READY, Outcome.STOPPED) or state.ready_line is not None:
            polite = process.returncode == 0 or process.signal in (_signal.SIGINT, _signal.SIGTERM)
            if polite or (not process.exit_known and state.outcome == Outcome.STOPPED):  # the log said it stops
                return Verdict(STOPPED, f"stopped after ready, {how}")
            return Verdict(DEAD, f"{process.dead_text(after_ready=True)}; {said}")
        return Verdict(DEAD, f"{process.dead_text()}; {said}")

    if process is not None and process.lost and not process.stopped_by_user:
        ranks = (process.lost_rank,) if process.lost_rank else ()
        if failed and error_text:
            return Verdict(FAILED, f"{error_text}; {process.lost}", ranks=ranks)
        if state.outcome in (Outcome.READY, Outcome.STOPPED):
            return Verdict(DEAD, f"{process.lost}, after ready; {said}", ranks=ranks)
        return Verdict(FAILED, f"{process.lost}; {said}", ranks=ranks)
    if failed:
        tail = "; the process is still running" if process is not None else ""
        return Verdict(FAILED, (error_text or "failed") + tail)
    if state.outcome == Outcome.STOPPED:
        return Verdict(STOPPED, state.stop_reason or "stopped")

    log_ready = state.outcome == Outcome.READY
    pending = tuple(
        p for p, met in (("log ready marker", log_ready), ("health 200", health is None or health.ok)) if not met
    )
    if not pending:
        total = (state.last_ts - state.first_ts) if (state.first_ts and state.last_ts) else None
        ready = Verdict(READY, f"ready in {clock(total)}" if total is not None else "ready")
        return ready if smoke is None else smoke_verdict(ready, smoke)

    if log_ready and health is not None:  # only the health check is missing
        return Verdict(STARTING, f"ready marker seen; waiting for {health.url}: {health.detail}{_pending(pending)}",
                       pending, (), silence)

    phase = state.current_phase
    where = loading or eta or (phase_words(phase) if phase else "starting")
    if health is not None and not health.ok:
        where += f" · health: {health.detail}{_pending(pending)}"
    quiet = _quiet_verdict(state, silence, process, gpus, expected_phase, limits, where, pending, loading=loading)
    if quiet is not None:
        return quiet
    if silence is None or silence < QUIET_AFTER:
        return Verdict(STARTING, where, pending, (), silence)
    return Verdict(STARTING, f"log quiet {clock(silence)} · {where}", pending, (), silence)


def _quiet_verdict(
    state: StartupState,
    silence: float | None,
    process: ProcessStatus | None,
    gpus: GpuActivity | None,
    expected_phase: float | None,
    limits: StallLimits | None,
    where: str,
    pending: tuple[str, ...] = (),
    *,
    loading: str | None = None,
) -> Verdict | None:
    """A quiet log: still loading (the GPUs work) or stalled? (past the phase's limit, GPUs idle,
    the process alive); None while neither can be said. A wait for resources (queued) is neither:
    its silence is the wait, and busy GPUs are another job's (it holds none yet); only a limit the
    user set for it (``--stall-limit queued=…``) makes it stalled?."""
    phase = state.current_phase
    queued = phase is not None and phase.name == QUEUED
    if queued and QUEUED not in (limits or NO_LIMITS).phases:
        return None
    threshold, why = (limits or NO_LIMITS).threshold(
        phase.name if phase else None, expected=expected_phase, profile=state.stall_after
    )
    if silence is None or silence < min(QUIET_AFTER, threshold):
        return None
    if loading is not None:  # the checkpoint's bytes still move: where says how far
        busy = f"{gpus.text} · " if gpus is not None and gpus.active else ""
        return Verdict(LOADING, f"log quiet {clock(silence)} · {busy}{where}", pending, (), silence)
    if gpus is not None and gpus.active and not queued:
        return Verdict(LOADING, f"log quiet {clock(silence)} · {gpus.text} · {where}", pending, (), silence)
    if silence <= threshold or (process is not None and not process.alive):
        return None
    ranks = unfinished_ranks(state)
    phase_title = PHASE_TITLES.get(phase.name, phase.name) if phase else "the phase"
    parts = [f"log silent {clock(silence)}, {why}", gpus.text if gpus is not None else "no GPU data"]
    if ranks:
        parts.append(f"{', '.join(ranks)} not done with {phase_title}")
    if process is not None:
        parts.append("its process alive")
    return Verdict(STALLED, " · ".join(parts), pending, ranks, silence)


def _pending(pending: tuple[str, ...]) -> str:
    return " · pending: " + ", ".join(pending) if pending else ""


#: Log silence (s) before the log-only verdict mentions it.
QUIET_NOTE = 10.0


def _log_verdict(state: StartupState, silence: float | None, waiting: str | None, elapsed: float | None) -> Verdict:
    """The log's own reading, when nothing else is known (no process, no health URL)."""
    if state.outcome == Outcome.READY:
        ready = state.phase("ready")
        start = origin(state)
        total = None
        at = None if ready is None else (ready.end_ts if ready.end_ts is not None else ready.start_ts)
        if at is not None and start is not None:
            total = at - start  # to the ready marker itself
        if total is None:
            total = elapsed
        line = f" · line {state.ready_line}" if state.ready_line else ""
        return Verdict(READY, f"in {clock(total, unknown='—')}{line}")
    if state.outcome == Outcome.FAILED:
        error = state.first_error
        if error is not None:
            where = " · ".join(p for p in (error.rank or "", f"line {error.line}") if p)
            after = state.follow_on(error)
            then = f" · then line {after.line}: {after.kind}" if after is not None else ""
            return Verdict(FAILED, f"{where} · {error.title}{then}")
        return Verdict(FAILED, state.stop_reason or "the server died")
    if state.outcome == Outcome.STOPPED:
        return Verdict(STOPPED, state.stop_reason or "the server shut down after ready")
    return Verdict(STARTING, _starting_words(state, silence, waiting), silence=silence)


def _starting_words(state: StartupState, silence: float | None, waiting: str | None) -> str:
    """Where a startup that is still undecided is."""
    phase = state.current_phase
    if phase is None and not state.lines:
        return f"waiting for the log ({waiting or 'no log output yet'})"
    parts = []
    if phase is not None:
        parts.append(phase_words(phase))
        if phase.progress is not None:
            parts.append(f"{phase.progress:.0%}")
        if phase.detail and phase.name != QUEUED:  # (a wait's detail is in its words)
            parts.append(phase.detail)
    if silence is not None and silence >= QUIET_NOTE:
        parts.append(f"log quiet for {clock(silence, unknown='—')}")
    if not parts:  # lines, but no phase begun: say what was read, not that reading goes on
        parts.append(f"{state.lines:,} line{'' if state.lines == 1 else 's'} read, no startup phase yet")
    return " · ".join(parts)
