"""Attempts history: masked records, env diffs, ETAs; and the secret masker it relies on."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tui.core.secrets import MASK, Masker, env_diff, is_secret_name, mask_argv, mask_env
from tui.history import History, data_dir

TOKEN = "hf_SuperSecretValue123"


@pytest.fixture
def history(tmp_path, monkeypatch):
    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path / "data"))
    return History()


@pytest.mark.parametrize(
    "name", ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY", "DB_PASSWORD", "MY_SECRET", "--api-key", "--hf-token"]
)
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "TOKENIZERS_PARALLELISM", "--max-total-tokens",
             "--tokenizer-path", "CUDA_VISIBLE_DEVICES", "HF_TOKEN_PATH", "PWD"]
)
def test_not_secret_names(name):
    assert not is_secret_name(name)


def test_masking_command_lines_env_and_free_text():
    argv = ["python", "-m", "sglang.launch_server", "--api-key", "k3y-abcdef", f"--hf-token={TOKEN}", "--tp", "8"]
    assert mask_argv(argv) == ["python", "-m", "sglang.launch_server", "--api-key", MASK, f"--hf-token={MASK}", "--tp", "8"]
    assert mask_env({"HF_TOKEN": TOKEN, "TP": "8"}) == {"HF_TOKEN": MASK, "TP": "8"}
    masker = Masker.for_launch({"HF_TOKEN": TOKEN}, argv)
    assert masker.text(f"server_args={{'api_key': 'k3y-abcdef', 'token': '{TOKEN}'}}") == (
        f"server_args={{'api_key': '{MASK}', 'token': '{MASK}'}}"
    )
    assert env_diff({"A": "1", "B": "2", "HF_TOKEN": TOKEN}, {"A": "1", "B": "3", "C": "4", "HF_TOKEN": "other"}) == [
        "+C=4",
        "~B=3 (was 2)",
    ]


def test_data_dir_override(tmp_path, monkeypatch):
    monkeypatch.setenv("WATCHTOWER_DATA_DIR", str(tmp_path))
    assert data_dir() == tmp_path


def test_attempts_record_masked_commands_env_diffs_and_summaries(history):
    cmd = ["python", "-m", "sglang.launch_server", "--tp", "8", "--context-length", "200000", "--api-key", "sekrit-123"]
    env1 = {"HF_TOKEN": TOKEN, "NCCL_DEBUG": "INFO"}
    v1 = history.start("dsv3", command=cmd, env=env1, host="gpu1", log_path="/l/dsv3-v1.log", started_at=100.0)
    history.update(v1, outcome="failed", first_error="AttributeError: 'NoneType' object has no attribute 'x'", ended_at=112.0)
    env2 = {**env1, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    cmd2 = [*cmd[:4], "4", *cmd[5:]]
    v2 = history.start("dsv3", command=cmd2, env=env2, host="gpu1", log_path="/l/dsv3-v2.log", started_at=200.0)
    assert v2.attempt == 2
    assert v2.env_diff == ["+SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"]
    assert v2.command_diff == ["---tp 8", "+--tp 4"]
    history.update(v2, outcome="ready", phases={"weight_load": 291.0, "memory_pool": 30.0}, ready_seconds=662.0)

    rows = history.attempts("dsv3")
    assert [r.summary for r in rows] == ["v1 ✗ AttributeError 0:12", "v2 ✓ ready 11:02"]
    assert rows[1].phases == {"weight_load": 291.0, "memory_pool": 30.0}
    # the token and the api key appear nowhere in the database file
    raw = history.path.read_bytes()
    assert TOKEN.encode() not in raw and b"sekrit-123" not in raw
    with sqlite3.connect(history.path) as db:
        for row in db.execute("SELECT * FROM attempts"):
            assert TOKEN not in json.dumps(list(row)) and "sekrit-123" not in json.dumps(list(row))


def test_a_later_watcher_adds_to_an_attempts_facts_and_never_rewrites_them(history):
    """`attach` judges READY again (or sees an error again) long after the facts were recorded:
    the time to ready, the first error, a finished phase and a final outcome stay as they were."""
    ready = history.start("dsv3", command=["sglang"], env={}, host="gpu1", log_path="/l/v1.log", started_at=100.0)
    history.update(ready, outcome="ready", phases={"weight_load": 2.0}, ready_seconds=3.0)
    later = history.latest("dsv3")  # what `attach` finds in the history, then updates as it watches
    assert later is not None
    history.update(later, outcome="ready", phases={"weight_load": 17.0, "cuda_graph": 1.0}, ready_seconds=18.0)
    (row,) = history.attempts("dsv3")
    assert row.ready_seconds == 3.0 and row.summary == "v1 ✓ ready 0:03"
    assert row.phases == {"weight_load": 2.0, "cuda_graph": 1.0}  # what attach saw besides is added
    failed = history.start("dsv3", command=["sglang"], env={}, host="gpu1", log_path="/l/v2.log", started_at=200.0)
    history.update(failed, outcome="failed", first_error="ValueError: context length")
    history.update(history.latest("dsv3"), outcome="stopped", first_error="KeyboardInterrupt")
    row = history.latest("dsv3")
    assert row.outcome == "failed" and row.first_error == "ValueError: context length"


def test_eta_from_the_last_success_of_the_same_command_and_host(history):
    cmd = ["serve", "--tp", "8"]
    a = history.start("m", command=cmd, env={}, host="gpu1", log_path="/l/m-v1.log", started_at=0.0)
    history.update(a, outcome="ready", phases={"weight_load": 628.0, "cuda_graph": 60.0}, ready_seconds=900.0)
    b = history.start("m", command=cmd, env={}, host="gpu1", log_path="/l/m-v2.log", started_at=1000.0)
    history.update(b, outcome="failed", phases={"weight_load": 700.0})
    expect = history.expectations(cmd, "gpu1")
    assert expect.last_success is not None and expect.last_success.attempt == 1
    assert expect.longest["weight_load"] == 700.0  # the longest ever, failed attempts included
    assert expect.eta("weight_load", 291.0, 300.0) == "weight load 4:51 of ~10:28 · ready in ~10:00"
    assert expect.eta("weight_load", 291.0, 1000.0) == "weight load 4:51 of ~10:28 · past the usual time"
    # another host or another command: no expectation
    assert history.expectations(cmd, "gpu2").last_success is None
    assert history.expectations(["serve", "--tp", "4"], "gpu1").eta("weight_load", 5.0, 5.0) == "weight load 0:05"


def test_schema_version_migrates_a_round_one_database_and_refuses_a_newer_one(tmp_path):
    from tui.history import MIGRATIONS, SCHEMA_VERSION, HistoryError

    old = tmp_path / "old.sqlite3"
    with sqlite3.connect(old) as db:  # what round 1 left: the table, user_version 0
        for statement in MIGRATIONS[0]:
            db.execute(statement)
        db.execute("INSERT INTO attempts (name, attempt, host, command, env, env_diff, command_diff, started_at,"
                   " log_path) VALUES ('m', 1, 'localhost', '[\"x\"]', '{}', '[]', '[]', 1.0, '/l')")
    history = History(old)
    assert [r.attempt for r in history.attempts("m")] == [1]  # kept
    with sqlite3.connect(old) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    History(old)  # opening again is a no-op

    newer = tmp_path / "newer.sqlite3"
    with sqlite3.connect(newer) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(HistoryError, match="newer than this Watchtower"):
        History(newer)


def test_a_v4_database_is_migrated_to_keep_each_attempts_gpu_source_and_its_rows_stay_readable(tmp_path):
    """Issue 34 item 10: which GPU source (NVML, nvidia-smi, simulated) an attempt had is kept; a
    database from before it (schema v4) is migrated, its rows read with the source unknown."""
    from tui.history import MIGRATIONS

    old = tmp_path / "v4.sqlite3"
    with sqlite3.connect(old) as db:
        for step in MIGRATIONS[:4]:
            for statement in step:
                db.execute(statement)
        db.execute("PRAGMA user_version = 4")
        db.execute("INSERT INTO attempts (name, attempt, host, command, env, env_diff, command_diff, started_at,"
                   " log_path, page_cache) VALUES ('m', 1, 'localhost', '[\"x\"]', '{}', '[]', '[]', 1.0, '/l', 'warm')")
    history = History(old)
    history.start("m", command=["x"], env={}, host="localhost", log_path="/l2", gpu_source="simulated")
    first, second = history.attempts("m")
    assert (first.attempt, first.page_cache, first.gpu_source) == (1, "warm", None)  # kept, the source unknown
    assert (second.attempt, second.gpu_source) == (2, "simulated")
    assert second.to_json()["gpu_source"] == "simulated"
