"""The launched server: start it, know its pid and exit status, stop its whole group.

A server such as SGLang starts a scheduler process per GPU rank, a detokenizer and
more; killing the main pid alone leaves them holding GPU memory. So every attempt
runs in its own session and process group (``start_new_session=True``), a stop
signals the group (SIGINT, then SIGTERM, then SIGKILL after grace periods), and
"stopped" means the process table holds no live member of the group any more.

The server's stdout and stderr go straight to the attempt's log file
(``DIR/NAME-vN.log``), which the normal tailer follows; a pid file beside it
(``NAME-vN.pid``) lets a later Watchtower reattach. Exit is noticed by awaiting the
child (local) or a pidfd (reattached), never by a polling loop. Remote attempts go
through the SSH helper's ``start_detached`` and survive Watchtower's exit.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tui.core.events import ProcessExited, ProcessStarted, ProcessStopping
from tui.core.verdict import ProcessStatus, describe_exit, signal_name

#: How often a group wait re-reads the process table for members forked meanwhile.
_RESCAN = 0.5


class LaunchError(Exception):
    """The server could not be started (command not found, log dir not writable …): one line."""


@dataclass(frozen=True, slots=True)
class StopPlan:
    """Grace periods of a stop: SIGINT, wait ``after_int``; SIGTERM, wait ``after_term``; SIGKILL."""

    after_int: float = 15.0
    after_term: float = 10.0
    after_kill: float = 5.0

    def steps(self) -> tuple[tuple[int, float], ...]:
        return (
            (signal.SIGINT, self.after_int),
            (signal.SIGTERM, self.after_term),
            (signal.SIGKILL, self.after_kill),
        )


def attempt_paths(log_dir: str | os.PathLike[str], name: str, attempt: int) -> tuple[Path, Path]:
    """``(DIR/NAME-vN.log, DIR/NAME-vN.pid)``."""
    base = Path(log_dir) / f"{name}-v{attempt}"
    return base.with_name(base.name + ".log"), base.with_name(base.name + ".pid")


# ---------------------------------------------------------------- the process table


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name: [state, ppid, pgrp, session, …]."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return data[data.rindex(")") + 2 :].split()


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot: with the pid, it names one process."""
    fields = _stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def is_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie that only waits to be reaped counts as gone)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def group_members(pgid: int, reap_except: int | None = None) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``, from the process table.

    With ``reap_except``, zombies of the group that are our children (orphans handed to
    us as their subreaper) are reaped on the way — all but that pid, which asyncio's
    child watcher waits for — so that the group really vanishes (``killpg`` → ESRCH).
    """
    members = []
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat(int(entry))
        if not fields or len(fields) < 3 or fields[2] != str(pgid):
            continue
        if fields[0] not in ("Z", "X"):
            members.append(int(entry))
        elif reap_except is not None and fields[1] == me and int(entry) != reap_except:
            try:
                os.waitpid(int(entry), os.WNOHANG)
            except ChildProcessError:
                pass
    return sorted(members)


def become_subreaper() -> bool:
    """Adopt our launched servers' orphans (Linux ``PR_SET_CHILD_SUBREAPER``).

    When a server's main process dies, its schedulers are re-parented to us instead of
    to PID 1, which in containers often never reaps them: we can then reap them, and a
    stopped group leaves not even zombies behind.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return ""
    return " ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)


def holds_gpu_device(pid: int) -> bool | None:
    """Whether ``pid`` has an NVIDIA device file open (None: not allowed to look).

    A process that holds GPU memory has ``/dev/nvidia*`` open. A pid from NVML that does not
    is probably another PID namespace's number (containers) naming an unrelated process here.
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


async def wait_pids_gone(pids_now: Callable[[], list[int]], timeout: float) -> bool:
    """Until ``pids_now()`` is empty (True) or ``timeout`` passes (False).

    Sleeps on pidfds of the current members (woken the moment one exits), and looks
    at the process table again at least every ``_RESCAN`` seconds for new members.
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
        woke = loop.create_future()
        fds: list[int] = []
        try:
            for pid in pids:
                try:
                    fd = os.pidfd_open(pid)
                except (ProcessLookupError, OSError):
                    continue
                fds.append(fd)
                loop.add_reader(fd, lambda: woke.done() or woke.set_result(None))
            if fds:
                try:
                    await asyncio.wait_for(asyncio.shield(woke), min(remaining, _RESCAN))
                except asyncio.TimeoutError:
                    pass
            else:
                await asyncio.sleep(min(remaining, 0.01))
        finally:
            for fd in fds:
                loop.remove_reader(fd)
                os.close(fd)


