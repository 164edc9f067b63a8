"""GPU sources: the simulated box, the nvidia-smi parser and stream (through a real fake
`nvidia-smi` subprocess), the NVML adapter's error paths (faked pynvml functions) and the
non-overlapping poll loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
import time
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import until
from tui.commands import UsageError
from tui.core.events import (
    ErrorFound,
    GpuInfo,
    GpuProcess,
    GpuSample,
    GpuUnavailable,
    PhaseEnded,
    PhaseProgress,
    PhaseStarted,
    Ready,
)
from tui.sources import nvml
from tui.sources.factory import make_gpu_source
from tui.sources.gpu import NvmlSource, PolledGpuSource
from tui.sources.sim import DEMO_SCRIPT, GIB, H200_TOTAL, MIB, SimGpuSource
from tui.sources.smi import (
    SmiSource,
    _Batches,
    apps_query,
    describe_message,
    gpu_query,
    local_lines,
    parse_app_line,
    parse_gpu_line,
)

# ---------------------------------------------------------------- simulated source


def test_sim_is_deterministic_given_seed_and_clock():
    now = [12.5]
    a = SimGpuSource(seed=7, clock=lambda: now[0], script=DEMO_SCRIPT)
    b = SimGpuSource(seed=7, clock=lambda: now[0], script=DEMO_SCRIPT)
    c = SimGpuSource(seed=8, clock=lambda: now[0], script=DEMO_SCRIPT)
    now[0] = 20.0
    assert a.snapshot().gpus == b.snapshot().gpus
    assert a.snapshot().gpus != c.snapshot().gpus
    gpus = a.snapshot().gpus
    assert len(gpus) == 8 and {g.memory_total for g in gpus} == {H200_TOTAL}
    assert all(g.name == "NVIDIA H200" and g.uuid for g in gpus)


def test_sim_memory_follows_the_startup_phases():
    sim = SimGpuSource(clock=lambda: 0.0)

    def used(phase, fraction=None):
        sim.set_phase(phase, fraction)
        return sim.snapshot().gpus[0].memory_used

    assert used("idle") == 0
    context = used("server_args")
    assert 0 < context < 1 * GIB
    loading = [used("weight_load", f / 10) for f in range(11)]
    assert loading == sorted(loading) and loading[0] == context
    assert 60 * GIB < loading[-1] < 70 * GIB  # a 547 GB model over 8 GPUs
    pool = used("memory_pool", 0.0)
    assert pool - loading[-1] > 50 * GIB  # the jump of the KV-cache pool
    graphs = [used("cuda_graph", f / 4) for f in range(5)]
    assert graphs == sorted(graphs) and 0 < graphs[-1] - pool < 4 * GIB  # a small rise
    ready_1, ready_2 = used("ready"), used("ready")
    assert ready_1 == ready_2 > graphs[-1] and ready_1 <= H200_TOTAL
    assert used("failed") == 0
    assert sim.snapshot().gpus[0].processes == ()


def test_sim_follows_tracker_events_and_time_script():
    now = [0.0]
    sim = SimGpuSource(clock=lambda: now[0], script=DEMO_SCRIPT)
    now[0] = 19.0  # 4 s .. 34 s is weight load
    assert sim.phase == ("weight_load", 0.5)
    sim.feed(PhaseStarted("weight_load", line=10, ts=None))
    assert sim.phase == ("weight_load", 0.0)  # driven by events from now on
    sim.feed(PhaseProgress("weight_load", line=11, fraction=0.25, detail="25%"))
    assert sim.phase == ("weight_load", 0.25)
    sim.feed(PhaseEnded("weight_load", line=12, ts=None, seconds=3.0, slowest_rank=None, ranks=8))
    assert sim.phase == ("weight_load", 1.0)
    sim.feed(Ready(line=99, ts=None, seconds=60.0))
    assert sim.phase[0] == "ready"
    sim.feed(ErrorFound(error=None))
    assert sim.phase[0] == "failed"
    with pytest.raises(ValueError, match="unknown simulated phase"):
        sim.set_phase("warp_drive")


async def test_sim_source_polls_at_its_interval_on_the_loop():
    sim = make_gpu_source("sim", None, 0.02)
    assert isinstance(sim, SimGpuSource)
    got = []
    async for event in sim.events():
        got.append(event)
        if len(got) == 3:
            await sim.close()
    assert [type(e) for e in got] == [GpuSample] * 3 and sim.polls == 3


# ---------------------------------------------------------------- nvidia-smi parsing

FULL = GpuInfo(0, "NVIDIA H200", "GPU-1f2e", 1024 * MIB, 143771 * MIB, 5, 33, 75.2, 700.0)


@pytest.mark.parametrize(
    "line, expected",
    [
        ("0, NVIDIA H200, GPU-1f2e, 1024, 143771, 5, 33, 75.20, 700.00", FULL),
        ("0,NVIDIA H200,GPU-1f2e,1024,143771,5,33,75.20,700.00\r", FULL),
        ("0, NVIDIA H200, GPU-1f2e, 1024 MiB, 143771 MiB, 5 %, 33, 75.20 W, 700.00 W", FULL),  # units left on
        (
            "3, NVIDIA GH200, GPU-9, [N/A], [N/A], [Not Supported], 40, [Unknown Error], 900.00",
            GpuInfo(3, "NVIDIA GH200", "GPU-9", None, None, None, 40, None, 900.0),
        ),
        ("1, NVIDIA H200, GPU-x, N/A, 143771, N/A, N/A, N/A, N/A", GpuInfo(1, "NVIDIA H200", "GPU-x", None, 143771 * MIB)),
        ("2, NVIDIA H200", GpuInfo(2, "NVIDIA H200")),  # missing columns
        ("4, , , abc, 1e400, -, nan, inf, 7", GpuInfo(4, power_limit_w=7.0)),  # garbage cells
        (
            "5, NVIDIA H200, GPU-5, [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost], [N/A], [N/A]",
            GpuInfo(5, "NVIDIA H200", "GPU-5", error="GPU is lost"),
        ),
        ("", None),
        ("index, name, uuid", None),  # a header line
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", None),
        ("Failed to initialize NVML: Driver/library version mismatch", None),
        ("-1, x", None),
        ("\x00\xff garbage ,,,,", None),
    ],
)
def test_parse_gpu_line(line, expected):
    assert parse_gpu_line(line) == expected


@pytest.mark.parametrize(
    "line, expected",
    [
        ("GPU-1f2e, 4242, 70144, python3", ("GPU-1f2e", GpuProcess(4242, 70144 * MIB, "python3"))),
        ("GPU-1f2e, 4243, [N/A], sglang::scheduler", ("GPU-1f2e", GpuProcess(4243, None, "sglang::scheduler"))),
        ("GPU-1f2e, 77, 10, /opt/my,odd,name", ("GPU-1f2e", GpuProcess(77, 10 * MIB, "/opt/my,odd,name"))),
        ("GPU-1f2e, 78", ("GPU-1f2e", GpuProcess(78, None, ""))),
        ("GPU-1f2e, 79, 5, [Not Found]", ("GPU-1f2e", GpuProcess(79, 5 * MIB, ""))),  # the process vanished
        ("No running processes found", None),
        ("[N/A], 12, 5, x", None),
        ("GPU-1f2e, pid, 5, x", None),
        ("", None),
    ],
)
def test_parse_app_line(line, expected):
    assert parse_app_line(line) == expected


def test_query_command_lines():
    assert gpu_query(1.0) == [
        "nvidia-smi",
        "--query-gpu=index,name,uuid,memory.used,memory.total,utilization.gpu,temperature.gpu,power.draw,power.limit",
        "--format=csv,noheader,nounits",
        "-lms",
        "1000",
    ]
    assert apps_query(0.5)[1] == "--query-compute-apps=gpu_uuid,pid,used_memory,process_name"
    assert apps_query(0.5)[-1] == "500"


def test_batches_complete_without_waiting_for_the_next_batch():
    b = _Batches()
    rows = [GpuInfo(i) for i in range(3)]
    assert b.add(rows[0]) == [] and b.add(rows[1]) == [] and b.add(rows[2]) == []
    assert b.add(rows[0]) == [tuple(rows)]  # first batch: ended by the index starting over
    assert b.add(rows[1]) == []
    assert b.add(rows[2]) == [tuple(rows)]  # from now on: complete at the known size
    # a GPU that stops being listed is marked, not dropped
    b.add(rows[0])
    b.add(rows[2])
    batch = b.take("nvidia-smi: Unable to determine the device handle for GPU1: GPU is lost")
    assert [g.index for g in batch] == [0, 1, 2]
    assert batch[1].error and "GPU is lost" in batch[1].error


# ---------------------------------------------------------------- nvidia-smi streaming (real subprocess)

FAKE_SMI = r"""#!/bin/sh
# A stand-in for nvidia-smi printing recorded-format CSV. FAKE_SMI_MODE picks a behaviour.
state="$FAKE_SMI_DIR/runs"
case "$1" in
--query-gpu=*)
    echo run >> "$state"
    case "$FAKE_SMI_MODE" in
    mismatch) echo "Failed to initialize NVML: Driver/library version mismatch"; exit 18;;
    esac
    n=0
    while [ $n -lt "${FAKE_SMI_BATCHES:-1000}" ]; do
        echo "0, NVIDIA H200, GPU-aaaa-0, $((1024 + n)), 143771, 5, 33, 75.20, 700.00"
        echo "1, NVIDIA H200, GPU-bbbb-1, [N/A], 143771, [Not Supported], 34, [N/A], 700.00"
        if [ "$FAKE_SMI_MODE" = lost ]; then
            echo "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU"
        else
            echo "2, NVIDIA H200, GPU-cccc-2, 2048, 143771, 0, 30, 70.00, 700.00"
        fi
        n=$((n + 1))
        sleep 0.05
    done
    ;;
