"""The dashboard's keys: their bindings and words, the help screen (``?``) and the footer.

The footer and help read them from any app that can list its footer entries (the
dashboard adds the launcher's keys to its own): :class:`KeyedApp`.
"""

from __future__ import annotations

import functools

from typing import Protocol

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

from tui.app.themes import Palette

#: The keys, in the order help lists them. Footer shows those with show=True.
KEYS: list[Binding] = [
    Binding("e", "next_error", "Error", id="next_error"),
    Binding("E", "prev_error", "Prev error", show=False, id="prev_error"),
    Binding("i", "hints", "Hints", show=False, id="hints"),
    Binding("slash", "search", "Search", key_display="/", id="search"),
    Binding("n", "search_next", "Next match", show=False, id="search_next"),
    Binding("N", "search_prev", "Prev match", show=False, id="search_prev"),
    Binding("f", "toggle_filter", "Filter", id="toggle_filter"),
    Binding("space", "toggle_follow", "Pause", id="toggle_follow"),
    Binding("g", "top", "Top", show=False, id="top"),
    Binding("G", "bottom", "Bottom", show=False, id="bottom"),
    Binding("p", "toggle_ranks", "Ranks", show=False, id="toggle_ranks"),
    Binding("H", "toggle_helpers", "Helpers", show=False, id="toggle_helpers"),
    Binding("t", "cycle_theme", "Theme", show=False, id="cycle_theme"),
    Binding("s", "screenshot", "Screenshot", show=False, id="screenshot"),
    Binding("y", "copy_error", "Copy", id="copy_error"),
    Binding("w", "write_report", "Report", show=False, id="write_report"),
    Binding("question_mark", "help", "Help", key_display="?", id="help"),
    Binding("q", "quit", "Quit", id="quit"),
]

#: Keys only some dashboards have: the launcher's (``run``, ``attach``) and the node view's (``o``,
#: several nodes). The app binds them with ``add_key(action, …)``; a key map moves them as it moves
#: the others, so its check knows them all.
EXTRA_KEYS: list[Binding] = [
    Binding("x", "stop", "Stop server"),
    Binding("r", "relaunch", "Relaunch"),
    Binding("R", "edit_relaunch", "Edit + relaunch"),
    Binding("a", "attempts", "Attempts"),
    Binding("c", "checks", "Checks", show=False),
    Binding("k", "kill_holders", "Kill GPU leftovers", show=False),
    Binding("F", "apply_fix", "Apply the hint's fix", show=False),
    Binding("o", "next_node", "Node", show=False),
]
#: Every action a key map may name, in the order help lists them.
ACTIONS: dict[str, Binding] = {b.action: b for b in [*KEYS, *EXTRA_KEYS]}
#: Keys Textual keeps (the log's scrolling, focus, the command palette, quit, copy) and the modals'
#: close: a key map binding one of them would never be reached.
RESERVED = ("escape", "tab", "shift+tab", "ctrl+p", "ctrl+q", "ctrl+c", "up", "down", "left", "right", "home", "end",
            "pageup", "pagedown")
#: Key names shown as the character they are.
SHOWN = {"slash": "/", "question_mark": "?", "comma": ",", "full_stop": ".", "minus": "-", "plus": "+"}


def key_of(action: str, keymap: dict[str, str] | None = None) -> str:
    """The key (Textual's name; several comma-separated) bound to ``action``: the key map's, else the default."""
    return (keymap or {}).get(action, ACTIONS[action].key)


def shown_key(action: str, keymap: dict[str, str] | None = None) -> str:
    """``action``'s key as the help and the footer show it: ``/`` for slash, ``?`` for question_mark."""
    if keymap and action in keymap:
        return ",".join(SHOWN.get(k.strip(), k.strip()) for k in keymap[action].split(","))
    binding = ACTIONS[action]
    return binding.key_display or binding.key


#: Modifiers a terminal can send with a key, as Textual names them.
MODIFIERS = ("ctrl+", "shift+", "alt+", "meta+", "super+", "hyper+")


@functools.cache
def _key_names() -> frozenset[str]:
    """Every key name Textual gives a key press: its named keys and each printable ASCII character's name."""
    from textual.keys import Keys, _character_to_key

    return frozenset({k.value for k in Keys} | {_character_to_key(chr(c)) for c in range(0x21, 0x7F)})


def key_made(key: str) -> bool:
    """A terminal can send ``key``: a printable character, or a name Textual gives a key press,
    after any modifiers (no escape sequence, control character or made-up name)."""
    if not key or not key.isprintable():
        return False
    base = key
    while base.startswith(MODIFIERS) and len(base) > base.index("+") + 1:
        base = base[base.index("+") + 1:]
    return (len(base) == 1 and base != " ") or base in _key_names() or key in _key_names()


def check_keymap(keymap: dict[str, str]) -> str | None:
    """Why ``keymap`` cannot be used (a key no terminal sends, two actions on one key, a key Textual
    keeps), else None; the reason names an action the key map sets, as the file has it."""
    for action, keys in keymap.items():
        for key in keys.split(","):
            if not key_made(key.strip()):
                return f"keys.{action} = {key.strip()!r}: not a key a terminal sends (a character, or a name such as ctrl+x, f5, question_mark)"
    owner: dict[str, str] = {}
    for action in ACTIONS:
        for key in key_of(action, keymap).split(","):
            key = key.strip()
            if key in RESERVED:
                return f"keys.{action} = {key!r}: Textual keeps that key (scrolling, focus, the palette, quit)"
            if key in owner:
                other = owner[key]
                mapped, unmapped = (action, other) if action in keymap else (other, action)
                by_default = "" if unmapped in keymap else " by default"
                return f"keys.{mapped} = {key!r}: {unmapped} has that key too{by_default}"
            owner[key] = action
    return None


