"""SSH connections to the hosts Watchtower watches: targets, host-key policy, backoff, commands.

Connections go through asyncssh with the user's own OpenSSH setup: ``~/.ssh/config`` (Host
aliases, HostName, Port, User, IdentityFile, UserKnownHostsFile), the SSH agent, the default
key files and ``known_hosts``. A host whose key is unknown or has changed is refused with one
line naming the fix; Watchtower never accepts a key it cannot verify.

One connection per target and event loop is shared by everything that talks to that host
(the log tailer, the nvidia-smi stream, the launcher); a user that finds it closed simply asks
for it again and the next :func:`connection` call reconnects.

Tests and unusual setups can point at specific files per target (``SshTarget`` fields) or for
the whole process with ``WATCHTOWER_SSH_KNOWN_HOSTS``, ``WATCHTOWER_SSH_IDENTITY`` (paths
separated by ``os.pathsep``) and ``WATCHTOWER_SSH_CONFIG``.

Targets, connecting, the shared pool, remote commands and detached processes all go
through one connection policy; apart they would scatter it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import os
import re
import shlex
import socket
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass

import asyncssh

from tui.core.errors import UsageError
from tui.sources.ssh_hosts import NO_OPENSSH, ResolvedHost, ResolveError, have_openssh, openssh_resolve

ENV_KNOWN_HOSTS = "WATCHTOWER_SSH_KNOWN_HOSTS"
ENV_IDENTITY = "WATCHTOWER_SSH_IDENTITY"
ENV_CONFIG = "WATCHTOWER_SSH_CONFIG"

_HOSTNAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_.])?")
_USERNAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.@-]*")
_FORMAT = "expected [user@]host[:port]"


class SshTargetError(UsageError, ValueError):
    """A ``--host`` value that is not ``[user@]host[:port]``: one clear line for the user
    (a UsageError, so the command line reports it and exits 2 wherever it is raised)."""


class SshError(Exception):
    """An SSH connection could not be made or was lost; ``str()`` is one line for the user.

    ``permanent`` marks refusals that retrying cannot fix on its own (host key, authentication,
    a config that disables host-key checking): callers retry those slowly, never in a loop.
    ``unresolved``: the host name does not resolve — a typo when no connection was ever made,
    a passing DNS failure when one was.
    """

    def __init__(self, message: str, *, permanent: bool = False, unresolved: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.unresolved = unresolved


class RemoteCommandError(Exception):
    """A remote command exited unsuccessfully; ``str()`` is one line with its status and stderr."""

    def __init__(self, what: str, status: int | None, stderr: str) -> None:
        last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
        how = f"failed with status {status}" if status is not None else "was killed"
        super().__init__(f"{what} {how}" + (f": {last}" if last else ""))
        self.status = status
        self.stderr = stderr


@dataclass(frozen=True)
class SshTarget:
    """Where to connect: ``[user@]host[:port]`` plus optional per-target SSH files.

    Unset fields fall back to the environment variables above, then to OpenSSH's own
    configuration (``~/.ssh/config``) and defaults, as ``ssh`` itself would.
    """

    host: str
    port: int | None = None
    user: str | None = None
    known_hosts: str | None = None  # known_hosts file (default: from ~/.ssh/config or ~/.ssh/known_hosts)
    identity: tuple[str, ...] = ()  # private key files (default: agent, IdentityFile, ~/.ssh/id_*)
    config: str | None = None  # ssh_config file (default: ~/.ssh/config)
    connect_timeout: float = 15.0
    keepalive: float = 10.0  # seconds between keepalives; 3 unanswered ones drop the connection

    def __post_init__(self) -> None:
        if isinstance(self.identity, (str, os.PathLike)):  # one key file given on its own
            object.__setattr__(self, "identity", (os.fspath(self.identity),))
        else:
            object.__setattr__(self, "identity", tuple(os.fspath(p) for p in self.identity))

    @classmethod
    def parse(cls, spec: str, **options: object) -> SshTarget:
        """``[user@]host[:port]``, ``[user@][v6addr]:port`` or a bare IPv6 address."""
        text = spec.strip()
        if not text:
            raise SshTargetError(f"empty host ({_FORMAT})")
        if any(ch.isspace() for ch in text):
            raise SshTargetError(f"invalid host {spec!r}: contains whitespace ({_FORMAT})")
        user, at, hostport = text.rpartition("@")
        if at and not _USERNAME.fullmatch(user):
            raise SshTargetError(f"invalid user name in host {spec!r} ({_FORMAT})")
        port_text = None
        if hostport.startswith("["):
            host, bracket, rest = hostport[1:].partition("]")
            if not bracket or (rest and not rest.startswith(":")):
                raise SshTargetError(f"invalid host {spec!r}: unbalanced [ ] ({_FORMAT})")
            port_text = rest[1:] if rest else None
            _check_ipv6(host, spec)
        elif hostport.count(":") > 1:  # a bare IPv6 address: no port possible
            host = hostport
            _check_ipv6(host, spec)
        else:
            host, colon, port_text = hostport.partition(":")
            if not colon:
                port_text = None
            if not _HOSTNAME.fullmatch(host):
                raise SshTargetError(f"invalid host name in {spec!r} ({_FORMAT})")
        port = None
        if port_text is not None:
            if not port_text.isdigit() or not 0 < int(port_text) < 65536:
                raise SshTargetError(f"invalid port {port_text!r} in host {spec!r} (1-65535)")
            port = int(port_text)
        return cls(host=host, port=port, user=user or None, **options)  # type: ignore[arg-type]

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and self.port else self.host
        return (f"{self.user}@" if self.user else "") + host + (f":{self.port}" if self.port else "")

    # ------------------------------------------------------------ what asyncssh gets

    def _known_hosts_file(self) -> str | None:
        return self.known_hosts or os.environ.get(ENV_KNOWN_HOSTS) or None

    def _options(self) -> dict[str, object]:
        options: dict[str, object] = {
            "connect_timeout": self.connect_timeout,
            "login_timeout": self.connect_timeout,
            "keepalive_interval": self.keepalive,
            "keepalive_count_max": 3,
        }
        if self.port is not None:
            options["port"] = self.port
        if self.user is not None:
            options["username"] = self.user
        if known_hosts := self._known_hosts_file():
            options["known_hosts"] = os.path.expanduser(known_hosts)
        identity = self.identity or tuple(p for p in os.environ.get(ENV_IDENTITY, "").split(os.pathsep) if p)
        if identity:
            options["client_keys"] = [os.path.expanduser(p) for p in identity]
        if config := self.config or os.environ.get(ENV_CONFIG):
            options["config"] = [os.path.expanduser(config)]
        return options


def _check_ipv6(host: str, spec: str) -> None:
    try:
        ipaddress.IPv6Address(host.split("%", 1)[0])
    except ValueError:
        raise SshTargetError(f"invalid IPv6 address in host {spec!r} ({_FORMAT})") from None


# ---------------------------------------------------------------- connecting


class _Client(asyncssh.SSHClient):
    def __init__(self, on_lost: Callable[[str], None]) -> None:
        self._on_lost = on_lost

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(_reason(exc) if exc is not None else "closed")


_RESOLVED: dict[tuple[object, ...], ResolvedHost] = {}


async def resolve(target: SshTarget) -> ResolvedHost:
    """Where ``target`` leads, as ``ssh`` would go (``ssh -G``, once per host and config); raises
    :class:`SshError` when ssh refuses the config. Without an ``ssh`` program, asyncssh's own
    reading of the config, with a note saying so."""
    config = target.config or os.environ.get(ENV_CONFIG) or None
    key = (target.host, target.port, target.user, config, os.path.expanduser("~"), _config_version(config))
    if (known := _RESOLVED.get(key)) is not None:
        return known
    if have_openssh():
        try:
            found = await openssh_resolve(target.host, port=target.port, user=target.user, config=config)
        except (OSError, ResolveError) as exc:
            raise SshError(f"{target}: cannot use the SSH settings: {exc}", permanent=True) from None
    else:
        options = await _asyncssh_options(target)
        known_hosts = options.known_hosts
        found = ResolvedHost(
            alias=target.host, hostname=options.host, port=options.port, user=options.username,
            known_hosts=None if known_hosts is None else (), note=NO_OPENSSH,
        )
    _RESOLVED[key] = found
    return found


def _config_version(config: str | None) -> tuple[int, int] | None:
    """The ssh config file's mtime and size: an edited config is read again, an unchanged one never."""
    try:
        info = os.stat(os.path.expanduser(config or "~/.ssh/config"))
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


