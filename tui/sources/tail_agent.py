"""Remote half of the SSH log tailer: follows one file, writes framed messages on stdout.

Sent to the remote host with ``tui.sources.follow`` and ``tui.sources.procscan`` as the
program text of ``python3 -c`` (``tui.sources.remote_tail``), so all three stay standard-
library only and run on any Python 3.6+. The tail algorithm is the local tailer's own
(:class:`tui.sources.follow.Follower`), and so is writer discovery
(:class:`tui.sources.procscan.Discovery`). Nothing it reads is executed.

Its configuration comes as one JSON line on stdin — never in argv, where any user of the
host could read it with ``ps`` (a resume carries the last bytes delivered, which may hold a
secret the server echoed): ``{"path", "mode", "poll_ms", "writers", "resume": [dev, ino,
offset, recenthex, headhex], "known": [[pid, ticks], ...], "main": pid}``. ``mode`` ``begin``: the
file from byte 0; ``end``: from its current end (only a file that exists when the agent
starts); ``resume`` continues the file dev/ino at offset after a dropped connection.

Frames: the line ``WATCHTOWER-TAIL 2`` (anything a login script printed before it is
skipped by the reader), then ASCII header lines; every text in them (paths, reasons) is a
JSON string, so a newline in a file name cannot break the framing:
  I dev ino offset recenthex headhex   now reading this file from offset (identity for a
                               resume: the last and the first bytes delivered of it)
  D offset n [ORIGIN]          n raw bytes of the file at offset follow (ORIGIN: JSON path
                               of an older file moved away from the path, still written)
  G offset n [REASON, ORIGIN]  n bytes at offset were truncated away before they were read
  R REASON                     a new file at the path, read from its start
  T size lines                 the file was truncated to size bytes (lines kept)
  W REASON                     waiting: no readable file at the path (once per reason)
  M [MOVED_TO, PIDS, DONE]     the old file is still written, followed at its new name
  P n                          n bytes of JSON follow: writer discovery's reports, a list
  C n                          n bytes of JSON follow: [[pid, rchar, read_bytes], ...] of the
                               writers found (their /proc/PID/io), about once a second
The agent exits when its stdin reaches end of file: the SSH channel went away. It sleeps on
inotify where it can (Linux), else polls: 5 ms after a change, backing off to poll_ms.

Back-pressure: after the configuration, the reader writes ``A n`` lines on stdin, n the bytes
of ``D`` payloads it has taken in so far; the agent sends no more data while WINDOW bytes are
unacknowledged. (SSH's own window does not bound memory: the client library re-opens it as
soon as it has buffered data, whether or not the reader took it.)
"""

import json
import os
import select
import sys
import time

from tui.sources import follow, procscan

MAGIC = b"WATCHTOWER-TAIL 2\n"
POLL_MIN = 0.005
SAFETY_POLL = 0.5  # with inotify: look anyway this often (NFS written from another host)
#: Bounds on what one report may carry (the reader caps every frame too).
MAX_ARGV_BYTES, MAX_PROCS = 4096, 512
#: Bytes of data sent ahead of the reader's acknowledgements (``A n`` on stdin).
WINDOW = 4 << 20
#: Seconds between two reports of the writers' I/O counters (the weight load's bytes read).
IO_EVERY = 1.0


def send(header, data=b""):
    view = memoryview(header.encode("ascii") + b"\n" + data)
    while view:
        try:
            written = os.write(1, view)
        except BrokenPipeError:
            sys.exit(0)
        view = view[written:]


def text(value):
    return json.dumps(value)  # ASCII only, no newline


def frame(item):
    kind = item[0]
    if kind == follow.DATA:
        origin = "" if item[3] is None else " " + text(item[3])
        send("D %d %d%s" % (item[1], len(item[2]), origin), item[2])
    elif kind == follow.OPENED:
        send("I %d %d %d %s %s" % (item[1], item[2], item[3], item[4].hex() or "-", item[5].hex() or "-"))
    elif kind == follow.GAP:
        send("G %d %d %s" % (item[1], item[2], text([item[3], item[4]])))
    elif kind == follow.RESTART:
        send("R " + text(item[1]))
    elif kind == follow.TRUNCATED:
        send("T %d %d" % (item[1], item[2]))
    elif kind == follow.WAIT:
        send("W " + text(item[1]))
    elif kind == follow.MOVED:
        send("M " + text([item[1], list(item[2]), item[3]]))