--query-compute-apps=*)
    n=0
    while [ $n -lt 4 ]; do  # listed a few times, then the process is gone: nothing printed
        echo "GPU-aaaa-0, 4242, 70144, python3"
        echo "GPU-cccc-2, 4243, [N/A], sglang::scheduler"
        n=$((n + 1))
        sleep 0.05
    done
    sleep 1000
    ;;
esac
"""


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "nvidia-smi"
    exe.write_text(FAKE_SMI)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SMI_DIR", str(tmp_path))
    return tmp_path


async def collect(source, until, limit: float = 20.0):
    got = []
    async with asyncio.timeout(limit), contextlib.aclosing(source.samples()) as events:
        async for event in events:
            got.append(event)
            if until(got):
                break
    await source.close()
    return got


async def test_smi_stream_from_a_real_subprocess(fake_smi):
    source = make_gpu_source("smi", None, 0.05)
    assert isinstance(source, SmiSource)
    got = await collect(source, lambda got: len(got) >= 30)
    assert all(isinstance(e, GpuSample) for e in got)
    first = got[0].gpus
    assert [g.index for g in first] == [0, 1, 2]
    assert first[0].memory_used == 1024 * MIB and first[0].power_w == 75.2
    assert first[1].memory_used is None and first[1].utilization is None and first[1].temperature == 34
    used = [s.gpus[0].memory_used for s in got]
    assert used == sorted(used) and len(set(used)) > 1, "every batch arrives, in order"
    with_procs = [s for s in got if s.gpus[0].processes]
    assert with_procs and with_procs[0].gpus[0].processes == (GpuProcess(4242, 70144 * MIB, "python3"),)
    assert with_procs[0].gpus[2].processes == (GpuProcess(4243, None, "sglang::scheduler"),)
    assert got[-1].gpus[0].processes == (), "a process no longer listed expires"


async def test_smi_restarts_after_the_command_stops(fake_smi, monkeypatch):
    monkeypatch.setenv("FAKE_SMI_BATCHES", "2")
    source = SmiSource("localhost", 0.05, initial_backoff=0.05)
    got = await collect(source, lambda got: sum(isinstance(e, GpuUnavailable) for e in got) >= 2)
    kinds = [type(e).__name__ for e in got]
    assert kinds == ["GpuSample", "GpuSample", "GpuUnavailable"] * 2, kinds
    assert "nvidia-smi stopped" in got[2].reason and "retrying in 0.05 s" in got[2].reason
    assert "retrying in 0.05 s" in got[5].reason  # it worked in between: backoff starts over
    assert (fake_smi / "runs").read_text().count("run") == 2


async def test_smi_version_mismatch_is_said_in_words(fake_smi, monkeypatch):
    monkeypatch.setenv("FAKE_SMI_MODE", "mismatch")
    got = await collect(SmiSource("gpu-host", 0.05, initial_backoff=0.05), lambda got: True)
    assert isinstance(got[0], GpuUnavailable) and got[0].host == "gpu-host"
    assert got[0].reason.startswith(nvml.MISMATCH)


async def test_smi_lost_gpu_marks_that_gpu_only(fake_smi, monkeypatch):
    monkeypatch.setenv("FAKE_SMI_MODE", "lost")
    got = await collect(SmiSource("localhost", 0.05), lambda got: len(got) >= 5)
    gpus = got[-1].gpus
    assert [g.index for g in gpus] == [0, 1]  # GPU 2 never answered: nothing to mark yet
    assert all(g.error is None for g in gpus)


async def test_smi_missing_command_is_said_once_not_retried(tmp_path, monkeypatch):
    """No nvidia-smi: no driver, which retrying cannot fix (said once, as NVML's missing library is)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    got = await collect(SmiSource("localhost", 0.05, initial_backoff=0.05), lambda got: False)
    assert [e.reason for e in got] == ["nvidia-smi not found on PATH: no NVIDIA driver on this machine"]


async def test_a_remote_host_without_nvidia_smi_is_said_once_not_retried():
    """Seen by hand over the loopback sshd: ``bash: nvidia-smi: command not found`` (status 127) was
    shown as a failure 'retrying in 16 s', forever. A dropped command (another status) still retries."""
    from tui.sources.ssh import RemoteCommandError

    def lines_exiting(status):
        async def lines(argv):
            raise RemoteCommandError("nvidia-smi", status, "bash: line 1: nvidia-smi: command not found")
            yield ""  # (an async generator)
        return lines

    got = await collect(SmiSource("gpu-a", 0.05, command_lines=lines_exiting(127), initial_backoff=0.01), lambda got: False)
    assert [e.reason for e in got] == ["nvidia-smi not found on gpu-a: no NVIDIA driver there"]
    got = await collect(SmiSource("gpu-a", 0.05, command_lines=lines_exiting(9), initial_backoff=0.01), lambda got: len(got) == 2)
    assert all("failed with status 9" in e.reason and "retrying in" in e.reason for e in got)


async def test_local_lines_kills_the_command_when_closed(tmp_path):
    pidfile = tmp_path / "pid"
    lines = local_lines(["sh", "-c", f'echo $$ > {pidfile}; while :; do echo tick; sleep 0.01; done'])
    assert await anext(lines) == "tick"
    pid = int(pidfile.read_text())
    await lines.aclose()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_smi_over_any_line_source_with_a_gpu_coming_back_lost():
    """The SSH helper feeds remote lines through the same reader: any async line source works."""
    script = [
        "0, NVIDIA H200, GPU-a, 100, 143771, 1, 30, 70, 700",
        "1, NVIDIA H200, GPU-b, 100, 143771, 1, 30, 70, 700",
        "0, NVIDIA H200, GPU-a, 101, 143771, 1, 30, 70, 700",
        "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.",
        "0, NVIDIA H200, GPU-a, 102, 143771, 1, 30, 70, 700",
    ]

    async def lines(argv):
        if "--query-gpu" in argv[1]:
            for line in script:
                yield line
            await asyncio.sleep(30)
        else:
            await asyncio.sleep(30)
            yield ""

    got = await collect(SmiSource("remote", 0.2, command_lines=lines), lambda got: len(got) >= 3)
    assert [[g.memory_used for g in s.gpus] for s in got] == [[100 * MIB, 100 * MIB], [101 * MIB, None], [102 * MIB, None]]
    assert got[1].gpus[1].error == "nvidia-smi: Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost."


# ---------------------------------------------------------------- NVML adapter (faked pynvml functions)


def nvml_error(code):
    return nvml.load().NVMLError(code)  # the real pynvml exception class for that code


class FakeNvml:
    """The few pynvml functions the adapter calls, with errors injectable per call."""

    def __init__(self, count=2, fail=None):
        self.count = count
        self.fail = fail or {}  # (function name, gpu index or None) -> NVML code
        self.calls: list[str] = []
        self.gpu_calls: list[tuple[str, int | None]] = []

    def _check(self, name, index=None):
        self.calls.append(name)
        self.gpu_calls.append((name, index))
        code = self.fail.get((name, index))
        if code is not None:
            raise nvml_error(code)

    def nvmlInit(self):
        self._check("nvmlInit")

    def nvmlShutdown(self):
        self._check("nvmlShutdown")

    def nvmlDeviceGetCount(self):
        self._check("nvmlDeviceGetCount")
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i):
        self._check("nvmlDeviceGetHandleByIndex", i)
        return i

    def nvmlDeviceGetName(self, h):
        self._check("nvmlDeviceGetName", h)
        return b"NVIDIA H200"

    def nvmlDeviceGetUUID(self, h):
        self._check("nvmlDeviceGetUUID", h)
        return f"GPU-{h}"

    def nvmlDeviceGetMemoryInfo(self, h):
        self._check("nvmlDeviceGetMemoryInfo", h)
        return SimpleNamespace(used=5 * GIB, total=H200_TOTAL, free=H200_TOTAL - 5 * GIB)

    def nvmlDeviceGetUtilizationRates(self, h):
        self._check("nvmlDeviceGetUtilizationRates", h)
        return SimpleNamespace(gpu=42, memory=10)

    def nvmlDeviceGetTemperature(self, h, sensor):
        self._check("nvmlDeviceGetTemperature", h)
        return 51

    def nvmlDeviceGetPowerUsage(self, h):
        self._check("nvmlDeviceGetPowerUsage", h)
        return 250_500

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        self._check("nvmlDeviceGetEnforcedPowerLimit", h)
        return 700_000

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        self._check("nvmlDeviceGetComputeRunningProcesses", h)
        return [SimpleNamespace(pid=100 + h, usedGpuMemory=GIB), SimpleNamespace(pid=999, usedGpuMemory=None)]

    def nvmlSystemGetProcessName(self, pid):
        self._check("nvmlSystemGetProcessName", pid)
        return b"python3"


