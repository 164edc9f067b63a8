"""Error classification: whole traceback blocks and one-line signatures.

A traceback is grouped from ``Traceback (most recent call last):`` (also SGLang's
``Scheduler hit an exception: Traceback …`` and vLLM's re-prefixed ``ERROR …``
lines) to its final ``SomeError: message`` line, whatever the exception type; a
chained traceback ("During handling of the above exception …") stays one error
whose cause is the *last* exception. Blocks of several ranks may interleave line
by line: a line with a rank goes to that rank's block, an unprefixed one to the
oldest open block that expects a line of its shape (``File "…"`` after a header
or a code line, code after ``File``, the exception after code).

The report is made the moment the exception line arrives, so a live view shows
it at once; a chain or message lines that follow update the same ``ErrorReport``
(indented ones, as pydantic's ``ValidationError`` writes them, join its message).
Python's own shapes are known here: ``Exception ignored in: …`` before a block makes it
a warning (the program goes on), an ``ExceptionGroup``'s ``|`` gutter is read through,
a bare ``raise Boom`` ends a block with the class alone, and a wrapper whose message is
another exception (``InductorError: OutOfMemoryError: …``) is reported as that one.
Interleaved blocks, chains and these shapes share one block state machine.

Pasted logs lose a traceback's first lines (an issue's excerpt, a terminal's last screen): frames
with no ``Traceback`` line above them open a block of their own, reported if its exception line
comes, or as cut short if the log ends inside it (a logger's ``Stack (most recent call last):``
has frames, no exception, and lines after them: no error).
An exception logged alone (``str(e)``, no traceback) keeps the plain lines that follow it, as a
block keeps the lines after its exception line: its message wrapped over several lines, or a
compiler's words the exception carries (``PTXASError: …`` then ptxas's own stderr).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from tui.core.profiles import Profile, Signature, any_of
from tui.core.quicktest import Memo
from tui.core.state import ErrorReport

TRACEBACK = "Traceback (most recent call last)"
_CHAIN = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)
# "torch.OutOfMemoryError: CUDA out of memory…", "KeyError: 'x'", "MemoryError", "mod.Custom: …"
_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*(?P<exc>[A-Za-z_]\w*)(?::(?: (?P<text>.*))?)?$")
_PROCESS_HEADER = re.compile(r"Process [\w\-]+:$")
#: Levels that mean an error whatever the server (a profile's own error levels are added): a record at one
#: of them right before a traceback of the same record is its message (``logger.exception``'s shape:
#: "ERROR … [engine.py:448] Bfloat16 is only supported …", then "ERROR … [engine.py:448] Traceback …").
ERROR_WORDS = frozenset({"ERROR", "CRITICAL", "FATAL"})
# "Exception ignored in: <function Foo.__del__ …>" (also "… on calling ctypes callback …"):
# the traceback that follows was printed and then the program went on.
_IGNORED = "Exception ignored "
# An ExceptionGroup's traceback draws a gutter: "  | " before each line, "  +-+---- 1 ----" rules.
_GROUP = "Exception Group Traceback"
_GUTTER = re.compile(r"^\s*\| ?")
_RULE = re.compile(r"^\s*\+[-+ \d]*$")
# A wrapper's message that is another exception: "OutOfMemoryError: HIP out of memory …"
_EMBEDDED = re.compile(r"(?:[A-Za-z_]\w*\.)*(?P<exc>[A-Z]\w*(?:Error|Exception)): (?P<text>.*)$")
# Words a shell prints alone on a line after a block: never a bare exception class.
_SHELL_WORDS = frozenset({"Killed", "Terminated", "Aborted", "Hangup", "Done", "Stopped"})
# A bare name with no message is an exception line only if it reads like one ("MemoryError",
# "mod.Custom"), not a word such as "Killed" that the shell prints after a block.
#: the field a pydantic ValidationError names, alone on its line ("max_num_seqs", "speculative_config.method")
_FIELD = re.compile(r"^[A-Za-z_][\w.\[\],]*$")  # ("hf_overrides.dict[str,any]": a union's branch)
_BARE_EXCEPTION = re.compile(r"(?:Error|Exception|Exit|Interrupt|Iteration|Warning)$")
#: Python's warning as ``warnings`` prints it ("…/resource_tracker.py:254: UserWarning: …", then its
#: source line indented): another message, not a line of the exception just before it (a real vLLM
#: prints one right after "RuntimeError: Engine core initialization failed …" as it exits).
_PY_WARNING = re.compile(r"\S+\.py:\d+: [A-Z]\w*Warning: ")

#: A block still waiting for its exception line is closed after this many lines that could have
#: been its own (its rank's, or unranked) went elsewhere; lines of other ranks do not count, nor
#: does a logger line that interleaves: the body may go on hundreds of lines later. One with its
#: exception line is closed sooner (AFTER_EXCEPTION_LINES of any kind).
STALE_LINES = 200
AFTER_EXCEPTION_LINES = 20
#: Lines of a block kept in memory (a sample for display): its head and its tail. The
#: whole block is its line ranges (``ErrorReport.spans``); its text comes from the scrollback
#: or the file (``WatchSession.block_text``).
HEAD, TAIL = 4, 30
#: Exception lines of a chain kept with the sample wherever they fall ("The above exception was the direct
#: cause of …"): a cause between the head and the tail names the failure the last exception wraps.
CHAIN_KEPT = 8
#: Ranges kept per block: a block interleaved with more runs than this is widened over them.
MAX_SPANS = 4096
MESSAGE_CAP = 500
#: A fatal one-line error that follows another of its rank within this many lines (the server
#: telling one failure in its layers: llama.cpp's allocator, loader, server and main each print a
#: line) is that failure's next line, not an error of its own.
JOINED_GAP = 2
#: The kind of a line logged at one of the profile's ``error_levels`` that no signature names.
LOGGED_ERROR = "logged_error"
#: A message that goes on over indented lines is kept whole, up to this.
LONG_MESSAGE_CAP = 2000

# block states: after the Traceback line, after a File line, after a code (or caret) line,
# after the exception line, after "During handling …"
_TB, _FILE, _CODE, _EXC, _CHAIN_STATE = range(5)
_FRAME = (_FILE, _CODE)


@dataclass(slots=True)
class _Block:
    rank: str | None
    line: int
    ts: float | None
    offset: int | None = None  # byte offset of its first line in the stream
    state: int = _TB
    last: int = 0  # line number of the latest line fed to it
    missed: int = 0  # lines since then that could have been its own (its rank's or unranked)
    exc_line: int = 0  # line number of its exception line
    head: list[tuple[int, str]] = field(default_factory=list)
    tail: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=TAIL))
    exceptions: list[tuple[int, str]] = field(default_factory=list)  # its chain's exception lines (CHAIN_KEPT)
    spans: list[list[int]] = field(default_factory=list)  # [first, last] runs of its line numbers
    report: ErrorReport | None = None
    warning: bool = False  # logged at a warning level: a warning with a traceback, not a failure
    group: bool = False  # an ExceptionGroup's traceback (lines in a "|" gutter)
    ignored: bool = False  # after "Exception ignored in: …": the program went on (a warning)
    headless: bool = False  # frames with no Traceback line above them: an error only once its exception line comes
    headline: str | None = None  # the logger's message the record gave before its traceback (logger.exception)

    def add(self, number: int, text: str) -> None:
        if len(self.head) < HEAD:
            self.head.append((number, text))
        else:
            self.tail.append((number, text))
        self.touch(number)

    def touch(self, number: int) -> None:
        """Line ``number`` belongs to the block (a blank line inside it, too)."""
        spans = self.spans
        if spans and spans[-1][1] >= number - 1:
            spans[-1][1] = max(spans[-1][1], number)
        elif len(spans) < MAX_SPANS:
            spans.append([number, number])
        else:
            spans[-1][1] = number  # widened over the lines between: bounded whatever the interleaving
        self.last = number
        self.missed = 0

    def exception(self, number: int, text: str) -> None:
        """Line ``number`` is one of its chain's exception lines: kept with the sample (CHAIN_KEPT at most)."""
        self.add(number, text)
        if len(self.exceptions) < CHAIN_KEPT:
            self.exceptions.append((number, text))

    def lines(self) -> list[tuple[int, str]]:
        """The sample: head and tail, and a chain's exception lines between them."""
        kept = self.head + list(self.tail)
        first_tail = self.tail[0][0] if self.tail else None
        between = [e for e in self.exceptions if first_tail is not None and self.head[-1][0] < e[0] < first_tail]
        return sorted(kept + between) if between else kept


