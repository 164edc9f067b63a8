"""A Hugging Face download seen from the cache folder growing: "downloading 41/547 GB", not "stalled".

A server given a repo id fetches its weights into the local Hugging Face cache inside its
weight load, and its log says nothing meanwhile (vLLM hides the hub's bars; a file log gets
none). The cache shows it: ``<hub>/models--org--name/blobs/<hash>.incomplete`` grow, and become
``blobs/<hash>`` linked from ``snapshots/<rev>/<file>`` when done. Once a second this source
sums the weight bytes there (the snapshot's weight files, and every blob still incomplete)
and says so (:class:`~tui.core.events.CacheGrowth`); what there is in all comes from the
repo's index file once the cache has it (a :class:`~tui.core.events.CheckpointFound`). No
request is sent anywhere: only the folder is looked at. Blocking listings run in a thread.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator

from tui.core.events import CacheGrowth, CheckpointFound
from tui.core.loading import WEIGHT_SUFFIXES
from tui.sources.base import pause
from tui.sources.checkpoint import index_total
from tui.sources.probe_agent import hf_cache_dir

#: Seconds between two looks at the cache folder.
INTERVAL_S = 1.0


def repo_folder(model: str) -> str | None:
    """The cache folder of a repo id (``org/name``); None for a local path."""
    if not model or os.path.isdir(os.path.expanduser(model)) or model.startswith(("/", ".", "~")) or model.count("/") != 1:
        return None
    return os.path.join(hf_cache_dir(), "models--" + model.replace("/", "--"))  # type: ignore[no-untyped-call]


def cache_state(folder: str) -> tuple[int, bool, str | None]:
    """(weight bytes on disk, whether blobs are still incomplete, the newest snapshot folder)."""
    on_disk = 0
    downloading = False
    try:
        with os.scandir(os.path.join(folder, "blobs")) as entries:
            for entry in entries:
                if entry.name.endswith(".incomplete"):
                    downloading = True
                    try:
                        on_disk += entry.stat().st_size
                    except OSError:
                        continue
    except OSError:
        pass
    snapshot = None
    try:
        with os.scandir(os.path.join(folder, "snapshots")) as entries:
            found = sorted(((e.stat().st_mtime, e.path) for e in entries if e.is_dir()), reverse=True)
        snapshot = found[0][1] if found else None
    except OSError:
        pass
    if snapshot is not None:
        try:
            with os.scandir(snapshot) as entries:
                for entry in entries:
                    if entry.name.endswith(WEIGHT_SUFFIXES):
                        try:
                            on_disk += entry.stat().st_size  # follows the link to a finished blob
                        except OSError:
                            continue
        except OSError:
            pass
    return on_disk, downloading, snapshot


class DownloadSource:
    """``CacheGrowth`` as it first is and then once a second while the cache folder of ``model`` changes (and a
    ``CheckpointFound`` once its index says the total), until closed."""

    def __init__(self, model: str, folder: str, split: int = 1, interval: float = INTERVAL_S) -> None:
        self.model, self.folder, self.split, self.interval = model, folder, split, interval
        self._closed = asyncio.Event()

    async def events(self) -> AsyncIterator[CacheGrowth | CheckpointFound]:
        said: tuple[int, bool] | None = None
        total: int | None = None
        while not self._closed.is_set():
            on_disk, downloading, snapshot = await asyncio.to_thread(cache_state, self.folder)
            if total is None and snapshot is not None and downloading:
                total = await asyncio.to_thread(index_total, snapshot)
                if total is not None:
                    yield CheckpointFound(self.model, total, self.split)
            if (on_disk, downloading) != said:  # the first look too: what was there before the load
                said = (on_disk, downloading)
                yield CacheGrowth(self.model, on_disk, downloading, time.time())
            await pause(self._closed, self.interval)

    async def close(self) -> None:
        self._closed.set()