async def first_events(source, n=1):
    got = await collect(source, lambda got: len(got) >= n, limit=10)
    return got


async def test_nvml_snapshot_of_every_field():
    fake = FakeNvml(fail={("nvmlSystemGetProcessName", 999): nvml.NOT_FOUND})  # pid 999 vanished
    (sample,) = await first_events(NvmlSource(interval=0.01, lib=fake))
    assert sample.gpus[1] == GpuInfo(
        1, "NVIDIA H200", "GPU-1", 5 * GIB, H200_TOTAL, 42, 51, 250.5, 700.0,
        processes=(GpuProcess(101, GIB, "python3"), GpuProcess(999, None, "")),
    )  # fmt: skip


async def test_nvml_initialises_once_and_shuts_down_once():
    fake = FakeNvml()
    source = NvmlSource(interval=0.01, lib=fake)
    await first_events(source, 3)
    await until(lambda: "nvmlShutdown" in fake.calls, timeout=5)  # queued on the poll thread: waited for
    assert fake.calls.count("nvmlInit") == 1 and fake.calls.count("nvmlShutdown") == 1
    assert fake.calls.count("nvmlDeviceGetCount") == 3


@pytest.mark.parametrize(
    "code, words",
    [
        (nvml.LIBRARY_NOT_FOUND, "NVML not found"),
        (nvml.DRIVER_NOT_LOADED, "driver not loaded"),
        (nvml.LIB_RM_VERSION_MISMATCH, "driver/library version mismatch — reboot or reload the nvidia kernel module"),
        (nvml.NO_PERMISSION, "no permission"),
    ],
)
async def test_nvml_unavailable_is_one_clear_message(code, words):
    fake = FakeNvml(fail={("nvmlInit", None): code})
    (event,) = await first_events(NvmlSource(interval=0.01, lib=fake))
    assert isinstance(event, GpuUnavailable) and words in event.reason and "\n" not in event.reason


