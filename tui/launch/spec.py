"""What to launch and how to stop it: plain data, and where an attempt's files live."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from tui.core.limits import StallLimits
from tui.core.options import SMOKE_TIMEOUT_S


class LaunchError(Exception):
    """The server could not be started (command not found, log dir not writable …): one line."""


@dataclass(frozen=True, slots=True)
class StopPlan:
    """Grace periods of a stop: SIGINT, wait ``after_int``; SIGTERM, wait ``after_term``; SIGKILL."""

    after_int: float = 15.0
    after_term: float = 10.0
    after_kill: float = 5.0

    @property
    def words(self) -> str:
        """The escalation, as a stop asks before it begins."""
        return f"SIGINT, then SIGTERM after {self.after_int:g} s, then SIGKILL after {self.after_term:g} s more."

    def steps(self) -> tuple[tuple[int, float], ...]:
        return (
            (signal.SIGINT, self.after_int),
            (signal.SIGTERM, self.after_term),
            (signal.SIGKILL, self.after_kill),
        )


@dataclass(slots=True)
class LaunchSpec:
    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)  # overrides on top of Watchtower's environment
    log_dir: Path = Path(".")
    host: str | None = None  # None: this machine
    health_url: str | None = None
    smoke: bool = False  # --smoke: ready only once one tiny completion answered
    smoke_timeout: float = SMOKE_TIMEOUT_S  # --smoke-timeout: seconds for each of its requests
    plan: StopPlan = field(default_factory=StopPlan)
    stall_limit: StallLimits | None = None  # --stall-limit
    on_ready: str | None = None
    on_fail: str | None = None
    cwd: str | None = None

    @property
    def host_label(self) -> str:
        return self.host or "localhost"


def attempt_paths(log_dir: str | os.PathLike[str], name: str, attempt: int) -> tuple[Path, Path]:
    """``(DIR/NAME-vN.log, DIR/NAME-vN.pid)``."""
    base = Path(log_dir) / f"{name}-v{attempt}"
    return base.with_name(base.name + ".log"), base.with_name(base.name + ".pid")


def exit_path(pid_path: Path | str) -> str:
    """``NAME-vN.exit`` beside ``NAME-vN.pid``: the server's exit status, written by the wrapper."""
    return str(pid_path)[: -len(".pid")] + ".exit" if str(pid_path).endswith(".pid") else f"{pid_path}.exit"


def server_pid_path(pid_path: Path | str) -> str:
    """``NAME-vN.server-pid`` beside ``NAME-vN.pid``: the server's own pid under the wrapper, written
    by the wrapper where no pipe reaches Watchtower (over SSH)."""
    stem = str(pid_path)[: -len(".pid")] if str(pid_path).endswith(".pid") else str(pid_path)
    return f"{stem}.server-pid"


def parse_exit(text: str) -> tuple[int | None, int | None] | None:
    """``(returncode, signal)`` from an exit file's text (128+N is signal N); None when it holds none."""
    text = text.strip()
    if not text.lstrip("-").isdigit():
        return None
    code = int(text)
    return (None, code - 128) if 128 < code < 160 else (code, None)


def read_exit(path: str) -> tuple[int | None, int | None] | None:
    try:
        return parse_exit(Path(path).read_text())
    except OSError:
        return None


# Every attempt runs as the child of a small Python wrapper, the leader of the attempt's
# process group. The wrapper outlives the group's SIGINT and SIGTERM (its handlers, unlike
# SIG_IGN, are reset to the defaults in the server at exec; a detaching shell's background
# start would otherwise leave SIGINT ignored), writes the server's exit status beside the log
# (``NAME-vN.exit``), where it survives Watchtower and the SSH connection, and then dies the way
# the server died, so that a watching parent sees the server's own status. Given a pipe's fd in
# WATCHTOWER_SERVER_PID_FD, it writes the server's pid there: the pid an operator acts on (given a
# path in WATCHTOWER_SERVER_PID_FILE instead, over SSH where no pipe reaches, it writes it there).
WRAPPER = """
import os, signal, subprocess, sys
exitfile = sys.argv[1]
try:
    os.unlink(exitfile)
except FileNotFoundError:
    pass
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda *_: None)
said = os.environ.pop("WATCHTOWER_SERVER_PID_FD", None)
told = os.environ.pop("WATCHTOWER_SERVER_PID_FILE", None)
try:
    server = subprocess.Popen(sys.argv[2:])
    if said:  # the server's own pid, for Watchtower to name (this wrapper is no one's to act on)
        os.write(int(said), f"{server.pid}\\n".encode())
        os.close(int(said))
    if told:  # the same, in a file (whole once it is there; unwritten, the wrapper's pid is said)
        try:
            with open(told + ".tmp", "w") as f:
                f.write(f"{server.pid}\\n")
            os.replace(told + ".tmp", told)
        except OSError:
            pass
    code = server.wait()
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
