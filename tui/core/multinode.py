"""One server command on several nodes: each node's command line, and whether they agree. Pure.

``run --nodes n1,n2 -- CMD`` runs the same command on every node with ``{node_rank}``,
``{nnodes}`` and ``{master}`` substituted (or, for SGLang and vLLM, ``--nnodes`` and
``--node-rank`` added when the command has neither). Before launching, :func:`agreement`
checks what multi-node startups most often die of in silence: a node given another
dist-init address (or an IPv6 one without brackets), another model, another node count, a node
rank twice, or another network interface variable. Once a node never joins the others,
:func:`never_joined_causes` says what else is likely and how to check it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from tui.core import cmdline
from tui.core.preflight import FAIL, OK, Check

PLACEHOLDERS = ("{node_rank}", "{nnodes}", "{master}")


def master_host(host: str) -> str:
    """``user@10.0.0.1:2222`` → ``10.0.0.1``: the address the other nodes reach node 0 at."""
    host = host.rsplit("@", 1)[-1]
    if host.startswith("["):
        return host[1 : host.index("]")]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def node_commands(argv: Sequence[str], hosts: Sequence[str], extra: Mapping[int, Sequence[str]] | None = None,
                  master: str | None = None) -> list[list[str]]:
    """The command for each node, in node-rank order (``extra``: words appended on one node).
    ``master``: where node 0 is reached (its ssh config's HostName, not an alias the other nodes
    may not know); the first host's name where not given."""
    nnodes, master = len(hosts), master or master_host(hosts[0])
    has_placeholder = any(p in word for word in argv for p in PLACEHOLDERS)
    parsed = cmdline.parse(list(argv))
    commands = []
    for rank in range(nnodes):
        values = {"{node_rank}": str(rank), "{nnodes}": str(nnodes), "{master}": master}
        words = [_substitute(word, values) for word in argv]
        if not has_placeholder and parsed.server in (cmdline.SGLANG, cmdline.VLLM) and nnodes > 1:
            if parsed.value("--nnodes") is None:
                words += ["--nnodes", str(nnodes)]
            if parsed.value("--node-rank") is None:
                words += ["--node-rank", str(rank)]
        words += list((extra or {}).get(rank, ()))
        commands.append(words)
    return commands