# Every attempt runs as the child of a small Python wrapper, the leader of the attempt's
# process group. The wrapper outlives the group's SIGINT and SIGTERM (its handlers, unlike
# SIG_IGN, are reset to the defaults in the server at exec; a detaching shell's background
# start would otherwise leave SIGINT ignored), writes the server's exit status beside the log
# (``NAME-vN.exit``), where it survives Watchtower and the SSH connection, and then dies the way
# the server died, so that a watching parent sees the server's own status.
_WRAP = """
import os, signal, subprocess, sys
exitfile = sys.argv[1]
try:
    os.unlink(exitfile)
except FileNotFoundError:
    pass
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda *_: None)
try:
    code = subprocess.Popen(sys.argv[2:]).wait()
except OSError as exc:
    print(f"watchtower: cannot start {sys.argv[2]}: {exc.strerror or exc}", file=sys.stderr, flush=True)
    code = 127
with open(exitfile + ".tmp", "w") as f:
    f.write(f"{128 - code if code < 0 else code}\\n")
os.replace(exitfile + ".tmp", exitfile)
if code < 0:
    try:
        signal.signal(-code, signal.SIG_DFL)
    except (OSError, ValueError):
        pass  # SIGKILL and SIGSTOP have no handler to reset
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def exit_path(pid_path: Path | str) -> str:
    """``NAME-vN.exit`` beside ``NAME-vN.pid``: the server's exit status, written by the wrapper."""
    return str(pid_path)[: -len(".pid")] + ".exit" if str(pid_path).endswith(".pid") else f"{pid_path}.exit"


def read_exit(path: str) -> tuple[int | None, int | None] | None:
    """``(returncode, signal)`` from an exit file (128+N is signal N); None when there is none."""
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    if not text.lstrip("-").isdigit():
        return None
    code = int(text)
    return (None, code - 128) if 128 < code < 160 else (code, None)


# ---------------------------------------------------------------- one attempt


Emit = Callable[[object], None]


@dataclass(slots=True)
class Attempt:
    """One running (or finished) attempt of a launch, local or remote."""

    attempt: int
    command: tuple[str, ...]
    env: dict[str, str]
    log_path: Path
    pid_path: Path
    host: str = "localhost"
    pid: int | None = None
    pgid: int | None = None
    started_at: float = 0.0
    returncode: int | None = None
    signal: int | None = None
    exited_at: float | None = None
    stopped_by_user: bool = False
    exit_known: bool = True  # False when the exit status could not be learnt (no exit file)
    stopping: ProcessStopping | None = None
    _exited: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def alive(self) -> bool:
        return self.pid is not None and not self._exited.is_set()

    @property
    def status(self) -> ProcessStatus:
        return ProcessStatus(
            alive=self.alive,
            returncode=self.returncode,
            signal=self.signal,
            stopped_by_user=self.stopped_by_user,
        )

    async def wait(self) -> None:
        await self._exited.wait()

    def exited_event(self) -> ProcessExited:
        if not self.exit_known:
            detail = "exited (status unknown: no exit status was recorded)"
        elif self.stopped_by_user and self.signal is not None:
            detail = f"stopped with {signal_name(self.signal)}"
        else:
            detail = describe_exit(self.returncode, self.signal)
        return ProcessExited(
            attempt=self.attempt,
            pid=self.pid or 0,
            returncode=self.returncode,
            signal=self.signal,
            at=self.exited_at or time.time(),
            detail=detail,
        )

    def started_event(self) -> ProcessStarted:
        return ProcessStarted(
            attempt=self.attempt,
            pid=self.pid or 0,
            command=self.command,
            log_path=str(self.log_path),
            host=self.host,
            at=self.started_at,
        )


