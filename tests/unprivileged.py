"""Run a command as an unprivileged user where the tests run as root (root reads any file)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def as_nobody(argv: list[str]) -> list[str]:
    """``argv`` as user nobody when we are root; skips the test where that cannot work here
    (no setpriv, or the checkout or its Python unreachable for an unprivileged user)."""
    if os.geteuid() != 0:
        return argv
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: cannot drop privileges to test permissions")
    probe = subprocess.run([*NOBODY, sys.executable, "-c", "import tui"], cwd=ROOT, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("the checkout or its Python is not reachable for an unprivileged user here")
    return [*NOBODY, *argv]