async def test_nvml_repeated_failure_reported_once_then_recovery():
    fake = FakeNvml(fail={("nvmlInit", None): nvml.DRIVER_NOT_LOADED})
    source = NvmlSource(interval=0.01, lib=fake)
    seen = []

    async def consume():
        async for event in source.samples():
            seen.append(event)
            if isinstance(event, GpuSample):
                await source.close()

    task = asyncio.create_task(consume())
    await until(lambda: fake.calls.count("nvmlInit") >= 4, timeout=10)  # it keeps retrying ...
    assert [type(e) for e in seen] == [GpuUnavailable]  # ... but says so once
    del fake.fail[("nvmlInit", None)]  # the driver is back
    await asyncio.wait_for(task, 10)
    assert isinstance(seen[-1], GpuSample) and len(seen[-1].gpus) == 2


async def test_nvml_pynvml_missing(monkeypatch):
    def no_pynvml():
        raise ImportError("No module named 'pynvml'")

    monkeypatch.setattr(nvml, "load", no_pynvml)
    (event,) = await first_events(NvmlSource(interval=0.01))
    assert isinstance(event, GpuUnavailable) and "pynvml is not installed" in event.reason


async def test_nvml_lost_gpu_marks_that_gpu_alone():
    fake = FakeNvml(count=3, fail={("nvmlDeviceGetUtilizationRates", 1): nvml.GPU_IS_LOST})
    fake.fail[("nvmlDeviceGetHandleByIndex", 2)] = nvml.GPU_IS_LOST
    (sample,) = await first_events(NvmlSource(interval=0.01, lib=fake))
    good, lost, gone = sample.gpus
    assert good.error is None and good.utilization == 42
    assert lost.error and "GPU is lost" in lost.error
    assert lost.memory_used == 5 * GIB and lost.utilization is None and lost.temperature is None
    assert ("nvmlDeviceGetTemperature", 1) not in fake.gpu_calls, "a lost GPU is not asked again and again"
    assert gone == GpuInfo(2, error=lost.error)


