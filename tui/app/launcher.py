"""The dashboard for a launched server: stop, relaunch, edit, attempts, GPU leftovers.

Keys added to the dashboard: ``x`` stop (asks first, shows the SIGINT → SIGTERM →
SIGKILL countdown), ``r`` relaunch the same command, ``R`` edit the command line and
environment first (a modal), ``F`` the same editor with the failure's known fix applied and
highlighted, ``a`` the attempts panel (``v1 ✗ AttributeError 0:12``
… and what changed between attempts), ``k`` kill processes that are not ours but hold
GPU memory. ``q`` asks only when the launched server would be left running. The
header shows the launch's verdict (dead / loading / stalled? …), judged with the process.
Its modal screens are ``tui.app.launch_modals``.
"""

from __future__ import annotations

from functools import partial

import os
import signal
from collections.abc import Callable

from rich.text import Text
from textual.widgets import Static

from tui.app.app import WatchtowerApp
from tui.app.keys import KeyBar
from tui.app.launch_modals import ConfirmScreen, EditScreen, FixProposal, HoldersScreen, relaunch_changes
from tui.core.lines import clean
from tui.core.state import READY, STOPPED
from tui.launch.gpu_release import GpuBusy, GpuHolder
from tui.launch.controller import Launch, PreflightRefused
from tui.launch.spec import LaunchError
from tui.launch.events import AttemptExited, AttemptRecorded, AttemptStarted, LaunchEvent, Note, VerdictChanged
from tui.launch.keeper import hand_over


# ---------------------------------------------------------------- panels


class LaunchLine(Static):
    """One line: the attempt's command (masked), the stop countdown, what the launcher is doing."""

    DEFAULT_CSS = """
    LaunchLine { height: 1; }
    """

    def __init__(self, launch: Launch, **kwargs) -> None:
        super().__init__(**kwargs)
        self.launch = launch
        self.message = ""
        self.where = ""  # where the attempt runs, said once it started: shown while nothing else is

    def say(self, message: str) -> None:
        self.message = message
        self.refresh()

    def runs(self, where: str) -> None:
        """Where the current attempt runs ("v2: submitted as Slurm job 12 (…)"): said until the next
        attempt's, under what the launcher is doing."""
        self.where = where
        self.refresh()

    def render(self) -> Text:
        palette = self.app.palette  # type: ignore[attr-defined]
        launch = self.launch
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        run = launch.run
        label = f" v{run.attempt} {launch.runner.label(run)} " if run is not None else " launch "
        text.append(label, palette.style("title"))
        countdown = launch.stop_countdown()
        if countdown:
            text.append(f" stopping: {countdown} ", palette.style("running"))
        message = launch.activity or self.message or self.where
        if message:
            text.append(f" {clean(message)} ", palette.style("running"))
        text.append(" " + clean(launch.command_text), palette.style("dim"))
        return text


class AttemptsPanel(Static):
    """``a``: every attempt of this launch, its outcome and time, and what changed from the previous."""

    DEFAULT_CSS = """
    AttemptsPanel { height: auto; max-height: 12; display: none; border-top: solid $panel; }
    AttemptsPanel.-open { display: block; }
    """

    def __init__(self, launch: Launch, **kwargs) -> None:
        super().__init__(**kwargs)
        self.launch = launch

    def rows(self) -> list[tuple[str, str]]:
        """``(line, style)`` per attempt: the style from the attempt's outcome, not its text."""
        out = []
        for record in self.launch.records:
            line = record.summary
            outcome = record.outcome
            if self.launch.run is not None and record.attempt == self.launch.run.attempt:
                verdict = self.launch.verdict_now
                if verdict is not None and not verdict.final:
                    line = f"v{record.attempt} … {verdict.kind}"
                    outcome = "starting"
                line += "  ← current"
            changes = record.changes
            if changes:
                line += "   " + " ".join(changes)
            style = "done" if outcome == READY else "running" if outcome in ("starting", "running", STOPPED) else "failed"
            out.append((clean(line), style))
        return out or [("no attempts yet", "running")]

    def lines(self) -> list[str]:
        return [line for line, _ in self.rows()]

    def render(self) -> Text:
        palette = self.app.palette  # type: ignore[attr-defined]
        text = Text(end="")
        text.append(" Attempts\n", palette.style("title"))
        for line, style in self.rows():
            text.append(f" {line}\n", palette.style(style))
        return text


