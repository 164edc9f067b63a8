"""The fast tier is in process in fact: a test that starts a process is ``slow`` without its module
being listed (``tests/conftest.py``: ``SPAWNS`` and the module's own helpers that spawn)."""

from __future__ import annotations

import subprocess
import sys
import types

from tests.conftest import _starts_a_process


def _scan_in_a_subprocess(path: str) -> str:
    return subprocess.run([sys.executable, "-c", "print(1)", path], capture_output=True, text=True).stdout


def _reads(path: str) -> str:
    return path.upper()


def _spawns_directly() -> None:
    subprocess.run(["true"], check=True)


def _spawns_through_a_helper() -> None:
    _scan_in_a_subprocess("x")


def _stays_in_process() -> None:
    assert _reads("x") == "X"


def _item(function: object) -> types.SimpleNamespace:
    return types.SimpleNamespace(function=function, module=sys.modules[__name__])


def test_a_test_that_starts_a_process_is_slow_directly_or_through_its_modules_helper():
    assert _starts_a_process(_item(_spawns_directly))
    assert _starts_a_process(_item(_spawns_through_a_helper))


def test_a_test_that_stays_in_process_is_not_slow():
    assert not _starts_a_process(_item(_stays_in_process))
