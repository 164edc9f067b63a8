"""What Slurm says about a job, read and worded: pure functions, no I/O.

``scontrol show job -o ID`` prints one line of ``Key=Value`` fields; :func:`parse_job`
turns it into a :class:`~tui.core.events.SlurmJobState`. A job state that has ended is a
verdict (:func:`job_words`: "job 1234 CANCELLED by root", "job 1234 FAILED exit 0:9");
a pending job is the startup before the startup ("queued: Resources, 3 jobs ahead").
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (made by ``parse_job`` alone: a log's wording, which reads slurmstepd's lines, needs no events)
    from tui.core.events import SlurmJobState

QUEUED = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED"})
ACTIVE = frozenset({"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING"})
#: States a job does not leave: the job is over.
ENDED = frozenset(
    {
        "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
        "PREEMPTED", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED",
    }
)
#: Ends that stop a server which was ready, as a clean exit or SIGTERM stops one server: it exited
#: 0, or someone cancelled it. The others (a task failed or was killed, a node lost, out of memory,
#: the time limit) end a ready server as a death does.
POLITE_ENDS = frozenset({"COMPLETED", "CANCELLED"})
#: The job's own record has gone (purged after MinJobAge, or never existed).
GONE = "GONE"

_FIELD = re.compile(r"(\w[\w:/]*)=(.*?)(?=\s+\w[\w:/]*=|\s*$)")
#: The line's head, by key position: scontrol prints JobId first, then JobName, then UserId as
#: ``name(uid)`` and GroupId. The name is the user's own text: a job named ``x JobId=999`` must not
#: make its words a field of the line.
_HEAD = re.compile(r"JobId=(?P<JobId>\S+) JobName=(?P<JobName>.*?) (?=UserId=\S*\(\d+\) GroupId=)")


def fields(line: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol show job -o`` line (values may hold spaces): the head's
    by position (``_HEAD``), the rest each at its first place — scontrol prints each key once, and
    what repeats one later is a value's text (a path, a command)."""
    line = line.strip()
    out: dict[str, str] = {}
    if (head := _HEAD.match(line)) is not None:
        out.update(head.groupdict())
        line = line[head.end():]
    for match in _FIELD.finditer(line):
        out.setdefault(match.group(1), match.group(2))
    return out


def expand_nodes(spec: str) -> tuple[str, ...]:
    """A Slurm host list as names: ``n[1-3,5],gpu[08-09]`` → n1 n2 n3 n5 gpu08 gpu09."""
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,\[]*", spec or ""):
        match = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if not match:
            if part and part != "(null)":
                names.append(part)
            continue
        head, ranges, tail = match.groups()
        for item in ranges.split(","):
            lo, _, hi = item.partition("-")
            if not hi:
                names.append(f"{head}{lo}{tail}")
                continue
            width = len(lo) if lo.startswith("0") else 0
            names.extend(f"{head}{n:0{width}d}{tail}" for n in range(int(lo), int(hi) + 1))
    return tuple(names)


def parse_job(line: str, *, at: float = 0.0, ahead: int | None = None) -> SlurmJobState | None:
    """The job state of one ``scontrol show job -o`` line, or None when it names no job."""
    f = fields(line)
    job = f.get("JobId")
    if not job:
        return None
    reason = f.get("Reason", "")
    from tui.core.events import SlurmJobState

    return SlurmJobState(
        job_id=job,
        state=f.get("JobState", "UNKNOWN"),
        reason="" if reason in ("None", "(null)") else reason,
        nodes=expand_nodes(f.get("NodeList", "")),
        exit_code=f.get("ExitCode", ""),
        tasks=int(f["NumTasks"]) if f.get("NumTasks", "").isdigit() else None,
        stdout=f.get("StdOut", ""),
        workdir=f.get("WorkDir", ""),
        name=f.get("JobName", ""),
        partition=f.get("Partition", ""),
        ahead=ahead,
        at=at,
    )