class ChecksPanel(Static):
    """``c`` (and by itself when a launch is refused): the last preflight's summary and every ✗ and
    ⚠ in full, with its fix — wrapped, never cut; ✗ first."""

    DEFAULT_CSS = """
    ChecksPanel { height: auto; max-height: 14; display: none; border-top: solid $panel; }
    ChecksPanel.-open { display: block; }
    """

    def __init__(self, launch: Launch, **kwargs) -> None:
        super().__init__(**kwargs)
        self.launch = launch

    def rows(self) -> list[tuple[str, str]]:
        """``(line, style)``: the summary, then each ✗, then each ⚠."""
        report = self.launch.preflight_report
        if report is None:
            return [("no preflight has run (--no-check, or nothing launched yet)", "dim")]
        fix = self.app.key_for("apply_fix")  # type: ignore[attr-defined]
        head = report.summary + (f": the launch was refused ({fix} applies a fix, --no-check launches anyway)"
                                 if self.launch.refused is report else "")
        out = [(head, "title")]
        for status, style in (("fail", "failed"), ("warn", "running")):
            out += [(f"  {check.line}", style) for check in report.checks if check.status == status]
        if len(out) == 1:
            out.append(("  every check passed", "done"))
        return [(clean(line), style) for line, style in out]

    def lines(self) -> list[str]:
        return [line for line, _ in self.rows()]

    def render(self) -> Text:
        palette = self.app.palette  # type: ignore[attr-defined]
        text = Text(end="")
        text.append(f" Checks ({self.app.key_for('checks')} closes)\n", palette.style("title"))  # type: ignore[attr-defined]
        for line, style in self.rows():
            text.append(f" {line}\n", palette.style(style))
        return text


# ---------------------------------------------------------------- the app


