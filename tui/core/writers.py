"""What is known of the server behind a log Watchtower did not launch: its processes.

The writer events (``WritersFound``, ``WriterGone``, ``NoWriter``; found from /proc
locally and by the remote agent) are facts; :class:`WriterState` keeps them and turns
them into the ``ProcessStatus`` the verdict judges: the main process gone is *dead*, a
rank's process gone while the main one lives is a *failure*, both naming the process.

A rank is a rank by evidence, not by its title alone: the discovery names a role only for a
process that executed as one (``tui.sources.writers``: not a fork of its parent that has not
executed yet, not a descendant of a rank); the log naming its pid in a rank's prefix
(``(Worker pid=N)``, :meth:`WriterState.logged`) or a GPU listing it as a holder
(``GpuSample``) makes any process of the tree one. Anything else is a helper (a compiler, a
probe, a resource tracker): its end is counted (:class:`Helpers`), never a verdict.
Whether a process exited with a code or by a signal can only be known for a child of
ours: for a process someone else started it is honestly "exit status unknown". Pure.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from tui.core.events import GpuSample, NoWriter, ServerProcess, WriterGone, WritersFound
from tui.core.verdict import ProcessStatus

#: Roles whose process a startup cannot do without (a helper ``child`` may come and go).
ESSENTIAL = frozenset({"main", "rank", "engine", "detokenizer"})
#: Ended processes kept for the process tree view.
GONE_KEPT = 32
#: Ended helpers kept for the process tree's expanded view (all are counted).
HELPERS_KEPT = 32


@dataclass(slots=True)
class Helpers:
    """The helpers of the server's tree that ended: how many, and how (a process Watchtower did
    not start is reaped by its parent, so its exit status is mostly unknown, and said so)."""

    ended: int = 0
    exited_zero: int = 0
    failed: int = 0  # exited non-zero or by a signal
    recent: deque[WriterGone] = field(default_factory=lambda: deque(maxlen=HELPERS_KEPT))

    def add(self, gone: WriterGone) -> None:
        self.ended += 1
        if gone.exit_known:
            if gone.returncode == 0 and gone.signal is None:
                self.exited_zero += 1
            else:
                self.failed += 1
        self.recent.append(gone)

    @property
    def unknown(self) -> int:
        return self.ended - self.exited_zero - self.failed


def describe(process: ServerProcess) -> str:
    """``pid 4242 (python -m sglang.launch_server --tp 8)``: a process, for a verdict line."""
    what = (process.command or process.title or "?").replace("\n", "␊")  # (`python -c` code): one line, as shown
    if len(what) > 120:  # long paths give way first: the script and flags say which server this is
        what = " ".join(_tail(word) for word in what.split(" "))
    if len(what) > 120:
        what = what[:119] + "…"
    return f"pid {process.pid} ({what})"


def _tail(word: str) -> str:
    """``/a/long/venv/bin/python`` → ``…/python``; a short word or a flag's value stays whole."""
    head, slash, name = word.rpartition("/")
    return f"…/{name}" if slash and name and len(word) > 24 and not word.startswith("-") else word


def role_words(process: ServerProcess, logged: str | None = None, evidence: bool = False) -> str:
    """``TP3``, ``Worker`` (``logged``: the log's name for it), ``engine``, ``helper``: a process's
    role in words; a process of no role's title is a rank only by ``evidence`` (its lines, a GPU)."""
    if process.rank:
        return process.rank
    if process.role == "child":
        return logged or ("rank" if evidence else "helper")
    return process.role


@dataclass(frozen=True, slots=True)
class Survivor:
    """A dead server's process that still runs (a rank holding its GPU, a helper), with its role
    in words: what a last line or ``q``'s question names, and ``kill`` stops. Found by writer
    discovery (a watch's) or in a launch's process group — said the one way."""

    process: ServerProcess
    label: str  # ``TP0``, ``engine``, ``helper`` (:func:`role_words`)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def words(self) -> str:
        """``pid 4243 [TP0] (sglang::scheduler_TP0)``."""
        pid, _, what = describe(self.process).partition(" (")
        return f"{pid} [{self.label}] ({what}"


