"""Snapshot tests (pytest-textual-snapshot) of the main states at two sizes.

Deterministic: each state is a bundled demo recording played instantly on a stopped
clock (``static_session``). Update after an intended change with
``pytest tests/test_app_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

import pytest

from tests.app_support import demo_session, make_app

STATES = {
    "loading": ("ready", 22.0, []),
    "ready": ("ready", None, []),
    "failed": ("crash-context", None, ["e"]),
    "oom": ("oom", None, ["e"]),
}


@pytest.mark.parametrize("size", [(80, 24), (140, 42)], ids=["80x24", "140x42"])
@pytest.mark.parametrize("state", list(STATES))
def test_snapshot(snap_compare, state, size):
    scenario, upto, keys = STATES[state]
    app = make_app(demo_session(scenario, upto=upto))
    assert snap_compare(app, press=keys, terminal_size=size)
