"""Secrets are never shown, stored or put on a command line, whatever the mode.

Masked by shape and by name, not only by the values Watchtower was given: a server that echoes its
token, a `server_args=` dump, JSON arguments, a URL with a password, `--api-key …`. Checked through
the real CLI (watch --plain, scan, run, history, record), a real recording file, the live session
(what the dashboard, `y` and `w` read) and a real remote launch over the loopback sshd.
"""

from __future__ import annotations

import gzip
import json
import stat
import sys
from pathlib import Path

import pytest

from tests.conftest import sshd_available
from tests.launch_helpers import kill_attempts, no_leftover_servers  # noqa: F401  (autouse)
from tests.support import run_cli, screen_text
from tui.core.lines import LineAssembler
from tui.core.secrets import LogMasker, mask_secret_bytes, mask_secrets

SIM = str(Path(__file__).with_name("server_sim.py"))
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWx123"
SK = "sk-proj-ZyXwVuTsRqPoNmLkJiHgFe987"
PLAIN = "s3cr3t-Value!"  # no shape at all: only its name gives it away
ALL = (HF, SK, PLAIN, "hunter2pw", "eyJhbGciOi.eyJzdWIiOiIx.SflKxwRJSMeKKF2")

SERVER_ARGS = (
    f"[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/models/x', tokenizer_path='/models/x', "
    f"api_key='{PLAIN}', hf_token='{HF}', max_total_tokens=4096, speculative_token_map=None, enable_auth=False)\n"
)
LOG = (
    SERVER_ARGS
    + f"[2026-02-22 23:38:51] non-default args: {{'model': 'x', 'api_key': '{PLAIN}'}}\n"
    + "[2026-02-22 23:38:52] downloading https://bob:hunter2pw@models.example.com/x.safetensors\n"
    + "[2026-02-22 23:38:53] request headers: {\"Authorization\": \"Bearer eyJhbGciOi.eyJzdWIiOiIx.SflKxwRJSMeKKF2\"}\n"
    + "[2026-02-22 23:38:54 TP0] Load weight begin. avail mem=78.12 GB\n"
    + "Traceback (most recent call last):\n"
    + '  File "/srv/x.py", line 3, in <module>\n'
    + f"ValueError: the OpenAI key {SK} was refused\n"
)


def assert_no_secret(text: str) -> None:
    for secret in ALL:
        assert secret not in text, f"{secret!r} leaked: {text!r}"