async def _asyncssh_options(target: SshTarget) -> asyncssh.SSHClientConnectionOptions:
    """asyncssh's options for ``target`` with the ssh config read by asyncssh (the default
    ``~/.ssh/config`` unless one is given): the way without an ``ssh`` program."""
    options = {"config": (), **target._options()}
    try:
        built: asyncssh.SSHClientConnectionOptions = await asyncssh.SSHClientConnectionOptions.construct(
            host=target.host, **options)
        return built
    except (OSError, ValueError, asyncssh.Error) as exc:
        raise SshError(f"{target}: cannot use the SSH settings: {_reason(exc)}", permanent=True) from None


async def _resolved_options(target: SshTarget, host: ResolvedHost,
                            tunnel: asyncssh.SSHClientConnection | None = None) -> asyncssh.SSHClientConnectionOptions:
    """asyncssh's options for the place ``ssh -G`` named: its host name, port, user, keys,
    known_hosts files and jump host, given outright (asyncssh reads no config of its own then)."""
    override: dict[str, object] = {"config": [], "port": host.port, "username": host.user}
    if not target._known_hosts_file() and host.known_hosts is not None:
        if host.known_hosts:  # named in the config: the files that exist (ssh skips the others)
            override["known_hosts"] = [p for p in map(os.path.expanduser, host.known_hosts) if os.path.exists(p)] \
                or [os.path.expanduser(host.known_hosts[0])]
    if not (target.identity or os.environ.get(ENV_IDENTITY)):
        keys = [p for p in map(os.path.expanduser, host.identity_files) if os.path.isfile(p)]
        if keys:
            override.update(client_keys=keys, ignore_encrypted=True)
    if host.host_key_alias:
        override["host_key_alias"] = host.host_key_alias
    if tunnel is not None:  # (ProxyJump's hosts, each reached as ssh would: ``_jump``)
        override["tunnel"] = tunnel
    if host.proxy_command:
        override["proxy_command"] = host.proxy_command
    options = {**target._options(), **override}
    try:
        built: asyncssh.SSHClientConnectionOptions = await asyncssh.SSHClientConnectionOptions.construct(
            host=host.hostname, **options)
    except (OSError, ValueError, asyncssh.Error) as exc:
        raise SshError(f"{host}: cannot use the SSH settings: {_reason(exc)}", permanent=True) from None
    if host.known_hosts is None and not target._known_hosts_file():
        built.known_hosts = None  # "UserKnownHostsFile none": refused below
    return built


