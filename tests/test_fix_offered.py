"""Issue 20, item 3: `[F] apply` only where F works (a launch it can relaunch); `watch` and `demo`
say the fix as the change to make by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.app_support import demo_session, make_app
from tests.support import screen_text, until
from tui.app.dashboard import build_app
from tui.app.header import VerdictHeader
from tui.session import SessionInfo, WatchSession
from tui.sources.factory import log_tailer

SIM = str(Path(__file__).with_name("server_sim.py"))
CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


def hint_text(app) -> str:
    lines = screen_text(app).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(" hint:"))
    return " ".join(" ".join(lines[start:start + 2]).split())


async def test_watch_of_a_failed_server_says_the_fix_and_offers_no_key(tmp_path):
    log = tmp_path / "server.log"
    with log.open("wb") as out:  # a real server process writes the log, as `nohup … > LOG` would
        subprocess.run([sys.executable, SIM, "--outcome", "raise", "--tp", "2", "--step", "0.01"], stdout=out,
                       stderr=subprocess.STDOUT, timeout=60)
    session = WatchSession(log=log_tailer(str(log)), info=SessionInfo(log_path=str(log)))
    app = build_app(session, gpus_enabled=False)
    async with app.run_test(size=(120, 35)) as pilot:
        await until(lambda: session.verdict().kind == "failed")
        header = app.query_one(VerdictHeader)

        def hint_shown() -> bool:
            header.refresh()  # the header draws FAILED with its hint, and grows, on the app's next refreshes
            return bool(header.hints) and any(line.startswith(" hint:") for line in screen_text(app).splitlines())

        await until(hint_shown, pilot=pilot)
        assert header.hints and header.hints[0].fix
        hint = hint_text(app)
        assert "[F]" not in screen_text(app)
        assert "fix: set_flag --context-length 131072" not in hint
        assert "fix: add --context-length 131072 to its command line, then restart it" in hint, hint
        await pilot.press("F")  # no such key here: nothing opens, nothing claims to apply
        await pilot.pause()
        assert app.screen is app.screen_stack[0]


async def test_demo_says_the_env_change_and_offers_no_key():
    app = make_app(demo_session("crash-context"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.query_one(VerdictHeader).verdict.word == "FAILED"
        hint = hint_text(app)
        assert "[F]" not in screen_text(app)
        assert f"set {CONTEXT_ENV}=1 in the server's environment" in hint, hint
