"""Who writes a file, and the process tree behind them — read from /proc, as fuser and lsof do.

Standard library only and Python 3.6 syntax: the remote tail agent ships this module's
source (``tui.sources.remote_tail``) and runs the same scan on the remote host.

A writer is a process holding the file open for writing: one of its ``/proc/PID/fd/N``
links resolves to the file's device and inode (not its path: a renamed or deleted log is
still found) and ``/proc/PID/fdinfo/N`` shows a write access mode. A log written through
``| tee`` is held by ``tee``; the server is then whoever writes tee's input pipe.

The full scan stats every descriptor of every process, so it runs only when the writer
set is unknown or has changed; :class:`ServerTree` then keeps the tree current by looking
at the known pids alone (their ``stat`` and ``children`` files), about once a second.

The agent ships this module's source as one self-contained text, so the writer scan and
the tree it feeds stay together.
"""

import os
import stat

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the type checker only: the agent's Python 3.6 sees annotations as strings
    from collections.abc import Iterator
    from typing import Literal, NotRequired, TypedDict

    from tui.sources.follow import Inotify

    class ProcStub(TypedDict):
        """A process known only by its pid and start time (seeded by a reconnecting agent)."""

        pid: int
        ticks: int  # start time, in clock ticks since boot: with pid, its identity

    class ProcInfo(TypedDict):
        """What :func:`process` reads from /proc about one process."""

        pid: int
        ppid: int
        state: str
        title: str
        argv: list[str]
        ticks: int
        started: float | None  # seconds since the epoch, when the boot time is known
        writes: NotRequired[bool]  # holds the file itself (a ServerTree member)
        exit: NotRequired[int | None]  # the wait status, in a "gone" report

    Found = tuple[Literal["found"], str, list[ProcInfo], int | None]  # via, procs, main
    Gone = tuple[Literal["gone"], ProcInfo | ProcStub, int | None, bool, int]  # status, was main, left
    NoneFound = tuple[Literal["none"], str, str]  # reason, detail
    Report = Found | Gone | NoneFound

PROC = "/proc"
_WRITE_MODES = (os.O_WRONLY, os.O_RDWR)
#: Programs that copy a pipe into the log: the server is the process writing their input.
RELAYS = ("tee", "cat", "ts", "stdbuf", "logger", "multilog", "rotatelogs", "cronolog", "awk", "sed")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _boot_time() -> "float | None":
    try:
        with open(PROC + "/stat") as f:
            for line in f:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


_BOOT = _boot_time()


def available() -> bool:
    """Whether there is a /proc to look in."""
    return _BOOT is not None and os.path.isdir(PROC + "/self/fd")


def io_counters(pids: "Iterator[int] | list[int]") -> "list[tuple[int, int, int]]":
    """``(pid, rchar, read_bytes)`` of each pid whose ``/proc/PID/io`` can be read (the user's own
    processes; another user's need ptrace rights): what each has read, in all and from disk."""
    out = []
    for pid in pids:
        try:
            with open("%s/%d/io" % (PROC, pid), "rb") as f:
                text = f.read(1024)
        except OSError:
            continue
        values = {}
        for line in text.split(b"\n"):
            key, _, value = line.partition(b":")
            if key in (b"rchar", b"read_bytes"):
                try:
                    values[key] = int(value)
                except ValueError:
                    pass
        if b"rchar" in values:
            out.append((pid, values[b"rchar"], values.get(b"read_bytes", 0)))
    return out


def _stat_fields(pid: int) -> "list[str] | None":
    """Fields of /proc/PID/stat from the state on (field 3 is index 0), or None when gone."""
    try:
        with open("%s/%d/stat" % (PROC, pid), "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return data[data.rindex(")") + 2 :].split()


def _comm(pid: int) -> "str | None":
    try:
        with open("%s/%d/comm" % (PROC, pid), "rb") as f:
            return f.read().decode("utf-8", "replace").rstrip("\n")
    except OSError:
        return None