#: Jump hosts one connection may go through (a ProxyJump loop in the config ends here).
MAX_JUMPS = 8


def _where(target: SshTarget, host: ResolvedHost) -> str:
    """``n3 (127.0.0.3:2343)`` for an alias, ``user@127.0.0.1:2222`` as typed where it goes there."""
    return str(target) if (host.hostname, host.port) == (target.host, target.port or 22) else f"{target} ({host.address})"


async def named(target: SshTarget) -> str:
    """How messages name ``target``: the name given and, where it is an alias, the address it leads
    to (``n3 (127.0.0.3:2343)``); just the name where the ssh config cannot be read (the
    connection says why)."""
    try:
        return _where(target, await resolve(target))
    except SshError:
        return str(target)


async def connect(
    target: SshTarget, *, on_lost: Callable[[str], None] = lambda reason: None, hops: int = 0
) -> asyncssh.SSHClientConnection:
    """Open a new connection, or raise :class:`SshError` with one clear line.

    The host is resolved first (:func:`resolve`); messages name the alias and the address it
    leads to (``n3 (127.0.0.3:2343)``). ``on_lost`` is called with the reason in words when the
    connection later closes.
    """
    host = await resolve(target)
    jump: asyncssh.SSHClientConnection | None = None
    if host.note:  # no ssh here: asyncssh reads the config, the connection goes as it always went
        options = await _asyncssh_options(target)
        host = dataclasses.replace(host, hostname=options.host, port=options.port, user=options.username)
    else:
        if host.proxy_jump:
            jump = await _jump(target, host.proxy_jump, hops)
        options = await _resolved_options(target, host, jump)
    try:
        if options.known_hosts is None:  # "UserKnownHostsFile none" in the ssh config
            raise SshError(
                f"{_where(target, host)}: the ssh config disables known_hosts for this host; Watchtower will not "
                "connect without verifying the host key (set UserKnownHostsFile)",
                permanent=True,
            )
        _check_known_hosts(target, options)
        return await _open(target, host, options, on_lost, jump)
    except BaseException:
        if jump is not None:
            jump.close()
        raise


