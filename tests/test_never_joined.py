"""The classic multi-node hang: a node that never joins the others in the distributed init, said
with its likely causes from the logs and the nodes' command lines (known failures #11, #12, #29):
another dist-init address, an IPv6 address without brackets, the network interface variables,
and last a firewall on the port, with the check to run (never probed from here).

The logs are ``tests/fixtures/nodes_sglang_*`` (``make_cases.py``): two SGLang nodes whose ranks
began the distributed init and said nothing more.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.support import run_cli
from tui.core.cluster import NodeStatus, barrier, verdict
from tui.core.lines import LineAssembler
from tui.core.multinode import agreement, suspects
from tui.core.profiles import load_profile
from tui.core.tracker import StartupTracker
from tui.core.verdict import STALLED, Verdict

FIXTURES = Path(__file__).parent / "fixtures"
STALL = Verdict(STALLED, "log silent 2:00, past the limit")


def node(name: str, path: Path | None = None, *, lines: list[str] | None = None, quiet_for: float = 120.0,
         **fields) -> NodeStatus:
    """A node silent past its limit, its state read from a log (a fixture, or ``lines``)."""
    tracker = StartupTracker(load_profile("sglang"))
    text = path.read_text() if path is not None else "\n".join(lines or []) + "\n"
    for item in LineAssembler().feed(text.encode()):
        tracker.feed(item, 0.0)
    tracker.finish()
    return NodeStatus(name, tracker.state, quiet_for=quiet_for, verdict=STALL, **fields)


def pair(name: str, **fields) -> list[NodeStatus]:
    return [node(f"n{i}", FIXTURES / f"nodes_{name}_n{i}.log", **fields) for i in (1, 2)]


def sglang(rank: int, addr: str, *env: str) -> list[str]:
    return [*env, "python", "-m", "sglang.launch_server", "--model-path", "/models/big", "--tp", "16", "--nnodes", "2",
            "--node-rank", str(rank), "--dist-init-addr", addr]


def test_a_log_with_another_dist_init_address_names_that_node_and_the_port_to_check():
    """Servers started by hand (no command seen): the logs' own server arguments disagree."""
    v = verdict(pair("sglang_other_addr"))
    assert v.kind == STALLED and v.node == "n2", v.text
    assert v.detail.startswith("no rank past dist-init, quiet 2:00, on n2, n1: the nodes never met at the dist-init address")
    assert "dist-init address in the logs: n2 has 10.0.5.9:5000, the others 10.0.5.1:5000" in v.detail
    assert "the port closed between the nodes (a firewall): from each node, `nc -zv 10.0.5.1 5000` must connect" in v.detail
    # the barrier puts n2 first, and says why
    first = barrier(pair("sglang_other_addr"))[0].missing[0]
    assert (first.node, first.suspect) == ("n2", "dist-init address in the logs: n2 has 10.0.5.9:5000, the others 10.0.5.1:5000")


def test_an_ipv6_address_without_brackets_is_a_likely_cause_with_how_to_write_it():
    v = verdict(pair("sglang_ipv6_unbracketed"))
    assert "--dist-init-addr fd00:5::1:5000 is an IPv6 address without brackets: write [fd00:5::1]:5000" in v.detail
    assert "`nc -zv fd00:5::1 5000`" in v.detail
    assert "dist-init address in the logs" not in v.detail  # both nodes were given the same one


def test_a_node_behind_the_others_is_named_and_the_check_runs_from_it():
    ts = "2026-09-09 10:00:05"
    head = [f"[{ts}] server_args=ServerArgs(model_path='/models/big', tp_size=4, dist_init_addr='10.0.5.1:5000', "
            "nnodes=2, node_rank=0)"]
    head += [f"[{ts} TP{r}] Init torch distributed begin." for r in (0, 1)]
    head += [f"[{ts} TP{r}] Init torch distributed ends. mem usage=0.1 GB" for r in (0, 1)]
    head += [f"[{ts} TP{r}] Load weight begin. avail mem=78.12 GB" for r in (0, 1)]
    worker = [head[0].replace("node_rank=0", "node_rank=1")] + [f"[{ts} TP{r}] Init torch distributed begin." for r in (2, 3)]
    v = verdict([node("n1", lines=head, quiet_for=5.0), node("n2", lines=worker)])
    assert v.node == "n2" and v.detail.startswith("n2 never joined: 2/4 ranks past dist-init, n2 quiet 2:00 · likely causes: ")
    assert "from n2, `nc -zv 10.0.5.1 5000` must connect" in v.detail