def _argv(pid: int) -> "list[str] | None":
    try:
        with open("%s/%d/cmdline" % (PROC, pid), "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().rstrip(b"\0").split(b"\0") if a]
    except OSError:
        return None


def _writes(pid: int, fd: str) -> bool:
    try:
        with open("%s/%d/fdinfo/%s" % (PROC, pid, fd)) as f:
            for line in f:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & os.O_ACCMODE in _WRITE_MODES
    except (OSError, ValueError, IndexError):
        pass
    return False


def _pids(own: int) -> "Iterator[int]":
    for name in os.listdir(PROC):
        if name.isdigit() and int(name) != own:
            yield int(name)


def holders(dev: int, ino: int, own: "int | None" = None,
            readers: "list[int] | None" = None) -> "tuple[list[int], int]":
    """``(pids, denied)``: the processes holding file ``dev``/``ino`` open for writing, and
    how many processes could not be inspected (another user's, without privileges). ``readers``,
    when given, gains the pids holding it open only to read (a ``tail -f``), in the same pass."""
    own = os.getpid() if own is None else own
    found: "list[int]" = []
    denied = 0
    for pid in _pids(own):
        base = "%s/%d/fd" % (PROC, pid)
        try:
            fds = os.listdir(base)
        except PermissionError:
            denied += 1
            continue
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(base + "/" + fd)
            except OSError:
                continue
            if st.st_ino == ino and st.st_dev == dev:
                if _writes(pid, fd):
                    found.append(pid)
                    break
                if readers is not None and pid not in readers:
                    readers.append(pid)
    if readers is not None:
        readers[:] = [pid for pid in readers if pid not in found]
    return found, denied


def zombie_children(parents: "list[int]", before: float) -> "list[ProcInfo]":
    """Dead, unreaped children of ``parents`` that started before ``before`` (epoch seconds),
    each with ``exit``, the wait status the kernel still holds (field 52), when readable.

    A server killed before its writer was seen holds no descriptor any more: ``server > log
    2>&1 & exec tail -f log`` leaves it a zombie of the ``tail`` that reads its log (``tail``
    never waits). That reader's zombie child is the log's writer, dead."""
    found: "list[ProcInfo]" = []
    for parent in parents:
        for pid in children(parent):
            info = process(pid)
            if info is None or info["state"] != "Z":
                continue
            if info["started"] is not None and info["started"] > before:
                continue  # born after the log's last write: not its writer
            info["exit"] = exit_status(pid)
            found.append(info)
    return found


#: Daemons that hold a task's output file open for it (``srun -o``): never its writer while the task is.
STEP_DAEMONS = ("slurmstepd",)
#: Programs that copy a file they follow into their output: ``tail -f server.log`` (a container's
#: entrypoint, a Slurm task's ``server > log 2>&1 & exec tail -f log``).
FOLLOWERS = ("tail",)


def _title(pid: int) -> str:
    info = process(pid)
    return info["title"] if info is not None else ""


def followed_file(pid: int) -> "tuple[int, int] | None":
    """When ``pid`` is a follower (``tail -f FILE``) writing the log: ``(dev, ino)`` of the regular
    file it reads (the server's own log, whose writers are the server), else None."""
    info = process(pid)
    if info is None or info["title"] not in FOLLOWERS:
        return None
    base = "%s/%d/fd" % (PROC, pid)
    try:
        fds = sorted(os.listdir(base), key=lambda fd: int(fd) if fd.isdigit() else 0)
    except OSError:
        return None
    for fd in fds:
        if fd in ("0", "1", "2") or _writes(pid, fd):
            continue
        try:
            st = os.stat(base + "/" + fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            return st.st_dev, st.st_ino
    return None


def pipe_source(pid: int, own: "int | None" = None) -> "list[int] | None":
    """When ``pid`` is a relay (``tee``…) reading a pipe: the pids writing that pipe, else None."""
    info = process(pid)
    if info is None or info["title"] not in RELAYS:
        return None
    try:
        link = os.readlink("%s/%d/fd/0" % (PROC, pid))
        st = os.stat("%s/%d/fd/0" % (PROC, pid))
    except OSError:
        return None
    if not link.startswith("pipe:"):
        return None
    pids, _ = holders(st.st_dev, st.st_ino, own)
    return [p for p in pids if p != pid]


def process(pid: int) -> "ProcInfo | None":
    """What /proc says about one process: a dict, or None once it is gone (a zombie included,
    whose ``exit`` is then the wait status the kernel still holds, when readable)."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20:
        return None
    title, argv = _comm(pid), _argv(pid)
    if title is None or argv is None:
        title, argv = "", []
    started = _BOOT + int(fields[19]) / _TICK if _BOOT is not None else None
    return {
        "pid": pid,
        "ppid": int(fields[1]),
        "state": fields[0],
        "title": title,
        "argv": argv,
        "ticks": int(fields[19]),
        "started": started,
    }


def exit_status(pid: int) -> "int | None":
    """A zombie's wait status (``/proc/PID/stat`` field 52), or None when not readable."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] != "Z" or len(fields) < 50:
        return None
    try:
        return int(fields[49])
    except ValueError:
        return None


def _last_pid() -> "int | None":
    """The last pid the kernel handed out (``/proc/loadavg``): unchanged means no fork anywhere."""
    try:
        with open(PROC + "/loadavg") as f:
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def children(pid: int) -> "list[int]":
    """The direct children of ``pid`` (every thread's ``children`` file), else a table scan."""
    kids: "list[int]" = []
    try:
        tasks = os.listdir("%s/%d/task" % (PROC, pid))
    except OSError:
        return kids
    for tid in tasks:
        try:
            with open("%s/%d/task/%s/children" % (PROC, pid, tid)) as f:
                kids.extend(int(x) for x in f.read().split())
        except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN
            return [p for p in _pids(-1) if (_stat_fields(p) or ["", ""])[1] == str(pid)]
        except (OSError, ValueError):
            continue
    return kids


class ServerTree:
    """The writers of one file and their descendants, kept current cheaply.

    :meth:`rescan` finds the writers (a full /proc scan); :meth:`check` only looks at the
    pids already known, reports the ones that ended and adds children that appeared.
    Processes are dicts from :func:`process` plus ``writes`` (holds the file itself).
    """

    def __init__(self, own: "int | None" = None) -> None:
        self.own = os.getpid() if own is None else own
        self.procs: "dict[int, ProcInfo]" = {}  # pid -> process dict, parents before children
        self.via = "fd"
        self.denied = 0
        self.relay: "int | None" = None  # pid of a tee-like writer whose input pipe's writer cannot be seen
        self.last_pid: "int | None" = None  # the kernel's last pid handed out, as last seen (no fork since: no new child)
        self.readers: "list[int]" = []  # processes holding the file open only to read, at the last rescan

    def rescan(self, dev: int, ino: int) -> bool:
        """Find the writers of ``dev``/``ino`` again; True when the tree changed."""
        self.readers = []
        pids, self.denied = holders(dev, ino, self.own, self.readers)
        # Slurm's step daemon opened its task's output file (``srun -o``) and holds it: the task writes it
        pids = [pid for pid in pids if _title(pid) not in STEP_DAEMONS] or pids
        via, self.relay = "fd", None
        if len(pids) == 1:
            upstream = pipe_source(pids[0], self.own)
            followed = followed_file(pids[0]) if upstream is None else None
            if upstream:
                pids, via = upstream, "pipe"
            elif upstream is not None:  # a relay whose input's writer is out of sight
                pids, self.relay = [], pids[0]
            elif followed is not None:  # ``tail -f server.log`` writes it: the server is who writes that
                self.readers = []  # (whose zombie child is the server, dead: ``_dead_writer``)
                upstream, self.denied = holders(*followed, self.own, self.readers)
                pids, via = (upstream, "file") if upstream else ([], via)
        writers = set(pids)
        before = self._signature()
        procs: "dict[int, ProcInfo]" = {}
        for pid in sorted(pids):
            self._add(pid, procs, writers)
        self.procs, self.via = procs, via
        return self._signature() != before

    def _add(self, pid: int, procs: "dict[int, ProcInfo]", writers: "set[int]") -> None:
        stack = [pid]
        while stack:
            pid = stack.pop()
            if pid in procs:
                continue
            info = process(pid)
            if info is None or info["state"] == "Z":
                continue
            info["writes"] = pid in writers
            procs[pid] = info
            stack.extend(sorted(children(pid), reverse=True))

    def check(self) -> "tuple[list[ProcInfo], bool]":
        """``(gone, changed)``: processes that ended since the last look (each with ``exit``,
        the wait status when the kernel still held it, else None), and whether the tree changed."""
        gone: "list[ProcInfo]" = []
        for pid, info in list(self.procs.items()):
            now = _stat_fields(pid)
            if now is None or now[0] == "Z" or int(now[19]) != info["ticks"]:
                ended: "ProcInfo" = {**info, "exit": exit_status(pid) if now is not None and now[0] == "Z" else None}
                gone.append(ended)
                del self.procs[pid]
        before = len(self.procs)
        renamed = False
        for pid, info in list(self.procs.items()):
            if _comm(pid) not in (None, info["title"]) or self._exec_unseen(info):  # exec'd, or set its process title
                fresh = process(pid)
                if fresh is not None:
                    fresh["writes"] = info["writes"]
                    self.procs[pid] = fresh
                    renamed = True
        forked = _last_pid()
        if forked is None or forked != self.last_pid or renamed:  # a process was created somewhere
            self.last_pid = forked
            writers = set(p for p, i in self.procs.items() if i["writes"])
            for pid in list(self.procs):
                for child in children(pid):
                    if child not in self.procs:
                        self._add(child, self.procs, writers)
        return gone, bool(gone) or renamed or len(self.procs) != before

    def _exec_unseen(self, info: "ProcInfo") -> bool:
        """A fork of its parent seen before it executed (the same title and command line) that has
        executed since, keeping its title: python starting python as ``sglang::scheduler_TP1`` shows
        the same ``comm`` before and after, so only its command line tells (read for such forks alone)."""
        parent = self.procs.get(info["ppid"])
        if parent is None or parent["title"] != info["title"] or parent["argv"] != info["argv"]:
            return False
        return _argv(info["pid"]) not in (None, info["argv"])

    def _signature(self) -> "list[tuple[int, int, bool]]":
        return sorted((p, i["ticks"], i["writes"]) for p, i in self.procs.items())

    def snapshot(self) -> "list[ProcInfo]":
        """The known processes, parents before children (writers' roots first)."""
        out: "list[ProcInfo]" = []
        seen: "set[int]" = set()
        roots = [p for p, i in self.procs.items() if i["ppid"] not in self.procs]
        roots.sort(key=lambda p: (not self.procs[p]["writes"], self.procs[p]["ticks"], p))
        stack = list(reversed(roots))
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            out.append(self.procs[pid])
            kids = sorted(p for p, i in self.procs.items() if i["ppid"] == pid)
            stack.extend(reversed(kids))
        return out


# ---------------------------------------------------------------- when to look, what to say

#: Filesystem types whose files may be written from another host.
NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "lustre", "gpfs", "ceph", "glusterfs",
              "beegfs", "fuse.sshfs", "fuse.glusterfs", "fuse.gcsfuse", "fuse.s3fs", "afs")
#: Container runtimes that copy a container's output into a log: the server is inside.
RUNTIMES = ("dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "conmon", "podman", "crio")
#: Looking at known pids: often enough to notice a death within a second.
CHECK_EVERY = 0.5
#: With no writer known, a full scan this often where inotify cannot watch the log.
SLOW_SCAN = 5.0
#: ... and where it does: a writer can only come by opening the log (IN_OPEN), creating or
#: renaming it at the path (the directory's events) or inheriting a known writer's descriptor
#: (its tree is followed), so the scan is a safety net. Each scan reads every process's fds:
#: 8 quiet local logs scanned every 5 s cost half of a watch's CPU at rest (issue 35).
WATCHED_SCAN = 60.0
#: Full scans at most this often, however many opens and closes inotify reports (the
#: spacing doubles, up to MAX_RESCAN, while scans find nothing new).
MIN_RESCAN, MAX_RESCAN = 0.5, 2.0


def filesystem_type(path: str) -> "str | None":
    """The type of the filesystem holding ``path`` (from /proc/self/mountinfo), or None."""
    try:
        real = os.path.realpath(path)
        with open(PROC + "/self/mountinfo", "rb") as f:
            rows = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    best = ""
    kind: "str | None" = None
    for row in rows:
        left, _, right = row.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        mount = fields[4].replace("\\040", " ")
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, right.split()[0]
    return kind


class Discovery:
    """Writer discovery for one log path, ticked by its caller (the local source on the
    event loop, the remote agent in its select loop); synchronous and standard-library only.

    :meth:`tick` returns what to report, as tuples: ``("found", via, procs, main)`` the
    writers' tree (a new one, or changed) and the main process's pid (the first writer found;
    it stays the main one after it ended); ``("gone", proc, status, main, remaining)`` a process
    ended (status: its wait status when it could be read, else None);
    ``("none", reason, detail)`` no writer can be named (reason: a ``NoWriterReason`` value),
    once per reason. The full /proc scan runs only when the writer set is unknown (every
    :attr:`slow_scan` s) or has changed: inotify reports an open or a close-after-write of the
    log (``fd`` is that inotify descriptor; call :meth:`wakeup` when it is readable).
    """

    def __init__(self, path: str, inotify: "Inotify | None" = None) -> None:
        self.path = path
        self.tree = ServerTree()
        self.inotify = inotify
        self.ident: "tuple[int, int] | None" = None
        self.file_wd = -1
        self.dir_wd = -1
        self.due = True  # a full scan is wanted
        self.last_scan = -1e9
        self.said: "str | None" = None  # the last "none" reason reported
        self.main: "int | None" = None  # pid of the main process, once found
        self.ended = False  # every known process ended: no "none" report until new writers come
        self.pending: "list[tuple[Literal['gone'], ProcStub, int | None, bool]]" = []  # "gone" reports from seed()
        self.last_tick = -1e9
        self.name = os.fsencode(os.path.basename(path))
        self.spacing = MIN_RESCAN  # between full scans: doubles while they find nothing new
        if inotify is not None:
            self.dir_wd = inotify.add(os.path.dirname(path) or ".", 0x100 | 0x080 | 0x200 | 0x040)

    @property
    def fd(self) -> int:
        return self.inotify.fd if self.inotify is not None else -1

    def wakeup(self) -> None:
        """Drain the inotify descriptor: the log opened or closed after writing, or a file
        appearing at its path, means a rescan (other files in the directory do not)."""
        if self.inotify is None:
            return
        for wd, _mask, name in self.inotify.read():
            if wd != self.dir_wd or name == self.name:
                self.due = True

    def seed(self, known: "list[list[int]]", main: "int | None") -> None:
        """Processes known before (``[[pid, ticks], ...]``, a reconnecting agent): the ones
        still alive are watched again, the others are reported gone at the first tick."""
        self.main = main
        for pid, ticks in known:
            info = process(pid)
            if info is not None and info["ticks"] == ticks and info["state"] != "Z":
                info["writes"] = False
                self.tree.procs[pid] = info
            else:
                status = exit_status(pid) if info is not None and info["ticks"] == ticks else None
                stub: "ProcStub" = {"pid": pid, "ticks": ticks}
                self.pending.append(("gone", stub, status, pid == main))

    def timeout(self, now: float) -> float:
        """Seconds until :meth:`tick` has something to do (without a wake-up)."""
        waits = []
        if self.tree.procs or self.pending:
            waits.append(self.last_tick + CHECK_EVERY - now)
        if self.due:
            waits.append(self.last_scan + self.spacing - now)
        elif not self.tree.procs:
            waits.append(self.last_scan + self.slow_scan - now)
        return max(0.0, min(waits)) if waits else self.slow_scan

    @property
    def slow_scan(self) -> float:
        """Seconds between full scans while no writer is known: long while inotify watches both
        the directory and the file at the path (``WATCHED_SCAN``), short where it cannot."""
        watched = self.dir_wd >= 0 and (self.ident is None or self.file_wd >= 0)
        return WATCHED_SCAN if watched else SLOW_SCAN

    def scan_wanted(self, now: float) -> bool:
        """Whether the next tick runs a full /proc scan (callers run that one off their loop)."""
        return self.due or (not self.tree.procs and now - self.last_scan >= self.slow_scan)

    def tick(self, now: float) -> "list[Report]":
        self.last_tick = now
        out: "list[Report]" = [item + (len(self.tree.procs),) for item in self.pending]
        self.pending = []
        try:
            st = os.stat(self.path)
            ident = (st.st_dev, st.st_ino)
        except OSError:
            ident = None
        if ident != self.ident:
            self.ident, self.due = ident, True
            if self.inotify is not None and ident is not None:
                self.inotify.remove(self.file_wd)
                self.file_wd = self.inotify.add(self.path, 0x020 | 0x008)  # IN_OPEN, IN_CLOSE_WRITE
        if self.tree.procs:
            gone, changed = self.tree.check()
            left = len(self.tree.procs)
            for info in gone:
                out.append(("gone", info, info.get("exit"), info["pid"] == self.main, left))
            self.ended = not left
            if changed and left:
                out.append(("found", self.tree.via, self.tree.snapshot(), self.main))
        if ident is not None and self.scan_wanted(now) and now - self.last_scan >= self.spacing:
            self.due, self.last_scan = False, now
            found = self._scan(ident, now)
            # a log opened and closed over and over (a reader's cron job) costs a scan now and then
            self.spacing = MIN_RESCAN if found else min(self.spacing * 2, MAX_RESCAN)
            out.extend(found)
        return out

    def _scan(self, ident: "tuple[int, int]", now: float) -> "list[Report]":
        if not available():
            return self._none("no_proc", "no /proc here: the processes writing the log cannot be seen")
        had = bool(self.tree.procs)
        changed = self.tree.rescan(*ident)
        procs = self.tree.snapshot()
        if procs:
            first = procs[0]
            if self.tree.via == "fd" and first["title"] in RUNTIMES:
                self.tree.procs = {}
                return self._none("container", "written by the container runtime %s (pid %d): the server "
                                  "runs inside the container, out of sight" % (first["title"], first["pid"]))
            if not had or self.main is None:
                self.main = first["pid"]
            self.said, self.ended = None, False
            return [("found", self.tree.via, procs, self.main)] if changed or not had else []
        if had or self.ended:
            return []  # they ended: "gone" said so
        dead = self._dead_writer()
        if dead:
            return dead
        if self.tree.relay is not None:
            who = process(self.tree.relay) or {"title": "?"}
            return self._none("pipe", "written by %s (pid %d) from a pipe whose writer cannot be seen "
                              "(another user's, or in a container)" % (who["title"], self.tree.relay))
        fs = filesystem_type(self.path)
        if fs in NETWORK_FS:
            return self._none("network_fs", "on a network filesystem (%s): the writer may be on another host" % fs)
        if self.tree.denied:
            return self._none("other_user", "no process visible here writes it; %d processes of other users "
                              "cannot be inspected (the writer may be one of them)" % self.tree.denied)
        return self._none("nobody", "no process here holds it open for writing (a writer in a container, "
                          "on another host, or one that has closed it, cannot be seen)")

    def _dead_writer(self) -> "list[Report]":
        """No live writer, but a reader's zombie child that started before the log last changed:
        the server, killed and not yet reaped (``zombie_children``), reported gone once, as the
        main process, with the exit status the kernel holds for its parent."""
        try:
            changed = os.stat(self.path).st_mtime
        except OSError:
            return []
        zombies = zombie_children(self.tree.readers, changed + 1.0)
        if len(zombies) != 1:  # none, or several a reader never reaped: which one wrote cannot be told
            return []
        dead = zombies[0]
        self.main, self.ended, self.said = dead["pid"], True, None
        return [("gone", dead, dead.get("exit"), True, 0)]

    def _none(self, reason: str, detail: str) -> "list[Report]":
        if reason == self.said:
            return []
        self.said = reason
        return [("none", reason, detail)]
