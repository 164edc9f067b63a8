"""`--metrics HOST:PORT`: the startup served by prometheus_client while Watchtower watches; a real
Prometheus (Debian's package) scrapes it on loopback and its HTTP API answers for the phase metric."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_watch_plain import expect, lines_of
from tests.support import run_cli, start_cli

PROMETHEUS = shutil.which("prometheus")

pytestmark = pytest.mark.timeout(120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


def poll(what, deadline_s: float = 60.0, every: float = 0.25):
    """``what()`` until it returns something truthy: an outside server offers no event to await."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            got = what()
        except (OSError, urllib.error.URLError):
            got = None
        if got:
            return got
        assert time.monotonic() < deadline, "not there in time"
        time.sleep(every)


async def watch(log: Path, port: int, *extra: str) -> asyncio.subprocess.Process:
    return await start_cli("watch", str(log), "--plain", "--gpus", "none", "--timeout", "90", "--metrics",
                           f"127.0.0.1:{port}", *extra)


def samples(text: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {f"{s.name}{sorted(s.labels.items())}": s.value for family in text_string_to_metric_families(text)
            for s in family.samples}


async def test_the_endpoint_follows_the_startup_to_ready(tmp_path):
    log = tmp_path / "server.log"
    lines = lines_of("sglang_eagle3_tp8_ready.log")
    log.write_bytes(b"".join(lines[:60]))  # weight load done, the draft loading
    port = free_port()
    proc = await watch(log, port)
    try:
        await expect(proc, "weight load done")
        first = samples(await asyncio.to_thread(get, f"http://127.0.0.1:{port}/metrics"))
        where = [("host", "localhost"), ("log", str(log))]
        assert first[f"watchtower_phase_seconds{sorted([*where, ('phase', 'weight_load')])}"] == 98.0
        assert first[f"watchtower_verdict{sorted([*where, ('watchtower_verdict', 'starting')])}"] == 1.0
        assert first[f"watchtower_attempt{sorted(where)}"] == 1.0
        assert not any(k.startswith("watchtower_ready_seconds") for k in first)
        assert len([k for k in first if k.startswith("watchtower_phase_rank_seconds") and "weight_load" in k]) == 8
        with open(log, "ab") as f:
            f.write(b"".join(lines[60:]))
        await expect(proc, "READY (line")
        after = samples(await asyncio.to_thread(get, f"http://127.0.0.1:{port}/metrics"))
        assert after[f"watchtower_verdict{sorted([*where, ('watchtower_verdict', 'ready')])}"] == 1.0
        assert after[f"watchtower_ready_seconds{sorted(where)}"] == 186.0  # 23:38:50 to 23:41:56 in the log
    finally:
        with contextlib.suppress(ProcessLookupError):  # (it may have ended by itself: its verdict came)
            proc.kill()
        await proc.wait()


def test_a_bad_address_is_a_usage_error(tmp_path):
    out = run_cli("watch", str(tmp_path / "x.log"), "--plain", "--metrics", "nowhere", timeout=60)
    assert out.returncode == 2 and "HOST:PORT" in out.stderr and "Traceback" not in out.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = run_cli("watch", str(tmp_path / "x.log"), "--plain", "--timeout", "5", "--metrics",
                      f"127.0.0.1:{port}", timeout=60)
    assert out.returncode == 2 and f"--metrics 127.0.0.1:{port}" in out.stderr and "Traceback" not in out.stderr


def prometheus(tmp_path: Path, port: int, every_s: int = 1) -> tuple[subprocess.Popen[bytes], Callable[[str], list]]:
    """A real Prometheus on loopback scraping 127.0.0.1:``port`` each ``every_s`` seconds, and a
    PromQL query of its HTTP API (the result list)."""
    assert PROMETHEUS is not None
    web = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(f"global:\n  scrape_interval: {every_s}s\n  scrape_timeout: 1s\n"
                      f"scrape_configs:\n  - job_name: watchtower\n    static_configs:\n"
                      f"      - targets: ['127.0.0.1:{port}']\n")
    server = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                               f"--web.listen-address=127.0.0.1:{web}"],
                              stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.err", "wb"))

    def query(promql: str) -> list:
        answer = json.loads(get(f"http://127.0.0.1:{web}/api/v1/query?query=" + urllib.parse.quote(promql)))
        return answer["data"]["result"]

    return server, query


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="Prometheus is not installed (scripts/setup --test installs it)")
async def test_a_real_prometheus_scrapes_the_phase_metric(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(lines_of("sglang_eagle3_tp8_ready.log")[:60]))
    port = free_port()
    proc = await watch(log, port)
    server, query = prometheus(tmp_path, port)
    try:
        await expect(proc, "weight load done")
        (result,) = await asyncio.to_thread(poll, lambda: query('watchtower_phase_seconds{phase="weight_load"}'))
        assert result["metric"]["job"] == "watchtower" and result["metric"]["log"] == str(log)
        assert float(result["value"][1]) == 98.0

        (now,) = await asyncio.to_thread(poll, lambda: query("watchtower_phase == 1"))
        assert now["metric"]["watchtower_phase"] == "draft_init"
    finally:
        server.terminate()
        server.wait(timeout=30)
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="Prometheus is not installed (scripts/setup --test installs it)")
async def test_a_real_prometheus_sees_the_verdict_of_a_watch_that_ends_at_once(tmp_path):
    """`--plain` ends about half a second after READY: the endpoint stays until a scrape (every 3 s
    here) has read the final state, so Prometheus records `ready`, not `starting` for ever."""
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(lines_of("sglang_eagle3_tp8_ready.log")))
    port = free_port()
    proc = await watch(log, port, "--metrics-linger", "60")
    await expect(proc, "READY (line")  # (its endpoint is bound by then: Prometheus never knocks on a free port)
    server, query = prometheus(tmp_path, port, every_s=3)
    try:
        assert await proc.wait() == 0
        stderr = (await proc.stderr.read()).decode()  # type: ignore[union-attr]
        assert "serving the final state until it is scraped (at most 60 s" in stderr, stderr
        # (over the last minutes: the target is gone by now, its series stale at the present instant)
        (ready,) = await asyncio.to_thread(poll, lambda: query(
            'max_over_time(watchtower_verdict{watchtower_verdict="ready"}[5m]) == 1'))
        assert ready["metric"]["log"] == str(log)
        (took,) = query("last_over_time(watchtower_ready_seconds[5m])")
        assert float(took["value"][1]) == 186.0
        (build,) = query("last_over_time(watchtower_build_info[5m])")
        assert build["metric"]["profile"] == "sglang" and build["metric"]["version"]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_watch_nobody_scrapes_lingers_no_longer_than_its_bound(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(lines_of("sglang_eagle3_tp8_ready.log")))
    started = time.monotonic()
    out = run_cli("watch", str(log), "--plain", "--gpus", "none", "--metrics", f"127.0.0.1:{free_port()}",
                  "--metrics-linger", "1", timeout=60)
    assert out.returncode == 0 and "READY" in out.stdout, out.stdout + out.stderr
    assert "at most 1 s; --metrics-linger" in out.stderr and time.monotonic() - started < 30
    out = run_cli("watch", str(log), "--plain", "--gpus", "none", "--metrics", f"127.0.0.1:{free_port()}",
                  "--metrics-linger", "0", timeout=60)
    assert out.returncode == 0 and "serving the final state" not in out.stderr, out.stderr


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian's prometheus package) is not installed")
def test_the_exposition_passes_promtool_with_units_last_and_build_info():
    from prometheus_client import CollectorRegistry, generate_latest

    from tests.test_weight_load import _loading_session
    from tui import __version__
    from tui.present.metrics import StartupCollector, one_log

    registry = CollectorRegistry(auto_describe=False)
    loop = asyncio.new_event_loop()
    try:
        registry.register(StartupCollector(one_log(_loading_session()), loop, {"log": "server.log"}))
        text = generate_latest(registry).decode()
    finally:
        loop.close()
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0 and not (lint.stdout + lint.stderr).strip(), lint.stdout + lint.stderr
    got = samples(text)
    assert value(got, "watchtower_build_info", log="server.log", version=__version__, profile="sglang") == 1.0
    assert any(k.startswith("watchtower_weight_load_remaining_seconds") for k in got)
    names = {k.split("{")[0].split("[")[0] for k in got}
    units = ("_seconds", "_bytes", "_ratio")
    timed = {n for n in names if "second" in n or "byte" in n or "progress" in n or "left" in n}
    assert timed and all(n.endswith(units) for n in timed), timed


