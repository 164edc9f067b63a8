"""The launcher's modal screens: the one-key question, the command and environment editor
(``R``, and ``F`` with a hint's fix applied), and the GPU leftovers to kill (``k``)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual import events
from textual.widgets import Input, Static, TextArea

from tui.core import cmdline
from tui.core.lines import clean
from tui.core.secrets import MASK, env_diff
from tui.history import command_diff
from tui.launch.gpu_release import GpuHolder
from tui.launch.controller import Launch

if TYPE_CHECKING:
    from tui.core.hints import Diagnosis


class ConfirmScreen(ModalScreen[str | None]):
    """A question answered by one key per choice; escape cancels."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Static { width: auto; max-width: 90%; height: auto; border: round $warning;
                             padding: 0 2; background: $panel; }
    """
    BINDINGS = [Binding("escape", "choose(None)", "Cancel")]

    def __init__(self, question: str, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.question = question
        self.choices = choices
        for key, _ in choices:
            self._bindings.bind(key, f"choose('{key}')", show=False)

    def compose(self) -> ComposeResult:
        text = Text(self.question + "\n\n", style="bold", end="")
        for key, words in self.choices:
            text.append(f"  [{key}] ", style="bold")
            text.append(f"{words}\n")
        text.append("  [escape] cancel")
        yield Static(text, id="question")

    def action_choose(self, key: str | None) -> None:
        self.dismiss(key)


def _unmask_argv(edited: list[str], original: list[str], masked: list[str]) -> list[str]:
    """Words the user left masked (``****``) get their real value back from the original."""
    if edited == masked:
        return list(original)
    out = []
    for i, word in enumerate(edited):
        if MASK in word and i < len(masked) and masked[i] == word:
            out.append(original[i])
        else:
            out.append(word)
    return out


def parse_env_lines(text: str, original: dict[str, str]) -> dict[str, str]:
    """``K=V`` per line (blank lines and ``#`` comments skipped); ``K=****`` keeps the real value."""
    env: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        key = key.strip()
        if not eq or not key.replace("_", "a").isalnum() or key[0].isdigit():
            raise ValueError(f"line {number}: expected NAME=VALUE, got {clean(line)!r}")
        env[key] = original.get(key, value) if value == MASK else value
    return env


def relaunch_changes(launch: Launch, command: list[str], env: dict[str, str]) -> list[str]:
    """What relaunching with ``command`` and ``env`` changes from the current attempt (masked words)."""
    masker = launch.masker
    return command_diff(masker.argv(launch.spec.command), masker.argv(command)) + env_diff(
        masker.env(launch.spec.env), masker.env(env)
    )


@dataclass(frozen=True, slots=True)
class FixProposal:
    """``F``: a hint's fix applied to the command and environment, for the editor to show."""

    hint: Diagnosis
    command: list[str]
    env: dict[str, str]
    changes: list[str]  # "+SGLANG_…=1", "+--mem-fraction-static 0.92", "before launching: free_port 30000"

    @classmethod
    def of(cls, hint: Diagnosis, launch: Launch) -> FixProposal:
        command, env = cmdline.apply(launch.spec.command, launch.spec.env, hint.fix)
        changes = relaunch_changes(launch, command, env)
        changes += [f"before launching: {a.text}" for a in hint.fix if a.on_host]
        return cls(hint, command, env, changes)

    def kept_in(self, command: list[str], env: dict[str, str]) -> bool:
        """Whether an edited command and environment still carry the whole fix (applying it changes nothing)."""
        return cmdline.apply(command, env, self.hint.fix) == (command, env)


class EditScreen(ModalScreen[tuple[list[str], dict[str, str]] | None]):
    """``R``: change the command line and the environment, then relaunch as the next attempt.

    ``command`` and ``env`` (default: the current attempt's) fill the two fields, so "edit
    again" from the confirmation keeps what was typed. ``F`` opens it with a hint's fix
    applied (``proposal``) and the changes highlighted above the fields."""

    DEFAULT_CSS = """
    EditScreen { align: center middle; }
    EditScreen > Vertical { width: 90%; height: auto; max-height: 90%; border: round $primary;
                            background: $panel; padding: 0 1; }
    EditScreen .label { text-style: bold; margin-top: 1; }
    EditScreen #env { height: 8; }
    EditScreen #edit-error { color: $error; height: auto; }
    """
    BINDINGS = [
        Binding("ctrl+s", "submit", "Relaunch"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(
        self, launch: Launch, attempt: int, command: list[str] | None = None, env: dict[str, str] | None = None,
        proposal: FixProposal | None = None,
    ) -> None:
        super().__init__()
        self.launch = launch
        self.attempt = attempt
        self.proposal = proposal
        if proposal is not None:
            command, env = proposal.command, proposal.env
        self._command = list(command if command is not None else launch.spec.command)
        self._env = dict(env if env is not None else launch.spec.env)
        self._masked_argv = launch.masker.argv(self._command)

    def compose(self) -> ComposeResult:
        env_text = "\n".join(f"{k}={v}" for k, v in self.launch.masker.env(self._env).items())
        with Vertical():
            yield Static(
                f"Relaunch as v{self.attempt}: Tab moves between the fields; ctrl+s (or Enter in the command) "
                "shows what will change before anything is relaunched; escape cancels.",
                id="edit-help",
            )
            if self.proposal is not None:
                yield Static(self._fix_text(), id="fix")
            yield Static("Command line", classes="label")
            # not selected on focus: a Tab into it and a keystroke must not replace the whole command
            yield Input(shlex.join(self._masked_argv), id="command", select_on_focus=False)
            yield Static(
                "Environment — one NAME=VALUE per line; delete a line to remove it; **** keeps a secret's value",
                classes="label",
            )
            yield TextArea(env_text + ("\n" if env_text else ""), id="env")
            yield Static("", id="edit-error")

    def _fix_text(self) -> Text:
        proposal = self.proposal
        assert proposal is not None  # composed only with one
        text = Text()
        text.append(f"fix {proposal.hint.id}: ", "bold")
        text.append(clean(proposal.hint.why))
        for change in proposal.changes:
            style = "bold green" if change.startswith("+") else "bold red" if change.startswith("-") else "bold yellow"
            text.append(f"\n  {clean(change)}", style)
        return text

    def on_mount(self) -> None:
        command = self.query_one("#command", Input)
        command.focus()
        command.cursor_position = len(command.value)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Into the environment: on its empty last line, so that what is typed is a new variable,
        never glued to the front of an existing one."""
        if isinstance(event.widget, TextArea) and event.widget.id == "env":
            event.widget.move_cursor(event.widget.document.end)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def action_submit(self) -> None:
        error = self.query_one("#edit-error", Static)
        try:
            argv = shlex.split(self.query_one("#command", Input).value)
        except ValueError as exc:
            error.update(f"command line: {exc}")
            return
        if not argv:
            error.update("the command line is empty")
            return
        try:
            env = parse_env_lines(self.query_one("#env", TextArea).text, self._env)
        except ValueError as exc:
            error.update(f"environment: {exc}")
            return
        self.dismiss((_unmask_argv(argv, self._command, self._masked_argv), env))

    def action_cancel(self) -> None:
        self.dismiss(None)


class HoldersScreen(ModalScreen[bool]):
    """GPU memory held by processes that are not ours: list them, ``k`` kills them."""

    DEFAULT_CSS = """
    HoldersScreen { align: center middle; }
    HoldersScreen > Static { width: auto; max-width: 95%; height: auto; border: round $error;
                             padding: 0 2; background: $panel; }
    """
    BINDINGS = [Binding("k", "answer(True)", "Kill them"), Binding("escape,n", "answer(False)", "Cancel")]

    def __init__(self, holders: list[GpuHolder], why: str) -> None:
        super().__init__()
        self.holders = holders
        self.why = why

    def compose(self) -> ComposeResult:
        text = Text(self.why + "\n\n", style="bold", end="")
        for holder in self.holders:
            text.append(f"  {clean(holder.text)}\n")
        text.append("\n  [k] kill them (SIGTERM, then SIGKILL)   [escape] leave them")
        yield Static(text)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
