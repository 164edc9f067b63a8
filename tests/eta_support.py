"""The time-left tests' reading of a watcher's output: lines until the first that gives a time
left, and the seconds that line says (the middle of a range)."""

from __future__ import annotations

import re
import select
import time
from collections.abc import Callable
from typing import IO

_LEFT = re.compile(r"~(\d+):(\d\d) left|(\d+):(\d\d)–(\d+):(\d\d) left")


def first_line(stream: IO[str], wanted: Callable[[str], bool], timeout: float) -> tuple[str | None, float, list[str]]:
    """Lines of ``stream`` until one ``wanted`` holds for: (that line or None, the wall-clock time
    it came, every line read)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 1.0)
        if not ready:
            continue
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        if wanted(line):
            return line, time.time(), seen
    return None, time.time(), seen


def said_left(line: str) -> float:
    """The seconds left ``line`` says: ``~0:05 left``, or the middle of ``0:04–0:07 left``."""
    found = _LEFT.search(line)
    assert found, line
    if found.group(1):
        return int(found.group(1)) * 60 + int(found.group(2))
    low = int(found.group(3)) * 60 + int(found.group(4))
    high = int(found.group(5)) * 60 + int(found.group(6))
    return (low + high) / 2