# ---------------------------------------------------------------- several nodes

def stamped(lines: list[str]) -> list[str]:
    """``node_log``'s lines one second apart (its own are all in one second): phases that take time."""
    return [line.replace("23:39:00", f"23:39:{i:02d}") for i, line in enumerate(lines)]


def two_nodes(tmp_path: Path) -> tuple[Path, Path]:
    """n1 past its weight load (capturing CUDA graphs), n2 stuck in dist-init; the cluster file."""
    from tests.test_cluster_core import node_log

    logs = {"n1": stamped(node_log(["TP0", "TP1"], until="graph_begin")),
            "n2": stamped(node_log(["TP2", "TP3"], until="dist_begin", node_rank=1))}
    for name, lines in logs.items():
        (tmp_path / f"{name}.log").write_text("\n".join(lines) + "\n")
    conf = tmp_path / "nodes.toml"
    conf.write_text("".join(f'[[node]]\nname = "{n}"\nlog = "{tmp_path / n}.log"\n\n' for n in logs))
    return conf, tmp_path / "n2.log"


async def watch_nodes(conf: Path, *extra: str) -> asyncio.subprocess.Process:
    return await start_cli("watch", "--cluster", str(conf), "--plain", "--gpus", "none", "--timeout", "90", *extra)


def fail_n2(n2_log: Path) -> None:
    from tests.test_cluster_core import node_log

    failure = node_log(["TP2", "TP3"], until="dist_begin", node_rank=1, then_raise=True)[-3:]
    with open(n2_log, "a") as f:
        f.write("\n".join(failure) + "\n")


