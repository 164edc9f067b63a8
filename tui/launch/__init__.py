"""Launching servers: what to run (``spec``), how (``Runner``: local, SSH), the attempt lifecycle
(``controller.Launch``) and what an attempt's end leaves behind (``outcome``)."""

from __future__ import annotations

from tui.launch.controller import Launch, PreflightRefused
from tui.launch.gpu_release import GpuBusy, GpuHolder
from tui.launch.spec import LaunchError, LaunchSpec, StopPlan

__all__ = ["GpuBusy", "GpuHolder", "Launch", "LaunchError", "LaunchSpec", "PreflightRefused", "StopPlan"]
