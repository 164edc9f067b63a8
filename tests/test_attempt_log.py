"""The launch's drain of an attempt's log on exit: the last words already in the file are waited for
however slowly the reader gets to them (CI under load read a real llama.cpp's error after its exit
had been judged: DEAD where FAILED was right)."""

from __future__ import annotations

import asyncio

from tui.core.events import LogChunk
from tui.core.secrets import Masker
from tui.launch.attempt_log import AttemptLog


class StarvedReader:
    """A real file read by a reader that is not scheduled for ``stall`` seconds (a loaded machine),
    then delivers the file's bytes at once."""

    def __init__(self, path, stall: float) -> None:
        self.path = str(path)
        self.stall = stall
        self.released = asyncio.Event()
        self.offset = 0

    async def events(self):
        await asyncio.sleep(self.stall)
        data = open(self.path, "rb").read()
        self.offset = len(data)
        yield LogChunk("log", 0, data, 0.0)
        await self.released.wait()

    async def close(self) -> None:
        self.released.set()


async def test_the_bytes_in_the_file_at_exit_are_waited_for_past_the_progress_timeout(tmp_path):
    log = tmp_path / "bad-v1.log"
    log.write_bytes(b"main: loading model\nllama_model_load: error loading model: failed to read magic\n")
    got: list = []
    attempt = AttemptLog(StarvedReader(log, stall=0.4), Masker(), got.append, local=True)
    await attempt.drain(0.1)  # no progress for 4x the timeout: the old drain gave up after 0.1 s
    assert [e.data for e in got if isinstance(e, LogChunk)] == [log.read_bytes()]
    await attempt.close()


async def test_a_log_that_keeps_growing_after_exit_is_not_waited_for_forever(tmp_path):
    log = tmp_path / "v1.log"
    log.write_bytes(b"x\n")
    attempt = AttemptLog(StarvedReader(log, stall=30), Masker(), lambda e: None, local=True)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await attempt.drain(0.1)
    assert loop.time() - started < 2.0  # ten times the timeout at most, however much is unread
    await attempt.close()
