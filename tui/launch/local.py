"""Attempts on this machine: a process group per attempt, a pid file to reattach (the `run` command
makes Watchtower the orphans' subreaper: ``proctable.become_subreaper``, called by the wiring).

Every attempt runs in its own session and process group (``start_new_session=True``)
under the exit-status wrapper (``tui.launch.spec.WRAPPER``); its output goes straight to
the attempt's log file and a pid file beside it (``NAME-vN.pid``) lets a later
Watchtower reattach. Exit is noticed by awaiting the child (or a pidfd when
reattached), never by a polling loop. A stop reaches the group, every descendant of
the wrapper and every adopted orphan carrying the attempt's mark (``proctable``), so a
process that ``setsid()``-ed out of the group is stopped too — and named.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import signal as signals
import sys
import time
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from tui.launch import proctable
from tui.launch.oom import oom_evidence, watch_memory
from tui.launch.runner import AttemptRun, Emit, ProcessRef, Runner
from tui.launch.spec import WRAPPER, LaunchError, exit_path, read_exit


class LocalRunner(Runner):
    """Starts, watches and stops attempts on this machine."""

    host = "localhost"

    def __init__(self, emit: Emit) -> None:
        super().__init__(emit)
        self._marks: dict[int, str] = {}  # id(run) -> the mark in its environment
        self._tree: dict[int, dict[int, float]] = {}  # id(run) -> pid -> create time, every process seen

    async def start(
        self,
        attempt: int,
        command: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        pid_path: Path,
        cwd: str | None = None,
    ) -> AttemptRun:
        if not command:
            raise LaunchError("no command to launch (put it after --)")
        _check_executable(command[0], cwd)
        try:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            # 0600: the log may hold what the server echoes (its tokens, its arguments)
            log = open(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600), "ab")
        except OSError as exc:
            raise LaunchError(f"cannot write the log {log_path}: {exc.strerror or exc}") from None
        mark = f"{log_path.stem}:{secrets.token_hex(4)}"
        told, tell = os.pipe()  # the wrapper writes the server's pid there
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                WRAPPER,
                exit_path(pid_path),
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                env={**os.environ, **env, proctable.MARK: mark, "WATCHTOWER_SERVER_PID_FD": str(tell)},
                cwd=cwd,
                start_new_session=True,
                pass_fds=(tell,),
            )
        except FileNotFoundError:
            os.close(told)
            raise LaunchError(f"command not found: {command[0]}") from None
        except PermissionError as exc:
            os.close(told)
            raise LaunchError(_not_runnable(exc, command[0], cwd)) from None
        finally:
            log.close()
            os.close(tell)
        run = AttemptRun(
            attempt=attempt,
            command=tuple(command),
            env=dict(env),
            log_path=log_path,
            pid_path=pid_path,
            pid=proc.pid,
            pgid=proc.pid,  # a new session: the leader's pid is the group id
            started_at=time.time(),
            server_pid=await asyncio.to_thread(_server_pid, told),
        )
        self._marks[id(run)] = mark
        run.memory = watch_memory(proc.pid)
        _write_pid_file(pid_path, proc.pid)
        self._emit(run.started_event())
        self._watch(run, proc.wait())
        return run

    async def reattach(self, attempt: int, command: Sequence[str], log_path: Path, pid_path: Path) -> AttemptRun | None:
        """An attempt a previous Watchtower started, if its pid file names a live process."""
        found = _read_pid_file(pid_path)
        if found is None:
            return None
        pid, ticks = found
        if not proctable.is_alive(pid) or (ticks is not None and proctable.start_time(pid) != ticks):
            return None
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return None
        run = AttemptRun(
            attempt=attempt,
            command=tuple(command),
            env={},
            log_path=log_path,
            pid_path=pid_path,
            pid=pid,
            pgid=os.getpgid(pid),
            started_at=os.stat(pid_path).st_mtime,
            server_pid=_child_of(pid),
        )
        run.memory = watch_memory(pid)
        self._emit(run.started_event())
        self._watch(run, _wait_pidfd(pidfd, exit_path(pid_path)))
        return run

    async def exit_status(self, pid_path: Path) -> tuple[int | None, int | None] | None:
        return read_exit(exit_path(pid_path))

    def tailer(self, run: AttemptRun) -> Any:
        from tui.sources.local import LocalTailer

        return LocalTailer(run.log_path)

    def _watch(self, run: AttemptRun, waiter: Awaitable[int | None]) -> None:
        async def watch() -> None:
            returncode = await waiter
            if returncode is not None and -returncode == signals.SIGKILL and not run.stopped_by_user:
                await self._oom_evidence(run)
            if returncode is None:
                event = run.exited(None, None, known=False)
            elif returncode < 0:
                event = run.exited(None, -returncode)
            else:
                event = run.exited(returncode, None)
            self._emit(event)

        self._spawn(watch())

    async def _oom_evidence(self, run: AttemptRun) -> None:
        """A SIGKILL we did not send: what says whether the OOM killer sent it (kernel log, cgroup)."""
        if run.memory is None:
            return
        pids = {run.pid or 0, *self._tree.get(id(run), {})}
        if run.pgid:
            pids.update(proctable.group_members(run.pgid))
        run.oom_evidence = await asyncio.to_thread(oom_evidence, run.memory, pids)

    # ------------------------------------------------------------ the attempt's processes

    def members(self, run: AttemptRun) -> list[int]:
        """Live pids of the attempt: its group, the wrapper's descendants, marked orphans."""
        if not run.pgid:
            return []
        pids = set(proctable.group_members(run.pgid, reap_except=run.pid if run.exit_known else None))
        tree = self._tree.setdefault(id(run), {})
        found = proctable.descendants(run.pid) if run.pid and run.alive else []
        mark = self._marks.get(id(run))
        if mark is not None:
            found += proctable.marked_orphans(mark, skip={run.pid or 0})
        for proc in found:
            try:
                tree.setdefault(proc.pid, proc.create_time())
            except psutil.Error:
                continue
        for pid, created in list(tree.items()):
            try:
                same = psutil.Process(pid).create_time() == created and proctable.is_alive(pid)
            except psutil.Error:
                same = False
            if same:
                pids.add(pid)
            else:
                del tree[pid]
                proctable.reap(pid)
        return sorted(pids)

    def processes(self, run: AttemptRun) -> list[ProcessRef]:
        return [ProcessRef(self.host, pid, proctable.command_line(pid)) for pid in self.members(run)]

    def outside_group(self, run: AttemptRun) -> list[ProcessRef]:
        out = []
        for pid in self.members(run):
            try:
                if os.getpgid(pid) != run.pgid:
                    out.append(ProcessRef(self.host, pid, proctable.command_line(pid)))
            except OSError:
                continue
        return out

    async def signal(self, run: AttemptRun, sig: int) -> bool:
        members = self.members(run)
        if not members or run.pgid is None:
            return False
        try:
            os.killpg(run.pgid, sig)
        except ProcessLookupError:
            pass
        for pid in members:
            try:
                if os.getpgid(pid) != run.pgid:
                    os.kill(pid, sig)  # out of the group (setsid): signalled one by one
            except OSError:
                continue
        return True

    async def wait(self, run: AttemptRun, timeout: float) -> bool:
        return await proctable.wait_pids_gone(lambda: self.members(run), timeout)

    async def alive(self, run: AttemptRun) -> bool:
        return bool(self.members(run))

    async def kill_pids(self, pids: Sequence[int], sig: int = signals.SIGKILL) -> list[str]:
        """Signal processes not in our group (leftover GPU holders); returns errors in words."""
        return proctable.signal_pids(pids, sig)