async def test_nvml_not_supported_fields_are_unknown_alone():
    fake = FakeNvml(
        count=1,
        fail={
            ("nvmlDeviceGetMemoryInfo", 0): nvml.NOT_SUPPORTED,  # unified-memory parts
            ("nvmlDeviceGetPowerUsage", 0): nvml.NOT_SUPPORTED,
            ("nvmlDeviceGetComputeRunningProcesses", 0): nvml.NOT_SUPPORTED,
        },
    )
    (sample,) = await first_events(NvmlSource(interval=0.01, lib=fake))
    gpu = sample.gpus[0]
    assert (gpu.memory_used, gpu.memory_total, gpu.power_w, gpu.processes) == (None, None, None, ())
    assert (gpu.utilization, gpu.temperature, gpu.power_limit_w, gpu.error) == (42, 51, 700.0, None)


async def test_nvml_failing_later_is_unavailable_then_reinitialised():
    fake = FakeNvml(fail={("nvmlDeviceGetCount", None): nvml.LIB_RM_VERSION_MISMATCH})
    source = NvmlSource(interval=0.01, lib=fake)
    seen = []

    async def consume():
        async for event in source.samples():
            seen.append(event)
            if isinstance(event, GpuUnavailable):
                del fake.fail[("nvmlDeviceGetCount", None)]  # the nvidia module was reloaded
            else:
                await source.close()

    await asyncio.wait_for(consume(), 10)
    assert seen[0] == GpuUnavailable("localhost", nvml.MISMATCH)
    assert isinstance(seen[1], GpuSample) and len(seen[1].gpus) == 2
    assert fake.calls[:4] == ["nvmlInit", "nvmlDeviceGetCount", "nvmlShutdown", "nvmlInit"]


