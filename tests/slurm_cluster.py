"""A real two-node Slurm cluster on this machine, for the tests (see slurm-local.md).

A private ``munged`` (its own key and socket, so the machine's munge is neither needed nor
touched), one ``slurmctld`` and two ``slurmd`` (``-N n1``, ``-N n2``) in the foreground, all
configured by a ``slurm.conf`` in a temporary directory on free ports. The clients find it
through ``SLURM_CONF`` (``SlurmCluster.env``). Started once per test session: about a second.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo", "srun")
NODES = ("n1", "n2")


def missing_binaries() -> list[str]:
    """The Slurm/munge programs this machine lacks (empty: a cluster can be started)."""
    absent = [path for path in DAEMONS if not os.access(path, os.X_OK)]
    return absent + [name for name in CLIENTS if shutil.which(name) is None]


@dataclass
class SlurmCluster:
    """A running test cluster: where its config, logs and job files live."""

    root: Path
    conf: Path
    log_dir: Path
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment a Slurm client needs to reach this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30, check=check)

    def idle_nodes(self) -> int:
        out = self.run("sinfo", "-h", "-o", "%T %D", check=False).stdout.split()
        return int(out[1]) if len(out) == 2 and out[0] == "idle" else 0

    def diagnostics(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}" for p in sorted(self.log_dir.glob("*.log"))
        )

    def cancel_all(self, timeout: float = 30.0) -> None:
        """Leave no job behind: cancel every job, then wait until the queue is empty (the job
        steps really gone: a slurmstepd outlives a controller shut down under it)."""
        self.run("scancel", "-u", getpass.getuser(), check=False)
        deadline = time.monotonic() + timeout
        while self.run("squeue", "-h", check=False).stdout.strip() and time.monotonic() < deadline:
            time.sleep(0.1)  # Slurm has no event to await: poll its queue


def _free_ports(count: int) -> list[int]:
    """``count`` free TCP ports, consecutive (slurm.conf gives the nodes a port range)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count >= 65535:
            continue
        socks = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            return list(range(base, base + count))
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError("no free consecutive ports for the test Slurm cluster")


def _config(root: Path, munge_socket: Path, ports: list[int]) -> str:
    host = socket.gethostname().split(".")[0]
    user = getpass.getuser()
    ctld, first, last = ports[0], ports[1], ports[len(NODES)]
    return "\n".join(
        [
            "ClusterName=wt",
            f"SlurmctldHost={host}",
            f"SlurmUser={user}",
            f"SlurmdUser={user}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={munge_socket}",
            f"StateSaveLocation={root}/state",
            f"SlurmdSpoolDir={root}/spool/%n",
            f"SlurmctldPidFile={root}/run/slurmctld.pid",
            f"SlurmdPidFile={root}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={root}/log/slurmctld.log",
            f"SlurmdLogFile={root}/log/slurmd-%n.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "ReturnToService=2",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "JobCompType=jobcomp/none",
            "AccountingStorageType=accounting_storage/none",
            "KillWait=2",  # a cancelled task gets SIGKILL 2 s after SIGTERM (default 30 s)
            f"SlurmctldPort={ctld}",
            f"NodeName=n[1-{len(NODES)}] NodeHostname={host} NodeAddr=127.0.0.1 Port={first}-{last} "
            "CPUs=1 RealMemory=4000 State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def running_slurm(root: Path, start_timeout: float = 20.0) -> Iterator[SlurmCluster]:
    """Start munged, slurmctld and the slurmd of n1 and n2; shut them all down on exit.

    Raises RuntimeError (with the daemons' logs) when the cluster does not come up.
    """
    for sub in ("state", "run", "log", "munge", *(f"spool/{n}" for n in NODES)):
        (root / sub).mkdir(parents=True, exist_ok=True)
    munge_dir = root / "munge"
    munge_dir.chmod(0o755)  # clients (any user) reach the socket through it
    key = munge_dir / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = munge_dir / "munge.socket"
    log_dir = root / "log"
    conf = root / "slurm.conf"
    conf.write_text(_config(root, sock, _free_ports(len(NODES) + 1)))
    cluster = SlurmCluster(root=root, conf=conf, log_dir=log_dir)
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    try:
        cluster.processes["munged"] = subprocess.Popen(
            [
                DAEMONS[0], "--force", "--foreground", f"--socket={sock}", f"--key-file={key}",
                f"--log-file={log_dir / 'munged.log'}", f"--pid-file={munge_dir / 'munged.pid'}",
                f"--seed-file={munge_dir / 'munged.seed'}", "--num-threads=2",
            ],
            **quiet,
        )
        deadline = time.monotonic() + start_timeout
        while not sock.exists():
            if cluster.processes["munged"].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"munged did not start:\n{cluster.diagnostics()}")
            time.sleep(0.02)
        env = cluster.env
        cluster.processes["slurmctld"] = subprocess.Popen(
            [DAEMONS[1], "-D", "-f", str(conf)], env=env, **quiet
        )
        for node in NODES:
            cluster.processes[f"slurmd-{node}"] = subprocess.Popen(
                [DAEMONS[2], "-D", "-f", str(conf), "-N", node], env=env, **quiet
            )
        while cluster.idle_nodes() < len(NODES):  # readiness probe: sinfo, not a fixed sleep
            dead = [name for name, p in cluster.processes.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"{', '.join(dead)} exited" if dead else f"no 2 idle nodes after {start_timeout:.0f} s"
                raise RuntimeError(f"test Slurm cluster did not start ({why}):\n{cluster.diagnostics()}")
            time.sleep(0.1)
        yield cluster
    finally:
        if "slurmctld" in cluster.processes:
            cluster.cancel_all()
            cluster.run("scontrol", "shutdown", check=False)  # the controller and both slurmd
        for name in [n for n in cluster.processes if n != "munged"]:
            _stop(cluster.processes[name])
        if "munged" in cluster.processes:
            _stop(cluster.processes["munged"])
