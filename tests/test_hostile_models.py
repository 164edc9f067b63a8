"""A model folder named in a log or a command, under attack (issue 33, item 2).

Whoever writes the log (or the launch command) names the folder Watchtower then reads: the weight
index (``model.safetensors.index.json``) for the load's size, ``config.json`` and the Hugging Face
cache's ``refs/main`` for the preflight. Each is made ``/dev/zero``, a FIFO and a huge sparse file:
the real CLI must neither read it whole (gigabytes of memory within seconds) nor block on it (a
hang Ctrl-C could not end). Each run's own peak memory is measured (``ru_maxrss`` of that process
alone) under a 1.5 GiB address-space limit, so a regression fails fast instead of hurting the machine.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest

from tests.support import run_cli
from tui.sources.checkpoint import index_text, measure

MEMORY = 1536 << 20
#: A run that reads none of the hostile file stays far below this (about 60 MiB).
RSS_MIB = 400
#: Forwards the CLI's exit status and writes its own peak RSS (KiB) to the file named first.
MEASURED = ("import resource,subprocess,sys\n"
            f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY}, {MEMORY}))\n"
            "status = subprocess.call(sys.argv[2:])\n"
            "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
            "sys.exit(status)\n")

pytestmark = pytest.mark.timeout(120)


def measured(tmp_path: Path, *args: str, timeout: float = 40) -> tuple[int, str, float, float]:
    """(exit status, stdout + stderr, seconds, peak RSS in MiB) of the real CLI."""
    rss = tmp_path / "rss"
    started = time.monotonic()
    done = run_cli(*args, env={"NO_COLOR": "1"}, timeout=timeout, prefix=(sys.executable, "-c", MEASURED, str(rss)))
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started, int(rss.read_text()) / 1024


def hostile(path: Path, kind: str) -> None:
    """Make ``path`` ``/dev/zero`` (a link to it), a FIFO with no writer, or a 20 GiB sparse file."""
    if kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        with open(path, "wb") as f:
            f.truncate(20 << 30)


KINDS = ["zero", "fifo", "huge"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_weight_index_named_by_the_log_is_not_read(tmp_path, kind):
    model = tmp_path / "model"
    model.mkdir()
    hostile(model / "model.safetensors.index.json", kind)
    log = tmp_path / "server.log"
    log.write_text(f"[2026-02-22 23:38:50] server_args=ServerArgs(model_path='{model}', tp_size=2)\n")

    status, out, seconds, rss = measured(tmp_path, "watch", "--plain", "--timeout", "2", str(log))

    assert status == 3 and "TIMEOUT" in out, out  # it ended at its --timeout, as without the folder
    assert "Traceback" not in out and "MemoryError" not in out, out
    assert rss < RSS_MIB, f"{rss:.0f} MiB"
    assert seconds < 30


@pytest.mark.parametrize("name", ["config.json", "model.safetensors.index.json"])
@pytest.mark.parametrize("kind", KINDS)
def test_preflight_refuses_a_hostile_model_file_in_one_line(tmp_path, kind, name):
    model = tmp_path / "model"
    model.mkdir()
    if name != "config.json":
        (model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    hostile(model / name, kind)

    status, out, seconds, rss = measured(tmp_path, "check", "--gpus", "none", "--",
                                         "python", "-m", "sglang.launch_server", "--model-path", str(model))

    assert status in (0, 1), out  # a verdict on the checks, not "the probe did not run"
    assert "Traceback" not in out and "preflight probe" not in out, out
    if name == "config.json":
        assert ("not a regular file" if kind != "huge" else "too large") in out, out
    assert rss < RSS_MIB, f"{rss:.0f} MiB"
    assert seconds < 30


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_refs_main_in_the_hf_cache_is_not_read(tmp_path, kind, monkeypatch):
    repo = tmp_path / "hub" / "models--org--name"
    (repo / "refs").mkdir(parents=True)
    (repo / "snapshots" / "abc").mkdir(parents=True)
    with open(repo / "snapshots" / "abc" / "model.safetensors", "wb") as f:
        f.truncate(4321)
    hostile(repo / "refs" / "main", kind)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert measure("org/name").total == 4321  # the snapshot found without refs/main


@pytest.mark.parametrize("kind", KINDS)
def test_the_readers_refuse_before_reading(tmp_path, kind):
    """In process, under a guard: each reader answers at once with an OSError, reading nothing."""
    from tui.core.files import read_tail
    from tui.sources.probe_agent import read_regular

    path = tmp_path / "model.safetensors.index.json"
    hostile(path, kind)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(OSError):
        read_regular(str(path))
    assert index_text(str(tmp_path)) is None
    if kind != "huge":  # a job's output file of any length: its tail is read
        with pytest.raises(OSError):
            read_tail(path, 1 << 16)
    else:
        assert read_tail(path, 1 << 16) == bytes(1 << 16)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 << 10  # KiB: under 64 MiB more
