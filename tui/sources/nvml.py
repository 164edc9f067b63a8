"""The thin adapter over NVML (``pynvml``, from nvidia-ml-py): a snapshot of every GPU.

Kept thin on purpose — it cannot run without a GPU. It only calls the NVML
functions below and turns their errors into words; the polling loop, the
panel and everything else are tested above it against the simulated source.
Every call here blocks (NVML can take seconds on a sick 8-GPU box): callers run
it in a worker thread (see ``tui.sources.gpu.NvmlSource``).
"""

from __future__ import annotations

import warnings
from typing import Any

from tui.core.events import GpuInfo, GpuProcess

# NVML return codes (nvml.h); pynvml raises NVMLError subclasses carrying them in ``.value``.
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
LIB_RM_VERSION_MISMATCH = 18

MISMATCH = "NVIDIA driver/library version mismatch — reboot or reload the nvidia kernel module"

_REASONS = {
    LIBRARY_NOT_FOUND: "NVML not found (libnvidia-ml.so): no NVIDIA driver on this machine",
    DRIVER_NOT_LOADED: "NVIDIA driver not loaded (no nvidia kernel module): no GPU data",
    LIB_RM_VERSION_MISMATCH: MISMATCH,
    NO_PERMISSION: "no permission to query the GPUs through NVML",
    GPU_IS_LOST: "GPU is lost (it fell off the bus; a reboot is needed to recover it)",
}


class NvmlUnavailable(Exception):
    """NVML cannot be used at all; ``str()`` says why in words."""


def describe(exc: BaseException) -> str:
    """One line for an NVML error (or an import failure)."""
    if isinstance(exc, ImportError):
        return "pynvml is not installed (pip install nvidia-ml-py): no GPU data"
    code = getattr(exc, "value", None)
    if code in _REASONS:
        return _REASONS[code]
    text = str(exc)
    if "mismatch" in text.lower():
        return MISMATCH
    return f"NVML error: {text}"


def load() -> Any:
    """The pynvml module (from nvidia-ml-py; where the deprecated `pynvml` redirect package is installed
    too, as in environments made before, its notice about the package name silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pynvml
    return pynvml


class Nvml:
    """``open()`` once, ``snapshot()`` per poll, ``close()`` once — all from one thread."""

    def __init__(self, lib: Any = None) -> None:
        self._lib = lib
        self._open = False

    def open(self) -> None:
        """Initialise NVML, or raise NvmlUnavailable with the reason in words."""
        if self._open:
            return
        try:
            if self._lib is None:
                self._lib = load()
            self._lib.nvmlInit()
        except Exception as exc:  # NVMLError, ImportError, OSError from ctypes
            raise NvmlUnavailable(describe(exc)) from exc
        self._open = True

    def close(self) -> None:
        if self._open:
            self._open = False
            try:
                self._lib.nvmlShutdown()
            except Exception:  # shutting down a broken NVML must not raise
                pass

    def snapshot(self) -> tuple[GpuInfo, ...]:
        """Every GPU now. Raises NvmlUnavailable only if NVML as a whole fails."""
        nv = self._lib
        try:
            count = nv.nvmlDeviceGetCount()
        except Exception as exc:
            raise NvmlUnavailable(describe(exc)) from exc
        return tuple(self._gpu(index) for index in range(count))

    def _gpu(self, index: int) -> GpuInfo:
        nv = self._lib
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(index)
        except Exception as exc:
            return GpuInfo(index, error=describe(exc))
        values: dict[str, Any] = {}
        for query in _QUERIES:
            try:
                values.update(query(nv, handle))
            except Exception as exc:
                if getattr(exc, "value", None) == GPU_IS_LOST:  # the rest would fail too, slowly
                    return GpuInfo(index, error=describe(exc), **values)
                # NOT_SUPPORTED (unified-memory parts, some fields on some boards) and
                # anything else: this field alone stays unknown
        return GpuInfo(index, **values)


def _memory(nv: Any, handle: Any) -> dict[str, int]:
    info = nv.nvmlDeviceGetMemoryInfo(handle)
    return {"memory_used": int(info.used), "memory_total": int(info.total)}


def _processes(nv: Any, handle: Any) -> dict[str, tuple[GpuProcess, ...]]:
    out = []
    for proc in nv.nvmlDeviceGetComputeRunningProcesses(handle):
        used = getattr(proc, "usedGpuMemory", None)  # None where the driver cannot tell
        out.append(GpuProcess(int(proc.pid), int(used) if used is not None else None, _process_name(nv, proc.pid)))
    return {"processes": tuple(out)}


def _process_name(nv: Any, pid: int) -> str:
    try:
        return _text(nv.nvmlSystemGetProcessName(pid))
    except Exception:  # the process exited meanwhile (NOT_FOUND), or no permission
        return ""


_QUERIES = (
    lambda nv, h: {"name": _text(nv.nvmlDeviceGetName(h))},
    lambda nv, h: {"uuid": _text(nv.nvmlDeviceGetUUID(h))},
    _memory,
    lambda nv, h: {"utilization": int(nv.nvmlDeviceGetUtilizationRates(h).gpu)},
    lambda nv, h: {"temperature": int(nv.nvmlDeviceGetTemperature(h, 0))},  # NVML_TEMPERATURE_GPU
    lambda nv, h: {"power_w": nv.nvmlDeviceGetPowerUsage(h) / 1000.0},  # milliwatts
    lambda nv, h: {"power_limit_w": nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0},
    _processes,
)


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