@pytest.mark.parametrize(
    "text, masked",
    [
        (SERVER_ARGS.strip(), SERVER_ARGS.strip().replace(PLAIN, "****").replace(HF, "****")),
        ('{"api_key": "abc123xyz", "model": "m"}', '{"api_key": "****", "model": "m"}'),
        (f"--api-key {PLAIN} --port 30000 --hf-token={HF}", "--api-key **** --port 30000 --hf-token=****"),
        (f"HF_TOKEN={PLAIN} OPENAI_API_KEY={SK} python -m x", "HF_TOKEN=**** OPENAI_API_KEY=**** python -m x"),
        ("Authorization: Bearer abcdefghijklmnop", "Authorization: Bearer ****"),
        ("git clone https://me:hunter2pw@host/repo?token=abcdefgh&x=1", "git clone https://me:****@host/repo?token=****&x=1"),
        (f"echoing {HF} and {SK}", "echoing **** and ****"),
        ("Namespace(api_key=None, hf_token=None)", "Namespace(api_key=None, hf_token=None)"),
        ("non-default args: {'api_key': ['abcdef123'], 'model': 'm'}", "non-default args: {'api_key': ['****'], 'model': 'm'}"),
        # argument lists and quoted values (issue 22 item 8): masked by the flag or key name
        ("Command '['python3', '--api-key', 'abcSECRETxyz', '--port', '1']' returned non-zero exit status 1.",
         "Command '['python3', '--api-key', '****', '--port', '1']' returned non-zero exit status 1."),
        ('["python3", "--api-key", "abcSECRETxyz", "--tp", "8"]', '["python3", "--api-key", "****", "--tp", "8"]'),
        ("+ python3 -m x --api-key 'quoted value' --port 1", "+ python3 -m x --api-key '****' --port 1"),
        ("{'api_key': ['k1secret', 'k2secret'], 'model': 'm'}", "{'api_key': ['****', '****'], 'model': 'm'}"),
        ('api_key="a b" port=1', 'api_key="****" port=1'),
        ("{'hf_token': b'bytesSecret99', 'x': 1}", "{'hf_token': b'****', 'x': 1}"),
        ("api_key=('t1secret', \"t2secret\")", "api_key=('****', \"****\")"),
        ("'max_tokens': [1, 2], 'tokenizer': '/m/tok', '--tokenizer-path', '/m'", "'max_tokens': [1, 2], 'tokenizer': '/m/tok', '--tokenizer-path', '/m'"),
        # a value whose first characters are digits (a hex token) is no number: the cheap test let it through
        ("env HF_TOKEN=0123456789abcdef0123 started", "env HF_TOKEN=**** started"),
        ("api_key: 9f86d081884c7d659a2f", "api_key: ****"),
    ],
)
def test_masked_by_shape_and_by_name(text, masked):
    assert mask_secrets(text) == masked
    assert LineAssembler().feed(f"{text}\n".encode())[0].text == masked  # (a log's line, as every view reads it)


@pytest.mark.parametrize(
    "healthy",
    [
        "[2026-02-22 23:38:59 TP0] Decode batch. #running-req: 3, #token: 1234, token usage: 0.01, gen throughput (token/s): 50.2",
        "[2026-02-22 23:40:34 TP0] Load weight end. elapsed=95.62 s, type=DeepseekV3ForCausalLM, avail mem=9.13 GB",
        "max_total_num_tokens=665690, chunked_prefill_size=8192, max_prefill_tokens=16384, context_len=163840",
        "KV Cache is allocated. #tokens: 665690, K size: 30.47 GB, V size: 30.47 GB",
    ],
)
def test_healthy_lines_are_left_alone(healthy):
    assert mask_secrets(healthy) == healthy
    assert mask_secret_bytes(healthy.encode()) == healthy.encode()


def test_recording_masks_keep_every_offset_and_survive_any_chunking():
    data = LOG.encode()
    whole = mask_secret_bytes(data)
    assert len(whole) == len(data) and whole.count(b"\n") == data.count(b"\n")
    assert_no_secret(whole.decode())
    for cut in range(0, len(data), 7):
        masker = LogMasker()
        assert masker.feed(data[:cut]) + masker.feed(data[cut:]) + masker.flush() == whole