@dataclass(slots=True)
class WriterState:
    """The processes behind the log, as the writer events last told (``apply`` each one)."""

    processes: tuple[ServerProcess, ...] = ()  # alive, parents first
    gone: list[WriterGone] = field(default_factory=list)  # ended, oldest first (the last GONE_KEPT)
    no_writer: NoWriter | None = None  # why no writer can be named, until one is
    via: str = "fd"
    main_pid: int | None = None
    main_gone: WriterGone | None = None  # the main process ended
    lost: WriterGone | None = None  # the first essential process that ended while the main one lived
    #: pid -> what shows it is one of the server's ranks beyond its title: "writes the (Worker) lines", "holds GPU 3"
    evidence: dict[int, str] = field(default_factory=dict)
    helpers: Helpers = field(default_factory=Helpers)  # the helpers that ended
    _logged: dict[int, str] = field(default_factory=dict)  # pid -> name: the log's rank prefixes

    def essential(self, process: ServerProcess) -> bool:
        """Whether the startup cannot do without ``process``: its role (the main process, a rank
        that executed as one, the engine, the detokenizer) or evidence (its lines, a GPU)."""
        return process.role in ESSENTIAL or process.pid in self.evidence

    def label(self, process: ServerProcess) -> str:
        """``TP3``, ``Worker`` (the log's name for it), ``engine``, ``helper``: a process's role in words."""
        return role_words(process, self._logged.get(process.pid), process.pid in self.evidence)

    def logged(self, pids: Mapping[str, str]) -> bool:
        """The log's rank prefixes named these processes (pid -> the prefix's name, ``Worker_TP0``):
        each of them writes a rank's lines. True when that is new evidence for a known process."""
        changed = False
        for key, name in pids.items():
            try:
                pid = int(key)
            except ValueError:
                continue
            if self._logged.get(pid) != name:
                self._logged[pid] = name
                if pid not in self.evidence:
                    self.evidence[pid] = f"writes the ({name}) lines"
                    changed = changed or pid in self.pids
        return changed

    def apply(self, event: object) -> bool:
        """Take one writer event (or a GPU sample: which processes hold a GPU); True when it
        changed what is known."""
        if isinstance(event, GpuSample):
            return self._gpu_holders(event)
        if isinstance(event, WritersFound):
            main = next((p for p in event.processes if p.role == "main"), None)
            if main is not None and main.pid != self.main_pid:  # a (new) server writes the log
                self.main_pid, self.main_gone, self.lost = main.pid, None, None
            self.processes, self.via, self.no_writer = event.processes, event.via, None
            return True
        if isinstance(event, WriterGone):
            self.processes = tuple(p for p in self.processes if p.pid != event.process.pid)
            was_main = event.main or event.process.pid == self.main_pid
            if not was_main and not self.essential(event.process):
                self.helpers.add(event)  # a helper ended: a fact, not a verdict
                return True
            self.gone = [*self.gone[-(GONE_KEPT - 1) :], event]
            if was_main:
                self.main_gone = self.main_gone or event
            elif self.lost is None and self.main_gone is None:
                self.lost = event
            return True
        if isinstance(event, NoWriter):
            changed = self.no_writer is None or self.no_writer.reason != event.reason
            self.no_writer = event
            return changed
        return False

    def _gpu_holders(self, sample: GpuSample) -> bool:
        """Processes of the tree that a GPU lists as holding its memory (where the source names pids)."""
        if not self.processes:
            return False
        pids = self.pids
        changed = False
        for gpu in sample.gpus:
            for held in gpu.processes:
                if held.pid in pids and held.pid not in self.evidence:
                    self.evidence[held.pid] = f"holds GPU {gpu.index}"
                    changed = True
        return changed

    def verdict_inputs(self) -> tuple[object, ...]:
        """What of this state the verdict reads (the main process, what was lost, the processes
        that matter): a helper coming or going changes none of it, so it needs no new judging."""
        essential = tuple(p.pid for p in self.processes if self.essential(p))
        reason = self.no_writer.reason if self.no_writer is not None else None
        return self.main_pid, id(self.main_gone), id(self.lost), reason, essential, bool(self.processes)

    @property
    def known(self) -> bool:
        return bool(self.processes) or self.main_gone is not None

    @property
    def pids(self) -> frozenset[int]:
        return frozenset(p.pid for p in self.processes)

    @property
    def survivors(self) -> tuple[Survivor, ...]:
        """The server's processes still alive after its main process ended (its ranks, holding
        their GPUs): nothing will stop them but an operator. Empty while the main process lives."""
        return tuple(Survivor(p, self.label(p)) for p in self.processes) if self.main_gone is not None else ()

    def status(self) -> ProcessStatus | None:
        """The server's processes as the verdict sees them; None while no writer is known."""
        gone = self.main_gone
        if gone is not None:
            return ProcessStatus(
                alive=False,
                returncode=gone.returncode,
                signal=gone.signal,
                exit_known=gone.exit_known,
                who=f"main process {describe(gone.process)}",
                pid=gone.process.pid,
            )
        if not self.processes:
            return None
        main = next((p for p in self.processes if p.pid == self.main_pid), self.processes[0])
        lost = None
        if self.lost is not None:
            process = self.lost.process
            label = self.label(process)
            which = f"{process.rank}'s process" if process.rank else f"the {label} process"
            how = ProcessStatus(False, self.lost.returncode, self.lost.signal, exit_known=self.lost.exit_known)
            lost = f"{which} {describe(process)} is gone, {how.exit_text}, while the main process {main.pid} lives"
        return ProcessStatus(alive=True, who=f"main process {describe(main)}", lost=lost,
                             lost_rank=self.lost.process.rank if self.lost is not None else None)
