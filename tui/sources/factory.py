"""Which source a command's options ask for: ``log_tailer`` (local or over SSH), ``writer_source``
(the processes behind a local log) and ``make_gpu_source`` (``--gpus KIND``)."""


from __future__ import annotations

import functools

from tui.core.errors import UsageError
from tui.core.options import GPU_SOURCES
from tui.sources.base import EventSource
from tui.sources.gpu import CommandLines, GpuSource, NvmlSource

LOCAL_HOSTS = (None, "", "localhost")


def log_tailer(path: str, *, host: str | None = None, from_end: bool = False, writers: bool = False) -> EventSource:
    """The tailer for a log: local, or over SSH when ``host`` is ``[user@]host[:port]``.

    Both yield the same events (LogChunk, LogGap, LogRestart, LogTruncated, LogMoved,
    LogWaiting; the remote one ConnectionState too, and with ``writers`` the remote agent's
    writer discovery: WritersFound, WriterGone, NoWriter). A malformed ``host`` raises
    UsageError.
    """
    if host:
        from tui.sources.remote_tail import RemoteTailer

        return RemoteTailer(host, path, from_end=from_end, writers=writers)
    from tui.sources.local import LocalTailer

    return LocalTailer(path, from_end=from_end)


def writer_source(path: str, *, host: str | None = None) -> EventSource | None:
    """The source of the writer events of a log (the server behind it) where it is a
    separate one: a local log's :class:`~tui.sources.writers.WriterSource`; None with
    ``host``, whose tailer (``log_tailer(..., writers=True)``) carries them."""
    if host:
        return None
    from tui.sources.writers import WriterSource

    return WriterSource(path)


def make_gpu_source(
    kind: str | None,
    host: str | None = None,
    interval: float = 1.0,
    *,
    command_lines: CommandLines | None = None,
    count: int = 8,
    seed: int = 0,
) -> GpuSource | None:
    """The source for ``--gpus KIND`` watching ``host`` (None: this machine); None for ``none``.

    ``auto`` is NVML here and nvidia-smi on a remote host. A remote nvidia-smi runs
    through ``command_lines`` (default: the SSH module's ``stream_lines`` for ``host``).
    """
    kind = (kind or "auto").lower()
    local = host in LOCAL_HOSTS
    label = "localhost" if local else str(host)
    if kind not in GPU_SOURCES:
        raise UsageError(f"--gpus {kind}: expected one of {', '.join(GPU_SOURCES)}")
    if interval <= 0:
        raise UsageError(f"--gpu-interval {interval}: must be a positive number of seconds")
    if kind == "none":
        return None
    if kind == "sim":
        from tui.sources.sim import SimGpuSource

        return SimGpuSource(count, host=label, interval=interval, seed=seed)
    if kind == "nvml" and not local:
        raise UsageError("--gpus nvml reads this machine's GPUs only; use --gpus smi (or auto) with --host")
    if kind == "nvml" or (kind == "auto" and local):
        return NvmlSource(label, interval)
    from tui.sources.smi import SmiSource, local_lines

    if command_lines is None:
        command_lines = local_lines if local else _ssh_lines(str(host))
    return SmiSource(label, interval, command_lines=command_lines)


def _ssh_lines(host: str) -> CommandLines:
    from tui.sources import ssh  # asyncssh only when a remote host is watched

    try:
        target = ssh.SshTarget.parse(host)
    except ValueError as exc:
        raise UsageError(f"--host {host}: {exc}") from None
    return functools.partial(ssh.stream_lines, target)
