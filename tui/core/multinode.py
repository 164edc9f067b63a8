"""One server command on several nodes: each node's command line, and whether they agree. Pure.

``run --nodes n1,n2 -- CMD`` runs the same command on every node with ``{node_rank}``,
``{nnodes}`` and ``{master}`` substituted (or, for SGLang and vLLM, ``--nnodes`` and
``--node-rank`` added when the command has neither). Before launching, :func:`agreement`
checks what multi-node startups most often die of in silence: a node given another
dist-init address, another model, another node count, or a node rank twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from tui.core import cmdline
from tui.core.preflight import FAIL, OK, Check

PLACEHOLDERS = ("{node_rank}", "{nnodes}", "{master}")


def master_host(host: str) -> str:
    """``user@10.0.0.1:2222`` → ``10.0.0.1``: the address the other nodes reach node 0 at."""
    host = host.rsplit("@", 1)[-1]
    if host.startswith("["):
        return host[1 : host.index("]")]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def node_commands(argv: Sequence[str], hosts: Sequence[str], extra: Mapping[int, Sequence[str]] | None = None) -> list[list[str]]:
    """The command for each node, in node-rank order (``extra``: words appended on one node)."""
    nnodes, master = len(hosts), master_host(hosts[0])
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


def agreement(commands: Mapping[str, Sequence[str]]) -> list[Check]:
    """✓/✗ per thing every node must agree on; a ✗ names the odd node(s) out."""
    parsed = {node: cmdline.parse(list(argv)) for node, argv in commands.items()}
    if not parsed or all(p.server is None for p in parsed.values()):
        return []
    checks = [
        _same(parsed, "dist-init address", lambda p: p.dist_init_addr),
        _same(parsed, "model path", lambda p: p.model),
        _same(parsed, "node count", lambda p: str(p.nnodes)),
    ]
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


def _same(parsed: Mapping[str, cmdline.ServerCommand], what: str,
          get: Callable[[cmdline.ServerCommand], str | None]) -> Check:
    values = {node: get(p) for node, p in parsed.items()}
    common, _ = Counter(values.values()).most_common(1)[0]
    odd = [node for node, value in values.items() if value != common]
    if not odd:
        return Check(what, OK, f"{common or '(not given)'} on every node")
    first = odd[0]
    return Check(what, FAIL, f"{first} has {values[first] or '(none)'}, the others {common or '(none)'}"
                 + (f" (also different: {', '.join(odd[1:])})" if odd[1:] else ""))


def suspects(commands: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Nodes a failed agreement check names, with why: the barrier view puts them first."""
    found: dict[str, str] = {}
    for check in agreement(commands):
        if check.status == FAIL:
            for node in commands:
                if check.why.startswith(f"{node} has "):
                    found.setdefault(node, f"{check.name}: {check.why}")
    return found