def _cut_short(lines: list[tuple[int, str]], last: int, headline: str | None = None) -> str:
    """What is known of a traceback that never got its exception line: the message its logger gave
    before it (``logger.exception``: the exception's own words), or where the log left it and its
    deepest frame (the code that was running), if any came."""
    frame = next((t.strip() for _, t in reversed(lines) if t.lstrip().startswith('File "')), None)
    if headline:
        where = "" if frame is None else f"; the last frame: {frame}"
        return f"{headline.strip()} (its traceback cut short at line {last}, with no exception line{where})"
    if frame is None:
        return f"traceback cut short: the log leaves it at line {last} before any frame or exception line"
    return f"traceback cut short at line {last}, with no exception line; the last frame: {frame}"


class Classifier:
    """Feed it each line's parsed parts; it returns the errors made or updated, and warnings."""

    def __init__(self, profile: Profile) -> None:
        self.set_profile(profile)
        self._blocks: list[_Block] = []
        self._headers: dict[str | None, tuple[int, str, int | None]] = {}  # "Process X:" lines, by rank
        self._logged: dict[str | None, tuple[int, str, float | None]] = {}  # the last record at an error level, by rank
        self._ignored: dict[str | None, tuple[int, str, int | None]] = {}  # "Exception ignored in:" lines, by rank
        self._warned = False  # the line just fed ended an ignored exception's block
        self._last_line_error: dict[str | None, ErrorReport] = {}  # each rank's latest one-line error
        # The unranked lines right after a block's first line, while they read as one traceback
        # (File, code, File, code, …): that block's body written in one piece, so the exception
        # line that ends them is that block's, whichever older block also waits for one.
        self._run: _Block | None = None
        self._run_state = _TB
        self._wrapping = False  # the line just fed was an exception logged alone (or its message's next line)
        self._last_number = 0  # the latest line fed (a block the log ends inside is cut short)

    def set_profile(self, profile: Profile) -> None:
        self._signatures: tuple[Signature, ...] = profile.signatures
        self._warnings = profile.warnings
        self._benign = profile.benign
        self._warning_levels = profile.warning_levels
        self._error_levels = profile.error_levels
        self._carry_on = profile.carry_on
        # one search per line rules out every signature (or every warning) at once
        self._any_signature = any_of([s.regex for s in profile.signatures])
        self._any_warning = any_of(list(profile.warnings))
        #: the lines that went the whole way to the plain end of ``feed`` (no error, no block, their
        #: own record): (body, level) -> whether it was a warning. That end is the profile's answer
        #: for the body and level alone, and the ranks print one message after another.
        self._plain: Memo[tuple[str, str | None], bool] = Memo()

    def reset(self) -> None:
        self._run = None
        self._blocks.clear()
        self._headers.clear()
        self._logged.clear()
        self._ignored.clear()
        self._last_line_error.clear()
        self._wrapping = False

    @property
    def open(self) -> bool:
        """A traceback block is open, or an exception logged alone may go on: every following
        line may belong to it."""
        return bool(self._blocks) or self._wrapping

    # ------------------------------------------------------------ feeding

    def feed(
        self,
        number: int,
        body: str,
        rank: str | None = None,
        record: bool = False,
        level: str | None = None,
        ts: float | None = None,
        offset: int | None = None,
    ) -> tuple[list[ErrorReport], bool, bool]:
        """One line (or ``\\r`` segment): ``body`` is its message without the log prefix.

        ``rank`` is the rank the prefix names (None: no prefix, or no rank in it);
        ``record``: the line starts a new log record (it has a timestamp or level);
        ``offset``: where the line starts in the stream (a block's text can be re-read from it).
        Returns the errors made or updated by this line, whether it is a warning, and
        whether it belongs to a traceback (then it is no phase marker either).
        """
        errors: list[ErrorReport] = []
        self._wrapping = False
        self._last_number = number
        if record and level is not None and (level in ERROR_WORDS or level in self._error_levels) and TRACEBACK not in body:
            self._logged[rank] = (number, body, ts)
        if record:
            warned = self.said_plainly(body, level)
            if warned is not None:
                if rank is not None:
                    self._run = None
                return errors, warned, False
        if self._blocks and any(b.group for b in self._blocks) and (_RULE.match(body) or _GUTTER.match(body)):
            # a line of an ExceptionGroup's gutter: after the group's own exception line, its
            # sub-exceptions belong to it (the group is reported by its class)
            body = _GUTTER.sub("", body, count=1)
            done = self._candidate(rank, lambda b: b.group and b.state == _EXC)
            if done is not None or _RULE.match(body):
                if done is not None:
                    done.add(number, body)
                    if done.report is not None:
                        done.report.end_line, done.report.block = number, done.lines()
                return errors, False, True
        if rank is not None:
            self._run = None  # another record: the body, if any, was not written in one piece
        if self._blocks:
            self._expire(number, rank, errors)
            self._warned = False
            if self._blocks and self._continue(number, body, rank, record, errors, ts):
                return errors, self._warned, True
        if TRACEBACK in body:
            self._start(number, body, rank, ts, offset, errors, level is not None and level in self._warning_levels)
            return errors, False, True
        if body[:1] in (" ", "\t") and body.lstrip().startswith('File "'):
            self._start_headless(number, body, rank, ts, offset)
            return errors, False, True
        if not record and self._wraps(number, body, rank):
            return errors, False, True
        if body.startswith("Process ") and _PROCESS_HEADER.match(body):
            self._headers[rank] = (number, body, offset)
            return errors, False, True
        if body.startswith(_IGNORED):
            self._ignored[rank] = (number, body, offset)
            return errors, False, True
        if not body or body.isspace():
            return errors, False, False
        benign = None
        quick = self._any_signature
        for sig in self._signatures if quick is None or quick.search(body) is not None else ():
            match = sig.regex.search(body)
            if match is None:
                continue
            if benign is None:
                benign = self._is_benign(body)
            if benign:
                break
            warned = (level is not None and level in self._warning_levels) or any(p.search(body) for p in self._carry_on)
            if warned and sig.fatal:
                return errors, True, False  # logged as a warning, or it says it goes on: not a failure
            self._close_complete(rank, errors)
            joined = self._joins(number, body, rank, sig)
            if joined is not None:
                errors.append(joined)
                return errors, warned, False
            kind = match.groupdict().get("kind") or sig.kind
            errors.append(
                ErrorReport(
                    line=number,
                    kind=kind,
                    message=body.strip()[:MESSAGE_CAP],
                    rank=rank,
                    end_line=number,
                    block=[(number, body)],
                    spans=[[number, number]],
                    offset=offset,
                    fatal=sig.fatal and not sig.cause,
                    category=sig.kind,
                    secondary=sig.secondary,
                    ts=ts,
                    cause=sig.cause,
                )
            )
            self._last_line_error[rank] = errors[-1]
            self._wrapping = errors[-1].fatal and _EMBEDDED.match(errors[-1].message) is not None
            # a non-fatal signature is a fact worth keeping (it can rule a hint out, or explain a
            # failure that follows), never a failure by itself; still a warning if it reads as one
            if not warned and sig.cause:
                warned = any(p.search(body) for p in self._warnings)
            return errors, warned, False
        if record and self._blocks:
            self._close_complete(rank, errors)
        logged_error = level is not None and level in self._error_levels
        if logged_error and benign is None:
            benign = self._is_benign(body)
        if logged_error and not benign:
            # an error the server logged that no signature names: the cause of a failure that
            # follows (held back until one does), else it did not stop the startup: a warning
            errors.append(
                ErrorReport(
                    line=number, kind=LOGGED_ERROR, message=body.strip()[:MESSAGE_CAP], rank=rank, end_line=number,
                    block=[(number, body)], spans=[[number, number]], offset=offset, fatal=False,
                    category=LOGGED_ERROR, ts=ts, cause=True,
                )
            )
            return errors, True, False
        warning = (level is not None and level in self._warning_levels) or (
            (self._any_warning is None or self._any_warning.search(body) is not None)
            and any(p.search(body) for p in self._warnings)
        )
        if warning and benign is None:
            benign = self._is_benign(body)
        self._plain.keep((body, level), body, warning and not benign)
        return errors, warning and not benign, False

    def said_plainly(self, body: str, level: str | None) -> bool | None:
        """Whether a record of ``body`` at ``level`` is a warning, where ``feed`` answers it without
        looking further (no block is open, and a line that went the whole way to its plain end had
        this body and level); None where it would look further."""
        if self._blocks or not body:
            return None
        return self._plain.get((body, level))

    def close_all(self) -> list[ErrorReport]:
        """End of input: every open block is over (one cut short is still reported)."""
        errors: list[ErrorReport] = []
        for block in list(self._blocks):
            self._close(block, errors, at_end=block.last == self._last_number)
        self._headers.clear()
        self._ignored.clear()
        return errors

    def close_complete(self) -> list[ErrorReport]:
        """The log went quiet: blocks that have their exception line are over."""
        errors: list[ErrorReport] = []
        for block in list(self._blocks):
            if block.state == _EXC:
                self._close(block, errors)
        return errors

    # ------------------------------------------------------------ internals

    def _signature(self, body: str) -> bool:
        quick = self._any_signature
        if quick is not None and quick.search(body) is None:
            return False
        return any(sig.regex.search(body) for sig in self._signatures)

    def _joins(self, number: int, body: str, rank: str | None, sig: Signature) -> ErrorReport | None:
        """The one-line error of ``rank`` that this fatal signature line goes on telling, extended
        by it: a failure reported on several lines is one error with its lines, named by its first.
        A consequence's line never swallows a cause's (a secondary error, then a primary one)."""
        prior = self._last_line_error.get(rank)
        if (
            prior is None
            or not sig.fatal or sig.cause or not prior.fatal or prior.cause
            or prior.end_line is None or number - prior.end_line > JOINED_GAP
            or (prior.secondary and not sig.secondary)
        ):
            return None
        prior.end_line = number
        if len(prior.block) < HEAD + TAIL:
            prior.block.append((number, body))
        spans = prior.spans
        if spans and spans[-1][1] >= number - 1:
            spans[-1][1] = number
        elif len(spans) < MAX_SPANS:
            spans.append([number, number])
        return prior

    def _is_benign(self, body: str) -> bool:
        return any(p.search(body) for p in self._benign)

    def _start(
        self,
        number: int,
        body: str,
        rank: str | None,
        ts: float | None,
        offset: int | None,
        errors: list[ErrorReport],
        warning: bool = False,
    ) -> None:
        chained = self._candidate(rank, lambda b: b.state == _CHAIN_STATE)
        if chained is not None:
            chained.state = _TB
            chained.add(number, body)
            return
        repeated = self._candidate(
            rank, lambda b: b.rank == rank and b.state == _TB and not b.exceptions and 0 < number - b.last <= 2
        )
        if repeated is not None:
            # a header right after another that has no frame yet: one failure told twice over (a
            # child's traceback and its parent relaying it, "router init state: Traceback …"), its
            # frames to come, not a traceback cut short before them
            repeated.add(number, body)
            return
        for block in list(self._blocks):
            if block.rank == rank:
                self._close(block, errors)
        header = self._headers.pop(rank, None)
        ignored = self._ignored.pop(rank, None)
        went_on = ignored is not None and 0 < number - ignored[0] <= 2
        if went_on:
            header = ignored
        block = _Block(rank, number, ts, offset, warning=warning, group=_GROUP in body, ignored=went_on)
        logged = self._logged.pop(rank, None)
        if logged is None and rank is None:
            # logger.exception's shape under a prefix that names the process ("ERROR … [engine.py:62] msg"
            # read as the main rank's): its traceback follows on lines of no prefix at all
            said = next((r for r, record in self._logged.items() if record[0] == number - 1), None)
            logged = self._logged.pop(said) if said is not None else None
        if logged is not None and logged[0] == number - 1 and (ts is None or logged[2] is None or logged[2] == ts):
            block.headline = logged[1]  # the record's message, its traceback on the lines after it
        self._run, self._run_state = block, _TB
        if header is not None and 0 < number - header[0] <= 2:
            block.line, block.offset = header[0], header[2]
            block.add(header[0], header[1])
        block.add(number, body)
        self._blocks.append(block)

    def _start_headless(self, number: int, body: str, rank: str | None, ts: float | None, offset: int | None) -> None:
        """A frame no block takes: a traceback whose first lines the log does not have."""
        block = _Block(rank, number, ts, offset, state=_FILE, headless=True)
        block.add(number, body)
        self._blocks.append(block)
        self._run, self._run_state = block, _FILE

    def _wraps(self, number: int, body: str, rank: str | None) -> bool:
        """A plain line right after an exception logged alone (or after the lines it already
        kept): its message goes on. Not a line that is an error of its own, nor a blank one."""
        prior = self._last_line_error.get(rank)
        if (
            prior is None
            or not prior.fatal
            or prior.end_line != number - 1
            or number - prior.line > AFTER_EXCEPTION_LINES
            or _EMBEDDED.match(prior.message) is None
            or not body.strip()
            or "%|" in body
            or self._signature(body)
        ):
            return False
        prior.end_line = number
        if len(prior.block) < HEAD + TAIL:
            prior.block.append((number, body))
        spans = prior.spans
        if spans and spans[-1][1] >= number - 1:
            spans[-1][1] = number
        elif len(spans) < MAX_SPANS:
            spans.append([number, number])
        self._wrapping = True
        return True

    def _same_record(self, rank: str | None, ts: float | None, number: int) -> bool:
        """Whether a record at ``ts`` from ``rank`` goes on a traceback that its logger wrote line by
        line under one prefix: a block of that rank and time, its exception line just read."""
        if rank is None or ts is None:
            return False
        return any(
            b.rank == rank and b.ts == ts and b.state == _EXC and number - b.exc_line <= AFTER_EXCEPTION_LINES
            for b in self._blocks
        )

    def _candidate(
        self, rank: str | None, accepts: Callable[[_Block], bool], prefer: Callable[[_Block], bool] | None = None
    ) -> _Block | None:
        """The block a line goes to: of its rank if it names one, else the oldest unranked,
        else the oldest; among those, one that expects this line (``prefer``) comes first."""
        best = None
        best_score = -1
        for block in self._blocks:
            if rank is not None and block.rank != rank:
                continue
            if not accepts(block):
                continue
            score = (2 if prefer is not None and prefer(block) else 0) + (1 if block.rank is None else 0)
            if score > best_score:
                best, best_score = block, score
                if score == 3 or (prefer is None and rank is not None):
                    break
        return best

    def _continue(
        self, number: int, body: str, rank: str | None, record: bool, errors: list[ErrorReport], ts: float | None = None,
    ) -> bool:
        """Feed ``body`` to the block it continues; False if it continues none."""
        if not body or body.isspace():
            block = self._candidate(rank, lambda b: b.state != _TB)
            if block is not None:
                block.touch(number)
            return block is not None
        first = body[0]
        if first == " " or first == "\t":
            stripped = body.lstrip()
            if stripped.startswith('File "'):
                block = self._candidate(rank, lambda b: b.state in (_TB, _FILE, _CODE), lambda b: b.state != _FILE)
                state = _FILE
                self._follow(_FILE, (_TB, _CODE))
            else:
                block = self._candidate(rank, lambda b: b.state in _FRAME, lambda b: b.state == _FILE)
                state = _CODE
                self._follow(_CODE, _FRAME)
            if block is None:
                return self._message_goes_on(number, body, rank)
            block.state = state
            block.add(number, body)
            return True
        if body.startswith(_CHAIN):
            self._run = None
            block = self._candidate(rank, lambda b: b.state == _EXC)
            if block is None:
                return False
            block.state = _CHAIN_STATE
            block.add(number, body)
            return True
        if TRACEBACK in body:
            # a wrapper's exception line whose message carries the traceback it relays, or a new
            # block, or the next part of a chain: _start decides
            return self._relays(number, body, rank)
        match = _EXCEPTION.match(body)
        if match is not None and match.group("text") is None and "." not in body and ":" not in body:
            if not _BARE_EXCEPTION.search(match.group("exc")) and not self._bare_raise(body, rank):
                match = None
        if match is not None:
            block = self._candidate(rank, lambda b: b.state in (_TB, _FILE, _CODE), lambda b: b.state == _CODE)
            run = self._run
            if rank is None and run is not None and self._run_state == _CODE and run in self._blocks and run.state != _EXC:
                block = run  # the exception ends the traceback written in one piece just above it
            self._run = None
            if block is not None:
                block.exception(number, body)
                if block.ignored:  # printed, then the program went on: a warning, no report
                    block.state, block.exc_line = _EXC, number
                    self._warned = True
                else:
                    self._exception(block, number, match, errors)
                return True
        if self._names_the_field(number, body, rank):
            return True
        # Message lines after the exception line ("Possible solutions: …"), unless they
        # are a record of their own, an error of their own ("Killed") or a Python warning. A
        # traceback its logger wrote line by line (vLLM's: each line under the record's prefix)
        # goes on so: its message's next lines carry the same rank and time ("Reasons:" and each
        # reason, one a line).
        if (record and not self._same_record(rank, ts, number)) or self._signature(body) or _PY_WARNING.match(body):
            return False
        block = self._candidate(
            rank, lambda b: b.state == _EXC and number - b.exc_line <= AFTER_EXCEPTION_LINES
        )
        if block is None or "%|" in body:
            return False
        block.add(number, body)
        if block.report is not None:
            block.report.end_line = number
            block.report.block = block.lines()
        return True

    def _relays(self, number: int, body: str, rank: str | None) -> bool:
        """An exception line whose message begins another traceback (SGLang up to 0.3 relays a child's:
        "RuntimeError: Initialization failed. controller_init_state: Traceback (most recent call last):"):
        the block goes on with the relayed traceback as a chain's next part, its exception the cause."""
        if _EMBEDDED.match(body[: body.index(TRACEBACK)].rstrip()) is None:
            return False
        block = self._candidate(rank, lambda b: b.state == _CODE)
        if block is None:
            return False
        block.exception(number, body)
        block.state = _TB
        self._run = None
        return True

    def _follow(self, state: int, after: tuple[int, ...]) -> None:
        """An unranked frame line: does the run of lines since the last block's first line still
        read as one traceback?"""
        if self._run is not None and self._run_state in after:
            self._run_state = state
        else:
            self._run = None

    def _bare_raise(self, body: str, rank: str | None) -> bool:
        """``raise Boom`` with no message: a class name alone, right after a block's code line."""
        return (
            body[:1].isupper()
            and body not in _SHELL_WORDS
            and self._candidate(rank, lambda b: b.state == _CODE) is not None
        )

    def _names_the_field(self, number: int, body: str, rank: str | None) -> bool:
        """pydantic's ``ValidationError`` names the field on the line after its exception line,
        unindented (``max_num_seqs``), then the error indented: the name joins the message as the
        indented lines do (vLLM prefixes each line, so a record is taken too)."""
        if _FIELD.match(body) is None:
            return False
        block = self._candidate(rank, lambda b: b.state == _EXC and number - b.last == 1)
        if block is None or block.report is None or "validation error" not in block.report.message:
            return False
        block.add(number, body)
        report = block.report
        report.message = f"{report.message} {body.strip()}"[:LONG_MESSAGE_CAP]
        report.end_line = number
        report.block = block.lines()
        return True

    def _message_goes_on(self, number: int, body: str, rank: str | None) -> bool:
        """An indented line right after a block's exception line: its message goes on."""
        block = self._candidate(rank, lambda b: b.state == _EXC and 0 < number - b.last <= 1)
        if block is None or block.report is None:
            return False
        block.add(number, body)
        report = block.report
        if len(report.message) < LONG_MESSAGE_CAP:
            report.message = f"{report.message} {body.strip()}"[:LONG_MESSAGE_CAP]
        report.end_line = number
        report.block = block.lines()
        return True

    def _exception(self, block: _Block, number: int, match: re.Match[str], errors: list[ErrorReport]) -> None:
        block.state = _EXC
        block.exc_line = number
        kind = match.group("exc")
        text = (match.group("text") or "").strip()
        message = f"{kind}: {text}" if text else kind
        inner = text
        for _ in range(3):  # a wrapper whose message is another exception is that exception
            embedded = _EMBEDDED.match(inner)
            if embedded is None:
                break
            kind, inner = embedded.group("exc"), embedded.group("text")
        sig = next((s for s in self._signatures if not s.fallback and s.regex.search(match.group(0))), None)
        report = block.report
        if report is None:
            report = block.report = ErrorReport(
                line=block.line, kind=kind, message="", rank=block.rank, ts=block.ts, spans=block.spans, offset=block.offset
            )
        report.kind = kind
        report.message = message[:MESSAGE_CAP]
        report.end_line = number
        if report.exc_line is None:  # a chain's first exception line: when the failure showed
            report.exc_line = number
        report.block = block.lines()
        report.category = sig.kind if sig else None
        report.fatal = (sig.fatal if sig else True) and not block.warning
        report.secondary = sig.secondary if sig else False
        # a traceback whose exception explains a failure to come (transformers refusing untrusted code,
        # which vLLM logs as a warning and goes on past): held back as a cause line is
        report.cause = bool(sig and sig.cause)
        errors.append(report)

    def _close(self, block: _Block, errors: list[ErrorReport], at_end: bool = False) -> None:
        """``at_end``: the log ends inside the block (its last line is the log's)."""
        self._blocks.remove(block)
        if block.report is not None or block.ignored or (block.headless and not at_end):
            return  # already reported when its exception line came (or only a warning, or frames the log went past)
        lines = block.lines()
        errors.append(
            ErrorReport(
                line=block.line,
                kind="Traceback",
                message=_cut_short(lines, block.last, block.headline)[:MESSAGE_CAP],
                rank=block.rank,
                end_line=block.last,
                block=lines,
                spans=block.spans,
                offset=block.offset,
                ts=block.ts,
            )
        )

    def _close_complete(self, rank: str | None, errors: list[ErrorReport]) -> None:
        """A new record from ``rank``: its own finished block is over, and so is any finished
        unranked one. A block still before its exception line stays open: a logger line that
        interleaves with a traceback (another thread, another process logging under the same tag)
        does not end it; its frames and exception may follow."""
        for block in list(self._blocks):
            if block.state == _EXC and (block.rank == rank or block.rank is None):
                self._close(block, errors)

    def _expire(self, number: int, rank: str | None, errors: list[ErrorReport]) -> None:
        """Close the blocks the log has left: one with its exception line after a few lines, one
        still waiting for it after STALE_LINES lines that could have been its own went elsewhere
        (the line now read counts until it joins the block, which resets the count)."""
        for block in list(self._blocks):
            if rank is None or rank == block.rank:
                block.missed += 1
            if block.missed > STALE_LINES or (block.state == _EXC and number - block.last > AFTER_EXCEPTION_LINES):
                self._close(block, errors)
