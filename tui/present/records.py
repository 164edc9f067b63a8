"""What a presenter says, as a record: the plain presenter prints its words, the JSON one
(``--json``) prints the whole record as one JSON object per line (NDJSON).

Both read the same lossless event queue and fold, throttle and judge the same way
(:class:`~tui.present.event_words.EventWords`, the loops of ``tui.present.plain``); only
the last step differs. Every JSON object carries ``schema`` (:data:`SCHEMA`), ``ts`` (UTC,
ISO 8601), ``elapsed`` (seconds since the watch began), ``event``, ``line`` (the log's line
number, or null), ``text`` (the plain presenter's words) and the event's own fields.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from tui.core.lines import clean
from tui.core.secrets import mask_secrets

#: The version of the JSON objects' shape (`watch --json`, `run --json`, `scan --json` …): raised
#: when a field is removed or changes meaning; new fields and new events do not raise it.
SCHEMA = 1


@dataclass(frozen=True, slots=True)
class Said:
    """One thing a presenter says: ``event`` names it (``phase_ended``, ``error``, ``verdict`` …);
    ``text`` is the plain words ("" where the plain presenter says nothing, e.g. the ready
    verdict its READY line already gave); ``fields`` what a script reads. An empty ``event`` is
    words alone (a traceback line under its error, whose record has them): no JSON object."""

    event: str
    text: str = ""
    indent: str = ""
    line: int | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)


def _masked(value: Any, mask: Callable[[str], str]) -> Any:
    if isinstance(value, str):  # a newline stays one (JSON escapes it); the rest as the terminal would show it
        return "\n".join(clean(part) for part in mask(value).split("\n"))
    if isinstance(value, Mapping):
        return {str(k): _masked(v, mask) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(v, mask) for v in value]
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value


class JsonLines:
    """`--json`: each :class:`Said` as one JSON object on a line of its own, flushed per batch.

    Every string goes through ``mask`` (the launch's masker: the values of secret variables
    and flags) and :func:`~tui.core.secrets.mask_secrets` (secrets by their shape), as the plain
    output's words do, then :func:`~tui.core.lines.clean` (no escape sequence reaches a terminal).
    """

    def __init__(self, out: TextIO | None = None, mask: Callable[[str], str] | None = None,
                 started: float | None = None) -> None:
        self.out = out
        self.mask = mask
        self.started = time.monotonic() if started is None else started

    def _mask(self, text: str) -> str:
        return mask_secrets(self.mask(text) if self.mask is not None else text)

    def record(self, said: Said, node: str | None = None) -> dict[str, Any]:
        head: dict[str, Any] = {
            "schema": SCHEMA,
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "elapsed": round(time.monotonic() - self.started, 3),
            "event": said.event,
            "line": said.line,
        }
        if node is not None:
            head["node"] = node
        body = {k: v for k, v in said.fields.items() if k not in head}
        head.update(_masked(body, self._mask))
        if said.text:
            head["text"] = _masked(said.text, self._mask)
        return head

    def write(self, said: Said, node: str | None = None) -> None:
        if not said.event:
            return
        out = self.out or sys.stdout
        out.write(json.dumps(self.record(said, node), ensure_ascii=False) + "\n")

    def flush(self) -> None:
        (self.out or sys.stdout).flush()
