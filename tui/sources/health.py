"""``--health URL``: a tiny HTTP GET on asyncio streams (no new dependency).

Ready means the log's ready marker *and* this endpoint answering 200. The probe
asks once per ``interval`` until it gets a 200 and reports each answer in words
("connection refused", "HTTP 503", "200 OK"). For a server launched on another
host the URL is asked *from that host* (``http://127.0.0.1:30000/health`` means the
server's machine), through a channel of the SSH connection Watchtower already has.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

import asyncssh

from tui.core.events import HealthStatus

if TYPE_CHECKING:
    from tui.sources.ssh import SshTarget


Streams = tuple[Any, Any]  # (reader, writer): asyncio's, or an SSH channel's (same methods)


async def http_status(url: str, timeout: float = 3.0) -> tuple[int | None, str]:
    """``(status code, words)`` of ``GET url``; ``(None, why)`` when no answer came."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None, f"not an http(s) URL: {url}"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    context = ssl.create_default_context() if parts.scheme == "https" else None
    try:
        async with asyncio.timeout(timeout):
            streams: Streams = await asyncio.open_connection(parts.hostname, port, ssl=context)
    except asyncio.TimeoutError:
        return None, "no answer (timeout)"
    except ConnectionRefusedError:
        return None, "connection refused"
    except OSError as exc:
        return None, exc.strerror or str(exc) or type(exc).__name__
    return await _get(streams, parts.hostname, port, parts, timeout)


async def _get(streams: Streams, host: str, port: int, parts: SplitResult, timeout: float) -> tuple[int | None, str]:
    """Send the GET on an open connection and read the status line."""
    reader, writer = streams
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        netloc = host if port in (80, 443) else f"{host}:{port}"
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {netloc}\r\nConnection: close\r\nUser-Agent: watchtower\r\n\r\n".encode())
        await writer.drain()
        async with asyncio.timeout(timeout):
            status_line = await reader.readline()
    except asyncio.TimeoutError:
        return None, "no answer (timeout)"
    except OSError as exc:
        return None, exc.strerror or str(exc) or type(exc).__name__
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass
    words = (status_line.decode("latin-1") if isinstance(status_line, bytes) else status_line).split(None, 2)
    if len(words) < 2 or not words[1].isdigit():
        return None, "not an HTTP answer"
    code = int(words[1])
    return code, f"HTTP {code}" + (f" {words[2].strip()}" if len(words) > 2 else "")


# Run on the server's host with its python3, for an https URL (TLS does not run on an SSH
# channel's streams) or where the sshd forbids forwarding: prints "CODE words".
_REMOTE_GET = """
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2])) as r:
        print(r.status, r.reason)
except urllib.error.HTTPError as e:
    print(e.code, e.reason)
except Exception as e:
    print("-", getattr(e, "reason", None) or e)
"""


async def remote_http_status(target: SshTarget, url: str, timeout: float = 3.0) -> tuple[int | None, str]:
    """:func:`http_status` asked from ``target``'s side of the SSH connection Watchtower holds.

    An http URL goes through a direct-tcpip channel of that connection
    (``conn.open_connection``): no process is started on the host per probe.
    """
    from tui.sources import ssh

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None, f"not an http(s) URL: {url}"
    if parts.scheme == "http":
        port = parts.port or 80
        hostname = parts.hostname
        try:
            if hostname == target.host:  # the node's ssh alias: the name its ssh config gives it
                hostname = (await ssh.resolve(target)).hostname
            conn = await ssh.connection(target)
            async with asyncio.timeout(timeout):
                streams: Streams | None = await conn.open_connection(hostname, port)
        except asyncio.TimeoutError:
            return None, "no answer (timeout)"
        except ssh.SshError as exc:
            return None, str(exc)
        except asyncssh.ChannelOpenError as exc:
            if exc.code != asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED:
                reason = exc.reason or "could not connect"
                return None, "connection refused" if "refused" in reason.lower() else reason
            streams = None  # forwarding forbidden on that host: ask its python3 instead
        if streams is not None:
            return await _get(streams, hostname, port, parts, timeout)
    try:
        status, out, _ = await ssh.run(target, ["python3", "-c", _REMOTE_GET, url, str(timeout)], timeout=timeout + 10)
    except (ssh.SshError, ssh.RemoteCommandError) as exc:
        return None, str(exc)
    code, _, words = out.strip().partition(" ")
    if status != 0 or not code:
        return None, "could not ask from the server's host"
    if not code.isdigit():
        words = words.strip()
        return None, "connection refused" if "refused" in words.lower() else (words or "no answer")
    return int(code), f"HTTP {code}" + (f" {words.strip()}" if words.strip() else "")


class HealthProbe:
    """Asks ``url`` every ``interval`` seconds until it answers 200; yields each new status.

    ``target``: an SSH target to ask from (a remote launch); None asks from here.
    """

    def __init__(self, url: str, interval: float = 1.0, timeout: float = 3.0, target: SshTarget | None = None) -> None:
        self.url = url
        self.interval = interval
        self.timeout = timeout
        self.target = target
        self.status = HealthStatus(url)

    async def statuses(self) -> AsyncIterator[HealthStatus]:
        while True:
            if self.target is not None:
                code, words = await remote_http_status(self.target, self.url, self.timeout)
            else:
                code, words = await http_status(self.url, self.timeout)
            status = HealthStatus(self.url, ok=code == 200, detail=words)
            if status != self.status:
                self.status = status
                yield status
            if status.ok:
                return
            await asyncio.sleep(self.interval)


class HealthSource:
    """``watch --health URL`` as an event source: the probe's statuses for the session, which
    judges READY only once the URL has answered 200 (asked from ``host``'s machine when given)."""

    def __init__(self, url: str, host: str | None = None, interval: float = 1.0) -> None:
        target = None
        if host:
            from tui.sources.ssh import SshTarget

            target = SshTarget.parse(host)
        self.probe = HealthProbe(url, interval=interval, target=target)

    async def events(self) -> AsyncIterator[HealthStatus]:
        async for status in self.probe.statuses():
            yield status

    async def close(self) -> None:
        return None