class LaunchApp(WatchtowerApp):
    """The dashboard plus the launch keys; starts (or reattaches to) the launch once mounted."""

    #: F opens the relaunch editor with the fix applied (the header offers ``[F] apply``).
    can_apply_fix = True

    def __init__(self, launch: Launch, *args, attach_only: bool = False, **kwargs) -> None:
        self.launch = launch
        self.attach_only = attach_only
        self.launch_line = LaunchLine(launch, id="launch-line")
        self.attempts_panel = AttemptsPanel(launch, id="attempts")
        self.checks_panel = ChecksPanel(launch, id="checks")
        kwargs["panels"] = [self.launch_line, self.checks_panel, self.attempts_panel, *kwargs.get("panels", ())]
        if launch.followed:  # one log's: the launch's node set of one (across nodes: each attempt's, as it starts)
            kwargs.setdefault("nodes", launch.nodes)
        super().__init__(*args, **kwargs)
        launch.terminal = self.terminal
        launch.subscribe(self._on_launch_event)
        self.before_quit.append(self._confirm_quit)
        self.stop_processes = launch.kill_holders if launch.local else None
        self.add_key("stop", self.key_stop)
        self.add_key("relaunch", self.key_relaunch)
        self.add_key("edit_relaunch", self.key_edit)
        self.add_key("attempts", self.key_attempts)
        self.add_key("checks", self.key_checks)
        self.add_key("kill_holders", self.key_kill_holders)
        self.add_key("apply_fix", self.key_fix)
        self.every_second.append(self.launch_line.refresh)  # the stop countdown
        self._busy = False  # a launch, stop or relaunch is under way: keys that start another wait

    def on_mount(self) -> None:
        super().on_mount()
        try:  # (only the main thread may; an app run elsewhere goes without)
            self._sighup: object = signal.signal(signal.SIGHUP, self._hung_up)
        except ValueError:
            self._sighup = None
        self.run_worker(self._start(), group="launch")

    async def on_unmount(self) -> None:
        if self._sighup is not None:
            signal.signal(signal.SIGHUP, self._sighup)  # type: ignore[arg-type]
        await self.launch.close()  # the server keeps running unless stopped; pending writes finish
        await super().on_unmount()

    def _terminated(self) -> None:
        """SIGTERM: as a hang-up, a confirmed stop under way is handed to a detached keeper first."""
        plan = self.launch.stop_handover()
        if plan is not None:
            hand_over(plan)
        super()._terminated()

    def _hung_up(self, signum: int, _frame: object) -> None:
        """SIGHUP (an SSH drop, a killed tmux session): a confirmed stop is handed to a detached
        keeper that sends the rest of its signals and records the end; then Watchtower goes as a
        hung-up process does (a server not being stopped keeps running: ``attach`` follows it)."""
        plan = self.launch.stop_handover()
        if plan is not None:
            hand_over(plan)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGHUP)

    async def _start(self) -> None:
        self._busy = True
        try:
            run = await self.launch.start(launch=not self.attach_only)
            if self.launch.reattached:
                self.notify(
                    f"Reattached to v{run.attempt} ({self.launch.runner.label(run)}), started earlier; "
                    f"{self.key_for('relaunch')} relaunches it", timeout=6
                )
        except PreflightRefused:
            self._refused()
        except LaunchError as exc:
            self.launch_line.say(f"launch failed: {exc}")
            self.notify(clean(str(exc)), severity="error", timeout=10)
        finally:
            self._busy = False
        self._refresh_launch()

    # ------------------------------------------------------------ glue

    def footer_entries(self) -> list[tuple[str, str, str]]:
        """The keys that matter now first: F while a failure has a fix to apply, c while the last
        preflight has a ⚠ or ✗ to read; x (stop) only while a server runs. Each as the key map binds it."""
        stop = self.extra_entry("stop")
        entries = [e for e in super().footer_entries() if e != stop or self.launch.server_running]  # nothing to stop
        now = []
        verdict = self.verdict()
        if verdict.kind in ("failed", "dead", "refused") and any(h.fix for h in self.judging.hints):
            now.append(self.extra_entry("apply_fix", "Apply fix"))
        report = self.launch.preflight_report
        if report is not None and any(c.status != "ok" for c in report.checks):
            now.append(self.extra_entry("checks"))
        if any(not h.ours for h in self.launch.gpu_holders()):
            now.append(self.extra_entry("kill_holders"))
        return entries[:1] + now + entries[1:]

    def _refused(self) -> None:
        """A launch its preflight refused: the verdict says so (the header), the checks panel opens."""
        self.launch_line.say(f"not launched: a preflight check failed ({self.key_for('checks')} lists the checks)")
        self.checks_panel.add_class("-open")
        self.checks_panel.refresh(layout=True)

    def _on_launch_event(self, event: LaunchEvent) -> None:
        if isinstance(event, Note) and event.launch_line:  # (a toast would cover the log's last lines)
            run = self.launch.run  # (the line's label names the attempt already)
            self.launch_line.runs(event.text.removeprefix(f"v{run.attempt}: ") if run is not None else event.text)
        elif isinstance(event, Note):
            self.notify(clean(event.text), timeout=6)
        elif isinstance(event, AttemptStarted) and self.launch.nodes is not self.nodes:
            self.replace_nodes(self.launch.nodes)  # an attempt across nodes: its own node set
        elif isinstance(event, VerdictChanged) and event.kind_changed:  # (new words alone: the header's)
            self._refresh_launch()
        elif isinstance(event, AttemptExited):  # nothing runs now: the footer no longer offers x
            self._refresh_launch()
        elif isinstance(event, AttemptRecorded):  # its row's outcome, times, first error as stored
            self.attempts_panel.refresh(layout=True)

    def _refresh_launch(self) -> None:
        from tui.app.header import VerdictHeader

        try:
            self.query_one(VerdictHeader).refresh()
        except Exception:
            return
        self.launch_line.refresh()
        self.attempts_panel.refresh(layout=True)
        self.checks_panel.refresh(layout=True)
        for bar in self.query(KeyBar):  # (none while the app closes: a stop on quit ends the attempt then)
            bar.refresh()

    def _ask(self, question: str, choices: list[tuple[str, str]], then: Callable[[str | None], None]) -> None:
        self.push_screen(ConfirmScreen(question, choices), then)

    def _work(self, coro, message: str) -> None:
        async def run() -> None:
            self._busy = True
            self.launch_line.say(message)
            try:
                await coro
            except GpuBusy as exc:
                self.launch_line.say(f"GPUs busy: press {self.key_for('kill_holders')} to see and kill the holders")
                self._offer_kill(exc.holders, "Other processes hold GPU memory; launching now would run out of memory:")
                return
            except PreflightRefused:
                self._refused()
                return
            except LaunchError as exc:
                self.launch_line.say(f"{exc}")
                self.notify(clean(str(exc)), severity="error", timeout=8)
                return
            finally:
                self._busy = False
                self._refresh_launch()
            self.launch_line.say("")

        self.run_worker(run(), group="launch")

    def _refuse_if_busy(self) -> bool:
        if self._busy:
            self.notify("Busy: wait for the current launch or stop to finish", timeout=2)
        return self._busy

    # ------------------------------------------------------------ keys

    def key_stop(self) -> None:
        launch = self.launch
        if self._refuse_if_busy():
            return
        run = launch.run
        if run is None or not launch.server_running:
            self.notify("No running server to stop", timeout=2)
            return
        plan = launch.spec.plan

        def answer(key: str | None) -> None:
            if key == "y":
                self._work(launch.stop(), f"stopping v{run.attempt}…")

        self._ask(launch.runner.stop_words(run, plan), [("y", "stop it")], answer)

    def key_relaunch(self, command: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        launch = self.launch
        if self._refuse_if_busy():
            return
        nxt = (launch.records[-1].attempt if launch.records else launch.attempt) + 1

        def go(answer: str | None = "y") -> None:
            if answer == "y":
                self._work(launch.relaunch(command, env), f"relaunching as v{nxt}…")

        if launch.server_running and launch.run is not None:
            self._ask(f"v{launch.run.attempt} is still running. Stop it and relaunch as v{nxt}?", [("y", "stop and relaunch")], go)
        else:
            go()

    def key_edit(self) -> None:
        launch = self.launch
        if self._refuse_if_busy():
            return
        nxt = (launch.records[-1].attempt if launch.records else launch.attempt) + 1
        self.push_screen(EditScreen(launch, nxt), partial(self._edited, nxt))

    def _edited(self, nxt: int, result: tuple[list[str], dict[str, str]] | None) -> None:
        """The editor closed: ask before relaunching with what it gives (nothing when cancelled)."""
        if result is not None:
            self._confirm_edit(nxt, *result)

    def _confirm_edit(self, nxt: int, command: list[str], env: dict[str, str]) -> None:
        """Say what the edit changes (and that a running attempt is stopped first) before relaunching."""
        launch = self.launch
        changes = relaunch_changes(launch, command, env)
        current = f"v{launch.run.attempt}" if launch.run is not None else "the last attempt"
        if changes:
            question = f"Relaunch as v{nxt} with these changes from {current}:\n" + "".join(
                f"\n  {clean(change)}" for change in changes
            )
        else:
            question = f"Relaunch as v{nxt}: nothing changed from {current} (same command and environment)."
        if launch.server_running:
            question += f"\n\n{current} is still running: it is stopped first (SIGINT, then SIGTERM, then SIGKILL)."

        def answer(key: str | None) -> None:
            if key == "y":
                self._work(launch.relaunch(command, env), f"relaunching as v{nxt}…")
            elif key == "e":
                self.push_screen(EditScreen(launch, nxt, command, env), partial(self._edited, nxt))

        self._ask(question, [("y", "relaunch"), ("e", "edit again")], answer)

    def key_fix(self) -> None:
        """The first hint with a fix: the editor opens with it applied and highlighted; ctrl+s shows
        what changes and asks before anything is relaunched (or, to free a port, names its holder)."""
        launch = self.launch
        if self._refuse_if_busy():
            return
        hint = next((h for h in self.judging.hints if h.fix), None)  # the header's
        if hint is None:
            self.notify("No known fix for this failure", timeout=3)
            return
        proposal = FixProposal.of(hint, launch)
        nxt = (launch.records[-1].attempt if launch.records else launch.attempt) + 1

        def edited(result: tuple[list[str], dict[str, str]] | None) -> None:
            if result is None:
                return
            command, env = result
            launch.applied = hint.id if proposal.kept_in(command, env) else None
            ports = [int(a.target) for a in hint.fix if a.verb == "free_port"]
            if ports:
                self._work(self._free_port_then_relaunch(ports[0], command, env, nxt), f"who holds port {ports[0]}…")
            else:
                self._confirm_edit(nxt, command, env)

        self.push_screen(EditScreen(launch, nxt, proposal=proposal), edited)

    async def _free_port_then_relaunch(self, port: int, command: list[str], env: dict[str, str], nxt: int) -> None:
        """``free_port N``: name the holder and, once the operator agrees, stop it; then relaunch."""
        launch = self.launch
        holder = await launch.port_holder(port)
        if holder is None:  # freed meanwhile
            self.call_after_refresh(self._confirm_edit, nxt, command, env)
            return
        if holder.get("pid") is None:
            self.notify(f"Port {port} is in use ({clean(str(holder.get('cmd')))}): free it by hand", severity="error",
                        timeout=8)
            return
        pid = int(str(holder["pid"]))

        async def stop_then_relaunch() -> None:
            for error in await launch.kill_holders([pid]):
                self.notify(clean(error), severity="error", timeout=6)
            await launch.relaunch(command, env)

        def answer(key: str | None) -> None:
            if key == "y":
                self._work(stop_then_relaunch(), f"stopping pid {pid}, then relaunching as v{nxt}…")

        self.call_after_refresh(
            self._ask, f"Port {port} is held by pid {pid}: {clean(str(holder.get('cmd') or '?'))[:120]}",
            [("y", f"stop it (SIGTERM, then SIGKILL) and relaunch as v{nxt}")], answer,
        )

    def key_checks(self) -> None:
        self.checks_panel.toggle_class("-open")
        self.checks_panel.refresh(layout=True)

    def key_attempts(self) -> None:
        self.attempts_panel.toggle_class("-open")
        self.attempts_panel.refresh(layout=True)

    def key_kill_holders(self) -> None:
        launch = self.launch
        unknown = launch.gpu_unknown()
        if unknown is not None and self.session.gpus.unavailable:
            unknown += f" — {self.session.gpus.unavailable}"
        if unknown is None:
            foreign = [h for h in launch.gpu_holders() if not h.ours]
            if not foreign:
                self.notify("No other process holds GPU memory (in the latest GPU sample)", timeout=3)
                return
            self._offer_kill(foreign, "Processes that are not the running attempt hold GPU memory:")
            return
        # Blind to the GPUs: never an all-clear; what can be known is our own earlier attempts.
        said = f"Cannot tell which processes hold GPU memory: {unknown}."
        leftovers = launch.leftovers()
        if leftovers:
            self._offer_kill(leftovers, f"{said}\nProcesses of earlier attempts are still alive and may hold it:")
        else:
            left = ("No process of an earlier attempt is still alive." if launch.local else
                    "Earlier attempts' processes are not looked for where they ran (another host).")
            self.notify(f"{said} {left}", severity="warning", timeout=8)

    def _offer_kill(self, holders: list[GpuHolder], why: str) -> None:
        async def kill() -> None:
            errors = await self.launch.kill_holders([h.pid for h in holders])
            for error in errors:
                self.notify(clean(error), severity="error", timeout=6)

        def answer(yes: bool | None) -> None:
            if yes:
                self._work(kill(), "killing GPU leftovers…")

        self.push_screen(HoldersScreen(holders, why), answer)

    def survivors(self) -> list[tuple[str, int, str]]:
        """The attempts' processes alive once the server's main process is gone (its ranks, in
        its process group; an earlier attempt's leftovers): what quitting would leave behind."""
        return [("localhost", s.pid, s.words) for s in self.launch.survivors()]

    def _confirm_quit(self) -> bool:
        launch = self.launch
        if not launch.server_running:
            return True

        def answer(key: str | None) -> None:
            if key == "l":
                self.exit(self.exit_code_for_state())
            elif key == "s":

                async def stop_then_exit() -> None:
                    self.launch_line.say("stopping before quitting…")
                    await launch.stop()
                    self.exit(self.exit_code_for_state())

                self.run_worker(stop_then_exit(), group="launch")

        run = launch.run
        assert run is not None  # (a server running is a run's)
        self._ask(
            f"v{run.attempt} ({launch.runner.label(run)}) is still running.",
            [("l", f"leave it running and quit (`watchtower attach {launch.spec.name}` follows it again)"),
             ("s", "stop it, then quit")],
            answer,
        )
        return False