def test_watch_plain_and_scan_never_show_them(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(LOG)
    watched = run_cli("watch", str(log), "--plain", "--echo", "--timeout", "5")
    assert watched.returncode == 1 and "ValueError: the OpenAI key **** was refused" in watched.stdout, watched.stdout
    assert "api_key='****'" in watched.stdout
    scanned = run_cli("scan", str(log))
    as_json = run_cli("scan", "--json", str(log))
    for out in (watched, scanned, as_json):
        assert_no_secret(out.stdout + out.stderr)
    assert json.loads(as_json.stdout)["errors"][0]["message"] == "ValueError: the OpenAI key **** was refused"


def test_the_session_every_view_reads_holds_them_masked():
    """The dashboard's log, `y` (the error block) and `w` (the report) all read the session."""
    from tests.app_support import fixed_session

    session = fixed_session(LOG.encode())
    texts = [e.text for e in session.scrollback.entries()]
    error = session.state.first_error
    assert error is not None and error.message == "ValueError: the OpenAI key **** was refused"
    assert_no_secret("\n".join(texts) + "\n".join(t for _, t in error.block) + session.state.last_text)


def test_a_recording_stores_them_masked(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(LOG)
    out = tmp_path / "s.wtrec"
    result = run_cli("record", str(log), "-o", str(out), "--gpus", "none", timeout=90)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    stored = gzip.decompress(out.read_bytes()).decode()
    assert_no_secret(stored)
    from tui.sources.replay import load

    assert len(load(out).log_bytes()) == len(LOG.encode())  # same bytes, same lines: secrets as '*'


def test_run_with_env_name_and_env_file_keeps_values_off_every_command_line(tmp_path):
    env_file = tmp_path / "secrets.env"
    env_file.write_text(f"# tokens\nexport HF_TOKEN='{HF}'\n")
    env = {"WATCHTOWER_DATA_DIR": str(tmp_path / "data"), "OPENAI_API_KEY": SK}
    argv = ["run", "--plain", "--name", "sim", "--log-dir", str(tmp_path / "logs"), "--gpus", "none",
            "--env", "OPENAI_API_KEY", "--env-file", str(env_file), "--",
            sys.executable, SIM, "--step", "0.01", "--echo-env", "HF_TOKEN"]
    assert not any(secret in word for word in argv for secret in ALL)
    try:
        result = run_cli(*argv, env=env, timeout=90)
        assert result.returncode == 0, result.stdout + result.stderr
        assert_no_secret(result.stdout + result.stderr)
        log = tmp_path / "logs" / "sim-v1.log"
        assert HF in log.read_text()  # the server was given the value ...
        assert stat.S_IMODE(log.stat().st_mode) == 0o600  # ... and its log, which echoes it, is private
        history = run_cli("history", "--json", env=env)
        (row,) = json.loads(history.stdout)
        assert row["env"] == {"OPENAI_API_KEY": "****", "HF_TOKEN": "****"}
        assert_no_secret(history.stdout)
        attach = run_cli("attach", "sim", "--plain", env=env)
        assert attach.returncode == 0 and "reattached" in attach.stdout, attach.stdout + attach.stderr
        assert_no_secret(attach.stdout + attach.stderr)
    finally:
        kill_attempts(tmp_path)


def test_run_first_error_in_history_is_masked(tmp_path):
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + LOG + "EOF\nexit 1\n")
    script.chmod(0o755)
    env = {"WATCHTOWER_DATA_DIR": str(tmp_path / "data")}
    result = run_cli("run", "--plain", "--name", "bad", "--log-dir", str(tmp_path / "logs"), "--gpus", "none", "--",
                 str(script), env=env, timeout=90)
    assert result.returncode == 1, result.stdout + result.stderr
    assert_no_secret(result.stdout + result.stderr)
    for args in (("history", "--json"), ("history", "bad")):
        out = run_cli(*args, env=env)
        assert_no_secret(out.stdout)
    (row,) = json.loads(run_cli("history", "--json", env=env).stdout)
    assert row["first_error"] == "ValueError: the OpenAI key **** was refused"


@pytest.mark.ssh
@pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")
def test_a_remote_run_passes_env_values_on_stdin_not_the_remote_command_line(sshd, tmp_path):
    from tui.sources import ssh

    spy_log = tmp_path / "setsid-argv"
    spy = sshd.bin_dir / "setsid"  # first on the remote PATH: sees the argv the launch gives it
    spy.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" >> '{spy_log}'\nexec /usr/bin/setsid \"$@\"\n")
    spy.chmod(0o755)
    env = {"WATCHTOWER_DATA_DIR": str(tmp_path / "data"), "HF_TOKEN": HF,
           ssh.ENV_KNOWN_HOSTS: str(sshd.known_hosts), ssh.ENV_IDENTITY: str(sshd.client_key)}
    try:
        result = run_cli("run", "--plain", "--host", sshd.spec, "--name", "rsim", "--log-dir",
                         str(tmp_path / "rlogs"),
                     "--gpus", "none", "--env", "HF_TOKEN", "--", sys.executable, SIM, "--step", "0.01",
                     "--echo-env", "HF_TOKEN", env=env, timeout=90)
        assert result.returncode == 0, result.stdout + result.stderr
        assert_no_secret(result.stdout + result.stderr)
        assert spy_log.exists() and HF not in spy_log.read_text()  # its value is in no argv
        log = tmp_path / "rlogs" / "rsim-v1.log"
        assert HF in log.read_text()  # yet the server had it
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
    finally:
        spy.unlink()
        kill_attempts(tmp_path)


