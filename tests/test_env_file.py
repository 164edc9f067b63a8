"""`run --env-file F`: a .env file read as python-dotenv reads one (comments, quotes, escapes,
``export``, ``${NAME}``), capped like every user file; a line it cannot read is named, exit 2."""

from __future__ import annotations

import pytest

from tui.commands.run import read_env_file
from tui.core.errors import UsageError


def test_comments_quotes_and_export_mean_what_they_mean_to_dotenv(tmp_path, monkeypatch):
    monkeypatch.setenv("WT_TEST_HOME", "/home/op")
    env = tmp_path / "server.env"
    env.write_text(
        "# the tokens\n"
        "export HF_TOKEN='hf_abc # not a comment'\n"
        "PORT=30000  # a comment after a value\n"
        'GREETING="say \\"hi\\"\\nthen go"\n'
        "EMPTY=\n"
        "CACHE=${WT_TEST_HOME}/cache\n"
        "MODEL_DIR=${CACHE}/models\n"
    )
    assert read_env_file(str(env)) == {
        "HF_TOKEN": "hf_abc # not a comment",
        "PORT": "30000",
        "GREETING": 'say "hi"\nthen go',
        "EMPTY": "",
        "CACHE": "/home/op/cache",
        "MODEL_DIR": "/home/op/cache/models",
    }


@pytest.mark.parametrize("bad, line", [("A=1\nnot an assignment\n", 2), ("A=1\n\nJUSTANAME\n", 3)])
def test_a_line_that_is_not_an_assignment_is_named(tmp_path, bad, line):
    env = tmp_path / "bad.env"
    env.write_text(bad)
    with pytest.raises(UsageError, match=rf"bad\.env, line {line}: expected NAME=VALUE"):
        read_env_file(str(env))