async def _open(target: SshTarget, host: ResolvedHost, options: asyncssh.SSHClientConnectionOptions,
                on_lost: Callable[[str], None], jump: asyncssh.SSHClientConnection | None) -> asyncssh.SSHClientConnection:
    """The connection itself, or :class:`SshError` with one clear line."""
    where = _where(target, host)
    address = host.address
    at = "" if address in where else f" {address}"  # (the address said once: ``n3 (127.0.0.3:2343): connection refused``)
    config: object = () if host.note else []
    try:
        connection = await asyncssh.connect(
            target.host if host.note else host.hostname, options=options, config=config,
            client_factory=lambda: _Client(on_lost),
        )
        if jump is not None:
            connection.set_tunnel(jump)  # (closed with it)
        return connection
    except asyncssh.HostKeyNotVerifiable:
        message = await asyncio.to_thread(_host_key_message, target, options)  # reads known_hosts
        raise SshError(message, permanent=True) from None
    except asyncssh.PermissionDenied:
        raise SshError(
            f"{where}: authentication failed for user {options.username!r} (no key offered from the "
            "SSH agent or key files was accepted) — check `ssh "
            f"{_ssh_args(target, options)}` works",
            permanent=True,
        ) from None
    except asyncssh.DisconnectError as exc:
        raise SshError(f"{where}: disconnected: {_reason(exc)}") from None
    except socket.gaierror as exc:
        raise SshError(f"{where}: cannot resolve host {host.hostname!r} ({exc.strerror or exc})", unresolved=True) from None
    except ConnectionRefusedError:
        raise SshError(f"{where}: connection refused{' by' + at if at else ''} (is sshd running there?)") from None
    except (TimeoutError, asyncio.TimeoutError):
        raise SshError(f"{where}: no answer{' from' + at if at else ''} within {target.connect_timeout:g} s") from None
    except OSError as exc:
        raise SshError(f"{where}: cannot connect{' to' + at if at else ''}: {exc.strerror or _reason(exc)}") from None


async def _jump(target: SshTarget, proxy_jump: str, hops: int) -> asyncssh.SSHClientConnection:
    """The connection to ``target``'s ProxyJump host, each of its hosts resolved as ``ssh`` resolves
    it (an alias of the config too: ``ssh -G`` of the jump host, its own ProxyJump included), the
    last one reached through the ones before (``ssh -J a,b``)."""
    via: asyncssh.SSHClientConnection | None = None
    for hop in proxy_jump.split(","):
        if hops >= MAX_JUMPS:
            raise SshError(f"{target}: more than {MAX_JUMPS} jump hosts (a ProxyJump loop in the ssh config?)",
                           permanent=True)
        hop_target = _hop(target, hop)
        try:
            via = await connect(hop_target, hops=hops + 1) if via is None else await _through(hop_target, via)
        except SshError as exc:
            raise SshError(f"{target}: via jump host {exc}", permanent=exc.permanent) from None
    assert via is not None
    return via


def _hop(target: SshTarget, hop: str) -> SshTarget:
    """A ProxyJump host of ``target``, read with the same ssh config file and known_hosts file as
    ``target`` and its timeouts (``ssh -J`` passes ``-F`` on); not its key files: a jump host's own
    come from the config, as they do for ``ssh -i KEY -J``."""
    parsed = SshTarget.parse(hop.removeprefix("ssh://"))
    return dataclasses.replace(target, host=parsed.host, port=parsed.port, user=parsed.user, identity=())


async def _through(target: SshTarget, via: asyncssh.SSHClientConnection) -> asyncssh.SSHClientConnection:
    """A later ProxyJump host, reached through the one before it."""
    host = await resolve(target)
    options = await _resolved_options(target, host, via)
    _check_known_hosts(target, options)
    connection = await asyncssh.connect(host.hostname, options=options, config=[])
    connection.set_tunnel(via)
    return connection


