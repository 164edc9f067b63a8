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


# A stand-in for a loader that fills GPU 0 with weights at a steady rate: the CUDA driver API
# through ctypes (no torch here), 256 MiB every 0.25 s up to TOTAL, then holds it until stdin closes.
FILLER = r'''
import ctypes, sys, time
cuda = ctypes.CDLL("libcuda.so.1")
def check(code, what):
    if code != 0:
        sys.exit(f"{what} failed: CUDA error {code}")
check(cuda.cuInit(0), "cuInit")
device = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
context = ctypes.c_void_p()
check(cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device), "cuCtxCreate")
step, total = int(sys.argv[1]), int(sys.argv[2])
print("context", flush=True)
sys.stdin.readline()  # go: the test has its baseline
kept = []
for _ in range(total // step):
    pointer = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(step)), "cuMemAlloc")
    kept.append(pointer)
    time.sleep(0.25)
print("done", time.time(), flush=True)
sys.stdin.read()
'''


def test_gpu_memory_growth_gives_the_load_its_progress_and_time_left(nvml, tmp_path):
    """The GPU-memory progress signal against a real allocation: 4 GiB at 1 GiB/s on GPU 0."""
    import ctypes.util
    import sys
    import time

    from tui.core.loading import Checkpoint, LoadEstimator

    if ctypes.util.find_library("cuda") is None:
        pytest.skip("no libcuda to allocate with")
    step, total = 256 << 20, 4 << 30
    script = tmp_path / "filler.py"
    script.write_text(FILLER)
    filler = subprocess.Popen([sys.executable, str(script), str(step), str(total)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert filler.stdout.readline().strip() == "context"
        estimator = LoadEstimator(Checkpoint("filler", total, 1))
        started = time.time()
        estimator.start(started)
        estimator.gpus(GpuSample("localhost", started, nvml.snapshot()[:1]), started)
        filler.stdin.write("go\n")
        filler.stdin.flush()
        said = None
        while time.time() - started < 30:
            time.sleep(0.5)
            now = time.time()
            estimator.gpus(GpuSample("localhost", now, nvml.snapshot()[:1]), now)
            estimate = estimator.estimate(now)
            if estimate is not None and estimate.left is not None:
                said = (now, sum(estimate.left) / 2, estimate)
                break
        assert said is not None, "no time left within 30 s"
        assert not said[2].simulated and said[2].signal == "gpu"
        line = filler.stdout.readline().split()
        assert line[0] == "done", line
        truth = float(line[1]) - said[0]
        assert abs(said[1] - truth) <= 0.5 * truth + 0.5, (said, truth)
    finally:
        filler.kill()
        filler.wait()