def job_words(job: SlurmJobState, by: str | None = None) -> str:
    """The job's state as the header and the plain output say it."""
    head = f"job {job.job_id} {job.state}"
    if job.state in QUEUED:
        return f"{head} ({queued_words(job)})"
    if job.state in ACTIVE:
        return f"{head} on {','.join(job.nodes)}" if job.nodes else head
    if job.state == GONE:
        return f"job {job.job_id}: Slurm no longer knows it ({job.reason or 'purged or never submitted'})"
    if job.state == "CANCELLED":
        return f"{head} by {by}" if by else head
    if job.state in ENDED and job.exit_code and job.exit_code != "0:0":
        head = f"{head} exit {job.exit_code}"
    if job.task_failures:
        head += f" ({'; '.join(job.task_failures[:3])})"
    return head


def queued_words(job: SlurmJobState) -> str:
    """Phase zero: "queued: Resources, 3 jobs ahead"."""
    words = f"queued: {job.reason or 'not scheduled yet'}"
    if job.ahead:
        words += f", {job.ahead} job{'s' if job.ahead != 1 else ''} ahead"
    return words


_SRUN_TASK = re.compile(r"^srun: error: (?P<node>\S+): tasks? (?P<tasks>[\d,\-]+): (?P<what>.+)$", re.M)


def task_failures(output: str) -> tuple[str, ...]:
    """What srun said about tasks that died ("n2 task 1: Killed"), from the batch output's text."""
    found = [f"{m['node']} task {m['tasks']}: {m['what'].strip()}" for m in _SRUN_TASK.finditer(output)]
    return tuple(dict.fromkeys(found))


def node_has_task(code: int, out: str, err: str) -> bool | None:
    """Whether ``scontrol listpids JOB NODE`` shows a process of one of the job's task steps (not
    its batch or extern step) on that node: True, False ("JobId=5 does not exist on node n2": its
    slurmstepd is gone), or None where it cannot tell (no slurmd of that node reachable from here:
    listpids asks the node's slurmd through its local socket)."""
    if "error:" in err:
        return None
    steps = [row.split()[2] for row in out.splitlines()[1:] if len(row.split()) >= 3]
    if any(step.isdigit() for step in steps):
        return True
    if code != 0 and "does not exist on node" not in err and "no steps for job" not in err:
        return None
    return False


def answering_steps(out: str) -> set[str]:
    """The task steps (``5.0``, not ``5.batch``) that ``sstat -n -P -a -j JOB -o JobID`` reports:
    a step is left out as soon as one of its nodes no longer has its part running."""
    return {step for step in out.split() if step.rpartition(".")[2].isdigit()}


def task_outputs(script: str) -> str | None:
    """The per-task output pattern an ``srun -o …%t`` line of a batch script gives, if any."""
    for line in script.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        if "srun" not in words:
            continue
        args = words[words.index("srun") + 1 :]
        for index, word in enumerate(args):
            value = None
            if word in ("-o", "--output") and index + 1 < len(args):
                value = args[index + 1]
            elif word.startswith("--output="):
                value = word.split("=", 1)[1]
            elif word.startswith("-o") and len(word) > 2:
                value = word[2:]
            if value and re.search(r"%[tnN]", value):
                return value
    return None


def output_path(pattern: str, job: SlurmJobState, task: int, *, user: str = "", workdir: str = "") -> str:
    """One task's output file from an ``srun -o`` pattern (one task per node, block layout)."""
    node = job.nodes[task] if task < len(job.nodes) else ""
    values = {"j": job.job_id, "J": job.job_id, "t": str(task), "n": str(task), "N": node, "u": user,
              "x": job.name, "%": "%"}
    path = re.sub(r"%(\d*)([jJtnNux%])", lambda m: values[m.group(2)].zfill(int(m.group(1) or 0)), pattern)
    if workdir and not path.startswith("/"):
        path = f"{workdir.rstrip('/')}/{path}"
    return path


# ---------------------------------------------------------------- writing a job

#: What a command's words may hold, and the shell expression each becomes in a task.
PLACEHOLDERS = {"{node_rank}": '"$SLURM_NODEID"', "{nnodes}": '"$SLURM_NNODES"', "{master}": '"$WATCHTOWER_MASTER"'}
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


