"""A user's files under attack (issue 22, items 5 and 6): special files, bombs, absurd values.

`--server`, `--cluster`, `--theme`, `--env-file` and `WATCHTOWER_HINTS` pointed at /dev/zero or a
FIFO; a gzip-bomb recording; a recording whose times never come; files nested deeply enough to
overflow a recursive parser. Each runs the real CLI in a subprocess under a 1.5 GiB address-space
limit: the answer is one line on stderr and exit 2, within seconds, never a traceback.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from tests.support import run_cli

REPO = Path(__file__).parent.parent
LOG = Path(__file__).parent / "fixtures" / "sglang_eagle3_tp8_ready.log"
MEMORY = 1536 << 20

pytestmark = pytest.mark.timeout(120)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, str, str, float, float]:
    """(exit status, stdout, stderr, seconds, max RSS in MiB) of the real CLI, stdin empty."""
    started = time.monotonic()
    done = run_cli(*args, env={"NO_COLOR": "1", "WATCHTOWER_HINTS": "", **(env or {})}, timeout=timeout,
                   preexec_fn=_limit_memory)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # (the largest child so far: an upper bound)
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started, usage.ru_maxrss / 1024


def one_line_error(status: int, err: str, *needles: str) -> None:
    assert status == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "profile.toml"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("scan", str(LOG), "--server", "/dev/zero"),
        ("watch", "--cluster", "/dev/zero", "--plain"),
        ("demo", "--theme", "/dev/zero"),
        ("run", "--env-file", "/dev/zero", "--no-check", "--", "true"),
    ],
    ids=["server", "cluster", "theme", "env-file"],
)
def test_dev_zero_as_a_config_file_is_refused_at_once(args):
    status, _out, err, seconds, _rss = cli(*args)
    one_line_error(status, err, "/dev/zero", "not a regular file")
    assert seconds < 20


def test_dev_zero_as_the_hints_file_is_refused():
    status, _out, err, _s, _rss = cli("scan", str(LOG), env={"WATCHTOWER_HINTS": "/dev/zero"})
    one_line_error(status, err, "/dev/zero", "hints file", "not a regular file")


def test_a_fifo_as_the_profile_does_not_block(fifo):
    status, _out, err, _s, _rss = cli("scan", str(LOG), "--server", str(fifo), timeout=20)
    one_line_error(status, err, str(fifo), "a FIFO")


def test_a_huge_regular_config_file_is_refused(tmp_path):
    big = tmp_path / "big.toml"
    with big.open("wb") as f:
        f.truncate(8 << 30)  # sparse: 8 GiB of nothing
    status, _out, err, _s, _rss = cli("scan", str(LOG), "--server", str(big))
    one_line_error(status, err, str(big), "too large")


def _recording(path: Path, records: list[dict], header: dict | None = None) -> Path:
    header = header or {"format": "watchtower-recording", "version": 1, "host": "localhost", "log": "/x/server.log"}
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for record in [header, *records]:
            f.write(json.dumps(record) + "\n")
    return path


def test_a_gzip_bomb_recording_is_refused_within_bounded_memory(tmp_path):
    path = tmp_path / "bomb.wtrec"
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b" " * (1 << 20)
    with path.open("wb") as f:
        f.write(packer.compress(b'{"format": "watchtower-recording", "version": 1}\n{"t": 0.1, "log": "'))
        for _ in range(2048):  # 2 GiB once inflated, about 2 MB on disk
            f.write(packer.compress(zeros))
        f.write(packer.compress(b'"}\n') + packer.flush())
    assert path.stat().st_size < 8 << 20
    status, _out, err, _s, rss = cli("replay", str(path), "--plain")
    one_line_error(status, err, str(path), "gzip bomb")
    assert rss < 1024


def test_a_recording_whose_time_never_comes_is_refused(tmp_path):
    path = _recording(tmp_path / "far.wtrec", [{"t": 0.1, "log": "hello\n"}, {"t": 1e308, "log": "never\n"}, {"t": 1e308, "end": True}])
    status, _out, err, seconds, _rss = cli("replay", str(path), "--plain", timeout=30)
    one_line_error(status, err, str(path), "1e+308")
    assert seconds < 25


@pytest.mark.parametrize(
    "record",
    [{"t": "soon", "log": "x"}, {"t": -1, "log": "x"}, {"t": 1, "truncate": "all"}, {"t": 1, "gpu": [["a"]]}, {"t": 1, "log": 5}],
    ids=["text-time", "negative-time", "truncate", "gpu-row", "log-type"],
)
def test_a_recording_with_a_bad_record_is_one_line(tmp_path, record):
    path = _recording(tmp_path / "bad.wtrec", [{"t": 0.0, "log": "a\n"}, record, {"t": 2.0, "end": True}])
    status, _out, err, _s, _rss = cli("replay", str(path), "--plain")
    one_line_error(status, err, str(path), "record 3")


# ---------------------------------------------------------------- item 6: one line, never a traceback

DEEP_TOML = "x = " + "[" * 50000 + "]" * 50000 + "\n"


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("server", DEEP_TOML),
        ("cluster", DEEP_TOML),
        ("theme", DEEP_TOML),
        ("server", "name = 5\n"),
        ("server", "name = 'p'\n[[signatures]]\nkind = 7\npattern = 'x'\n"),
        ("cluster", "[[node]]\nhost = 5\nlog = '/x.log'\n"),
        ("cluster", "[[node]]\nname = ['a']\nlog = '/x.log'\n"),
        ("cluster", "node = [1, 2]\n"),
    ],
    ids=["deep-profile", "deep-cluster", "deep-theme", "name-5", "kind-7", "host-5", "name-list", "node-not-table"],
)
def test_a_bad_config_file_is_one_line_and_exit_2(tmp_path, kind, text):
    path = tmp_path / "file.toml"
    path.write_text(text)
    args = {
        "server": ("scan", str(LOG), "--server", str(path)),
        "cluster": ("watch", "--cluster", str(path), "--plain"),
        "theme": ("demo", "--theme", str(path)),
    }[kind]
    status, _out, err, _s, _rss = cli(*args)
    one_line_error(status, err, str(path))
    assert "is missing" not in err  # a wrong type is not a missing key
    if "= 5" in text or "= 7" in text:
        assert "int" in err


def test_a_deeply_nested_recording_is_one_line(tmp_path):
    path = tmp_path / "deep.wtrec"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"format": "watchtower-recording", "version": 1}) + "\n")
        f.write('{"t": 1, "gpu": ' + "[" * 100000 + "]" * 100000 + "}\n")
    status, _out, err, _s, _rss = cli("replay", str(path), "--plain")
    one_line_error(status, err, str(path), "nested too deeply")


def _quiet_pipe(args: list[str], reader: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """``watchtower ARGS | READER``: the writer's exit status and stderr."""
    head = subprocess.Popen(reader, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", *args], stdout=head.stdin, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env=dict(os.environ, NO_COLOR="1") | (env or {}),
    )
    assert head.stdin is not None
    head.stdin.close()  # only the two processes hold the pipe
    _out, err = proc.communicate(timeout=60)
    head.wait(timeout=10)
    return proc.returncode, err