def _check_known_hosts(target: SshTarget, options: asyncssh.SSHClientConnectionOptions) -> None:
    """A known_hosts file named (option, environment, ssh config) that cannot be read is a setting
    to fix, not a network failure to retry for ever."""
    known = options.known_hosts
    if not known or not isinstance(known, (str, list, tuple)):
        return  # none named: the default ~/.ssh/known_hosts, whose absence means "host unknown"
    given = "WATCHTOWER_SSH_KNOWN_HOSTS" if os.environ.get(ENV_KNOWN_HOSTS) and not target.known_hosts else (
        "the known-hosts option" if target.known_hosts else "UserKnownHostsFile in the ssh config"
    )
    for path in _known_hosts_files(options):
        if os.path.isfile(path) and os.access(path, os.R_OK):
            continue
        problem = "cannot be read" if os.path.exists(path) else "does not exist"
        raise SshError(
            f"{target}: known_hosts file {path} {problem} — fix {given}, or connect once with "
            f"`ssh {_ssh_args(target, options)}` to verify the host key and add it there",
            permanent=True,
        )


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())


def _ssh_args(target: SshTarget, options: asyncssh.SSHClientConnectionOptions) -> str:
    """The ``ssh`` command line that reaches the same host, for messages."""
    args = []
    if target._known_hosts_file():
        args += ["-o", f"UserKnownHostsFile={os.path.expanduser(target._known_hosts_file() or '')}"]
    if config := target.config or os.environ.get(ENV_CONFIG):  # the file that defines an alias
        args += ["-F", os.path.expanduser(config)]
    if target.port:
        args += ["-p", str(target.port)]
    args.append(f"{target.user}@{target.host}" if target.user else target.host)
    return shlex.join(args)


def _known_hosts_files(options: asyncssh.SSHClientConnectionOptions) -> list[str]:
    known = options.known_hosts
    if isinstance(known, str):
        return [known]
    if isinstance(known, (list, tuple)) and known and all(isinstance(k, str) for k in known):
        return list(known)
    return [os.path.expanduser("~/.ssh/known_hosts")]


def _host_key_message(target: SshTarget, options: asyncssh.SSHClientConnectionOptions) -> str:
    port = options.port
    host_port = f"{options.host}:{port}"
    files = _known_hosts_files(options)
    home = os.path.expanduser("~").rstrip(os.sep) + os.sep
    shown = "~/" + files[0][len(home) :] if files[0].startswith(home) else files[0]
    known_as = f"[{options.host}]:{port}" if port != 22 else options.host
    changed = False
    for path in files:
        try:
            trusted = asyncssh.match_known_hosts(path, options.host, options.host, port if port != 22 else None)[0]
        except (OSError, ValueError, asyncssh.Error):
            continue
        changed = changed or bool(trusted)
    if changed:
        default = files[0] == os.path.expanduser("~/.ssh/known_hosts")
        keygen = shlex.join(["ssh-keygen", *([] if default else ["-f", files[0]]), "-R", known_as])
        alias = f" ({target})" if options.host != target.host else ""
        return (
            f"HOST KEY CHANGED for {host_port}{alias}: it does not match the key in {shown} — this can be "
            f"an attack; if the host was really reinstalled, remove the old key with `{keygen}` "
            f"and verify the new one with `ssh {_ssh_args(target, options)}`"
        )
    alias = f" ({target})" if options.host != target.host else ""
    return (
        f"host key for {host_port}{alias} is not in {shown} — connect once with "
        f"`ssh {_ssh_args(target, options)}` to verify and add it"
    )


# ---------------------------------------------------------------- shared connections


class _Shared:
    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.conn: asyncssh.SSHClientConnection | None = None
        self.lost_reason = ""  # why the last connection closed, in words

    def open(self) -> bool:
        return self.conn is not None and not self.conn.is_closed()


_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[SshTarget, _Shared]] = (
    weakref.WeakKeyDictionary()
)


def _pool() -> dict[SshTarget, _Shared]:
    return _POOLS.setdefault(asyncio.get_running_loop(), {})


