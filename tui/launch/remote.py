"""Attempts on another host through SSH, detached: they survive Watchtower's exit.

The same wrapper as locally (``tui.launch.spec.WRAPPER``) runs as the leader of the
attempt's process group on the remote host; liveness is a ``ps`` over the connection
once a second, the exit status the file the wrapper left beside the log.
"""

from __future__ import annotations

import asyncio
import signal as signals
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tui.launch.runner import AttemptRun, Emit, ProcessRef, Runner
from tui.launch.spec import WRAPPER, LaunchError, exit_path, parse_exit, server_pid_path
from tui.sources import ssh

#: Seconds between liveness checks of a remote attempt ("noticed within a few seconds").
REMOTE_POLL = 1.0

#: The server's pid as the wrapper ``$1`` writes it to ``$2``, waited for while the wrapper lives
#: (at most 5 s: it writes it as soon as the server is forked); nothing when it never came.
_SERVER_PID = ('i=0; while [ ! -s "$2" ] && [ $i -lt 100 ] && kill -0 "$1" 2>/dev/null; do i=$((i+1)); sleep 0.05; done; '
               'cat "$2" 2>/dev/null')


class RemoteRunner(Runner):
    """Starts attempts on another host through SSH, detached: they survive Watchtower's exit."""

    def __init__(self, target: ssh.SshTarget, emit: Emit, poll: float = REMOTE_POLL) -> None:
        super().__init__(emit)
        self.target = target
        self.host = str(target)
        self._poll = poll
        self._members: dict[int, dict[int, int]] = {}  # id(run) -> its live pids -> pgid, as last seen

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
        try:
            status, _, err = await ssh.run(self.target, ["mkdir", "-p", str(Path(log_path).parent)])
            if status != 0:
                raise LaunchError(f"{self.host}: cannot create {Path(log_path).parent}: {err.strip()}")
            pid = await ssh.start_detached(
                self.target,
                ["python3", "-c", WRAPPER, exit_path(pid_path), *command],
                env={**env, "WATCHTOWER_SERVER_PID_FILE": server_pid_path(pid_path)},
                log_path=str(log_path),
                pid_path=str(pid_path),
                cwd=cwd,
            )
            server_pid = await self._server_pid(pid, pid_path)
        except (ssh.SshError, ssh.RemoteCommandError, ValueError) as exc:
            raise LaunchError(str(exc)) from None
        run = AttemptRun(attempt, tuple(command), dict(env), Path(log_path), Path(pid_path), host=self.host,
                         pid=pid, pgid=pid, started_at=time.time(), server_pid=server_pid)
        self._emit(run.started_event())
        self._spawn(self._watch(run))
        return run

    async def reattach(self, attempt: int, command: Sequence[str], log_path: Path, pid_path: Path) -> AttemptRun | None:
        try:
            status, out, _ = await ssh.run(self.target, ["cat", str(pid_path)])
            if status != 0 or not out.strip().isdigit():
                return None
            pid = int(out.strip())
            if not await ssh.is_alive(self.target, pid):
                return None
            server_pid = await self._server_pid(pid, pid_path)
        except (ssh.SshError, ssh.RemoteCommandError):
            return None
        run = AttemptRun(attempt, tuple(command), {}, Path(log_path), Path(pid_path), host=self.host,
                         pid=pid, pgid=pid, started_at=time.time(), server_pid=server_pid)
        self._emit(run.started_event())
        self._spawn(self._watch(run))
        return run

    async def _server_pid(self, wrapper: int, pid_path: Path) -> int | None:
        """The server's own pid under the wrapper ``wrapper`` (the pid an operator acts on), from
        the file the wrapper writes beside the pid file; None if it never came."""
        status, out, _ = await ssh.run(self.target, ["sh", "-c", _SERVER_PID, "sh", str(wrapper),
                                                     server_pid_path(pid_path)])
        return int(out.strip()) if status == 0 and out.strip().isdigit() else None

    async def exit_status(self, pid_path: Path) -> tuple[int | None, int | None] | None:
        try:
            status, out, _ = await ssh.run(self.target, ["cat", exit_path(pid_path)])
        except (ssh.SshError, ssh.RemoteCommandError):
            return None
        return parse_exit(out) if status == 0 else None

    def tailer(self, run: AttemptRun) -> Any:
        from tui.sources.remote_tail import RemoteTailer

        return RemoteTailer(self.target, str(run.log_path), reads=True)  # its I/O counters: the weight load's bytes

    async def _watch(self, run: AttemptRun) -> None:
        delay = self._poll
        while True:
            await asyncio.sleep(delay)
            members = await self._scan(run)
            if members is None:
                delay = min(delay * 2, 30.0)  # the tailer reports the connection state
                continue
            delay = self._poll
            if run.pid not in members:
                break
        found = await self.exit_status(run.pid_path)
        if found is None:  # killed with the wrapper: by our SIGKILL, or unknown
            event = run.exited(None, signals.SIGKILL if run.stopped_by_user else None, known=run.stopped_by_user)
        else:
            event = run.exited(*found)
        self._emit(event)

    # ------------------------------------------------------------ the attempt's processes

    def members(self, run: AttemptRun) -> list[int]:
        """The attempt's processes as last seen (the liveness check lists them every second)."""
        if not run.alive or not run.pid or run.pgid is None:
            return []
        return sorted(self._members.get(id(run), {})) or [run.pid]

    def processes(self, run: AttemptRun) -> list[ProcessRef]:
        return [ProcessRef(self.host, pid) for pid in self.members(run)]

    def outside_group(self, run: AttemptRun) -> list[ProcessRef]:
        return [ProcessRef(self.host, pid) for pid, pgid in sorted(self._members.get(id(run), {}).items())
                if pgid != run.pgid]

    async def _scan(self, run: AttemptRun) -> dict[int, int] | None:
        """The attempt's live processes on the host, pid -> pgid: its process group and every
        descendant of the wrapper or the group, whatever its group (a ``setsid()`` helper);
        None when the host cannot be asked."""
        if run.pgid is None:
            return {}
        try:
            status, out, _ = await ssh.run(self.target, ["ps", "-e", "-o", "pid=,ppid=,pgid=,stat="])
        except (ssh.SshError, ssh.RemoteCommandError):
            return None
        if status != 0:
            return None
        groups: dict[int, int] = {}
        children: dict[int, list[int]] = {}
        for line in out.splitlines():
            words = line.split()
            if len(words) < 4 or not all(w.isdigit() for w in words[:3]) or words[3].startswith("Z"):
                continue  # a zombie holds no memory: only live processes count
            pid, ppid, pgid = int(words[0]), int(words[1]), int(words[2])
            groups[pid] = pgid
            children.setdefault(ppid, []).append(pid)
        found = {pid for pid, pgid in groups.items() if pgid == run.pgid}
        seen = self._members.get(id(run), {})
        found |= {pid for pid in seen if pid in groups}  # seen below the wrapper before: still ours
        stack = list(found | {run.pid or 0})
        while stack:
            for child in children.get(stack.pop(), ()):
                if child not in found:
                    found.add(child)
                    stack.append(child)
        members = {pid: groups[pid] for pid in found if pid in groups}
        self._members[id(run)] = members  # for GPU holders and the stop: which remote pids are ours
        return members

    async def alive(self, run: AttemptRun) -> bool:
        members = await self._scan(run)
        return True if members is None else bool(members)  # unknown: keep waiting, escalate on schedule

    async def signal(self, run: AttemptRun, sig: int) -> bool:
        members = await self._scan(run)
        if run.pgid is None or members == {}:
            return False
        try:
            delivered = bool(await ssh.signal_group(self.target, run.pgid, int(sig)))
            outside = [pid for pid, pgid in (members or {}).items() if pgid != run.pgid]
            if outside:  # out of the group (setsid): signalled one by one
                await ssh.run(self.target, ["kill", "-s", signals.Signals(sig).name.removeprefix("SIG"),
                                            *map(str, outside)])
            return delivered or bool(outside)
        except (ssh.SshError, ssh.RemoteCommandError):
            return True  # unknown: the next step follows on schedule

    async def wait(self, run: AttemptRun, timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while await self.alive(run):
            left = deadline - loop.time()
            if left <= 0:
                return False
            await asyncio.sleep(min(0.5, left))
        return True

    async def kill_pids(self, pids: Sequence[int], sig: int = signals.SIGKILL) -> list[str]:
        if not pids:
            return []
        try:
            name = signals.Signals(sig).name.removeprefix("SIG")
            status, _, err = await ssh.run(self.target, ["kill", "-s", name, *map(str, pids)])
        except (ssh.SshError, ssh.RemoteCommandError) as exc:
            return [str(exc)]
        return [err.strip()] if status != 0 and err.strip() else []

