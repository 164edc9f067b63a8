"""This machine's process table, through psutil: liveness, groups, process trees, GPU device files.

A server such as SGLang starts a scheduler per GPU rank, a detokenizer and more, and a
process may leave the attempt's process group with ``setsid()``. So an attempt's
processes are its group *and* its descendants, and — since Watchtower is the
subreaper of what it launches — orphans re-parented to Watchtower that carry the
attempt's mark in their environment.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Sequence

import psutil

#: How often a wait re-reads the process table for members forked meanwhile.
RESCAN = 0.5
#: Set in every launched server's environment; inherited by all it starts (found after a setsid).
MARK = "WATCHTOWER_ATTEMPT"


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot: with the pid, it names one process.

    Read from /proc rather than psutil's float ``create_time`` so that the pid files an
    earlier Watchtower wrote keep matching exactly.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    fields = data[data.rindex(")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 else None


def _live(proc: psutil.Process) -> bool:
    try:
        return proc.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return False


def is_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie that only waits to be reaped counts as gone)."""
    try:
        return _live(psutil.Process(pid))
    except psutil.Error:
        return False


def reap(pid: int) -> None:
    """Collect a zombie child of ours (an orphan adopted as subreaper) so it really vanishes."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def group_members(pgid: int, reap_except: int | None = None) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``.

    With ``reap_except``, zombies of the group that are our children (orphans handed to
    us as their subreaper) are reaped on the way — all but that pid, which asyncio's
    child watcher waits for — so that the group really vanishes (``killpg`` → ESRCH).
    """
    members = []
    me = os.getpid()
    for proc in psutil.process_iter(["ppid", "status"]):
        try:
            if os.getpgid(proc.pid) != pgid:
                continue
        except OSError:
            continue
        if proc.info["status"] not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            members.append(proc.pid)
        elif reap_except is not None and proc.info["ppid"] == me and proc.pid != reap_except:
            reap(proc.pid)
    return sorted(members)


def descendants(pid: int) -> list[psutil.Process]:
    """Every live process below ``pid`` in the process tree, whatever its group or session."""
    try:
        return [p for p in psutil.Process(pid).children(recursive=True) if _live(p)]
    except psutil.Error:
        return []


def marked_orphans(mark: str, skip: set[int]) -> list[psutil.Process]:
    """Our adopted children (and their trees) whose environment carries ``MARK=mark``."""
    found = []
    try:
        children = psutil.Process().children()
    except psutil.Error:
        return []
    for child in children:
        if child.pid in skip:
            continue
        try:
            if child.environ().get(MARK) != mark:
                continue
        except psutil.Error:
            continue
        if _live(child):
            found.append(child)
        else:
            reap(child.pid)
        found += descendants(child.pid)
    return found


def become_subreaper() -> bool:
    """Adopt our launched servers' orphans (Linux ``PR_SET_CHILD_SUBREAPER``).

    When a server's main process dies, or a process double-forks out of its group, it is
    re-parented to us instead of to PID 1, which in containers often never reaps it: we
    can then find it, stop it, and reap it, leaving not even zombies behind.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def command_line(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return ""


def holds_gpu_device(pid: int) -> bool | None:
    """Whether ``pid`` has an NVIDIA device file open (None: not allowed to look).

    A process that holds GPU memory has ``/dev/nvidia*`` open. A pid from NVML that does not
    is probably another PID namespace's number (containers) naming an unrelated process here.
    (psutil's ``open_files`` lists regular files only, so the fds are read directly.)
    """
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except PermissionError:
        return None
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/dev/nvidia"):
                return True
        except OSError:
            continue
    return False


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def wait_pids_gone(pids_now: Callable[[], list[int]], timeout: float) -> bool:
    """Until ``pids_now()`` is empty (True) or ``timeout`` passes (False).

    Sleeps on pidfds of the current members (woken the moment one exits), and looks
    at the process table again at least every ``RESCAN`` seconds for new members.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        pids = pids_now()
        if not pids:
            return True
        remaining = deadline - loop.time()
        if remaining <= 0:
            return False
        woke: asyncio.Future[None] = loop.create_future()
        fds: list[int] = []
        try:
            for pid in pids:
                try:
                    fd = os.pidfd_open(pid)
                except OSError:
                    continue
                fds.append(fd)
                loop.add_reader(fd, _wake, woke)
            if fds:
                try:
                    async with asyncio.timeout(min(remaining, RESCAN)):
                        await asyncio.shield(woke)
                except asyncio.TimeoutError:
                    pass
            else:
                await asyncio.sleep(min(remaining, 0.01))
        finally:
            for fd in fds:
                loop.remove_reader(fd)
                os.close(fd)


def signal_pids(pids: Sequence[int], sig: int) -> list[str]:
    """Send ``sig`` to each of ``pids`` here (one already gone is no error); errors in words."""
    errors = []
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:
            errors.append(f"pid {pid}: not allowed (another user's process)")
    return errors


#: Seconds a process asked to stop (SIGTERM) gets before SIGKILL.
STOP_GRACE_S = 5.0


async def stop_pids(pids: Sequence[int], grace: float = STOP_GRACE_S) -> list[str]:
    """Stop processes that are not an attempt's group here (GPU leftovers, a dead server's ranks):
    SIGTERM, then SIGKILL to those still alive after ``grace`` seconds; errors in words."""
    errors = signal_pids(pids, signal.SIGTERM)
    if not await wait_pids_gone(lambda: [p for p in pids if is_alive(p)], grace):
        errors += signal_pids([p for p in pids if is_alive(p)], signal.SIGKILL)
    return errors