def lost_reason(target: SshTarget) -> str:
    """Why the shared connection to ``target`` last closed ("" if it never did), e.g. the
    keepalive timing out on a dead network."""
    shared = _pool().get(target)
    return shared.lost_reason if shared is not None else ""


def is_connected(target: SshTarget) -> bool:
    """Whether a shared connection to ``target`` is open in this event loop."""
    shared = _pool().get(target)
    return shared is not None and shared.open()


async def connection(target: SshTarget) -> asyncssh.SSHClientConnection:
    """The shared connection to ``target``, (re)connecting when it is closed; raises SshError."""
    shared = _pool().setdefault(target, _Shared())
    async with shared.lock:  # one connection attempt at a time per target
        if not shared.open():
            shared.conn = await connect(target, on_lost=lambda why: setattr(shared, "lost_reason", why))
        assert shared.conn is not None
        return shared.conn


async def drop(target: SshTarget) -> None:
    """Close the shared connection to ``target`` (it reconnects on next use)."""
    shared = _pool().get(target)
    if shared is not None and shared.conn is not None:
        conn, shared.conn = shared.conn, None
        conn.close()
        await conn.wait_closed()


async def close_all() -> None:
    """Close every shared connection of this event loop (at shutdown)."""
    for target in list(_pool()):
        await drop(target)


class Backoff:
    """Exponential reconnect delays: ``initial``, doubling, at most ``cap`` seconds."""

    def __init__(self, initial: float = 0.5, cap: float = 30.0) -> None:
        self.initial, self.cap = initial, cap
        self._next = initial

    def next(self) -> float:
        delay, self._next = self._next, min(self._next * 2, self.cap)
        return delay

    def reset(self) -> None:
        self._next = self.initial


# ---------------------------------------------------------------- remote commands


def _env_words(env: Mapping[str, str] | None) -> list[str]:
    """``env NAME=value ...`` words (empty without variables); names are checked."""
    if not env:
        return []
    for key in env:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ValueError(f"invalid environment variable name {key!r}")
    return ["env", *(f"{key}={value}" for key, value in env.items())]