# ---------------------------------------------------------------- the poll loop


class SlowPoll(PolledGpuSource):
    """A poll slower than the interval, run in the worker thread."""

    def __init__(self) -> None:
        super().__init__("localhost", interval=0.02, blocking=True)
        self.lock = threading.Lock()
        self.running = 0
        self.max_running = 0
        self.spans: list[tuple[float, float]] = []
        self.threads: set[int] = set()

    def open(self) -> None:
        self.threads.add(threading.get_ident())

    def poll(self):
        with self.lock:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        start = time.monotonic()
        self.threads.add(threading.get_ident())
        time.sleep(0.06)  # the slow NVML call being simulated
        with self.lock:
            self.running -= 1
        self.spans.append((start, time.monotonic()))
        return GpuSample(self.host, time.time(), ())


async def test_poll_loop_never_overlaps_and_never_blocks_the_loop():
    source = SlowPoll()
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    tick_task = asyncio.create_task(ticker())
    got = await collect(source, lambda got: len(got) >= 4)
    tick_task.cancel()
    assert len(got) == 4 and source.max_running == 1
    for (_, end), (start, _) in zip(source.spans, source.spans[1:]):
        assert start >= end + 0.015, "the next poll waits an interval after the last one finished"
    assert ticks >= 20, "the event loop kept running while polls were in the worker thread"
    assert len(source.threads) == 1 and threading.get_ident() not in source.threads


