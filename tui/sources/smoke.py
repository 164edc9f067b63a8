"""``--smoke``: ready means it answers. One tiny OpenAI-compatible completion, asked once.

After the ready line (and ``--health`` where given) the served model's id is read from
``GET /v1/models`` and ``POST /v1/completions`` is sent with ``max_tokens`` 1: the time
from sending it to the answer is the time to the first token. A server that streams its
answer (``text/event-stream``, as some do even unasked) answers with its first ``data:``
chunk: that chunk's arrival is the first token, and the rest is not waited for. A 4xx/5xx, a
timeout (``--smoke-timeout``, each request) or an answer that is not a completion is a
failure naming the status and the server's message. Nothing is sent without ``--smoke``.
HTTP/1.1 on asyncio streams (no new dependency).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from typing import Any

from tui.core.events import SmokeAnswered
from tui.core.options import SMOKE_TIMEOUT_S as TIMEOUT_S
#: Bytes of an answer read at most.
ANSWER_LIMIT = 1 << 20
PROMPT = "Hello"


async def request(
    host: str, port: int, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = TIMEOUT_S
) -> tuple[int | None, str, bool]:
    """``(status, body text, streamed)`` of one HTTP request; ``(None, why, False)`` when no answer
    came. A streamed answer (``text/event-stream``) is read up to its first complete event only:
    its text is that event's data."""
    payload = b"" if body is None else json.dumps(body).encode()
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\nUser-Agent: watchtower\r\n"
            f"Accept: application/json, text/event-stream\r\n")
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    raw = b""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write(head.encode() + b"\r\n" + payload)
                await writer.drain()
                while len(raw) < ANSWER_LIMIT:
                    more = await reader.read(ANSWER_LIMIT - len(raw))
                    if not more:
                        break
                    raw += more
                    if first_event(raw) is not None:
                        break  # a stream's first chunk: the first token has come
            finally:
                writer.close()
                try:
                    await writer.wait_closed()
                except OSError:
                    pass
    except TimeoutError:
        return None, f"no answer in {timeout:g} s (timeout; --smoke-timeout sets it)", False
    except ConnectionRefusedError:
        return None, "connection refused", False
    except OSError as exc:
        return None, exc.strerror or str(exc) or type(exc).__name__, False
    status_line, _, rest = raw.partition(b"\r\n")
    words = status_line.decode("latin-1").split(None, 2)
    if len(words) < 2 or not words[1].isdigit():
        return None, "not an HTTP answer", False
    event = first_event(raw)
    if event is not None:
        return int(words[1]), event, True
    headers, _, content = rest.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in headers.lower():
        content = _unchunk(content)
    return int(words[1]), content.decode("utf-8", errors="replace"), False


def first_event(raw: bytes) -> str | None:
    """The data of the first complete server-sent event of an answer read so far (``raw``: status
    line, headers, body) whose content type is ``text/event-stream``; None before one is whole,
    or when the answer is no stream."""
    head, found, content = raw.partition(b"\r\n\r\n")
    if not found or b"text/event-stream" not in head.lower():
        return None
    if b"transfer-encoding: chunked" in head.lower():
        content = _unchunk(content)
    text = content.decode("utf-8", errors="replace").replace("\r\n", "\n")
    for block in text.split("\n\n")[:-1]:  # the last part may still be arriving
        data = "\n".join(line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:"))
        if data:
            return data
    return None


def _unchunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return bytes(out)


def server_message(body: str) -> str:
    """The server's own words in an error answer: ``{"error": {"message": …}}``, ``{"detail": …}``,
    ``{"message": …}``, else the body's start."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        for value in (error.get("message") if isinstance(error, dict) else error, data.get("detail"), data.get("message")):
            if isinstance(value, str) and value:
                return value[:300]
    text = " ".join(body.split())
    return text[:300] or "(empty answer)"


async def reachable_name(host: str) -> str:
    """Where ``host`` (a node's name, maybe an alias of ``~/.ssh/config``) is reached from here:
    its ssh config's HostName (``ssh -G``), or ``host`` itself for an address or where the config
    cannot say."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if host == "localhost":
        return host
    from tui.sources import ssh

    try:
        return (await ssh.resolve(ssh.SshTarget(host))).hostname
    except ssh.SshError:
        return host


async def smoke(host: str, port: int, timeout: float = TIMEOUT_S) -> SmokeAnswered:
    """Ask ``host:port`` for its model, then for one token of a completion (``host`` an ssh alias
    is asked at the HostName it stands for; the answer keeps the URL as the session named it)."""
    url = f"http://{host}:{port}"
    started = time.time()
    host = await reachable_name(host)
    status, body, _ = await request(host, port, "GET", "/v1/models", timeout=timeout)
    if status is None or not 200 <= status < 300:
        what = body if status is None else f"HTTP {status}: {server_message(body)}"
        return SmokeAnswered(url, False, status, None, None, f"GET /v1/models: {what}", started)
    try:
        models = json.loads(body).get("data") or []
        model = str(models[0]["id"])
    except (ValueError, AttributeError, LookupError, TypeError):
        return SmokeAnswered(url, False, status, None, None, "GET /v1/models: no model id in the answer", started)
    sent = time.monotonic()
    status, body, streamed = await request(
        host, port, "POST", "/v1/completions", {"model": model, "prompt": PROMPT, "max_tokens": 1, "temperature": 0},
        timeout=timeout,
    )
    ttft = time.monotonic() - sent  # a stream's: when its first chunk came
    if status is None or not 200 <= status < 300:
        what = body if status is None else f"HTTP {status}: {server_message(body)}"
        return SmokeAnswered(url, False, status, model, None, f"POST /v1/completions: {what}", started)
    try:
        choices = json.loads(body)["choices"]
        text = str(choices[0].get("text", ""))
    except (ValueError, LookupError, TypeError, AttributeError):
        kind = "a streamed chunk that is not a completion's" if streamed else "not a completion"
        return SmokeAnswered(url, False, status, model, None, f"POST /v1/completions: {kind}", started)
    said = "streamed its first chunk" if streamed else "answered"
    return SmokeAnswered(url, True, status, model, ttft, f"{said} {text[:20]!r}", started)