class LocalRunner:
    """Starts, watches and stops attempts on this machine."""

    host = "localhost"

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._tasks: set[asyncio.Task] = set()
        become_subreaper()

    async def start(
        self,
        attempt: int,
        command: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        pid_path: Path,
        cwd: str | None = None,
    ) -> Attempt:
        if not command:
            raise LaunchError("no command to launch (put it after --)")
        _check_executable(command[0], cwd)
        try:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(log_path, "ab")
        except OSError as exc:
            raise LaunchError(f"cannot write the log {log_path}: {exc.strerror or exc}") from None
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _WRAP,
                exit_path(pid_path),
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                env={**os.environ, **env},
                cwd=cwd,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise LaunchError(f"command not found: {command[0]}") from None
        except PermissionError:
            raise LaunchError(f"command not executable: {command[0]}") from None
        finally:
            log.close()
        run = Attempt(
            attempt=attempt,
            command=tuple(command),
            env=dict(env),
            log_path=log_path,
            pid_path=pid_path,
            pid=proc.pid,
            pgid=proc.pid,  # a new session: the leader's pid is the group id
            started_at=time.time(),
        )
        _write_pid_file(pid_path, proc.pid)
        self._emit(run.started_event())
        self._watch(run, proc.wait())
        return run

    def reattach(self, attempt: int, command: Sequence[str], log_path: Path, pid_path: Path) -> Attempt | None:
        """An attempt a previous Watchtower started, if its pid file names a live process."""
        found = _read_pid_file(pid_path)
        if found is None:
            return None
        pid, ticks = found
        if not is_alive(pid) or (ticks is not None and start_time(pid) != ticks):
            return None
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return None
        run = Attempt(
            attempt=attempt,
            command=tuple(command),
            env={},
            log_path=log_path,
            pid_path=pid_path,
            pid=pid,
            pgid=os.getpgid(pid),
            started_at=os.stat(pid_path).st_mtime,
        )
        self._emit(run.started_event())
        self._watch(run, _wait_pidfd(pidfd, exit_path(pid_path)))
        return run

    def exit_status(self, pid_path: Path) -> tuple[int | None, int | None] | None:
        """``(returncode, signal)`` an attempt's wrapper wrote when it ended; None if none was."""
        return read_exit(exit_path(pid_path))

    def _watch(self, run: Attempt, waiter) -> None:
        async def watch() -> None:
            returncode = await waiter
            if returncode is None:
                run.exit_known = False
            elif returncode < 0:
                run.signal = -returncode
            else:
                run.returncode = returncode
            run.exited_at = time.time()
            run._exited.set()
            self._emit(run.exited_event())

        task = asyncio.create_task(watch())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def members(self, run: Attempt) -> list[int]:
        return group_members(run.pgid, reap_except=run.pid if run.exit_known else None) if run.pgid else []

    async def stop(self, run: Attempt, plan: StopPlan) -> bool:
        """SIGINT, SIGTERM, SIGKILL to the group, each after the previous grace; True once it is gone."""
        run.stopped_by_user = True
        for sig, grace in plan.steps():
            if not self.members(run):
                break
            try:
                os.killpg(run.pgid, sig)
            except ProcessLookupError:
                break
            run.stopping = ProcessStopping(run.attempt, run.pid or 0, int(sig), grace, time.time())
            self._emit(run.stopping)
            if await wait_pids_gone(lambda: self.members(run), grace):
                break
        run.stopping = None
        gone = not self.members(run)
        if gone and run.pid is not None and run.exit_known:
            await run.wait()  # the leader is reaped and reported
        return gone

    def kill_pids(self, pids: Sequence[int], sig: int = signal.SIGKILL) -> list[str]:
        """Signal processes not in our group (leftover GPU holders); returns errors in words."""
        errors = []
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            except PermissionError:
                errors.append(f"pid {pid}: not allowed (another user's process)")
        return errors

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()


