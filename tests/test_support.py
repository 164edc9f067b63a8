"""The test support helpers keep their word: a wait that fails says what it waited for and what it
saw; the in-memory source delivers in order and ends."""

from __future__ import annotations

import pytest

from tests.support import MemorySource, until
from tui.core.events import LogChunk


async def test_until_returns_the_condition_value_once_it_holds():
    looks = []
    assert await until(lambda: looks.append(1) or (len(looks) >= 3 and "there")) == "there"


async def test_until_says_what_it_waited_for_and_what_it_saw():
    state = {"phase": "weight_load"}
    with pytest.raises(AssertionError) as failed:
        await until(lambda: state["phase"] == "ready", timeout=0.05, seen=lambda: state)
    message = str(failed.value)
    assert message.startswith("waited 0.05 s for: ") and 'state["phase"] == "ready"' in message
    assert "seen: {'phase': 'weight_load'}" in message
    with pytest.raises(AssertionError, match="for: the server to be ready$"):
        await until(lambda: False, timeout=0.01, what="the server to be ready")


async def test_a_memory_source_says_bytes_at_growing_offsets_in_order_and_ends_when_closed():
    source = MemorySource("server.log")
    source.say("one\n")
    source.say(b"two\n", at=5.0)
    source.put("a notice")
    await source.close()
    events = [e async for e in source.events()]
    assert events[0] == LogChunk("server.log", 0, b"one\n", events[0].at)
    assert events[1:] == [LogChunk("server.log", 4, b"two\n", 5.0), "a notice"] and source.closed
