"""The Watchtower dashboard: header, phase timeline, rank grid, GPU panel, live log, footer.

The app renders a :class:`~tui.session.WatchSession`; it parses nothing. The session
tells it what changed at most ~15 times a second and each widget redraws from the
session's models.

Extending it (the launcher does): ``add_key`` binds one of ``keys.EXTRA_KEYS``'s actions to a
callback (its key as the key map says; listed in the footer, help and command palette), ``panels=`` mounts extra widgets above the
log, ``before_quit`` holds hooks that may veto ``q`` (e.g. "a launched server is still
running: stop it?").
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.filter import Monochrome, NoColor
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Static

from tui.app.clipboard import copy_text
from tui.app.gpus import GpuPanel
from tui.app.header import HintsScreen, VerdictHeader
from tui.app.keys import ACTIONS, DESCRIPTIONS, KEYS, HelpScreen, KeyBar, app_keys, key_of, shown_key
from tui.app.logview import LogView
from tui.app.messages import Changes, NodesChanged
from tui.app.nodes import BarrierPanel, ClusterPanel, NodeRows
from tui.app.processes import ProcessTree
from tui.app.startups import StartupsPanel
from tui.app.themes import Colourless, Palette, monochrome
from tui.app.timeline import PhaseTimeline, RankGrid
from tui.cluster import ClusterSession
from tui.core.lines import clean
from tui.core.verdict import READY, STOPPED, STOPPING, Verdict
from tui.core.wording import plural
from tui.session import ERROR, LogEntry, Update, WatchSession
from tui.session.models import Topic
from tui.session.judging import Judging, VerdictChanged

QuitHook = Callable[[], "bool | Awaitable[bool]"]
StopProcesses = Callable[[Sequence[int]], Awaitable[list[str]]]


async def _stop_local(pids: Sequence[int]) -> list[str]:
    """``proctable.stop_pids``, imported when it is first asked for: psutil's import is 5 ms of a
    watch's first paint, and most watches end without stopping anything."""
    from tui.launch.proctable import stop_pids

    return await stop_pids(pids)


