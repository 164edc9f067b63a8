"""A hint's link points to the server it is about (issue 31 item 6): a hint that applies to any
server but was written from one server's issue does not send a vLLM reader to SGLang's tracker.
Each server profile names its own ``sites``; a hint may give ``links`` per server; the logs run
through the real tracker and classifier (``scan``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.test_hint_preconditions import LOAD_SG, OOM, TB, V, sglang, vllm
from tui.commands.scan import scan_with_hints
from tui.core.hints import ProfileError, knowledge, parse
from tui.core.profiles import _parse, server_sites

SGLANG_SITES = server_sites()["sglang"]
VLLM_SITES = server_sites()["vllm"]
VLLM_LOAD_OOM = (vllm("model='/models/m', tensor_parallel_size=2")
                 + "INFO 08-14 11:00:03 [gpu_model_runner.py:1953] Starting to load model /models/m...\n" + V + OOM + "\n")
SGLANG_LOAD_OOM = sglang("tp_size=2, quantization=None") + LOAD_SG + TB + OOM + "\n"


def links(tmp_path: Path, text: str) -> dict[str, str]:
    log = tmp_path / "server.log"
    log.write_text(text)
    _, hints = scan_with_hints(str(log))
    return {h.id: h.link for h in hints}


def on_site(link: str, sites: tuple[str, ...]) -> bool:
    where = link.split("://", 1)[-1]
    return any(where == s or where.startswith(s + "/") for s in sites)


def test_a_vllm_oom_never_shows_an_sglang_link(tmp_path):
    found = links(tmp_path, VLLM_LOAD_OOM)
    assert "weights-oom" in found
    assert not any(on_site(link, SGLANG_SITES) for link in found.values()), found
    assert on_site(found["weights-oom"], VLLM_SITES)  # its own per-server link


def test_an_sglang_oom_still_shows_its_own_link(tmp_path):
    found = links(tmp_path, SGLANG_LOAD_OOM)
    assert found["weights-oom"] == next(h.link for h in knowledge().hints if h.id == "weights-oom")
    assert on_site(found["weights-oom"], SGLANG_SITES)


def test_a_hint_with_no_link_for_the_logs_server_shows_none(tmp_path):
    """gloo-interface links an SGLang issue and has no vLLM one: a vLLM log gets the sentence, no link."""
    gloo = "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n"
    assert on_site(links(tmp_path, sglang("tp_size=16, nnodes=2") + TB + gloo)["gloo-interface"], SGLANG_SITES)
    assert links(tmp_path, vllm() + V + gloo) == {"gloo-interface": ""}


def test_an_unknown_server_gets_the_default_link_and_no_servers_link_elsewhere_is_hidden():
    kb = knowledge()
    sg = "https://github.com/sgl-project/sglang/issues/4233"
    assert kb.link(sg, None) == sg
    assert kb.link(sg, "vllm") == ""
    assert kb.link(sg, "vllm", [("vllm", "https://docs.vllm.ai/x")]) == "https://docs.vllm.ai/x"
    nccl = "https://github.com/NVIDIA/nccl/issues/1055"  # no server's site: every server's
    assert kb.link(nccl, "vllm") == nccl and kb.link(nccl, "sglang") == nccl
    # a prefix of a path is not the site: vllm-ascend is not vLLM's repository
    assert kb.link("https://github.com/vllm-project/vllm-ascend/issues/1", "sglang") != ""


@pytest.mark.parametrize("body, says", [
    ('links = "https://x.org"', "hints.h.links: expected a URL per server"),
    ('links = { vllm = 3 }', "hints.h.links: expected a URL per server"),
])
def test_a_bad_links_key_is_one_line(body, says):
    with pytest.raises(ProfileError) as raised:
        parse(f'[[hints]]\nid = "h"\nkind = "x"\nwhy = "y"\n{body}\n', "mine.toml")
    assert says in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("sites, says", [
    ('"docs.vllm.ai"', "sites: expected a list of strings"),
    ('["https://docs.vllm.ai"]', "sites: expected a host and path"),
])
def test_a_bad_sites_key_is_one_line(sites, says):
    with pytest.raises(ProfileError) as raised:
        _parse(tomllib.loads(f'name = "mine"\nsites = {sites}\n'), "mine.toml", None)
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_a_users_profile_file_declares_its_own_sites_as_a_built_in_one_does(tmp_path):
    """A user's profile file (`--server PATH.toml`) for a fork of SGLang — the built-in profile, its
    own name — names SGLang's sites as its own: SGLang's links are its links (they were hidden as
    another server's). Its sites keep the built-in servers' links away from its logs as before."""
    import json

    from tests.support import run_cli
    from tui.core.profiles import _builtin_text

    fork = tmp_path / "fork.toml"
    fork.write_text(_builtin_text("sglang").replace('name = "sglang"', 'name = "sglang-fork"', 1))
    log = tmp_path / "server.log"
    log.write_text(SGLANG_LOAD_OOM)
    result = run_cli("scan", str(log), "--server", str(fork), "--json")
    found = json.loads(result.stdout)
    assert found["server"] == "sglang-fork", result.stdout
    hints = {h["id"]: h["link"] for h in found["hints"]}
    assert hints["weights-oom"] == next(h.link for h in knowledge().hints if h.id == "weights-oom")
    mine = tmp_path / "mine.toml"  # a server of its own: SGLang's and vLLM's pages are not its
    mine.write_text(fork.read_text().replace('name = "sglang-fork"', 'name = "mine"', 1)
                    .replace(f"sites = {json.dumps(list(SGLANG_SITES))}", 'sites = ["github.com/me/mine"]', 1))
    assert 'sites = ["github.com/me/mine"]' in mine.read_text()
    found = json.loads(run_cli("scan", str(log), "--server", str(mine), "--json").stdout)
    assert {h["id"]: h["link"] for h in found["hints"]}["weights-oom"] == ""