def report(items):
    for item in items:
        for info in item[2] if item[0] == "found" else [item[1]] if item[0] == "gone" else []:
            if "argv" not in info:
                continue  # a process gone while we were away: the client still knows its argv
            argv, size = [], 0
            for arg in info.get("argv") or []:
                size += len(arg)
                if size > MAX_ARGV_BYTES:
                    argv.append("…")
                    break
                argv.append(arg)
            info["argv"] = argv
        if item[0] == "found":
            del item[2][MAX_PROCS:]
    payload = json.dumps(items).encode("ascii")
    send("P %d" % len(payload), payload)


def counters(discovery, now, due):
    """Send the writers' I/O counters when ``due`` (a monotonic time) has come; the next one's time."""
    if discovery is None or not discovery.tree.procs:
        return now + IO_EVERY
    if now < due:
        return due
    found = procscan.io_counters(list(discovery.tree.procs)[:MAX_PROCS])
    if found:
        payload = json.dumps([list(item) for item in found]).encode("ascii")
        send("C %d" % len(payload), payload)
    return now + IO_EVERY


def read_config():
    data = b""
    while not data.endswith(b"\n"):
        piece = os.read(0, 65536)
        if not piece or len(data) > 1 << 20:
            sys.exit(0)
        data += piece
    return json.loads(data.decode("utf-8"))


def main():
    config = read_config()
    path = config["path"]
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser(path)
    poll_max = max(POLL_MIN, int(config.get("poll_ms", 50)) / 1000.0)
    wake = follow.Wakeups(path)
    found = procscan.available()
    holders = (lambda dev, ino: procscan.holders(dev, ino)[0]) if found else None
    follower = follow.Follower(
        path, from_end=config.get("mode") == "end", holders=holders,
        on_open=wake.watch_file, on_close=wake.unwatch_file,
    )
    discovery = None
    if config.get("writers"):
        discovery = procscan.Discovery(path, follow.Inotify())
        discovery.seed(config.get("known") or [], config.get("main"))
    send(MAGIC[:-1].decode())
    if config.get("mode") == "resume" and config.get("resume"):
        dev, ino, offset, recent, head = config["resume"]
        unhex = lambda text: bytes.fromhex("" if text == "-" else text)  # noqa: E731
        for item in follower.resume(int(dev), int(ino), int(offset), unhex(recent), unhex(head)):
            frame(item)
    delay = POLL_MIN
    sent, acked, pending = 0, 0, b""
    io_due = 0.0
    while True:
        held = sent - acked >= WINDOW  # the reader is behind: wait for its acknowledgements
        items, more = ([], False) if held else follower.step()
        for item in items:
            frame(item)
            if item[0] == follow.DATA:
                sent += len(item[2])
        now = time.monotonic()
        if discovery is not None and discovery.timeout(now) <= 0:
            reports = discovery.tick(now)
            if reports:
                report(reports)
        io_due = counters(discovery, now, io_due)
        if more:
            delay, timeout = POLL_MIN, 0
        elif held:
            timeout = SAFETY_POLL  # an acknowledgement on stdin wakes it
        elif wake.active:
            timeout = SAFETY_POLL
        else:
            wake.watch_dir()  # the directory may exist by now
            timeout, delay = delay, min(delay * 2, poll_max)
        if items:
            delay = POLL_MIN
        fds = [0] + [fd for fd in (wake.fd, discovery.fd if discovery else -1) if fd >= 0]
        if discovery is not None:
            timeout = min(timeout, discovery.timeout(time.monotonic()))
            if discovery.tree.procs:
                timeout = max(0.0, min(timeout, io_due - time.monotonic()))
        ready, _, _ = select.select(fds, [], [], timeout)
        if 0 in ready:
            try:
                data = os.read(0, 4096)
            except (BlockingIOError, InterruptedError):
                data = b"-"
            if not data:
                sys.exit(0)
            pending += data
            while b"\n" in pending:
                line, _, pending = pending.partition(b"\n")
                if line.startswith(b"A "):
                    try:
                        acked = max(acked, int(line[2:]))
                    except ValueError:
                        pass
            pending = pending[-4096:]  # only acknowledgements come: a line is short
        if wake.fd in ready:
            wake.drain()
        if discovery is not None and discovery.fd in ready:
            discovery.wakeup()


if __name__ == "__main__":
    main()