async def _wait_pidfd(pidfd: int, exit_file: str) -> int | None:
    """Until the wrapper behind ``pidfd`` exits; then the status it wrote (-N: signal N), or None."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def exited() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_reader(pidfd, exited)
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


def _not_runnable(exc: PermissionError, program: str, cwd: str | None) -> str:
    """Which file the permission was denied on: the working directory, Watchtower's own Python
    (it runs the wrapper that starts the command), or the command itself."""
    culprit = exc.filename or program
    if cwd is not None and os.path.realpath(culprit) == os.path.realpath(cwd):
        return f"cannot enter the working directory {cwd}: permission denied"
    if culprit == sys.executable:
        return f"cannot run {culprit} (the Python that starts {program}): permission denied"
    return f"command not executable: {culprit}"


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
    tmp.write_text(f"{pid} {proctable.start_time(pid) or ''}\n")
    os.replace(tmp, path)


def _read_pid_file(path: Path) -> tuple[int, int | None] | None:
    try:
        words = path.read_text().split()
        return int(words[0]), (int(words[1]) if len(words) > 1 and words[1].isdigit() else None)
    except (OSError, ValueError, IndexError):
        return None


def _child_of(pid: int) -> int | None:
    """The wrapper ``pid``'s own child (the server an attempt reattached to runs), if one lives."""
    try:
        return next((child.pid for child in psutil.Process(pid).children()), None)
    except psutil.Error:
        return None


def _server_pid(told: int) -> int | None:
    """The server's pid as the wrapper writes it to the pipe ``told`` (closed here); None if the
    wrapper ended without (the command could not start)."""
    try:
        with os.fdopen(told, "rb") as pipe:
            said = pipe.readline().strip()
    except OSError:
        return None
    return int(said) if said.isdigit() else None
