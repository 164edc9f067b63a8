"""`--metrics HOST:PORT`: the startup served by prometheus_client while Watchtower watches; a real
Prometheus (Debian's package) scrapes it on loopback and its HTTP API answers for the phase metric."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
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
        if proc.returncode is None:
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


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="Prometheus is not installed (scripts/setup --test installs it)")
async def test_a_real_prometheus_scrapes_the_phase_metric(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(lines_of("sglang_eagle3_tp8_ready.log")[:60]))
    port, web = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                      f"scrape_configs:\n  - job_name: watchtower\n    static_configs:\n"
                      f"      - targets: ['127.0.0.1:{port}']\n")
    proc = await watch(log, port)
    server = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                               f"--web.listen-address=127.0.0.1:{web}"],
                              stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.err", "wb"))
    try:
        await expect(proc, "weight load done")
        api = f"http://127.0.0.1:{web}/api/v1/query?query="

        def phase() -> list:
            answer = json.loads(get(api + urllib.parse.quote('watchtower_phase_seconds{phase="weight_load"}')))
            return answer["data"]["result"]

        (result,) = await asyncio.to_thread(poll, phase)
        assert result["metric"]["job"] == "watchtower" and result["metric"]["log"] == str(log)
        assert float(result["value"][1]) == 98.0

        def current() -> list:
            return json.loads(get(api + urllib.parse.quote("watchtower_phase == 1")))["data"]["result"]

        (now,) = await asyncio.to_thread(poll, current)
        assert now["metric"]["watchtower_phase"] == "draft_init"
    finally:
        server.terminate()
        server.wait(timeout=30)
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
