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
from tui.launch.spec import WRAPPER, LaunchError, exit_path, parse_exit
from tui.sources import ssh

#: Seconds between liveness checks of a remote attempt ("noticed within a few seconds").
REMOTE_POLL = 1.0


class RemoteRunner(Runner):
    """Starts attempts on another host through SSH, detached: they survive Watchtower's exit."""

    def __init__(self, target: ssh.SshTarget, emit: Emit, poll: float = REMOTE_POLL) -> None:
        super().__init__(emit)
        self.target = target
        self.host = str(target)
        self._poll = poll
        self._members: dict[int, list[int]] = {}  # pgid -> live pids, from the last check

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
                env=env,
                log_path=str(log_path),
                pid_path=str(pid_path),
                cwd=cwd,
            )
        except (ssh.SshError, ssh.RemoteCommandError, ValueError) as exc:
            raise LaunchError(str(exc)) from None
        run = AttemptRun(attempt, tuple(command), dict(env), Path(log_path), Path(pid_path), host=self.host,
                         pid=pid, pgid=pid, started_at=time.time())
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
        except (ssh.SshError, ssh.RemoteCommandError):
            return None
        run = AttemptRun(attempt, tuple(command), {}, Path(log_path), Path(pid_path), host=self.host,
                         pid=pid, pgid=pid, started_at=time.time())
        self._emit(run.started_event())
        self._spawn(self._watch(run))
        return run

    async def exit_status(self, pid_path: Path) -> tuple[int | None, int | None] | None:
        try:
            status, out, _ = await ssh.run(self.target, ["cat", exit_path(pid_path)])
        except (ssh.SshError, ssh.RemoteCommandError):
            return None
        return parse_exit(out) if status == 0 else None

    def tailer(self, run: AttemptRun) -> Any:
        from tui.sources.remote_tail import RemoteTailer

        return RemoteTailer(self.target, str(run.log_path), writers=False)  # the runner knows its processes

    async def _watch(self, run: AttemptRun) -> None:
        assert run.pgid is not None
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
        found = await self.exit_status(run.pid_path)
        if found is None:  # killed with the wrapper: by our SIGKILL, or unknown
            event = run.exited(None, signals.SIGKILL if run.stopped_by_user else None, known=run.stopped_by_user)
        else:
            event = run.exited(*found)
        self._emit(event)

    # ------------------------------------------------------------ the attempt's processes

    def members(self, run: AttemptRun) -> list[int]:
        """The group's members as last seen (the liveness check lists them every second)."""
        if not run.alive or not run.pid or run.pgid is None:
            return []
        return self._members.get(run.pgid) or [run.pid]

    def processes(self, run: AttemptRun) -> list[ProcessRef]:
        return [ProcessRef(self.host, pid) for pid in self.members(run)]

    async def _group(self, pgid: int) -> list[int] | None:
        """Live (non-zombie) members of remote process group ``pgid``; None when unknown."""
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

    async def alive(self, run: AttemptRun) -> bool:
        if run.pgid is None:
            return False
        members = await self._group(run.pgid)
        return True if members is None else bool(members)  # unknown: keep waiting, escalate on schedule

    async def signal(self, run: AttemptRun, sig: int) -> bool:
        if run.pgid is None or not await self.alive(run):
            return False
        try:
            return bool(await ssh.signal_group(self.target, run.pgid, int(sig)))
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

