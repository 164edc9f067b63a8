"""Run the preflight probe (:mod:`tui.sources.probe_agent`) where the server will run.

The agent's source is sent as the program text of ``python -c`` — locally as a child
process, remotely through the same SSH connection the tail agent uses — under the
server's own interpreter (``python`` of ``python -m sglang…``; a console script's
``#!`` interpreter, which the agent finds itself) and with the command's environment, so
the packages and caches it reads are the server's. The request is one base64 argument;
nothing from the command line is executed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import zlib
from pathlib import Path
from typing import Any, TypedDict

from tui.core.cmdline import ServerCommand

_AGENT = Path(__file__).with_name("probe_agent.py").read_text()
_COMPRESSED = base64.b64encode(zlib.compress(_AGENT.encode(), 9)).decode()
PROGRAM = f"AGENT={_COMPRESSED!r};import base64,zlib;exec(zlib.decompress(base64.b64decode(AGENT)))"
MAGIC = "WATCHTOWER-PROBE 1\n"
PACKAGES = ("sglang", "vllm", "tensorrt_llm", "torch", "transformers", "flashinfer-python", "sgl-kernel")


class ProbeError(Exception):
    """The probe could not run (no interpreter, lost connection, garbled output): one line."""


class ProbeRequest(TypedDict):
    """What the agent is asked to look at (sent to it as one base64 JSON argument)."""

    ports: list[tuple[str, int]]  # (bind address, port): is it free, and who holds it
    models: dict[str, str]  # role ("target", "draft") -> model path or hub id
    eagle3: bool  # look for the EAGLE-3 hook in the target's model class
    shm: str | None
    program: str | None  # a console script whose #! interpreter the agent finds
    packages: list[str]  # distributions whose versions it reports


class PortHolder(TypedDict):
    """The process listening on a port: its pid (None when hidden from us) and command line."""

    pid: int | None
    cmd: str


# The agent's answer, decoded JSON from another machine: tui.core.preflight reads it
# defensively (``.get`` with defaults), key by key.
Facts = dict[str, Any]


def request(command: ServerCommand, shm: str | None = None) -> ProbeRequest:
    """What to look at for this command: its ports, models, the EAGLE-3 hook, /dev/shm, packages."""
    bind = command.host or ("127.0.0.1" if command.server == "sglang" else "0.0.0.0")
    ports = [(bind, command.port)] if command.port else []
    if command.dist_port and command.node_rank == 0:  # node 0 listens there (torch's TCPStore: every address)
        ports.append(("0.0.0.0", command.dist_port))
    models = {"target": command.model} if command.model else {}
    if command.draft:
        models["draft"] = command.draft
    return {
        "ports": ports,
        "models": models,
        "eagle3": command.server == "sglang" and command.spec_algorithm == "EAGLE3",
        "shm": shm or "/dev/shm",
        "program": command.program,
        "packages": list(PACKAGES),
    }


def agent_argv(command: ServerCommand, req: ProbeRequest) -> list[str]:
    python = command.python or "python3"
    return [python, "-c", PROGRAM, base64.b64encode(json.dumps(req).encode()).decode()]


def _facts(stdout: str, stderr: str, status: int, where: str) -> Facts:
    _, sep, body = stdout.partition(MAGIC)
    if not sep:
        last = (stderr.strip().splitlines() or [f"exit status {status}"])[-1]
        raise ProbeError(f"the preflight probe did not run on {where}: {last[:200]}")
    try:
        facts: Facts = json.loads(body)
    except ValueError:
        raise ProbeError(f"the preflight probe on {where} printed garbled output") from None
    return facts


async def probe_local(command: ServerCommand, shm: str | None = None, timeout: float = 20.0,
                      req: ProbeRequest | None = None) -> Facts:
    argv = agent_argv(command, req or request(command, shm))
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **command.env},
        )
    except OSError as exc:
        raise ProbeError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate()
    except TimeoutError:
        raise ProbeError(f"the preflight probe took longer than {timeout:g} s") from None
    finally:
        if proc.returncode is None:  # timed out or cancelled: never leave the probe behind
            proc.kill()
            await proc.wait()
    return _facts(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), proc.returncode or 0, "this machine")


async def probe_remote(host: str, command: ServerCommand, shm: str | None = None, timeout: float = 30.0,
                       req: ProbeRequest | None = None) -> Facts:
    from tui.sources import ssh

    target = ssh.SshTarget.parse(host)
    argv = agent_argv(command, req or request(command, shm))
    try:
        status, out, err = await ssh.run(target, argv, timeout=timeout, env=command.env)
    except ssh.SshError as exc:
        raise ProbeError(str(exc)) from None
    return _facts(out, err, status, host)


async def port_holder(host: str | None, port: int) -> PortHolder | None:
    """Who listens on ``port`` there (``{"pid", "cmd"}``, pid None when it is hidden from us); None if free.

    The ``free_port`` fix asks this before it offers to stop the holder. ``ProbeError`` if it cannot tell.
    """
    nobody = ServerCommand(argv=(), server=None, python=None, program=None)
    req = ProbeRequest(ports=[("0.0.0.0", port)], models={}, eagle3=False, shm=None, program=None, packages=[])
    facts = await (probe_remote(host, nobody, req=req) if host else probe_local(nobody, req=req))
    found = (facts.get("ports") or [{}])[0]
    if found.get("free"):
        return None
    holder: PortHolder | None = found.get("holder")
    return holder or PortHolder(pid=None, cmd=found.get("error") or "cannot tell")
