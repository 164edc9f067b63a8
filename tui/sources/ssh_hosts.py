"""Hosts resolved once, the way OpenSSH resolves them: ``ssh -G HOST``.

A name after ``--host``/``--nodes`` may be an alias of ``~/.ssh/config`` (``Host n3`` with
``HostName 127.0.0.3``, ``Port 2343``, ``Include``, ``Match``…). ``ssh -G`` prints what ``ssh``
itself would use — the real host name, port, user, identity files, known_hosts files and
jump hosts, every rule applied — so the connection, every message (``n3 (127.0.0.3:2343)``),
``{master}`` and the URLs asked of the server all name the place ``ssh`` would reach, not the
alias nor port 22.

``ssh`` reads the config of the passwd entry's home; Watchtower (and asyncssh before it) reads
``$HOME``'s: where the two differ (a test ``HOME``, ``sudo -E``) ``$HOME/.ssh/config`` is named
with ``-F``. Where no ``ssh`` program is installed, the caller falls back to asyncssh's own
reading of the config and says so (:attr:`ResolvedHost.note`).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
from dataclasses import dataclass

#: How long ``ssh -G`` may take (it reads files only; ``Match exec`` may run a command).
RESOLVE_TIMEOUT = 10.0
NO_OPENSSH = "no ssh program here: the ssh config was read by asyncssh (Match and some options may differ from ssh's)"


@dataclass(frozen=True)
class ResolvedHost:
    """Where a host name leads, as ``ssh`` would go there.

    ``known_hosts``: the files ``UserKnownHostsFile`` names (plus ``GlobalKnownHostsFile``),
    ``()`` where the config leaves them at OpenSSH's default, None for ``UserKnownHostsFile none``.
    ``identity_files``: ``IdentityFile`` as configured (OpenSSH's default list where none is).
    """

    alias: str  # the name as given (an alias, a DNS name or an address)
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...] = ()
    known_hosts: tuple[str, ...] | None = ()
    host_key_alias: str | None = None
    proxy_jump: str | None = None
    proxy_command: str | None = None
    note: str = ""  # why this was not resolved by OpenSSH ("" when it was)

    @property
    def address(self) -> str:
        """``127.0.0.3:2343`` (``[fd00::1]:22``): where the connection goes."""
        host = f"[{self.hostname}]" if ":" in self.hostname else self.hostname
        return f"{host}:{self.port}"

    @property
    def aliased(self) -> bool:
        return self.alias != self.hostname

    def __str__(self) -> str:
        """``n3 (127.0.0.3:2343)`` for an alias, ``127.0.0.3:22`` for an address: both names, once each."""
        return f"{self.alias} ({self.address})" if self.aliased else self.address


def config_file(explicit: str | None) -> str | None:
    """The ``-F`` file for ``ssh -G``: the one given, else ``$HOME/.ssh/config`` where ``$HOME`` is
    not the passwd entry's home (``ssh`` would read that one), else None (``ssh``'s own choice)."""
    if explicit:
        return os.path.expanduser(explicit)
    home = os.path.expanduser("~")
    if os.path.realpath(home) == os.path.realpath(_passwd_home() or home):
        return None
    mine = os.path.join(home, ".ssh", "config")
    return mine if os.path.exists(mine) else os.devnull


def _passwd_home() -> str | None:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def have_openssh() -> bool:
    return shutil.which("ssh") is not None


class ResolveError(Exception):
    """``ssh -G`` refused the config (a syntax error, a missing Include…): one line, from ssh."""


async def openssh_resolve(host: str, *, port: int | None, user: str | None, config: str | None) -> ResolvedHost:
    """``ssh -G`` for ``host``, run as a subprocess (never blocking the event loop)."""
    argv = ["ssh", "-G"]
    if (file := config_file(config)) is not None:
        argv += ["-F", file]
    if port is not None:
        argv += ["-p", str(port)]
    if user is not None:
        argv += ["-l", user]
    argv.append(host)
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT):
            out, err = await process.communicate()
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()
        raise ResolveError(f"`ssh -G {host}` did not answer within {RESOLVE_TIMEOUT:g} s") from None
    if process.returncode != 0:
        said = [line.strip() for line in err.decode(errors="replace").splitlines() if line.strip()]
        raise ResolveError(said[-1] if said else f"`ssh -G {host}` failed with status {process.returncode}")
    return parse_config_dump(host, out.decode(errors="replace"))


def parse_config_dump(alias: str, text: str) -> ResolvedHost:
    """``ssh -G``'s ``key value`` lines → a :class:`ResolvedHost`."""
    single: dict[str, str] = {}
    identity: list[str] = []
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "identityfile":
            identity.append(value)
        elif key:
            single.setdefault(key, value.strip())
    user_known = single.get("userknownhostsfile", "").split()
    known: tuple[str, ...] | None
    if user_known == ["none"]:
        known = None
    elif user_known == _default_known_hosts():
        known = ()  # OpenSSH's default: the same files asyncssh reads by default (in $HOME)
    else:
        known = tuple(user_known) + tuple(
            f for f in single.get("globalknownhostsfile", "").split() if f != "none"
        )
    hostname = single.get("hostname", alias)
    port = int(single.get("port", "22") or 22)
    user = single.get("user", "")
    return ResolvedHost(
        alias=alias,
        hostname=hostname,
        port=port,
        user=user,
        identity_files=tuple(identity),
        known_hosts=known,
        host_key_alias=single.get("hostkeyalias"),
        proxy_jump=_unless_none(single.get("proxyjump")),
        proxy_command=_tokens(_unless_none(single.get("proxycommand")), hostname, port, user),
    )


def _default_known_hosts() -> list[str]:
    home = _passwd_home() or os.path.expanduser("~")
    return [os.path.join(home, ".ssh", "known_hosts"), os.path.join(home, ".ssh", "known_hosts2")]


def _unless_none(value: str | None) -> str | None:
    return None if value in (None, "", "none") else value


def _tokens(command: str | None, host: str, port: int, user: str) -> str | None:
    """``ssh -G`` leaves ProxyCommand's ``%h %p %r`` for ssh to fill in at connect time: filled here."""
    if command is None:
        return None
    out, i = [], 0
    while i < len(command):
        if command[i] == "%" and i + 1 < len(command):
            out.append({"h": host, "p": str(port), "r": user, "%": "%"}.get(command[i + 1], command[i : i + 2]))
            i += 2
        else:
            out.append(command[i])
            i += 1
    return "".join(out)