def _substitute(word: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        word = word.replace(key, value)
    return word


#: The variables that pick the network interface Gloo (the rendezvous) and NCCL use: a host with
#: several interfaces may pick one the other nodes cannot reach (known failures #11, #12).
SOCKET_IFNAMES = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")


def agreement(commands: Mapping[str, Sequence[str]], env: Mapping[str, str] | None = None) -> list[Check]:
    """✓/✗ per thing every node must agree on; a ✗ names the odd node(s) out. ``env``: the
    environment the launch gives every node (with each command's own ``K=V`` words): the network
    interface variables are compared too where some node sets one."""
    parsed = {node: cmdline.parse(list(argv), env) for node, argv in commands.items()}
    if not parsed or all(p.server is None for p in parsed.values()):
        return []
    checks = [
        _same("dist-init address", {node: p.dist_init_addr for node, p in parsed.items()}),
        _same("model path", {node: p.model for node, p in parsed.items()}),
        _same("node count", {node: str(p.nnodes) for node, p in parsed.items()}),
    ]
    unbracketed = {node: p.dist_init_addr for node, p in parsed.items()
                   if p.server == cmdline.SGLANG and p.dist_init_addr and unbracketed_ipv6(p.dist_init_addr)}
    if unbracketed:
        first, addr = next(iter(unbracketed.items()))
        others = [node for node in unbracketed if node != first]
        checks.append(Check("dist-init address form", FAIL, f"{first} has {addr}, {ipv6_words(addr)}"
                            + (f" (also: {', '.join(others)})" if others else "")))
    for name in SOCKET_IFNAMES:
        if any(name in p.env for p in parsed.values()):
            checks.append(_same(name, {node: p.env.get(name) for node, p in parsed.items()}))
    ranks = Counter(p.node_rank for p in parsed.values())
    twice = sorted(rank for rank, count in ranks.items() if count > 1)
    want = set(range(len(parsed)))
    if twice:
        nodes = [n for n, p in parsed.items() if p.node_rank in twice]
        checks.append(Check("node ranks", FAIL, f"node rank {twice[0]} on {', '.join(nodes)}: every node needs its own"))
    elif set(ranks) != want:
        checks.append(Check("node ranks", FAIL, f"node ranks {sorted(ranks)}: expected 0…{len(parsed) - 1}"))
    else:
        checks.append(Check("node ranks", OK, f"0…{len(parsed) - 1}, one per node"))
    if all(p.nnodes == 1 for p in parsed.values()) and len(parsed) > 1:
        checks.append(Check("node count", FAIL, f"{len(parsed)} nodes, but the command says --nnodes 1"))
    return checks


def _same(what: str, values: Mapping[str, str | None]) -> Check:
    """✓ when every node has the same value, else ✗ naming the odd node(s) and the others' value."""
    common, _ = Counter(values.values()).most_common(1)[0]
    odd = [node for node, value in values.items() if value != common]
    if not odd:
        return Check(what, OK, f"{common or '(not given)'} on every node")
    first = odd[0]
    return Check(what, FAIL, f"{first} has {values[first] or '(none)'}, the others {common or '(none)'}"
                 + (f" (also different: {', '.join(odd[1:])})" if odd[1:] else ""))


def unbracketed_ipv6(addr: str) -> bool:
    """``fd00::1:5000``: an IPv6 literal written without brackets, where host and port cannot be told
    apart (SGLang splits ``--dist-init-addr`` at a colon)."""
    return addr.count(":") > 1 and not addr.startswith("[")


def ipv6_words(addr: str) -> str:
    """What is wrong with an unbracketed IPv6 dist-init address, and how it is written."""
    host, _, port = addr.rpartition(":")
    return f"an IPv6 address without brackets: write [{host}]:{port}"


def suspects(commands: Mapping[str, Sequence[str]], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Nodes a failed agreement check names, with why: the barrier view puts them first."""
    found: dict[str, str] = {}
    for check in agreement(commands, env):
        if check.status == FAIL:
            for node in commands:
                if check.why.startswith(f"{node} has "):
                    found.setdefault(node, f"{check.name}: {check.why}")
    return found


def logged_suspects(logged: Mapping[str, str]) -> dict[str, str]:
    """Nodes whose log names another dist-init address than the others' (their server arguments:
    servers started by hand, whose commands cannot be seen), with why."""
    if len(logged) < 2:
        return {}
    check = _same("dist-init address in the logs", logged)
    odd = [node for node in logged if check.why.startswith(f"{node} has ")]
    return {odd[0]: f"{check.name}: {check.why}"} if check.status == FAIL and odd else {}


def never_joined_causes(commands: Mapping[str, Sequence[str]], env: Mapping[str, str] | None,
                        logged: Mapping[str, str], waiting: str, said: str = "") -> list[str]:
    """The likely causes of a node (``waiting``) that never joined the others at the dist-init
    address ("each node" when none did), each with its check, beyond what its own ✗ says
    (:func:`suspects`, :func:`logged_suspects`): an IPv6 address without brackets, the network
    interface variables where the launch's environment is known, and last the port closed between
    the nodes, which no log can show (the check is said, never run from here).

    ``commands``: the nodes' command lines as launched or as their writers run them; ``env``: the
    launch's environment (None where it is not known: servers started by hand); ``logged``: the
    dist-init address each node's log printed; ``said``: what the waiting node's own ✗ says already."""
    causes = []
    parsed = [cmdline.parse(list(argv), env) for argv in commands.values()]
    given = [p.dist_init_addr for p in parsed if p.server == cmdline.SGLANG and p.dist_init_addr] or list(logged.values())
    for addr in dict.fromkeys(given):
        if unbracketed_ipv6(addr) and ipv6_words(addr) not in said:
            causes.append(f"--dist-init-addr {addr} is {ipv6_words(addr)}")
    if env is not None:
        if parsed and not any(name in p.env for p in parsed for name in SOCKET_IFNAMES):
            causes.append(f"{' / '.join(SOCKET_IFNAMES)} set on no node: on hosts with several network interfaces "
                          "Gloo and NCCL may pick one the other nodes cannot reach (set both on every node to the "
                          "interface of the network they share, e.g. --env GLOO_SOCKET_IFNAME=<interface>)")
    else:
        causes.append(f"{' / '.join(SOCKET_IFNAMES)}, where the nodes have several network interfaces (each "
                      "node's interface on the network they share)")
    places = [_rendezvous(p) for p in parsed]
    found = [p for p in places if p is not None] or [_split(addr) for addr in logged.values()]
    host, port = Counter(found).most_common(1)[0][0] if found else ("<node 0's address>", None)
    causes.append(f"the port closed between the nodes (a firewall): from {waiting}, `nc -zv {host} {port or '<port>'}` "
                  "must connect")
    return causes


def _rendezvous(command: cmdline.ServerCommand) -> tuple[str, str | None] | None:
    """Where a command says the nodes meet: SGLang's ``--dist-init-addr HOST:PORT``, vLLM's
    ``--master-addr HOST`` with its ``--master-port``; None where it says nothing."""
    if not command.dist_init_addr:
        return None
    if command.server == cmdline.SGLANG:
        return _split(command.dist_init_addr)
    return command.dist_init_addr, command.value("--master-port")


def _split(addr: str) -> tuple[str, str | None]:
    """``10.0.0.1:5000`` → (10.0.0.1, 5000); ``[fd00::1]:5000`` → (fd00::1, 5000); an unbracketed
    IPv6 address is split at its last colon, as SGLang reads it."""
    if addr.startswith("["):
        host, _, rest = addr[1:].partition("]")
        return host, rest.lstrip(":") or None
    host, sep, port = addr.rpartition(":")
    return (host, port or None) if sep else (addr, None)