class LogStatus(Static):
    """One line above the log: counts, follow state, filter, search."""

    DEFAULT_CSS = """
    LogStatus { height: 1; }
    """

    def __init__(self, session: WatchSession, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session

    def render(self) -> Text:
        app: WatchtowerApp = self.app  # type: ignore[assignment]
        palette = app.palette
        log = app.log_view
        scrollback = log.session.scrollback
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append(" Log ", palette.style("title"))
        if not app.nodes.single:  # (one log: no other node's lines to filter to)
            text.append(f"{app.node_filter} only ({app.key_for('next_node')}: next node) · " if app.node_filter
                        else f"all nodes ({app.key_for('next_node')}: one node) · ",
                        palette.style("behind"))
        last = scrollback.get(scrollback.end_seq - 1)
        current = last.number if last is not None and app.nodes.single else scrollback.end_seq
        parts = [plural(current, "line")]  # one log: line numbers restart with each attempt's log
        if app.nodes.single and scrollback.end_seq > current and self.session.info.attempt > 1:
            parts[0] += f" in v{self.session.info.attempt} ({scrollback.end_seq:,} with earlier attempts)"
        if scrollback.dropped:
            parts.append(f"{scrollback.dropped:,} oldest dropped (kept {len(scrollback):,})")
        states = [app.session.state] if app.node_filter else [s.state for s in app.nodes.nodes.values()]
        errors, warnings = sum(len(s.errors) for s in states), sum(s.warnings for s in states)
        if errors:
            parts.append(plural(errors, "error"))
        if warnings:
            parts.append(plural(warnings, "warning"))
        text.append(" · ".join(parts), palette.style("dim"))
        text.append("  ")
        text.append("▶ following" if log.follow else "⏸ paused (space resumes)", palette.style("done" if log.follow else "running"))
        if log.only_notable:
            text.append("  filter: errors + phases", palette.style("running"))
        if log.search:
            text.append(f"  search: {log.search!s} (n/N)", palette.style("match"))
        return text


class SearchBar(Input):
    """``/``: type a term, Enter jumps to the first match, Escape closes."""

    DEFAULT_CSS = """
    SearchBar { dock: bottom; display: none; height: 3; }
    SearchBar.-open { display: block; }
    """
    BINDINGS = [Binding("escape", "close", "Close", show=False)]

    def action_close(self) -> None:
        self.remove_class("-open")
        self.app.log_view.focus()  # type: ignore[attr-defined]


def _collection_back_on() -> None:
    """The garbage collector on again, once the first frame is drawn, where the start turned it off
    (``tui.cli.run_command``), with what the start allocated frozen first: that lives for the whole
    run, and the collector's first passes over it (a young one, then an older one) took 70 ms
    between the first frame and the log's first line on screen (issue 35). What a start left as
    cyclic garbage (a few thousand objects, once) is kept with it."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


class WatchtowerApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "Watchtower"
    BINDINGS: ClassVar[list[BindingType]] = [*KEYS]
    #: Whether F (``apply_fix``) applies a hint's fix (only an app that can relaunch: the launcher).
    can_apply_fix = False
    HORIZONTAL_BREAKPOINTS = [(0, "-tiny"), (70, "-narrow"), (120, "-wide"), (170, "-very-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-cramped"), (20, "-short"), (34, "-tall")]

    def __init__(
        self,
        session: WatchSession,
        palettes: dict[str, Palette],
        theme: str,
        *,
        gpus_enabled: bool = True,
        panels: Iterable[Widget] = (),
        output_dir: str | os.PathLike[str] = ".",
        autostart: bool = True,
        nodes: ClusterSession | None = None,
        keymap: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        from tui.core.config import active

        #: ``[keys]`` of the config file: action -> key(s); the bindings, help and footer follow it
        self.keymap = dict(active().keys if keymap is None else keymap)
        if self.keymap:
            self.set_keymap(self.keymap)
        #: The attempt across its nodes — one log is a node set of one (``ClusterSession.of_one``).
        #: The header's verdict is its; with several nodes the barrier and node rows and the merged
        #: log too, and ``session`` is the selected node's (the timeline, ranks, GPUs and processes).
        self.nodes = nodes if nodes is not None else ClusterSession.of_one(session)
        self.selected = next(iter(self.nodes.nodes), None)  # the node whose panels are shown
        self.node_filter: str | None = None  # the log shows this node's lines only (``o``); None: all
        #: The panels follow the node the verdict names (the one in trouble) until the operator picks one (``o``).
        self.node_chosen = False
        self._changes = Changes()  # what the nodes changed since the app last drew (``NodesChanged``)
        self._gpus_due = False  # the shown node sampled its GPUs: drawn on the next second
        #: What else moves with time alone (a launch's stop countdown): drawn on the app's second.
        self.every_second: list[Callable[[], object]] = []
        self.session = session
        if self.no_color:  # NO_COLOR (read by Textual): bold, reverse and glyphs carry the meaning
            palettes = {name: monochrome(palette) for name, palette in palettes.items()}
        self.palettes = palettes
        self.palette = palettes[theme]
        self.gpus_enabled = gpus_enabled
        self.output_dir = Path(output_dir)
        self.before_quit: list[QuitHook] = [self._confirm_survivors]
        #: How ``q`` stops a dead server's survivors (and ``k`` GPU leftovers): SIGTERM, then SIGKILL;
        #: None where they run on another host (they are named, with the command, instead).
        self.stop_processes: StopProcesses | None = (
            _stop_local if all(n.info.host == "localhost" for n in self.nodes.nodes.values()) else None
        )
        self._extra_panels = list(panels)
        self._extra_keys: dict[str, Callable[[], object]] = {}  # action (keys.EXTRA_KEYS) -> callback
        self._autostart = autostart
        self._drawn = False  # the first frame is on the terminal (Textual's Ready)
        self.show_ranks = False
        self.last_report: Path | None = None
        self.last_screenshot: Path | None = None
        for palette in palettes.values():
            self.register_theme(palette.textual)
        self.theme = self.palette.textual.name
        self._theme_order = list(palettes)
        self._colourless = Colourless()

    def get_line_filters(self):
        filters = super().get_line_filters()
        if self.no_color:  # instead of Textual's greyscale: no colour at all
            filters = [f for f in filters if not isinstance(f, (Monochrome, NoColor))] + [self._colourless]
        return filters

    # ---------------------------------------------------------------- layout

    def compose(self) -> ComposeResult:
        yield VerdictHeader(self.session, self.judging, self.nodes.startup_elapsed, self.nodes.place, id="header")
        with Horizontal(id="top"):
            with Vertical(id="phases"):
                yield PhaseTimeline(self.session, id="timeline")
                yield RankGrid(self.session, id="ranks")
            yield GpuPanel(self.session, self.gpus_enabled, id="gpus")
        with Vertical(id="panels"):
            if not self.nodes.single:  # (one log: no barrier across nodes, no node rows to compare)
                yield BarrierPanel(self.nodes, id="barrier")
                yield NodeRows(self.nodes, id="nodes")
            yield StartupsPanel(self.session, id="startups")
            yield ProcessTree(self.session, id="processes")
            yield from self._extra_panels
        yield LogStatus(self.session, id="log-status")
        yield LogView(self.nodes, id="log")
        yield SearchBar(placeholder="search the log (Enter: find, Escape: close)", id="search")
        yield KeyBar(id="footer")

    @property
    def log_view(self) -> LogView:
        return self.query_one(LogView)

    def on_mount(self) -> None:
        self.watch(self.log_view, "follow", lambda _follow: self._status_changed(), init=False)
        self.log_view.focus()
        self.call_after_refresh(self.log_view.sync)
        self.call_after_refresh(_collection_back_on)  # drawn (a dashboard starts without it: tui.cli)
        self.judging.subscribe(self.on_verdict)
        if not self.nodes.single:  # (one log: no node to switch to, no node rows to tick)
            self.screen.add_class("-nodes")
            self.add_key("next_node", self.action_next_node)
        self.nodes.take_clock()  # (the nodes are judged on this clock: read once a second for all)
        self.set_interval(1.0, self.second)
        self._follow_nodes(self.nodes)
        try:  # SIGTERM (`timeout`, a job scheduler, `kill`) ends the dashboard as q does: the terminal given back
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self._terminated)
        except (RuntimeError, ValueError, NotImplementedError):  # (only the main thread's loop may)
            pass

    def _terminated(self) -> None:
        """SIGTERM: gone at once with 143 (128 + SIGTERM), no question asked (a launched server
        keeps running: the wiring names it), the verdict so far said as the terminal comes back."""
        verdict = self.judging.evaluate().verdict
        self.exit(128 + signal.SIGTERM, message=Text(f"interrupted (SIGTERM); the verdict so far: {clean(verdict.text)}"))

    async def on_unmount(self) -> None:
        try:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)
        except (RuntimeError, ValueError, NotImplementedError):
            pass
        await self.nodes.stop()

    def _status_changed(self) -> None:
        self.query_one(LogStatus).refresh()

    # ---------------------------------------------------------------- the nodes

    def _follow_nodes(self, nodes: ClusterSession) -> None:
        nodes.subscribe(self._nodes_changed)
        if nodes.nodes and not nodes.single:  # (one log: its node is selected from the start; no node rows to mark)
            self.select_node(next(iter(nodes.nodes)))
        if self._autostart and self._drawn:  # (a relaunch's nodes: the screen is up)
            self.call_after_refresh(nodes.start)

    def on_ready(self) -> None:
        """The first frame is on the terminal: the nodes start now (their trackers prime, ~20 ms of
        regex set-up, then the logs are read). Not after the next refresh: that waited out Textual's
        refresh interval, 25 ms before the log's first line could be read (issue 35)."""
        self._drawn = True
        if self._autostart:
            self.nodes.start()

    def _nodes_changed(self, node: str | None, update: Update) -> None:
        """A node's flush (``node``), or the Slurm job's (None): gathered, and the app told."""
        self._changes.add(node, update.topics)
        self.post_message(NodesChanged())

    def on_nodes_changed(self, _message: NodesChanged) -> None:
        """What changed since the app last drew, drawn once: the selected node's panels, the merged
        log, the barrier and node rows, the header."""
        changes = self._changes.take()
        if not changes or not self.is_running or not self.query(KeyBar):  # (drawn already, or the app is closing:
            # its widgets go one by one, the key bar's maybe last)
            return
        nodes = self.nodes
        panels = False  # the barrier and node rows to redraw
        for node, topics in changes.items():
            if node is not None and node not in nodes.nodes:  # (the attempt before a relaunch's)
                continue
            if node is not None and self.selected not in nodes.nodes:
                self.select_node(next(iter(nodes.nodes)))  # a Slurm job's nodes came: the first one's panels
            if node is None or node == self.selected:
                self._draw(topics)
            elif topics != {"gpu"}:  # (a GPU sample changes another node's row, no more)
                if "log" in topics and self.node_filter is None:
                    self.log_view.sync()
                self.query_one(VerdictHeader).refresh()
                self.query_one(LogStatus).refresh()
            # (a GPU sample alone waits for the once-a-second redraw: each node samples on its own second)
            panels = panels or bool(topics & {"state", "log", "job", "process", "connection"})
        if panels and self.query(NodeRows):
            self._sync_nodes()

    def _sync_nodes(self) -> None:
        """The barrier and node rows from the nodes as judged now (once for both)."""
        panels = self.query(ClusterPanel)
        if panels:  # (one log has none)
            statuses = self.nodes.statuses()
            for panel in panels:
                panel.sync(statuses)

    def second(self) -> None:
        """The screen's one clock. What moves with time alone — the header's elapsed time, a silence
        growing on the timeline, the nodes' quiet times, a launch's stop countdown — and the shown
        node's GPU samples (each node samples on its own second) are drawn together, one frame a
        second at rest; a clock per widget drew up to six (issue 35)."""
        if not self.query(KeyBar):  # (the app is closing)
            return
        with self.nodes.instant():  # judged, then drawn, from one reading of the nodes
            self.nodes.tick()
            self._sync_nodes()
        self.query_one(VerdictHeader).refresh()
        self.query_one(PhaseTimeline).second()
        if self._gpus_due:
            self._draw_gpus()
        for tick in self.every_second:
            tick()

    def _draw_gpus(self) -> None:
        self._gpus_due = False
        self.query_one(GpuPanel).draw_sample()
        self.query_one(KeyBar).sync()  # (k follows the GPUs' holders)

    def select_node(self, name: str) -> None:
        """Show ``name``'s own panels (the header keeps the attempt's verdict)."""
        session = self.nodes.nodes[name]
        self.session, self.selected = session, name
        for widget in (VerdictHeader, PhaseTimeline, RankGrid, GpuPanel, StartupsPanel, ProcessTree, LogStatus):
            self.query_one(widget).session = session  # type: ignore[attr-defined]
        self.query_one(NodeRows).selected = name
        if self.node_filter is not None:
            self.node_filter = name
            self.log_view.show(session)
        self.query_one(StartupsPanel).sync()
        self.query_one(ProcessTree).sync()
        self.refresh_all()
        self._sync_nodes()

    def action_next_node(self) -> None:
        """``o``: the log of every node → only the first node's → the next's → … → every node's."""
        nodes = self.nodes
        if not nodes.nodes:  # (a Slurm job's nodes not there yet; one log has no ``o``)
            return
        names = list(nodes.nodes)
        if self.node_filter is None:
            self.node_filter = names[0]
        else:
            index = names.index(self.node_filter) + 1 if self.node_filter in names else len(names)
            self.node_filter = names[index] if index < len(names) else None
        self.node_chosen = self.node_filter is not None  # (back to every node's: the panels follow the trouble again)
        if self.node_filter is None:
            self.log_view.show(nodes)
        else:
            self.select_node(self.node_filter)
            self.log_view.show(nodes.nodes[self.node_filter])
        self.query_one(LogStatus).refresh()

    def replace_nodes(self, nodes: ClusterSession) -> None:
        """The next attempt across the nodes (a relaunch): its session in place of the last one."""
        self.nodes = nodes
        self.node_filter = None
        self.node_chosen = False
        self._changes.take()  # (the last attempt's)
        header = self.query_one(VerdictHeader)
        header.judging, header.elapsed, header.place = nodes.judging, nodes.startup_elapsed, nodes.place
        nodes.judging.subscribe(self.on_verdict)
        for panel in self.query(ClusterPanel):
            panel.cluster = nodes
        self.query_one(NodeRows).selected = self.selected = None
        self.log_view.show(nodes)
        self._follow_nodes(nodes)
        self.refresh_all()

    def _draw(self, topics: set[Topic] | frozenset[Topic]) -> None:
        if "log" in topics:
            self.log_view.sync()
        if "process" in topics:
            self.query_one(ProcessTree).sync()
        if topics & {"state", "process", "job"}:
            # the keys that matter follow the verdict and a Slurm job's state (x while it runs); the
            # GPUs' holders (k) follow the GPU panel, on the second
            self.query_one(KeyBar).refresh()
        # Not for new lines alone: the header's verdict is pushed (on_verdict) and its clock ticks on its own.
        if topics & {"state", "connection", "process"}:
            self.query_one(VerdictHeader).refresh()
        if topics & {"log", "state", "connection", "process"}:
            self.query_one(LogStatus).refresh()
        if "state" in topics:  # (a flood of plain lines changes no phase: no relayout for it)
            self.query_one(PhaseTimeline).refresh(layout=True)
            self.query_one(RankGrid).refresh(layout=True)
            self.query_one(StartupsPanel).sync()
        if "gpu" in topics:
            self._gpus_due = True
            if not self.query_one(GpuPanel).drew_sample:  # the first sample (or a node just chosen): at once
                self._draw_gpus()

    def on_verdict(self, change: VerdictChanged) -> None:
        """The judging stage decided a new verdict (or hints): the header draws it, the footer
        follows its kind (F, w)."""
        if self.query(KeyBar):  # (not while the app is closing)
            about = change.verdict.node
            if (not self.node_chosen and about in self.nodes.nodes and about != self.selected
                    and change.verdict.kind not in (READY, STOPPED, STOPPING)):
                self.select_node(about)  # the node in trouble's phases, ranks, GPUs and processes
            self.query_one(VerdictHeader).refresh()
            if change.kind_changed:
                self.query_one(KeyBar).refresh()

    def refresh_all(self) -> None:
        for widget in (VerdictHeader, PhaseTimeline, RankGrid, GpuPanel, LogStatus):
            self.query_one(widget).refresh(layout=True)
        self.log_view.refresh()

    def terminal(self, sequence: str) -> None:
        """A launch's bell and window title through Textual's driver (never raw to stdout under Textual)."""
        if "\a" in sequence:
            self.bell()
        driver = getattr(self, "_driver", None)
        title = sequence.replace("\a", "", 1) if sequence.startswith("\a") else sequence
        if driver is not None and title:
            driver.write(title)
            driver.flush()

    # ---------------------------------------------------------------- extension points

    def add_key(self, action: str, callback: Callable[[], object]) -> None:
        """Bind ``action``'s key (``keys.EXTRA_KEYS``, as the key map moves it) to ``callback`` (sync
        or async); listed in the help and the palette, and in the footer if the table says so."""
        binding = ACTIONS[action]
        self._extra_keys[action] = callback
        self.bind(key_of(action, self.keymap), f"extra('{action}')", description=binding.description,
                  show=binding.show)
        if self.is_running:
            self.query_one(KeyBar).refresh()

    async def action_extra(self, action: str) -> None:
        result = self._extra_keys[action]()
        if inspect.isawaitable(result):
            await result

    @property
    def fix_key(self) -> str | None:
        """The key the header offers for applying a hint's fix, as mapped; None where no key does."""
        return self.key_for("apply_fix") if self.can_apply_fix else None

    def key_for(self, action: str) -> str:
        """``action``'s key as shown, as the key map binds it: for the words that name a key."""
        return shown_key(action, self.keymap)

    def footer_entries(self) -> list[tuple[str, str, str]]:
        """(key, key as shown, short description) of the keys the footer shows, in order; ``w``
        (the report) once the startup has failed or died, when it is what one does next, and ``i``
        (the hints in full) where the header shows one."""
        entries = app_keys(self)
        if self.is_running and self.verdict().kind in ("failed", "dead", "refused"):
            copy, report = key_of("copy_error", self.keymap), key_of("write_report", self.keymap)
            after = next((i + 1 for i, entry in enumerate(entries) if entry[0] == copy), len(entries))
            # after y (copy the error): both follow a failure
            entries.insert(after, (report, shown_key("write_report", self.keymap), "Report"))
            if self.query_one(VerdictHeader).pushed_hints():
                entries.insert(1, (key_of("hints", self.keymap), shown_key("hints", self.keymap), "Hints"))
        entries += [self.extra_entry(action) for action in self._extra_keys if ACTIONS[action].show]
        return entries

    def extra_entry(self, action: str, description: str | None = None) -> tuple[str, str, str]:
        """The footer's entry of an added key: (key, key as shown, ``description`` or the table's)."""
        return (key_of(action, self.keymap), shown_key(action, self.keymap),
                description or ACTIONS[action].description)

    def key_rows(self) -> list[tuple[str, str]]:
        """The help's rows: every key as mapped, and what it does."""
        actions = [b.action for b in KEYS] + list(self._extra_keys)
        return [(shown_key(action, self.keymap), DESCRIPTIONS[action]) for action in actions]

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for binding in KEYS:
            action = getattr(self, f"action_{binding.action}")
            help_text = f"{DESCRIPTIONS.get(binding.action, '')} (key: {shown_key(binding.action, self.keymap)})"
            yield SystemCommand(binding.description, help_text, action)
        for action, callback in self._extra_keys.items():
            yield SystemCommand(ACTIONS[action].description,
                                f"{DESCRIPTIONS[action]} (key: {shown_key(action, self.keymap)})", callback)

    # ---------------------------------------------------------------- actions: log

    def _error_seqs(self) -> list[int]:
        """The log view's position of each error's exception line (those still kept): one node's,
        or every node's in the merged log."""
        return sorted({entry.seq for entry in self.log_view.session.error_entries()})

    def _goto_error(self, forward: bool) -> None:
        seqs = self._error_seqs()
        if not seqs:
            self.notify("No errors so far", timeout=2)
            return
        cursor = self.log_view.cursor
        if forward:
            target = next((s for s in seqs if s > cursor), seqs[0])
        else:
            target = next((s for s in reversed(seqs) if s < cursor), seqs[-1])
        if self.log_view.only_notable or self.log_view.row_of(target) is not None:
            self.log_view.show_seq(target, context_above=3 / 4)  # the traceback above it, in view

    def action_next_error(self) -> None:
        self._goto_error(True)

    def action_prev_error(self) -> None:
        self._goto_error(False)

    def action_search(self) -> None:
        bar = self.query_one(SearchBar)
        bar.add_class("-open")
        bar.value = self.log_view.search
        bar.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if not isinstance(event.input, SearchBar):
            return
        event.input.remove_class("-open")
        self.log_view.search = event.value
        self.log_view.focus()
        self.query_one(LogStatus).refresh()
        if event.value:
            self._search(forward=True)

    def _search(self, forward: bool) -> None:
        term = self.log_view.search
        if not term:
            self.action_search()
            return
        seq = self.log_view.matches(term, forward)
        if seq is None:
            self.notify(f"Not found: {term}", timeout=2)
        else:
            self.log_view.show_seq(seq)

    def action_search_next(self) -> None:
        self._search(True)

    def action_search_prev(self) -> None:
        self._search(False)

    def action_toggle_filter(self) -> None:
        self.log_view.only_notable = not self.log_view.only_notable
        self.query_one(LogStatus).refresh()

    def action_toggle_follow(self) -> None:
        self.log_view.follow = not self.log_view.follow
        self.query_one(LogStatus).refresh()

    def action_top(self) -> None:
        self.log_view.follow = False
        self.log_view.scroll_quietly(0)
        self.query_one(LogStatus).refresh()

    def action_bottom(self) -> None:
        self.log_view.follow = True
        self.log_view.scroll_to_end()  # also when it was following already

    # ---------------------------------------------------------------- actions: views and output

    def action_toggle_ranks(self) -> None:
        self.show_ranks = not self.show_ranks
        self.set_class(self.show_ranks, "-ranks")

    def action_toggle_helpers(self) -> None:
        panel = self.query_one(ProcessTree)
        panel.show_helpers = not panel.show_helpers
        panel.sync()

    def action_cycle_theme(self) -> None:
        order = self._theme_order
        current = self.palette.name
        name = order[(order.index(current) + 1) % len(order)] if current in order else order[0]
        self.set_palette(name)
        self.notify(f"Theme: {name}", timeout=1.5)

    def set_palette(self, name: str) -> None:
        self.palette = self.palettes[name]
        self.theme = self.palette.textual.name
        self.refresh_all()

    def watch_theme(self, theme: str) -> None:
        """A theme picked from Textual's own theme palette: use its styles too when it is ours."""
        if theme in self.palettes and self.palettes[theme] is not self.palette:
            self.palette = self.palettes[theme]
            self.refresh_all()

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """``s``: an SVG of the screen in the output folder (``--output-dir``), its name stamped."""
        folder = Path(path) if path is not None else self.output_dir
        folder.mkdir(parents=True, exist_ok=True)
        name = filename or time.strftime("watchtower-%Y%m%d-%H%M%S.svg")
        path = self.save_screenshot(filename=name, path=str(folder.resolve()))
        self.last_screenshot = Path(path)
        self.notify(f"Screenshot saved: {path}", timeout=4)

    def _entry_session(self, entry: LogEntry | None) -> WatchSession:
        """The node session a log line belongs to (the merged log's lines carry their node)."""
        if entry is not None and entry.node and entry.node in self.nodes.nodes:
            return self.nodes.nodes[entry.node]
        return self.session

    def current_error(self):
        """The error the cursor is in, else the first fatal one, else the first one."""
        entry = self.log_view.current_entry()
        session = self._entry_session(entry)
        errors = session.state.errors
        if entry is not None and entry.style == ERROR:
            for error in errors:
                if error.covers(entry.number):
                    return error
        return session.state.first_error or (errors[0] if errors else None)

    async def action_copy_error(self) -> None:
        error = self.current_error()
        if error is None:
            self.notify("No error to copy", timeout=2)
            return
        block = self._entry_session(self.log_view.current_entry()).block_text(error)
        what = f"{plural(len(block.lines), 'line')} ({error.kind}, line {error.line})"
        said = await copy_text(self, block.text() or f"{error.title}\n", what)
        note = block.note()
        self.notify(f"{said}" + (f". {note}" if note else ""), severity="warning" if note else "information", timeout=6)

    def action_write_report(self) -> None:
        from tui.present.report import build_report  # (here: it imports the hints module, not needed for a first frame)

        self.output_dir.mkdir(parents=True, exist_ok=True)
        path = self.output_dir.resolve() / time.strftime("watchtower-report-%Y%m%d-%H%M%S.txt")
        try:
            path.write_text(build_report(self.session, self.verdict()), encoding="utf-8")
        except OSError as exc:
            self.notify(f"Cannot write {path}: {exc.strerror or exc}", severity="error", timeout=5)
            return
        self.last_report = path
        self.notify(f"Report written: {path}", timeout=4)

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.key_rows()))

    def action_hints(self) -> None:
        self.push_screen(HintsScreen(self.query_one(VerdictHeader).pushed_hints(), self.palette, self.fix_key))

    def survivors(self) -> list[tuple[str, int, str]]:
        """The server's processes still alive after its main process ended — ``(host, pid, words)``
        each —, as each node's writer discovery last saw them: what quitting would leave behind."""
        return [(node.info.host, survivor.pid, survivor.words)
                for node in self.nodes.nodes.values() for survivor in node.process.writers.survivors]

    def _confirm_survivors(self) -> bool:
        """Before quitting: a dead server's processes that still run (its ranks, holding their GPUs)
        are named, and stopped on ``s`` (the way ``k`` stops GPU leftovers) or left on ``l``."""
        left = self.survivors()
        if not left:
            return True
        from tui.app.launch_modals import ConfirmScreen  # (here: the launcher's modules cost a watch's start 1 s)
        from tui.launch.proctable import STOP_GRACE_S

        stop = self.stop_processes
        lines = "\n".join(f"  {'' if host == 'localhost' else host + ': '}{words}" for host, _, words in left)
        question = (f"The server's main process is gone, but {plural(len(left), 'of its processes', 'of its processes')} still run"
                    f" (holding GPU memory, maybe):\n{lines}")
        choices = [("l", "leave them running and quit")]
        if stop is not None:
            choices.insert(0, ("s", f"stop them (SIGTERM, then SIGKILL after {STOP_GRACE_S:g} s), then quit"))
        else:
            question += "\n" + "\n".join(f"Stop them on {host}: kill {pids}" for host, pids in _by_host(left).items())

        def answer(key: str | None) -> None:
            if key == "l":
                self.exit(self.exit_code_for_state())
            elif key == "s" and stop is not None:

                async def stop_then_exit() -> None:
                    self.notify(f"stopping {plural(len(left), 'process')}…", timeout=STOP_GRACE_S + 2)
                    for error in await stop([pid for _, pid, _ in left]):
                        self.notify(clean(error), severity="error", timeout=6)
                    self.exit(self.exit_code_for_state())

                self.run_worker(stop_then_exit(), group="survivors")

        self.push_screen(ConfirmScreen(question, choices), answer)
        return False

    async def action_quit(self) -> None:
        for hook in self.before_quit:
            answer = hook()
            if inspect.isawaitable(answer):
                answer = await answer
            if not answer:
                return
        self.exit(self.exit_code_for_state())

    @property
    def judging(self) -> Judging:
        """Whose verdict the header shows: the attempt's across its nodes (one log's: its node's,
        which a launch took over with its own evidence)."""
        return self.nodes.judging

    def verdict(self) -> Verdict:
        """The verdict the header shows, the report writes and the exit status follows, as the
        judging stage last decided it."""
        return self.judging.verdict

    def exit_code_for_state(self) -> int:
        return self.judging.evaluate().verdict.exit_status  # decided now: nothing pending trails it


def _by_host(left: list[tuple[str, int, str]]) -> dict[str, str]:
    """The survivors' pids by host, as ``kill`` takes them."""
    hosts: dict[str, list[str]] = {}
    for host, pid, _ in left:
        hosts.setdefault(host, []).append(str(pid))
    return {host: " ".join(pids) for host, pids in hosts.items()}