def test_the_socket_interface_variables_where_the_launch_knows_the_environment():
    commands = {"n1": sglang(0, "10.0.5.1:5000"), "n2": sglang(1, "10.0.5.1:5000")}

    def said(env):
        nodes = pair("sglang_other_addr")
        return verdict([dataclasses.replace(n, command=tuple(commands[n.name]), env=env) for n in nodes]).detail

    unset = said({})
    assert "GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME set on no node: on hosts with several network interfaces" in unset
    assert "set on no node" not in said({"GLOO_SOCKET_IFNAME": "ens1", "NCCL_SOCKET_IFNAME": "ens1"})
    unknown = verdict(pair("sglang_other_addr")).detail  # started by hand: its environment cannot be seen
    assert "GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME, where the nodes have several network interfaces" in unknown


def test_the_preflight_refuses_an_unbracketed_ipv6_address_and_interfaces_that_differ():
    v6 = agreement({"n1": sglang(0, "fd00:5::1:5000"), "n2": sglang(1, "fd00:5::1:5000")})
    assert "✗ dist-init address form: n1 has fd00:5::1:5000, an IPv6 address without brackets: write " \
           "[fd00:5::1]:5000 (also: n2)" in [c.line for c in v6]
    assert not [c for c in agreement({"n1": sglang(0, "[fd00:5::1]:5000"), "n2": sglang(1, "[fd00:5::1]:5000")})
                if c.name == "dist-init address form"]
    odd = {"n1": sglang(0, "10.0.5.1:5000", "NCCL_SOCKET_IFNAME=ens1"), "n2": sglang(1, "10.0.5.1:5000", "NCCL_SOCKET_IFNAME=ib0")}
    assert "✗ NCCL_SOCKET_IFNAME: n2 has ib0, the others ens1" in [c.line for c in agreement(odd)]
    assert suspects(odd) == {"n2": "NCCL_SOCKET_IFNAME: n2 has ib0, the others ens1"}
    launched = agreement({"n1": sglang(0, "10.0.5.1:5000"), "n2": sglang(1, "10.0.5.1:5000")}, {"NCCL_SOCKET_IFNAME": "ens1"})
    assert "✓ NCCL_SOCKET_IFNAME: ens1 on every node" in [c.line for c in launched]


async def test_a_launch_gives_the_nodes_statuses_its_commands_and_environment():
    """``run --nodes`` sets the session's commands and environment (the interface variables of it):
    each node's status carries them to the verdict."""
    from tui.cluster import ClusterSession, default_session
    from tui.core.options import NodeSpec

    specs = [NodeSpec(f"n{i}", str(FIXTURES / f"nodes_sglang_other_addr_n{i}.log")) for i in (1, 2)]
    session = ClusterSession(specs, make_session=default_session)
    session.commands = {"n1": sglang(0, "10.0.5.1:5000"), "n2": sglang(1, "10.0.5.9:5000")}
    session.launch_env = {}
    statuses = {s.name: s for s in session.statuses()}
    assert statuses["n2"].command == tuple(session.commands["n2"]) and statuses["n2"].env == {}
    stalled = [dataclasses.replace(s, verdict=STALL, quiet_for=60.0) for s in statuses.values()]
    assert "set on no node" in verdict(stalled).detail


def test_watch_cluster_plain_says_the_causes(tmp_path):
    path = tmp_path / "nodes.toml"
    path.write_text("".join(f'[[node]]\nname = "n{i}"\nlog = "{FIXTURES / f"nodes_sglang_other_addr_n{i}.log"}"\n\n'
                            for i in (1, 2)))
    done = run_cli("watch", "--cluster", str(path), "--plain", "--gpus", "none", "--stall-limit", "1s", "--timeout", "3")
    assert done.returncode == 3, done.stderr
    stalled = [line for line in done.stdout.splitlines() if "STALLED? on n2: no rank past dist-init" in line]
    assert stalled, done.stdout
    assert "dist-init address in the logs: n2 has 10.0.5.9:5000, the others 10.0.5.1:5000" in stalled[0]
    assert "`nc -zv 10.0.5.1 5000` must connect" in stalled[0]
    # the barrier's row names the suspect once, not under each of n2's ranks
    assert done.stdout.count("[suspect: dist-init address in the logs: n2 has 10.0.5.9:5000") == 1, done.stdout
