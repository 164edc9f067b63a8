"""What is known of the server behind a log Watchtower did not launch: its processes.

The writer events (``WritersFound``, ``WriterGone``, ``NoWriter``; found from /proc
locally and by the remote agent) are facts; :class:`WriterState` keeps them and turns
them into the ``ProcessStatus`` the verdict judges: the main process gone is *dead*, a
rank's process gone while the main one lives is a *failure*, both naming the process.
Whether a process exited with a code or by a signal can only be known for a child of
ours: for a process someone else started it is honestly "exit status unknown". Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui.core.events import NoWriter, ServerProcess, WriterGone, WritersFound
from tui.core.verdict import ProcessStatus

#: Roles whose process a startup cannot do without (a helper ``child`` may come and go).
ESSENTIAL = frozenset({"main", "rank", "engine", "detokenizer"})
#: Ended processes kept for the process tree view.
GONE_KEPT = 32


def describe(process: ServerProcess) -> str:
    """``pid 4242 (python -m sglang.launch_server --tp 8)``: a process, for a verdict line."""
    what = (process.command or process.title or "?").replace("\n", "␊")  # (`python -c` code): one line, as shown
    if len(what) > 120:
        what = what[:119] + "…"
    return f"pid {process.pid} ({what})"


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

    def apply(self, event: object) -> bool:
        """Take one writer event; True when it changed what is known."""
        if isinstance(event, WritersFound):
            main = next((p for p in event.processes if p.role == "main"), None)
            if main is not None and main.pid != self.main_pid:  # a (new) server writes the log
                self.main_pid, self.main_gone, self.lost = main.pid, None, None
            self.processes, self.via, self.no_writer = event.processes, event.via, None
            return True
        if isinstance(event, WriterGone):
            self.gone = [*self.gone[-(GONE_KEPT - 1) :], event]
            self.processes = tuple(p for p in self.processes if p.pid != event.process.pid)
            if event.main or event.process.pid == self.main_pid:
                self.main_gone = self.main_gone or event
            elif event.process.role in ESSENTIAL and self.lost is None and self.main_gone is None:
                self.lost = event
            return True
        if isinstance(event, NoWriter):
            changed = self.no_writer is None or self.no_writer.reason != event.reason
            self.no_writer = event
            return changed
        return False

    @property
    def known(self) -> bool:
        return bool(self.processes) or self.main_gone is not None

    @property
    def pids(self) -> frozenset[int]:
        return frozenset(p.pid for p in self.processes)

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
            which = f"{process.rank}'s process" if process.rank else f"the {process.role} process"
            how = ProcessStatus(False, self.lost.returncode, self.lost.signal, exit_known=self.lost.exit_known)
            lost = f"{which} {describe(process)} is gone, {how.exit_text}, while the main process {main.pid} lives"
        return ProcessStatus(alive=True, who=f"main process {describe(main)}", lost=lost,
                             lost_rank=self.lost.process.rank if self.lost is not None else None)