# ---------------------------------------------------------------- --gpus selection


def test_make_gpu_source_kinds():
    assert make_gpu_source("none", None) is None
    assert isinstance(make_gpu_source("auto", None), NvmlSource)
    assert isinstance(make_gpu_source("sim", "gpu-host"), SimGpuSource)
    remote = make_gpu_source("auto", "alice@gpu-host:2222", 2.0)
    assert isinstance(remote, SmiSource) and remote.host == "alice@gpu-host:2222" and remote.interval == 2.0
    with pytest.raises(UsageError, match="nvml reads this machine"):
        make_gpu_source("nvml", "gpu-host")
    with pytest.raises(UsageError, match="expected one of"):
        make_gpu_source("cuda", None)
    with pytest.raises(UsageError, match="positive"):
        make_gpu_source("sim", None, 0)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_smi_parsers_never_raise(line):
    gpu = parse_gpu_line(line)
    assert gpu is None or gpu.index >= 0
    row = parse_app_line(line)
    assert row is None or row[1].pid >= 0
    assert describe_message(line)  # always some words


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["0", "1", "N/A", "[N/A]", "[Not Supported]", "12.5", "-3", "1e9", "x", ""]), max_size=12))
def test_smi_gpu_rows_of_any_cells(cells):
    gpu = parse_gpu_line("7, " + ", ".join(cells))
    assert gpu is not None and gpu.index == 7
    for value in (gpu.memory_used, gpu.memory_total, gpu.utilization, gpu.temperature):
        assert value is None or isinstance(value, int)


async def test_a_permanent_ssh_refusal_ends_the_gpu_source_with_its_reason_not_a_retry_loop():
    """A known_hosts file that does not exist, a host key refused: retrying every second cannot fix
    a setting, so the source says why once and stops (a dropped connection still retries)."""
    from tui.sources.ssh import SshError

    calls = []

    def lines_failing(permanent):
        async def lines(argv):
            calls.append(permanent)
            raise SshError("n2: known_hosts file /x does not exist", permanent=permanent)
            yield ""  # (an async generator)
        return lines

    got = await collect(SmiSource("n2", 0.05, command_lines=lines_failing(True), initial_backoff=0.01), lambda got: False)
    assert [e.reason for e in got] == ["n2: known_hosts file /x does not exist"]
    calls.clear()
    got = await collect(SmiSource("n2", 0.05, command_lines=lines_failing(False), initial_backoff=0.01), lambda got: len(got) == 3)
    assert all("retrying in" in e.reason for e in got) and len(calls) >= 3
