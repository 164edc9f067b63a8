"""``--smoke``: ready means it answers. One tiny OpenAI-compatible completion, asked once.

After the ready line (and ``--health`` where given) the served model's id is read from
``GET /v1/models`` and ``POST /v1/completions`` is sent with ``max_tokens`` 1: the time
from sending it to the answer is the time to the first token. A 4xx/5xx, a timeout or an
answer that is not a completion is a failure naming the status and the server's message.
Nothing is sent without ``--smoke``. HTTP/1.1 on asyncio streams (no new dependency).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from typing import Any

from tui.core.events import SmokeAnswered

#: Seconds for each request (a first completion may wait for warm-up or a JIT compile).
TIMEOUT_S = 60.0
#: Bytes of an answer read at most.
ANSWER_LIMIT = 1 << 20
PROMPT = "Hello"


async def request(
    host: str, port: int, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = TIMEOUT_S
) -> tuple[int | None, str]:
    """``(status, body text)`` of one HTTP request; ``(None, why)`` when no answer came."""
    payload = b"" if body is None else json.dumps(body).encode()
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\nUser-Agent: watchtower\r\n"
            f"Accept: application/json\r\n")
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write(head.encode() + b"\r\n" + payload)
                await writer.drain()
                raw = await reader.read(ANSWER_LIMIT)
                while len(raw) < ANSWER_LIMIT:
                    more = await reader.read(ANSWER_LIMIT - len(raw))
                    if not more:
                        break
                    raw += more
            finally:
                writer.close()
                try:
                    await writer.wait_closed()
                except OSError:
                    pass
    except TimeoutError:
        return None, f"no answer in {timeout:.0f} s (timeout)"
    except ConnectionRefusedError:
        return None, "connection refused"
    except OSError as exc:
        return None, exc.strerror or str(exc) or type(exc).__name__
    status_line, _, rest = raw.partition(b"\r\n")
    words = status_line.decode("latin-1").split(None, 2)
    if len(words) < 2 or not words[1].isdigit():
        return None, "not an HTTP answer"
    headers, _, content = rest.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in headers.lower():
        content = _unchunk(content)
    return int(words[1]), content.decode("utf-8", errors="replace")


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
    status, body = await request(host, port, "GET", "/v1/models", timeout=timeout)
    if status is None or not 200 <= status < 300:
        what = body if status is None else f"HTTP {status}: {server_message(body)}"
        return SmokeAnswered(url, False, status, None, None, f"GET /v1/models: {what}", started)
    try:
        models = json.loads(body).get("data") or []
        model = str(models[0]["id"])
    except (ValueError, AttributeError, LookupError, TypeError):
        return SmokeAnswered(url, False, status, None, None, "GET /v1/models: no model id in the answer", started)
    sent = time.monotonic()
    status, body = await request(
        host, port, "POST", "/v1/completions", {"model": model, "prompt": PROMPT, "max_tokens": 1, "temperature": 0},
        timeout=timeout,
    )
    ttft = time.monotonic() - sent
    if status is None or not 200 <= status < 300:
        what = body if status is None else f"HTTP {status}: {server_message(body)}"
        return SmokeAnswered(url, False, status, model, None, f"POST /v1/completions: {what}", started)
    try:
        choices = json.loads(body)["choices"]
        text = str(choices[0].get("text", ""))
    except (ValueError, LookupError, TypeError, AttributeError):
        return SmokeAnswered(url, False, status, model, None, "POST /v1/completions: not a completion", started)
    return SmokeAnswered(url, True, status, model, ttft, f"answered {text[:20]!r}", started)