# ---------------------------------------------------------------- argument lists and quoted values

LEAKY = (
    "[2026-02-22 23:38:50] server_args=ServerArgs(model_path='/models/x', api_key=\"two WordsSecret\", hf_token=b'bytesSecret99')\n"
    "[2026-02-22 23:38:51] non-default args: {'model': 'x', 'api_key': ['firstKey111', 'secondKey222']}\n"
    "[2026-02-22 23:38:52] + python3 -m sglang.launch_server --api-key 'quoted SpaceSecret' --port 30000\n"
    '[2026-02-22 23:38:53] argv: ["python3", "-m", "sglang.launch_server", "--api-key", "jsonArgvSecret1"]\n'
    "[2026-02-22 23:38:54 TP0] Load weight begin. avail mem=78.12 GB\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/x.py", line 3, in <module>\n'
    "subprocess.CalledProcessError: Command '['python3', '-m', 'sglang.launch_server', '--api-key', 'abcSECRETxyz']' "
    "returned non-zero exit status 1.\n"
)
LEAKED = ("WordsSecret", "bytesSecret99", "firstKey111", "secondKey222", "SpaceSecret", "jsonArgvSecret1", "abcSECRETxyz")
LEAKY_ERROR = ("CalledProcessError: Command '['python3', '-m', 'sglang.launch_server', '--api-key', '****']' "
               "returned non-zero exit status 1.")


def assert_none_leaked(text: str) -> None:
    for secret in LEAKED:
        assert secret not in text, f"{secret!r} leaked: {text!r}"


def test_argument_lists_and_quoted_values_never_leave_scan_or_watch(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(LEAKY)
    watched = run_cli("watch", str(log), "--plain", "--echo", "--timeout", "5")
    scanned = run_cli("scan", str(log))
    as_json = run_cli("scan", "--json", str(log))
    for out in (watched, scanned, as_json):
        assert_none_leaked(out.stdout + out.stderr)
    assert json.loads(as_json.stdout)["errors"][0]["message"] == LEAKY_ERROR
    assert "--api-key '****' --port 30000" in watched.stdout and "['****', '****']" in watched.stdout


def test_argument_lists_and_quoted_values_stay_masked_in_session_report_and_recording():
    from tests.app_support import fixed_session
    from tui.present.report import build_report

    session = fixed_session(LEAKY.encode())
    error = session.state.first_error
    assert error is not None and error.message == LEAKY_ERROR
    texts = [e.text for e in session.scrollback.entries()]
    assert_none_leaked("\n".join(texts) + "\n".join(t for _, t in error.block) + build_report(session))
    stored = mask_secret_bytes(LEAKY.encode())
    assert len(stored) == len(LEAKY.encode())
    assert_none_leaked(stored.decode())


async def test_argument_lists_and_quoted_values_stay_masked_on_screen_and_in_w_and_s(tmp_path):
    from tests.app_support import fixed_session, make_app

    app = make_app(fixed_session(LEAKY.encode()), tmp_path=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        shown = screen_text(app)
        await pilot.press("w")
        await pilot.press("s")
        await pilot.pause()
    assert "CalledProcessError" in shown
    assert_none_leaked(shown)
    files = list(tmp_path.glob("watchtower-*"))
    assert len(files) == 2
    for path in files:
        assert_none_leaked(path.read_text())