def command_line(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """A shell command line that runs ``argv`` literally (every word quoted)."""
    if not argv:
        raise ValueError("empty command")
    return shlex.join([*_env_words(env), *argv])


def _lost(target: SshTarget, what: str) -> SshError:
    return SshError(f"{target}: connection lost while {what}")


async def run(
    target: SshTarget,
    argv: Sequence[str],
    *,
    input: str | None = None,
    timeout: float | None = 60.0,
    env: Mapping[str, str] | None = None,
) -> tuple[int, str, str]:
    """Run ``argv`` (with ``env`` added) on the host and wait: ``(status, stdout, stderr)``; raises SshError."""
    conn = await connection(target)
    try:
        result = await conn.run(command_line(argv, env), input=input, check=False, timeout=timeout)
    except asyncssh.TimeoutError:
        raise SshError(f"{target}: {shlex.join(argv[:1])} did not finish within {timeout:g} s") from None
    except (asyncssh.Error, OSError) as exc:
        raise SshError(f"{target}: connection lost while running {argv[0]}: {_reason(exc)}") from None
    if result.exit_status is None and result.exit_signal is None:
        raise _lost(target, f"running {argv[0]}")
    status = result.exit_status if result.exit_status is not None else -1
    return status, str(result.stdout or ""), str(result.stderr or "")


async def stream_lines(target: SshTarget, argv: Sequence[str]) -> AsyncGenerator[str, None]:
    """Lines (without their newline) a long-running remote command prints, as they come.

    Ends when the command exits 0; raises :class:`RemoteCommandError` when it fails and
    :class:`SshError` when the connection cannot be made or is lost. Closing the iterator
    closes the channel, which ends the remote command. Restarting it after a failure is the
    caller's business (the nvidia-smi source does it with backoff and says why meanwhile).
    """
    conn = await connection(target)
    try:
        process = await conn.create_process(command_line(argv), encoding="utf-8", errors="replace")
    except (asyncssh.Error, OSError) as exc:
        raise SshError(f"{target}: cannot start {argv[0]}: {_reason(exc)}") from None
    stderr: list[str] = []

    async def collect_stderr() -> None:  # read it, or a chatty stderr would stall stdout
        async for line in process.stderr:
            stderr.append(line)
            del stderr[:-20]

    errors = asyncio.ensure_future(collect_stderr())
    try:
        try:
            async for line in process.stdout:
                yield line.rstrip("\r\n")
        except (asyncssh.Error, OSError) as exc:
            raise SshError(f"{target}: connection lost while reading {argv[0]}: {_reason(exc)}") from None
        try:
            async with asyncio.timeout(5):
                await asyncio.shield(errors)
        except (asyncio.TimeoutError, asyncssh.Error, OSError):
            pass
        await process.wait_closed()
        if process.exit_status is None and process.exit_signal is None:
            raise _lost(target, f"reading {argv[0]}")
        if process.exit_status != 0:
            raise RemoteCommandError(argv[0], process.exit_status, "".join(stderr))
    finally:
        errors.cancel()
        process.close()


# ---------------------------------------------------------------- detached processes

# Runs "$@" in a new session that survives the SSH connection, output to the log (created
# 0600: it may hold what the server echoes), its pid (= its process group) in the pid file.
# Positional: $1 log, $2 pid file, then the command. The environment's NAME=VALUE lines come
# on stdin, ended by an empty line, so no value is ever on the remote command line (which `ps` shows to every user).
_DETACH = (
    'log=$1 pidfile=$2; shift 2; umask 077; '
    'while IFS= read -r kv && [ -n "$kv" ]; do export "$kv" || exit 1; done; '
    ': >>"$log" && : >>"$pidfile" || exit 1; '
    'setsid nohup "$@" >"$log" 2>&1 </dev/null & echo $! >"$pidfile" && echo $!'
)


async def start_detached(
    target: SshTarget,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    log_path: str,
    pid_path: str | None = None,
    cwd: str | None = None,
) -> int:
    """Start ``argv`` on the host so that it outlives the connection; return its pid.

    It runs in its own session and process group (``setsid``; the pid is also the group id,
    for :func:`signal_group`), ignores SIGHUP, writes stdout and stderr to ``log_path`` and
    its pid to ``pid_path`` (default: ``log_path + ".pid"``).
    """
    pid_path = pid_path or f"{log_path}.pid"
    _env_words(env)  # checks the names
    if any("\n" in value or "\0" in value for value in (env or {}).values()):
        raise ValueError("an environment value with a newline cannot be passed to a remote launch")
    script = shlex.join(["sh", "-c", _DETACH, "sh", log_path, pid_path, *argv])
    if cwd:
        script = f"cd {shlex.quote(cwd)} && {script}"
    conn = await connection(target)
    try:
        lines = "".join(f"{key}={value}\n" for key, value in (env or {}).items()) + "\n"
        result = await conn.run(script, input=lines, check=False, timeout=30)
    except (asyncssh.Error, OSError) as exc:
        raise SshError(f"{target}: connection lost while starting {argv[0]}: {_reason(exc)}") from None
    out = str(result.stdout or "").strip()
    if result.exit_status != 0 or not out.isdigit():
        raise RemoteCommandError(f"{target}: starting {argv[0]}", result.exit_status, str(result.stderr or out))
    return int(out)


_ALIVE = 'kill -0 "$1" 2>/dev/null || exit 1; ! grep -qs "^State:[[:space:]]*Z" "/proc/$1/status"'


async def is_alive(target: SshTarget, pid: int) -> bool:
    """Whether process ``pid`` exists on the host (and is not a zombie)."""
    status, _, _ = await run(target, ["sh", "-c", _ALIVE, "sh", str(int(pid))])
    return status == 0


async def signal_group(target: SshTarget, pid: int, sig: int | str) -> bool:
    """Send ``sig`` (number or name such as ``"TERM"``) to the process group ``pid`` leads.

    True when it was delivered; False when no such group exists any more.
    """
    name = str(sig).removeprefix("SIG") if not isinstance(sig, int) else str(int(sig))
    if not re.fullmatch(r"[A-Z0-9]+", name):
        raise ValueError(f"invalid signal {sig!r}")
    status, _, _ = await run(target, ["sh", "-c", 'kill -s "$1" -- "-$2" 2>/dev/null', "sh", name, str(int(pid))])
    return status == 0
