"""NVML against a real GPU (`scripts/gpu-check` runs these); skipped, with the reason, elsewhere."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess

import pytest

from tui.core.events import GpuSample
from tui.sources.gpu import NvmlSource
from tui.sources.nvml import Nvml, NvmlUnavailable
from tui.sources.smi import gpu_query, parse_gpu_line

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def nvml():
    adapter = Nvml()
    try:
        adapter.open()
    except NvmlUnavailable as exc:
        pytest.skip(f"no GPU here: {exc}")
    yield adapter
    adapter.close()


def test_snapshot_fields_are_sane(nvml):
    gpus = nvml.snapshot()
    assert gpus, "NVML initialised but lists no GPU"
    for gpu in gpus:
        assert gpu.error is None, gpu
        assert gpu.name and gpu.uuid and gpu.uuid.startswith(("GPU-", "MIG-"))
        if gpu.memory_total is not None:  # unified-memory parts report none
            assert 0 <= gpu.memory_used <= gpu.memory_total
        if gpu.utilization is not None:
            assert 0 <= gpu.utilization <= 100
        if gpu.temperature is not None:
            assert 0 < gpu.temperature < 120
        if gpu.power_w is not None and gpu.power_limit_w is not None:
            assert 0 < gpu.power_w < 2 * gpu.power_limit_w
        for proc in gpu.processes:
            assert proc.pid > 0


async def test_source_polls_in_a_worker_thread(nvml):
    source = NvmlSource(interval=0.2)
    got = []
    async with asyncio.timeout(20), contextlib.aclosing(source.samples()) as events:
        async for event in events:
            got.append(event)
            if len(got) == 3:
                break
    await source.close()
    assert all(isinstance(e, GpuSample) for e in got), got
    assert len({len(e.gpus) for e in got}) == 1


def test_nvidia_smi_agrees_with_nvml(nvml):
    if not shutil.which("nvidia-smi"):
        pytest.skip("nvidia-smi is not on PATH")
    argv = gpu_query()[:-2]  # the same query, once instead of -lms
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    rows = [g for g in map(parse_gpu_line, out.splitlines()) if g is not None]
    by_nvml = {g.uuid: g for g in nvml.snapshot()}
    assert {g.uuid for g in rows} == set(by_nvml)
    for row in rows:
        same = by_nvml[row.uuid]
        assert row.index == same.index and row.name == same.name
        if row.memory_total is not None and same.memory_total is not None:
            assert abs(row.memory_total - same.memory_total) <= 2 << 20  # MiB rounding