def value(got: dict[str, float], name: str, **labels: str) -> float | None:
    """The sample of ``name`` with exactly these labels, or None."""
    return got.get(f"{name}{sorted(labels.items())}")


async def test_several_nodes_have_a_node_label_each_and_the_attempts_verdict(tmp_path):
    conf, n2_log = two_nodes(tmp_path)
    port = free_port()
    textfile = tmp_path / "textfile" / "watchtower.prom"
    textfile.parent.mkdir()
    proc = await watch_nodes(conf, "--metrics", f"127.0.0.1:{port}", "--metrics-textfile", str(textfile))
    on = {"nodes": "n1,n2"}
    try:
        def scraped() -> dict[str, float] | None:  # once both nodes' logs are read (each at its own pace)
            got = samples(get(f"http://127.0.0.1:{port}/metrics"))
            both = (value(got, "watchtower_phase", node="n1", **on, watchtower_phase="cuda_graph")
                    and value(got, "watchtower_phase", node="n2", **on, watchtower_phase="dist_init"))
            return got if both else None

        got = await asyncio.to_thread(poll, scraped)
        assert value(got, "watchtower_phase", node="n2", **on, watchtower_phase="dist_init") == 1.0
        assert value(got, "watchtower_phase_seconds", node="n1", **on, phase="weight_load") == 3.0
        assert value(got, "watchtower_phase_rank_seconds", node="n1", **on, phase="weight_load", rank="TP1") == 2.0
        assert value(got, "watchtower_phase_seconds", node="n2", **on, phase="weight_load") is None
        assert value(got, "watchtower_verdict", **on, watchtower_verdict="starting") == 1.0  # the attempt's: no node
        assert value(got, "watchtower_node_verdict", node="n2", **on, watchtower_node_verdict="starting") == 1.0
        assert value(got, "watchtower_attempt", **on) == 1.0

        fail_n2(n2_log)
        await expect(proc, "FAILED")
        assert await proc.wait() == 1
    finally:
        with contextlib.suppress(ProcessLookupError):  # (it may have ended by itself: its verdict came)
            proc.kill()
        await proc.wait()
    final = samples(textfile.read_text())  # written once more as the watch ended: the final verdict stays
    assert value(final, "watchtower_verdict", **on, watchtower_verdict="failed") == 1.0
    assert value(final, "watchtower_node_verdict", node="n2", **on, watchtower_node_verdict="failed") == 1.0
    assert value(final, "watchtower_node_verdict", node="n1", **on, watchtower_node_verdict="failed") == 0.0
    assert [k for k in final if k.startswith("watchtower_errors")] == [  # n2's error alone
        f"watchtower_errors{sorted([('node', 'n2'), *on.items(), ('kind', 'RuntimeError')])}"], final
    assert [p.name for p in textfile.parent.iterdir()] == ["watchtower.prom"]  # no temporary file left beside it