def test_a_closed_pipe_ends_watch_plain_quietly(tmp_path):
    status, err = _quiet_pipe(["watch", str(LOG), "--plain", "--gpus", "none"], ["head", "-1"])
    assert "BrokenPipeError" not in err and "Traceback" not in err and "Exception ignored" not in err, err
    assert status == 141


def test_a_closed_pipe_ends_history_json_quietly(tmp_path, monkeypatch):
    from tui.history import History

    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path / "data"))
    history = History()
    for n in range(400):  # far more JSON than a pipe holds
        history.start(f"model-{n}", command=["python", "-m", "sglang.launch_server", "--model", "/m" * 200],
                      env={}, host="localhost", log_path=f"/l/{n}.log")
    status, err = _quiet_pipe(["history", "--json"], ["head", "-c", "10"])
    assert "BrokenPipeError" not in err and "Traceback" not in err and "Exception ignored" not in err, err
    assert status == 141


def test_a_scan_whose_reader_is_gone_ends_quietly_though_it_skips_the_interpreters_teardown(capsys):
    """`scan` ends its process as soon as its output is out (``tui.cli.QUICK_EXIT``): the output a
    pipe's buffer held is flushed first, and a reader gone away is said as a filter says it (141), not
    as the interpreter's "Exception ignored" at its exit. Called in-process (a test, a library user),
    it returns its status like any other command."""
    from tui.cli import main

    scan = [sys.executable, "-m", "tui.cli", "scan", "--json", str(LOG)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # (stdout buffered, as it is for most)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before a byte is written
    try:
        proc = subprocess.run(scan, stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env, timeout=60)
    finally:
        os.close(write_end)
    assert "BrokenPipeError" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.returncode == 141
    done = subprocess.run(scan, capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["outcome"] == "ready"  # all of it, flushed
    assert main(["scan", "--json", str(LOG)]) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "ready"


# ---------------------------------------------------------------- item 7: values refused at parse


@pytest.mark.parametrize(
    "args",
    [
        ("watch", str(LOG), "--plain", "--gpu-interval", "nan"),
        ("watch", str(LOG), "--plain", "--timeout", "nan"),
        ("watch", str(LOG), "--plain", "--timeout", "inf"),
        ("watch", str(LOG), "--plain", "--gpu-interval", "-1"),
        ("replay", "x.wtrec", "--plain", "--speed", "nan"),
        ("record", str(LOG), "-o", "x.wtrec", "--duration", "inf"),
    ],
    ids=["gpu-interval-nan", "timeout-nan", "timeout-inf", "gpu-interval-negative", "speed-nan", "duration-inf"],
)
def test_a_number_that_is_not_a_finite_positive_one_is_refused_at_parse(args, tmp_path):
    args = tuple(str(tmp_path / a) if a == "x.wtrec" else a for a in args)
    status, _out, err, seconds, _rss = cli(*args, timeout=20)
    assert status == 2 and "Traceback" not in err
    assert "expected a finite number greater than 0" in err and args[-1] in err
    assert seconds < 15


@pytest.mark.parametrize("text", [b"", b"\n", b"\n\n  \n", b"\r\n"], ids=["empty", "one-blank", "blanks", "crlf"])
def test_scan_stdin_without_a_word_is_still_starting_whatever_the_blank_lines(text):
    done = run_cli("scan", "-", input=text, timeout=30)
    assert done.returncode == 3, done.stderr
    assert b"STARTING" in done.stdout


def test_scan_stdin_of_unknown_text_is_a_usage_error():
    done = run_cli("scan", "-", input=b"\nhello\n", timeout=30)
    assert done.returncode == 2 and b"not an SGLang" in done.stderr


# ---------------------------------------------------------------- item 9: a node's name is text, not a command


def test_a_node_name_with_escape_sequences_never_reaches_the_terminal_raw(tmp_path):
    log = tmp_path / "n1.log"
    log.write_text("[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/m', tp_size=1)\n")
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(f'[[node]]\nname = "n1\\u001b]0;PWNED\\u0007\\u001b[31mred\\u202e"\nlog = "{log}"\n')
    status, out, err, _s, _rss = cli("watch", "--cluster", str(cluster), "--plain", "--gpus", "none", "--timeout", "1")
    assert status == 3, err
    assert "n1red" in out
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in out and raw not in err

    from tui.commands.cluster import cluster_file

    (spec,) = cluster_file(str(cluster))
    assert spec.name == "n1red<U+202E>"  # the dashboard's rows and title take this name
