"""Small formatting helpers shared by the widgets and the plain-text report (times: ``tui.core.wording``)."""

from __future__ import annotations

import re

GIB = float(1 << 30)
SPARKS = "▁▂▃▄▅▆▇█"


def gib(value: int | None, digits: int = 1) -> str:
    return "N/A" if value is None else f"{value / GIB:.{digits}f}"


def rank_key(rank: str) -> tuple:
    """Natural order for rank tags: TP2 before TP10, DP0 TP7 before DP1 TP0."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", rank))


def sparkline(values: list[float], top: float | None, width: int) -> str:
    """The last ``width`` values as block characters, scaled to ``top`` (or their max)."""
    values = values[-width:]
    if not values:
        return ""
    ceiling = top or max((v for v in values if v == v), default=0.0) or 1.0
    out = []
    for value in values:
        if value != value:  # NaN: unknown
            out.append(" ")
            continue
        level = min(len(SPARKS) - 1, max(0, int(value / ceiling * (len(SPARKS) - 1) + 0.5)))
        out.append(SPARKS[level])
    return "".join(out)