async def test_the_textfile_is_rewritten_while_the_startup_goes_on(tmp_path):
    conf, n2_log = two_nodes(tmp_path)
    textfile = tmp_path / "watchtower.prom"
    proc = await watch_nodes(conf, "--metrics-textfile", str(textfile))
    on = {"nodes": "n1,n2"}
    try:
        def read(name: str, **labels: str) -> dict[str, float] | None:
            got = samples(textfile.read_text())
            return got if value(got, name, node="n1", **on, **labels) is not None else None

        first = await asyncio.to_thread(poll, lambda: read("watchtower_phase", watchtower_phase="cuda_graph"))
        assert value(first, "watchtower_ready_seconds", node="n1", **on) is None
        with open(tmp_path / "n1.log", "a") as f:  # n1 ends its CUDA graphs and serves
            from tests.test_cluster_core import node_log

            f.write("\n".join(stamped(node_log(["TP0", "TP1"], until="ready"))[-3:]) + "\n")
        got = await asyncio.to_thread(poll, lambda: read("watchtower_ready_seconds"))  # a later tick wrote it again
        assert value(got, "watchtower_ready_seconds", node="n1", **on) == 15.0  # 23:39:00 to 23:39:15 in n1's log
        assert value(got, "watchtower_ready_seconds", node="n2", **on) is None  # absent, not 0
    finally:
        with contextlib.suppress(ProcessLookupError):  # (it may have ended by itself: its verdict came)
            proc.kill()
        await proc.wait()


@pytest.mark.parametrize("where, words", [
    ("missing/watchtower.prom", "no directory"),
    ("watchtower.txt", "must end in .prom"),
])
def test_a_textfile_nowhere_to_write_is_one_line_and_exit_2(tmp_path, where, words):
    out = run_cli("watch", str(tmp_path / "x.log"), "--plain", "--metrics-textfile", str(tmp_path / where))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and words in out.stderr, out.stderr
    assert str(tmp_path / where) in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="Prometheus is not installed (scripts/setup --test installs it)")