_DIRECTIVE = re.compile(r"^#SBATCH --([\w-]+)=(.*)$", re.M)


@dataclass(frozen=True, slots=True)
class SlurmRequest:
    """What ``run --slurm`` asks of Slurm: the sbatch directives."""

    nodes: int = 1
    partition: str | None = None
    gpus_per_node: int | None = None
    time: str | None = None  # as sbatch --time takes it: "30", "1:00:00", "1-00:00"
    account: str | None = None

    @classmethod
    def from_script(cls, text: str) -> SlurmRequest:
        """What a batch script written by :func:`batch_script` asked for (``attach``: a
        resubmission asks the same of Slurm)."""
        found = dict(_DIRECTIVE.findall(text))
        nodes, gpus = found.get("nodes", ""), found.get("gpus-per-node", "")
        return cls(nodes=int(nodes) if nodes.isdigit() else 1, partition=found.get("partition"),
                   gpus_per_node=int(gpus) if gpus.isdigit() else None, time=found.get("time"),
                   account=found.get("account"))

    def directives(self) -> list[str]:
        pairs = [("nodes", str(self.nodes)), ("ntasks-per-node", "1"), ("partition", self.partition),
                 ("gpus-per-node", None if self.gpus_per_node is None else str(self.gpus_per_node)),
                 ("time", self.time), ("account", self.account)]
        return [f"#SBATCH --{key}={value}" for key, value in pairs if value]


def task_command(argv: list[str] | tuple[str, ...]) -> str:
    """The command as one shell string for each task, ``{node_rank}``, ``{nnodes}`` and
    ``{master}`` becoming that task's values; everything else quoted as it was given."""
    words = []
    for word in argv:
        parts, last = [], 0
        for match in _PLACEHOLDER.finditer(word):
            if match.start() > last:
                parts.append(shlex.quote(word[last : match.start()]))
            parts.append(PLACEHOLDERS[match.group(0)])
            last = match.end()
        if last < len(word) or not parts:
            parts.append(shlex.quote(word[last:]))
        words.append("".join(parts))
    return " ".join(words)


def batch_script(
    argv: list[str] | tuple[str, ...], request: SlurmRequest, *, name: str, task_output: str, batch_output: str,
    cwd: str | None = None,
) -> str:
    """The batch script of one attempt: directives, then one ``srun`` task per node.

    The environment is not written here (it may hold secrets): sbatch passes its own on
    (``--export=ALL``). ``--kill-on-bad-exit`` ends every task when one dies, as a
    multi-node server cannot go on without a node.
    """
    lines = ["#!/bin/bash", f"#SBATCH --job-name={name}", *request.directives(), f"#SBATCH --output={batch_output}"]
    if cwd:
        lines.append(f"#SBATCH --chdir={cwd}")
    lines += [
        f"# written by Watchtower: {name}",
        'WATCHTOWER_MASTER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "export WATCHTOWER_MASTER",
        f"srun --kill-on-bad-exit=1 --output={shlex.quote(task_output)} bash -c {shlex.quote('exec ' + task_command(argv))}",
        "",
    ]
    return "\n".join(lines)


#: slurmstepd's own line in a task's output: its name (with the node since 23.x), its level.
_STEPD = re.compile(r"^slurmstepd(?:-\S+)?: (?:error: )?(?P<rest>\S.*)$")
#: Its word on a job's or a step's end: "*** STEP 12.0 ON n1 CANCELLED AT 2026-… DUE TO TIME LIMIT ***".
_STEPD_END = re.compile(r"^\*{3} (?:JOB|STEP) \S+ (?:ON \S+ )?(?P<what>.+?) AT \S+(?P<why> DUE .+?)? \*{3}$")


def stepd_gist(text: str) -> str | None:
    """slurmstepd's line without its front matter: "CANCELLED DUE TO TIME LIMIT" (its name and level,
    the entity, node and time dropped: the row that quotes it names the node, and the end of its
    words is the reason); None for another program's line."""
    match = _STEPD.match(text)
    if match is None:
        return None
    rest = match["rest"]
    end = _STEPD_END.match(rest)
    return end["what"] + (end["why"] or "") if end is not None else rest
