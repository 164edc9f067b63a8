"""nvidia-smi over the real SSH path: a stand-in ``nvidia-smi`` on the remote PATH prints
recorded-format CSV (with ``[N/A]`` and ``[Not Supported]`` cells) every ``-lms`` interval,
read by ``ssh.stream_lines`` and parsed by the nvidia-smi GPU source."""

from __future__ import annotations

import functools
from contextlib import aclosing

import pytest

from tui.core.events import GpuSample, GpuUnavailable
from tui.sources import ssh
from tui.sources.smi import SmiSource, apps_query, gpu_query
from tui.sources.ssh import RemoteCommandError, SshError

pytestmark = [pytest.mark.ssh, pytest.mark.usefixtures("ssh_connections_closed")]
MIB = 1 << 20

# Rows as `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` prints them on an
# 8 x H200 box; $used is filled in per batch so consecutive samples differ.
FAKE_SMI = r"""#!/bin/sh
# Stand-in for nvidia-smi (installed by tests/test_ssh_smi.py): recorded-format CSV, -lms style.
ms=1000; query=; prev=
for arg in "$@"; do
    case $arg in
        --query-gpu=*) query=gpu ;;
        --query-compute-apps=*) query=apps ;;
    esac
    [ "$prev" = "-lms" ] && ms=$arg
    prev=$arg
done
[ -n "$query" ] || { echo "fake nvidia-smi: unsupported arguments: $*" >&2; exit 2; }
delay=$(awk "BEGIN { print $ms / 1000 }")
n=0
while :; do
    n=$((n + 1))
    if [ "$query" = gpu ]; then
        for i in 0 1 2 3 4 5 6 7; do
            used=$((1000 * n + i))
            case $i in
                3) echo "3, NVIDIA H200, GPU-00000000-0000-0000-0000-000000000003, [N/A], 143771, [N/A], 41, [N/A], 700.00" ;;
                5) echo "5, NVIDIA H200, GPU-00000000-0000-0000-0000-000000000005, $used, 143771, [Not Supported], 39, 121.37, [Not Supported]" ;;
                *) echo "$i, NVIDIA H200, GPU-00000000-0000-0000-0000-00000000000$i, $used, 143771, 97, 6$i, 689.21, 700.00" ;;
            esac
        done
    else
        echo "GPU-00000000-0000-0000-0000-000000000000, 4242, 70000, /usr/bin/python3"
        echo "GPU-00000000-0000-0000-0000-000000000001, 4243, [N/A], sglang::scheduler_TP1"
    fi
    sleep "$delay"
done
"""


@pytest.fixture
def fake_smi(sshd):
    path = sshd.bin_dir / "nvidia-smi"
    path.write_text(FAKE_SMI)
    path.chmod(0o755)
    yield path
    path.unlink()


async def test_stream_lines_delivers_batches_as_they_are_printed(fake_smi, target):
    lines = []
    async with aclosing(ssh.stream_lines(target, gpu_query(0.05))) as stream:
        async for line in stream:
            lines.append(line)
            if len(lines) == 24:  # three batches of eight: the -lms loop really runs
                break
    assert lines[0].startswith("0, NVIDIA H200, GPU-") and lines[0].endswith("689.21, 700.00")
    assert lines[8].split(", ")[3] == "2000" and lines[16].split(", ")[3] == "3000"
    assert "[N/A]" in lines[3] and "[Not Supported]" in lines[5]


async def test_nvidia_smi_over_ssh_parses_into_samples_with_unknown_fields(fake_smi, target):
    source = SmiSource("gpu-box", 0.05, command_lines=functools.partial(ssh.stream_lines, target))
    async with aclosing(source.samples()) as samples:
        async for event in samples:
            assert isinstance(event, GpuSample), event
            if any(gpu.processes for gpu in event.gpus):
                break
    gpus = {gpu.index: gpu for gpu in event.gpus}
    assert sorted(gpus) == list(range(8)) and event.host == "gpu-box"
    g0, g3, g5 = gpus[0], gpus[3], gpus[5]
    assert g0.name == "NVIDIA H200" and g0.memory_total == 143771 * MIB and g0.utilization == 97
    assert g0.memory_used is not None and g0.memory_used % (1000 * MIB) == 0
    assert g0.temperature == 60 and g0.power_w == pytest.approx(689.21) and g0.power_limit_w == 700.0
    assert (g3.memory_used, g3.utilization, g3.power_w) == (None, None, None)  # [N/A]: that field alone
    assert g3.memory_total == 143771 * MIB and g3.temperature == 41 and g3.error is None
    assert (g5.utilization, g5.power_limit_w) == (None, None) and g5.power_w == pytest.approx(121.37)
    assert [(p.pid, p.used_bytes, p.name) for p in g0.processes] == [(4242, 70000 * MIB, "/usr/bin/python3")]
    assert [(p.pid, p.used_bytes) for p in gpus[1].processes] == [(4243, None)]
    await source.close()


async def test_missing_nvidia_smi_is_one_clear_line(target):
    with pytest.raises(RemoteCommandError) as info:
        async for _ in ssh.stream_lines(target, ["nvidia-smi-not-installed", "-L"]):
            pass
    message = str(info.value)
    assert info.value.status == 127 and "nvidia-smi-not-installed failed with status 127" in message
    assert "not found" in message and "\n" not in message


async def test_dropped_connection_ends_the_stream_with_ssh_error(fake_smi, sshd, target):
    got = 0
    with pytest.raises(SshError) as info:
        async for _ in ssh.stream_lines(target, apps_query(0.05)):
            got += 1
            if got == 2:
                assert sshd.kill_sessions() > 0
    assert "connection lost" in str(info.value) and not info.value.permanent


async def test_smi_source_reports_the_lost_connection_then_recovers(fake_smi, sshd, target):
    source = SmiSource("gpu-box", 0.05, command_lines=functools.partial(ssh.stream_lines, target), initial_backoff=0.05)
    kinds = []
    async with aclosing(source.samples()) as samples:
        async for event in samples:
            kinds.append(type(event).__name__)
            if isinstance(event, GpuUnavailable):
                assert "connection lost" in event.reason and "\n" not in event.reason
            elif kinds.count("GpuSample") == 2 and "GpuUnavailable" not in kinds:
                assert sshd.kill_sessions() > 0
            elif "GpuUnavailable" in kinds and kinds[-1] == "GpuSample":
                break
    await source.close()
    assert kinds[:2] == ["GpuSample", "GpuSample"] and "GpuUnavailable" in kinds and kinds[-1] == "GpuSample"
