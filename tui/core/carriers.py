"""What the tool that carried a log puts in front of each of the server's lines, read past.

A log saved from ``srun -l``, ``docker compose logs``/``up``, ``docker logs -t`` or ``kubectl logs
--prefix`` holds the server's lines behind a label of the carrier's; the server's headers (and so
its detection, phases and times) are matched on what follows. The label names a task, a service or
a pod, never the server's rank, so it is dropped, as ``srun -l``'s task number always was. The
shapes come from the carriers' own sources:

- ``srun -l``: the task number and ``": "``, right-aligned when there are ten tasks or more
  (``0: ``, `` 3: ``);
- docker compose: the container's name without the project, left-aligned to the widest name, then
  ``" | "`` — v1 (Python) ``name.ljust(width) + ' | '``, so ``sglang_1 | ``; v2 (Go)
  ``"%-{widest+1}s | "``, so ``vllm-1  | ``; a service's containers are named ``service_N`` (v1) or
  ``service-N`` (v2), or whatever its ``container_name`` says (``mysglang  | ``): a name with no
  ``-N`` / ``_N`` is read as a label only with v2's padding (at least two spaces before the bar,
  as ``widest+1`` always gives), so a line of the server's own that holds ``" | "`` is not cut;
- ``kubectl logs --prefix``: ``[pod/NAME/CONTAINER] ``;
- ``--timestamps`` adds the RFC 3339 time and a space after the label: compose's with nine
  fraction digits always (Go's ``RFC3339NanoFixed``), kubectl's with trailing zeros dropped, and
  no fraction on a whole second (``RFC3339Nano``); ``docker logs -t`` puts the fixed one alone at the line's start.

A log copied from a CI job, a journal, a desktop app or a launcher carries that tool's label instead:

- a GitHub Actions job log: the runner's time with seven fraction digits (.NET's round-trip
  ``"o"`` format, UTC) and a space, ``2024-05-01T10:00:00.1234567Z ``;
- Buildkite's (and other CI viewers') time in brackets, ``[2025-03-10T15:07:20Z] `` or
  ``[2025-11-06T02:10:00.702Z] ``;
- Docker Desktop's log view: the line's time, to the second, in the machine's local zone and a space,
  ``2023-11-29 11:34:19 `` — never before a level word, a ``|`` or a ``-`` (a logger's own header of that
  shape, ``2024-04-27 10:13:05 | ERROR |``, is the line's, not a carrier's);
- ``journalctl`` (its ``short`` and ``short-iso`` outputs): the time, the host, the unit's name and
  its PID, ``Dec 06 06:50:00 gpu-3 vllm[1234]: ``, ``2026-12-06T06:50:00+0000 gpu-3 vllm[1234]: `` (the
  month as the machine's locale writes it, where that is English's letters in another case: ``nov 02``);
- a Python wrapper that relays the server's stream through its logger (FastChat's, and the
  programs built on it): ``2024-04-27 10:13:05 | ERROR | stderr | `` — the logger named
  ``stdout`` or ``stderr``, so the level is the wrapper's, not the server's;
- Open MPI's ``mpirun --tag-output``: ``[1,0]<stderr>:``, after the time of ``--timestamp-output``
  (``Thu Jan 23 11:55:50 2025[1,0]<stderr>:``), the line's own text right after the colon — the
  job and rank, dropped as ``srun -l``'s task number is.

A time that begins a tracing record of the server's own (the time, the padded level, the target and
``": "``: TGI's ``2026-…Z  INFO text_generation_launcher: ``) is its header, never a carrier's.
"""

from __future__ import annotations

import re

_STAMP = r"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d{fraction}(?:Z|[+-]\d\d:\d\d) (?! *(?:TRACE|DEBUG|INFO|WARN|ERROR) +[\w:.-]+: )"
_FIXED = _STAMP.format(fraction=r"\.\d{9}")  # Go's RFC3339NanoFixed
_NANO = _STAMP.format(fraction=r"(?:\.\d{1,9})?")  # Go's RFC3339Nano: no fraction at all on a whole second
_SRUN = r" {0,4}\d{1,5}: "
_COMPOSE = r"(?P<service>[A-Za-z0-9][\w.-]*?(?:[-_]\d+ +| {2,}))\| "
_KUBECTL = r"\[pod/[^/\]\s]+/[^\]\s]*\] "
_ACTIONS = _STAMP.format(fraction=r"\.\d{7}")  # GitHub Actions' runner
_BRACKETED = r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)\] "  # Buildkite's
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
#: a journal's month as the machine's locale writes it, in English's letters (``nov 02``, ``Nov 02``)
_JOURNAL_MONTH = r"(?i:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_JOURNAL = (
    rf"(?:{_JOURNAL_MONTH} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{{1,6}})?|\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{{4}})"
    r" [\w.-]+ [\w.@:/-]+\[\d+\]: "
)
_RELAYED = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \| [A-Z]+ +\| std(?:out|err) \| "  # FastChat's StreamToLogger
_DESKTOP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?! *(?:TRACE|DEBUG|INFO|WARN(?:ING)?|ERROR|CRITICAL|FATAL)\b|\| |- )"
_MPIRUN = rf"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) {_MONTH} [ \d]\d \d\d:\d\d:\d\d \d{{4}})?\[\d+,\d+\]<std(?:out|err|diag)>:"

#: A carrier's label at a line's start (``match``): its end is where the server's own line begins.
LABEL = re.compile(
    f"{_SRUN}|{_COMPOSE}(?:{_FIXED})?|{_KUBECTL}(?:{_NANO})?|{_FIXED}|{_ACTIONS}|{_BRACKETED}|{_JOURNAL}|{_RELAYED}|{_DESKTOP}|{_MPIRUN}"
)
#: How a line with a label can begin (an srun task number, a time, a journal's month, mpirun's
#: weekday); a bracketed one is told by what follows its ``[``, a compose label by its ``"| "``
#: within ``_COMPOSE_WIDTH`` characters.
_STARTS = frozenset(" 0123456789")
_NAMES = frozenset("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec Mon Tue Wed Thu Fri Sat Sun".split())
_COMPOSE_WIDTH = 80


def may_have_label(text: str) -> bool:
    """A cheap first test for ``LABEL`` (most lines of a flood fail it): False where it cannot match."""
    first = text[:1]
    if first in _STARTS:
        return True
    if first == "[":  # a pod, Buildkite's ISO time ("[2025-03-10T…"), mpirun's "[1,0]<stderr>:"; not SGLang's "[2025-03-10 …"
        return text.startswith("[pod/") or (text[1:2].isdigit() and (text[11:12] == "T" or "]<std" in text[:16]))
    head = text[:3]
    return (
        head in _NAMES
        or (first.islower() and head.title() in _NAMES)  # (a journal's month in a locale's lower case)
        or text.find("| ", 0, _COMPOSE_WIDTH) > 0
    )


def service(text: str) -> str | None:
    """The docker compose container whose label begins ``text`` (``vllm-1  | …`` → ``vllm-1``), else None."""
    if not may_have_label(text):
        return None
    match = LABEL.match(text)
    if match is None or match.group("service") is None:
        return None
    return match.group("service").rstrip()


def label_end(text: str) -> int:
    """Where the server's own line begins in ``text``: past a carrier's label, else 0."""
    if not may_have_label(text):
        return 0
    match = LABEL.match(text)
    return 0 if match is None else match.end()