async def test_a_real_prometheus_tells_the_nodes_apart(tmp_path):
    conf, n2_log = two_nodes(tmp_path)
    port = free_port()
    proc = await watch_nodes(conf, "--metrics", f"127.0.0.1:{port}")
    server, query = prometheus(tmp_path, port)
    try:
        (result,) = await asyncio.to_thread(poll, lambda: query('watchtower_phase_seconds{phase="weight_load"}'))
        assert result["metric"]["node"] == "n1" and float(result["value"][1]) == 3.0
        phases = await asyncio.to_thread(poll, lambda: (lambda r: r if len(r) == 2 else None)(
            query("watchtower_phase == 1")))
        assert {(r["metric"]["node"], r["metric"]["watchtower_phase"]) for r in phases} == {
            ("n1", "cuda_graph"), ("n2", "dist_init")}
        (attempt,) = query('watchtower_verdict{watchtower_verdict="starting"} == 1')
        assert "node" not in attempt["metric"] and attempt["metric"]["job"] == "watchtower"
    finally:
        server.terminate()
        server.wait(timeout=30)
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


# ---------------------------------------------------------------- the weight load's bytes and time left

def exported(session) -> dict[str, float]:
    """What a scrape of ``session`` (one log) would read, through prometheus_client's own exposition."""
    from prometheus_client import CollectorRegistry, generate_latest

    from tui.present.metrics import StartupCollector, one_log

    registry = CollectorRegistry(auto_describe=False)
    loop = asyncio.new_event_loop()  # (not running: the snapshot is taken here, as after a watch ends)
    try:
        registry.register(StartupCollector(one_log(session), loop, {"log": "server.log"}))
        return samples(generate_latest(registry).decode())
    finally:
        loop.close()


def test_the_weight_loads_bytes_and_time_left_are_exported_with_their_source():
    from tests.test_weight_load import GB, _loading_session

    got = exported(_loading_session())
    how = {"log": "server.log", "signal": "read", "simulated": "false"}
    loaded = value(got, "watchtower_weight_load_loaded_bytes", **how)
    assert loaded is not None and 7.0 * GB < loaded < 7.5 * GB  # what the dashboard words as 7.2/547 GB
    assert value(got, "watchtower_weight_load_total_bytes", **how) == 547 * GB
    low = value(got, "watchtower_weight_load_remaining_seconds", **how, bound="low")
    high = value(got, "watchtower_weight_load_remaining_seconds", **how, bound="high")
    assert low is not None and high is not None and 540 <= low <= high <= 660  # "~10:00 left"


def test_a_simulated_reading_says_so_and_unknowns_are_absent_not_zero():
    from tests.test_weight_load import LOG, _loading_session
    from tui.core.events import LogChunk
    from tui.session import WatchSession

    simulated = exported(_loading_session(simulated=True))
    assert any("simulated', 'true'" in k and k.startswith("watchtower_weight_load_loaded_bytes") for k in simulated)
    assert not any("simulated', 'false'" in k for k in simulated)
    quiet = WatchSession(clock=lambda: 1000.0)  # a weight load begun, no byte moved yet: nothing to say
    quiet.handle(LogChunk("log", 0, LOG, 1000.0))
    quiet.flush()
    got = exported(quiet)
    assert value(got, "watchtower_phase", log="server.log", watchtower_phase="weight_load") == 1.0
    assert not any(k.startswith("watchtower_weight_load") for k in got), got


def test_a_launchs_metrics_have_its_verdict_judged_with_the_process(tmp_path):
    """`run`: a server killed mid-load is DEAD, as the launch judges it with its process (the log alone
    cannot tell) — and the textfile's last write says so."""
    textfile = tmp_path / "run.prom"
    out = run_cli("run", "--plain", "--name", "k", "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--no-check",
                  "--timeout", "60", "--metrics-textfile", str(textfile), "--", sys.executable,
                  str(Path(__file__).with_name("server_sim.py")), "--step", "0.01", "--outcome", "sigkill",
                  env={"WATCHTOWER_DATA_DIR": str(tmp_path)}, timeout=90)
    assert out.returncode == 1 and "DEAD" in out.stdout, out.stdout + out.stderr
    got = samples(textfile.read_text())
    assert value(got, "watchtower_verdict", launch="k", watchtower_verdict="dead") == 1.0, got
    assert value(got, "watchtower_attempt", launch="k") == 1.0
