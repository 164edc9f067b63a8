"""The verdict, decided in one place and pushed.

A :class:`Judging` stage decides its owner's verdict — a node's session, or the attempt several
nodes make together — after each batch of events and once a second (silence and stall limits
change with time alone). It is the one place verdicts are pushed from (:func:`tui.core.evidence.decide`, where
:func:`~tui.core.evidence.judge` is called): its owner
hands it a :class:`~tui.core.evidence.Weighing` (a node's state and evidence) or a verdict already
decided without weighing (a refused launch, the verdict the nodes make together from theirs). When the verdict or its hints change
it pushes a :class:`VerdictChanged` to its subscribers: the header, the footer, the plain
presenters, the launch's outcome writer. They render or act on the last one; none decides.

The hints are diagnosed here too, once: a failure's known-failure hints (with the launched
command line's numbers, where a launch told the session its command), and the note of each
warning that predicts trouble.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeAlias

from tui.core.evidence import Weighing, decide
from tui.core.profiles import ProfileError
from tui.core.verdict import DEAD, FAILED, REFUSED, Verdict

if TYPE_CHECKING:
    from tui.core.hints import Diagnosis

#: The verdicts whose known-failure hints are shown (and whose first fix ``F`` applies).
FAILING = frozenset({FAILED, DEAD, REFUSED})
#: Distinct warning texts whose note is remembered (a flood of one warning costs one lookup).
NOTED_TEXTS = 1024


@dataclass(frozen=True, slots=True)
class VerdictChanged:
    """The verdict now, the one before it, a failure's hints (the first one's fix is what ``F``
    applies) and the latest note of a warning that predicts trouble (shown while starting)."""

    verdict: Verdict
    previous: Verdict | None
    hints: tuple[Diagnosis, ...] = ()
    note: Diagnosis | None = None

    @property
    def kind_changed(self) -> bool:
        """Another kind of verdict (what the footer's keys and the launch panels follow), not only
        new words for the same one (a count of lines read changes with every batch of a flood)."""
        return self.previous is None or self.previous.kind != self.verdict.kind or bool(self.hints)


@dataclass(frozen=True, slots=True)
class NoteFound:
    """A warning's hint, the first time it came this attempt (right after the warning itself in
    ``WatchSession.listen``'s queue): the plain presenters print it as it is diagnosed here."""

    hint: Diagnosis


Read = Callable[[], Verdict | Weighing]  # the owner's evidence now (or a verdict decided without weighing)
Diagnose: TypeAlias = "Callable[[Verdict], list[Diagnosis]]"  # a failing verdict's hints
Subscriber = Callable[[VerdictChanged], None]


class Judging:
    """Decides from ``read`` (the evidence as its owner has it now) and diagnoses with ``diagnose``
    (a failure's hints)."""

    def __init__(self, read: Read, diagnose: Diagnose, quiet_note: Callable[[], Diagnosis | None] = lambda: None) -> None:
        self.read = read
        self.diagnose = diagnose
        #: What a startup still under way is doing meanwhile, from the log alone (a silent download,
        #: a restart that compiles cold again): the note shown before any warning's.
        self.quiet_note = quiet_note
        #: The last verdict pushed (None until the first decision).
        self.last: VerdictChanged | None = None
        self._subscribers: list[Subscriber] = []
        self._notes: dict[str, Diagnosis] = {}  # hint id -> the warning's note, latest last
        self._noted: dict[str, Diagnosis | None] = {}  # warning text -> its note (None: no hint)

    def subscribe(self, callback: Subscriber) -> None:
        self._subscribers.append(callback)

    @property
    def subscribed(self) -> bool:
        """Someone follows the pushes (else deciding waits until asked: a node of several)."""
        return bool(self._subscribers)

    def evaluate(self) -> VerdictChanged:
        """Decide now; push a change (verdict, node, hints or note) to the subscribers."""
        verdict = decide(self.read())
        hints = tuple(self.diagnose(verdict)) if verdict.kind in FAILING else ()
        note = None if verdict.final else self.quiet_note()
        note = note or next(reversed(self._notes.values()), None)
        last = self.last
        if last is not None and _key(last.verdict) == _key(verdict) and _ids(last.hints) == _ids(hints) and last.note == note:
            return last
        self.last = change = VerdictChanged(verdict, None if last is None else last.verdict, hints, note)
        for callback in list(self._subscribers):
            callback(change)
        return change

    @property
    def verdict(self) -> Verdict:
        """The verdict last decided (decided now if it never was)."""
        return (self.last or self.evaluate()).verdict

    @property
    def hints(self) -> tuple[Diagnosis, ...]:
        return (self.last or self.evaluate()).hints

    def warning(self, text: str, line: int, server: str | None) -> Diagnosis | None:
        """Note the hint of a warning that predicts trouble (the latest shown while starting);
        the hint when it is new this attempt."""
        if text in self._noted:
            found = self._noted[text]
        else:
            from tui.core.hints import knowledge  # (imported once a warning needs it: see WatchSession.quiet_note)

            try:
                found = knowledge().for_warning(text, line=line, server=server)
            except ProfileError:  # refused with its one line when the watch began
                found = None
            if len(self._noted) >= NOTED_TEXTS:
                self._noted.clear()
            self._noted[text] = found
        if found is None:
            return None
        new = self._notes.pop(found.id, None) is None
        self._notes[found.id] = found = replace(found, line=line)
        return found if new else None

    def new_attempt(self) -> None:
        """A relaunch or a new startup in the log: the last attempt's verdict and notes go (the
        next decision is pushed, whatever it is)."""
        self.last = None
        self._notes.clear()
        self._noted.clear()


def _key(verdict: Verdict) -> tuple[str, str, str | None]:
    return verdict.kind, verdict.detail, verdict.node


def _ids(hints: tuple[Diagnosis, ...]) -> tuple[str, ...]:
    return tuple(hint.id for hint in hints)