#: What each key does, in words, for the help screen and the command palette.
DESCRIPTIONS: dict[str, str] = {
    "next_error": "next error (traceback block) in the log",
    "prev_error": "previous error",
    "hints": "a failed start's hints in full, each with its fix and link (the header cuts the first to two rows)",
    "search": "search the log (Enter finds, Escape closes)",
    "search_next": "next search match",
    "search_prev": "previous search match",
    "toggle_filter": "show only errors and phase lines (toggle)",
    "toggle_follow": "pause / resume following the tail (scrolling to the bottom resumes)",
    "top": "top of the log",
    "bottom": "bottom of the log, following again",
    "toggle_ranks": "per-rank grid instead of the timeline (toggle)",
    "toggle_helpers": "list each helper process (compilers, probes) in the server processes panel (toggle)",
    "cycle_theme": "next theme",
    "screenshot": "save an SVG screenshot",
    "copy_error": "copy the current error block (tmux buffer inside tmux, OSC 52 otherwise; w for a file)",
    "write_report": "write a plain-text report (verdict, timeline, errors with tracebacks)",
    "help": "this help",
    "quit": "quit",
    "stop": "stop the server (asks first; SIGINT, then SIGTERM, then SIGKILL)",
    "relaunch": "relaunch the same command as the next attempt",
    "edit_relaunch": "edit the command line and environment, then relaunch",
    "attempts": "the attempts panel: each attempt's outcome and what changed",
    "checks": "the preflight checks panel",
    "kill_holders": "kill processes that are not ours but hold GPU memory",
    "apply_fix": "the relaunch editor with the hint's fix applied",
    "next_node": "the log of one node, then the next, then every node's",
}


class KeyedApp(Protocol):
    """What the footer needs of its app: the palette, and the entries to show (key, shown, words)."""

    palette: Palette

    def footer_entries(self) -> list[tuple[str, str, str]]: ...


class ScrollingModal(ModalScreen[None]):
    """A modal of one text under a title, which scrolls when the terminal is too short for it
    (``?``'s keys, ``i``'s hints)."""

    DEFAULT_CSS = """
    ScrollingModal { align: center middle; }
    ScrollingModal > VerticalScroll { width: 104; max-width: 96%; height: auto; max-height: 90%;
                                      border: round $primary; padding: 0 2; background: $panel;
                                      border-subtitle-align: right; }
    ScrollingModal Static { width: 100%; }
    """
    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, title: str, body: RenderableType, scroll_id: str) -> None:
        super().__init__()
        self.title_text, self.body, self.scroll_id = title, body, scroll_id

    def compose(self) -> ComposeResult:
        with VerticalScroll(id=self.scroll_id) as scroll:
            scroll.border_title = self.title_text
            scroll.border_subtitle = "↑↓ PgUp PgDn scroll · Esc close"
            yield Static(self.body)

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()


class HelpScreen(ScrollingModal):
    """``?``: every key and what it does."""

    BINDINGS = [Binding("question_mark", "dismiss", "Close")]

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()  # descriptions wrap under themselves on a narrow terminal
        for key, description in [*rows, ("", ""), ("ctrl+p", "command palette (the same actions)"),
                                 ("escape", "close this help")]:
            table.add_row(key, description)
        super().__init__("Watchtower keys", table, "help")
        self.rows = rows


class KeyBar(Widget):
    """The footer: the main keys, as many whole entries as fit (``?`` and ``q`` always)."""

    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $panel; }
    """
    ALWAYS = ("help", "quit")  # actions

    #: The entries the last frame drew from.
    _drawn: list[tuple[str, str, str]] | None = None

    def sync(self) -> None:
        """Redraw only where the entries changed: the GPUs' holders come and go with a sample (``k``),
        and a sample comes each second; the bar rarely changes with it."""
        if self.app.footer_entries() != self._drawn:  # type: ignore[attr-defined]
            self.refresh()

    def render(self) -> Text:
        app: KeyedApp = self.app  # type: ignore[assignment]
        palette = app.palette
        entries = self._drawn = app.footer_entries()
        keymap = getattr(app, "keymap", None)
        always = {key_of(action, keymap) for action in self.ALWAYS}
        width = self.size.width
        kept = [e for e in entries if e[0] in always]
        used = sum(_entry_width(e) for e in kept)
        # importance: the first key (errors), then the launcher's, then the rest in order
        ranked = entries[:1] + [e for e in entries if e not in app_keys(app)] + entries[1:]
        for entry in dict.fromkeys(ranked):
            if entry in kept:
                continue
            if used + _entry_width(entry) <= width:
                kept.append(entry)
                used += _entry_width(entry)
        text = Text(no_wrap=True, overflow="crop", end="")
        shown = [e for e in entries if e[0] not in always] + [e for e in entries if e[0] in always]
        for entry in shown:
            if entry in kept:
                _key, label, description = entry
                text.append(f" {label} ", palette.style("title") + palette.style("cursor"))
                text.append(f" {description} ", palette.style("dim"))
        return text


def app_keys(app: KeyedApp) -> list[tuple[str, str, str]]:
    """The footer's entries of these keys, as the key map (``[keys]`` in the config file) binds them."""
    keymap = getattr(app, "keymap", None)
    return [(key_of(b.action, keymap), shown_key(b.action, keymap), b.description) for b in KEYS if b.show]


def _entry_width(entry: tuple[str, str, str]) -> int:
    return len(entry[1]) + len(entry[2]) + 4
