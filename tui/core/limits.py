"""How long a startup log may stay silent before the verdict says "stalled?", per phase.

Four layers, the first that knows wins: ``--stall-limit``'s value for the phase, its
default, history (the longest the phase has ever taken for the same server, model and
TP size), the profile's ``[phases.X] stall_after``, and :data:`DEFAULT_STALL_LIMIT`.
Weight loading of a 547 GB model may be quiet for many minutes; a memory pool is sized
in seconds: one number for every phase would be wrong for most of them. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tui.core.state import PHASE_TITLES, PHASES
from tui.core.wording import clock

#: Silence (s) that counts as a stall when nothing else says how long a phase may be quiet.
DEFAULT_STALL_LIMIT = 300.0
#: A phase that history says is quick still gets this much silence before "stalled?".
MIN_STALL = 30.0

_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(h|m|s|ms)?", re.IGNORECASE)
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, None: 1.0}


def parse_duration(text: str | float | int) -> float:
    """``"20m"``, ``"90s"``, ``"1h30m"``, ``"2.5m"``, ``300`` (seconds) → seconds.

    ValueError with a one-line message for anything else (or for zero).
    """
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a duration")
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        body = text.strip().replace(" ", "")
        pos, seconds = 0, 0.0
        while pos < len(body):
            match = _PART.match(body, pos)
            if match is None or not match.group(0):
                raise ValueError(f"{text!r} is not a duration (examples: 90s, 20m, 1h30m)")
            seconds += float(match.group(1)) * _UNITS[(match.group(2) or "").lower() or None]
            pos = match.end()
        if not body:
            raise ValueError("empty duration (examples: 90s, 20m, 1h30m)")
    if not seconds > 0:
        raise ValueError(f"{text!r}: a duration must be more than zero")
    return seconds


@dataclass(frozen=True, slots=True)
class StallLimits:
    """``--stall-limit``: a default and per-phase silence limits (seconds)."""

    default: float | None = None
    phases: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> StallLimits:
        """``"5m,weight_load=20m,cuda_graph=8m"`` (any part optional, in any order)."""
        default: float | None = None
        phases: dict[str, float] = {}
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            name, eq, value = part.partition("=")
            if not eq:
                if default is not None:
                    raise ValueError(f"--stall-limit: two defaults ({clock(default)} and {part})")
                default = parse_duration(part)
                continue
            name = name.strip()
            if name not in PHASES:
                raise ValueError(f"--stall-limit: unknown phase {name!r} (phases: {', '.join(PHASES)})")
            phases[name] = parse_duration(value)
        if default is None and not phases:
            raise ValueError("--stall-limit: no limit given (example: 5m,weight_load=20m)")
        return cls(default, phases)

    def threshold(
        self,
        phase: str | None,
        *,
        expected: float | None = None,
        profile: Mapping[str, float] | None = None,
    ) -> tuple[float, str]:
        """The silence limit for ``phase`` and why, in words, for the verdict.

        ``expected``: the longest the phase has taken in history; ``profile``: the
        profile's ``stall_after`` per phase.
        """
        title = PHASE_TITLES.get(phase, phase) if phase else "this phase"
        if phase is not None and phase in self.phases:
            seconds = self.phases[phase]
            return seconds, f"past the limit for {title} ({clock(seconds)}, --stall-limit)"
        if self.default is not None:
            return self.default, f"past the limit ({clock(self.default)}, --stall-limit)"
        if expected is not None:
            return max(MIN_STALL, expected), f"longer than {title} has ever taken ({clock(expected)})"
        if profile and phase is not None and phase in profile:
            seconds = profile[phase]
            return seconds, f"past the server's usual limit for {title} ({clock(seconds)})"
        return DEFAULT_STALL_LIMIT, f"past the default limit ({clock(DEFAULT_STALL_LIMIT)})"


#: No ``--stall-limit``: history, the profile and the default decide.
NO_LIMITS = StallLimits()