async def _wait_pidfd(pidfd: int, exit_file: str) -> int | None:
    """Until the wrapper behind ``pidfd`` exits; then the status it wrote (-N: signal N), or None."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.add_reader(pidfd, lambda: done.done() or done.set_result(None))
    try:
        await done
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    found = read_exit(exit_file)
    if found is None:
        return None
    returncode, signum = found
    return -signum if signum is not None else returncode


def _check_executable(program: str, cwd: str | None) -> None:
    """A clear error now, rather than a wrapper that dies with status 127 later."""
    if os.sep in program:
        path = os.path.join(cwd or os.getcwd(), program)
        if not os.path.exists(path):
            raise LaunchError(f"command not found: {program}")
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise LaunchError(f"command not executable: {program}")
    elif shutil.which(program) is None:
        raise LaunchError(f"command not found: {program}")


def _write_pid_file(path: Path, pid: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{pid} {start_time(pid) or ''}\n")
    os.replace(tmp, path)


def _read_pid_file(path: Path) -> tuple[int, int | None] | None:
    try:
        words = path.read_text().split()
        return int(words[0]), (int(words[1]) if len(words) > 1 and words[1].isdigit() else None)
    except (OSError, ValueError, IndexError):
        return None


# ---------------------------------------------------------------- remote attempts

#: Seconds between liveness checks of a remote attempt ("noticed within a few seconds").
REMOTE_POLL = 1.0


class RemoteRunner:
    """Starts attempts on another host through SSH, detached: they survive Watchtower's exit."""

    def __init__(self, target, emit: Emit, poll: float = REMOTE_POLL) -> None:
        self.target = target
        self.host = str(target)
        self._emit = emit
        self._poll = poll
        self._tasks: set[asyncio.Task] = set()
        self._members: dict[int, list[int]] = {}  # pgid -> live pids, from the last check

    async def start(
        self,
        attempt: int,
        command: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        pid_path: Path,
        cwd: str | None = None,
    ) -> Attempt:
        from tui.sources import ssh

        if not command:
            raise LaunchError("no command to launch (put it after --)")
        try:
            status, _, err = await ssh.run(self.target, ["mkdir", "-p", str(Path(log_path).parent)])
            if status != 0:
                raise LaunchError(f"{self.host}: cannot create {Path(log_path).parent}: {err.strip()}")
            pid = await ssh.start_detached(
                self.target,
                ["python3", "-c", _WRAP, exit_path(pid_path), *command],
                env=env,
                log_path=str(log_path),
                pid_path=str(pid_path),
                cwd=cwd,
            )
        except (ssh.SshError, ssh.RemoteCommandError, ValueError) as exc:
            raise LaunchError(str(exc)) from None
        run = Attempt(attempt, tuple(command), dict(env), Path(log_path), Path(pid_path), host=self.host,
                      pid=pid, pgid=pid, started_at=time.time())
        self._emit(run.started_event())
        self._watch(run)
        return run

    async def reattach(self, attempt: int, command: Sequence[str], log_path: Path, pid_path: Path) -> Attempt | None:
        from tui.sources import ssh

        try:
            status, out, _ = await ssh.run(self.target, ["cat", str(pid_path)])
            if status != 0 or not out.strip().isdigit():
                return None
            pid = int(out.strip())
            if not await ssh.is_alive(self.target, pid):
                return None
        except (ssh.SshError, ssh.RemoteCommandError):
            return None
        run = Attempt(attempt, tuple(command), {}, Path(log_path), Path(pid_path), host=self.host,
                      pid=pid, pgid=pid, started_at=time.time())
        self._emit(run.started_event())
        self._watch(run)
        return run

    async def exit_status(self, pid_path: Path) -> tuple[int | None, int | None] | None:
        from tui.sources import ssh

        try:
            status, out, _ = await ssh.run(self.target, ["cat", exit_path(pid_path)])
        except (ssh.SshError, ssh.RemoteCommandError):
            return None
        text = out.strip()
        if status != 0 or not text.lstrip("-").isdigit():
            return None
        code = int(text)
        return (None, code - 128) if 128 < code < 160 else (code, None)

    def tailer(self, run: Attempt):
        from tui.sources.remote_tail import RemoteTailer

        return RemoteTailer(self.target, str(run.log_path), writers=False)  # the runner knows its processes

    def _watch(self, run: Attempt) -> None:
        async def watch() -> None:
            from tui.sources import ssh

            delay = self._poll
            while True:
                await asyncio.sleep(delay)
                members = await self._group(run.pgid)
                if members is None:
                    delay = min(delay * 2, 30.0)  # the tailer reports the connection state
                    continue
                delay = self._poll
                self._members[run.pgid] = members  # for GPU holders: which remote pids are ours
                if run.pid not in members:
                    break
            code = None
            try:
                status, out, _ = await ssh.run(self.target, ["cat", exit_path(run.pid_path)])
                if status == 0 and out.strip().lstrip("-").isdigit():
                    code = int(out.strip())
            except (ssh.SshError, ssh.RemoteCommandError):
                pass
            if code is None:
                run.exit_known = run.stopped_by_user  # killed with the wrapper: by our SIGKILL
                run.signal = signal.SIGKILL if run.stopped_by_user else None
            elif 128 < code < 160:
                run.signal = code - 128
            else:
                run.returncode = code
            run.exited_at = time.time()
            run._exited.set()
            self._emit(run.exited_event())

        task = asyncio.create_task(watch())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def members(self, run: Attempt) -> list[int]:
        """The group's members as last seen (the liveness check lists them every second)."""
        if not run.alive or not run.pid:
            return []
        return self._members.get(run.pgid) or [run.pid]

    async def _group(self, pgid: int) -> list[int] | None:
        """Live (non-zombie) members of remote process group ``pgid``; None when unknown."""
        from tui.sources import ssh

        try:
            status, out, _ = await ssh.run(self.target, ["ps", "-e", "-o", "pid=,pgid=,stat="])
        except (ssh.SshError, ssh.RemoteCommandError):
            return None
        if status != 0:
            return None
        members = []
        for line in out.splitlines():
            words = line.split()
            if len(words) >= 3 and words[1] == str(pgid) and not words[2].startswith("Z") and words[0].isdigit():
                members.append(int(words[0]))  # a zombie holds no memory: only live members count
        return sorted(members)

    async def _group_alive(self, pgid: int) -> bool:
        members = await self._group(pgid)
        return True if members is None else bool(members)  # unknown: keep waiting, escalate on schedule

    async def stop(self, run: Attempt, plan: StopPlan) -> bool:
        from tui.sources import ssh

        run.stopped_by_user = True
        loop = asyncio.get_running_loop()
        for sig, grace in plan.steps():
            if not await self._group_alive(run.pgid):
                break
            try:
                if not await ssh.signal_group(self.target, run.pgid, int(sig)):
                    break
            except (ssh.SshError, ssh.RemoteCommandError):
                continue
            run.stopping = ProcessStopping(run.attempt, run.pid or 0, int(sig), grace, time.time())
            self._emit(run.stopping)
            deadline = loop.time() + grace
            while loop.time() < deadline and await self._group_alive(run.pgid):
                await asyncio.sleep(min(0.5, max(0.0, deadline - loop.time())))
        run.stopping = None
        gone = not await self._group_alive(run.pgid)
        if gone:
            try:
                await asyncio.wait_for(run.wait(), 10.0)
            except asyncio.TimeoutError:
                pass
        return gone

    async def kill_pids(self, pids: Sequence[int], sig: int = signal.SIGKILL) -> list[str]:
        from tui.sources import ssh

        if not pids:
            return []
        try:
            name = signal.Signals(sig).name.removeprefix("SIG")
            status, _, err = await ssh.run(self.target, ["kill", "-s", name, *map(str, pids)])
        except (ssh.SshError, ssh.RemoteCommandError) as exc:
            return [str(exc)]
        return [err.strip()] if status != 0 and err.strip() else []

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
