"""The checkpoint a server was given, measured on this machine: how many bytes there are to load.

The model folder (or a Hugging Face repo id resolved in the local HF cache, as the
preflight's agent does) is looked at once: its index file's text and its files' sizes;
``tui.core.loading.checkpoint_size`` does the arithmetic; the folder's mount says what storage it
lies on (``tui.sources.diskstats``). Blocking (a directory listing,
one small file): :func:`measure_async` runs it in a worker thread.
"""

from __future__ import annotations

import asyncio
import os

from tui.core.events import CheckpointFound
from tui.core.files import read_bytes
from tui.core.loading import INDEX_FILES, checkpoint_size
from tui.sources.diskstats import mount_of
from tui.sources.probe_agent import INDEX_LIMIT, resolve_model


def index_text(directory: str) -> str | None:
    """The text of ``directory``'s weight index file (None: there is none, or it is not one: too
    big, or not a regular file). The log named the folder, so whoever wrote the log chose it: read
    capped and without blocking (``tui.core.files``), a FIFO or ``/dev/zero`` there is no index."""
    for name in INDEX_FILES:
        try:
            return read_bytes(os.path.join(directory, name), INDEX_LIMIT).decode("utf-8", errors="replace")
        except OSError:
            continue
    return None


def index_total(directory: str) -> int | None:
    """What the index file of ``directory`` says the weights add up to (None: no index, or it does not say)."""
    text = index_text(directory)
    return checkpoint_size(text, ()) if text else None


def folder_bytes(directory: str) -> int | None:
    """Bytes of weights in ``directory`` (None: none found there)."""
    index = index_text(directory)
    files: list[tuple[str, int]] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    files.append((entry.name, entry.stat().st_size))  # follows the HF cache's symlinks
                except OSError:
                    continue
    except OSError:
        pass
    return checkpoint_size(index, files)


def _resolve(name: str) -> tuple[str | None, str]:
    """The preflight agent's resolution (a folder, or the HF cache's snapshot): ``(directory, how)``."""
    directory, how = resolve_model(name)  # type: ignore[no-untyped-call]  # the agent is Python 3.6 text
    return directory, str(how)


def measure(model: str, split: int = 1, draft: str | None = None) -> CheckpointFound:
    """What there is to load for ``model`` (a folder or a HF repo id) and its ``draft``."""
    directory, how = _resolve(model)
    if directory is None:
        return CheckpointFound(model, None, split, detail=f"{model}: {how}")
    total = folder_bytes(directory)
    draft_bytes = 0
    if draft:
        draft_dir, _ = _resolve(draft)
        draft_bytes = (folder_bytes(draft_dir) or 0) if draft_dir else 0
    if total is None:
        return CheckpointFound(model, None, split, draft_bytes, detail=f"{directory}: no weight files")
    mount = mount_of(directory)
    return CheckpointFound(model, total, split, draft_bytes, filesystem=mount[0] if mount else None,
                           device=mount[1] if mount else None)


async def measure_async(model: str, split: int = 1, draft: str | None = None) -> CheckpointFound:
    return await asyncio.to_thread(measure, model, split, draft)


async def measure_remote(host: str, model: str, split: int = 1, draft: str | None = None) -> CheckpointFound:
    """The same, where the log is: the preflight's probe agent over the SSH connection to ``host``
    (``[user@]host[:port]``) resolves the folder or the HF cache's snapshot there and adds it up."""
    from tui.core.cmdline import ServerCommand
    from tui.sources.probe import ProbeError, ProbeRequest, probe_remote

    models = {"target": model, **({"draft": draft} if draft else {})}
    req = ProbeRequest(ports=[], models=models, eagle3=False, shm=None, program=None, packages=[])
    nobody = ServerCommand(argv=(), server=None, python=None, program=None)
    try:
        facts = await probe_remote(host, nobody, req=req)
    except ProbeError as exc:
        return CheckpointFound(model, None, split, detail=str(exc))
    found = facts.get("models") or {}
    target, extra = found.get("target") or {}, found.get("draft") or {}
    total, draft_bytes = target.get("weight_bytes"), extra.get("weight_bytes")
    if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
        return CheckpointFound(model, None, split, detail=f"{host}:{model}: {target.get('how') or 'not measured'}")
    return CheckpointFound(model, total, split, draft_bytes if isinstance(draft_bytes, int) else 0)
