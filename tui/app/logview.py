"""The live log: a virtual view over the session's bounded scrollback.

Only the visible lines are ever rendered (Textual's line API), so 100k kept lines
cost nothing to scroll through. Log text is put in ``rich.text.Text`` objects as
plain strings — never parsed as markup — so ``[bold]`` or ``[/]`` in a log line is
shown as those characters; escape sequences were already removed by the core.
"""

from __future__ import annotations

import bisect

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.cluster import ClusterSession
from tui.core.lines import clean
from tui.session import ERROR, MARK, NORMAL, PHASE, PROGRESS, WARNING, LogEntry, WatchSession

MARKERS = {ERROR: "✖", WARNING: "▲", PHASE: "▶", PROGRESS: "↻", MARK: "─", NORMAL: " "}
MAX_DISPLAY = 4000  # characters of one line drawn (the line itself is kept whole)
NODE_WIDTH = 10  # the node column of several nodes' merged log


class LogView(ScrollView, can_focus=True):
    """Follows the tail unless paused or scrolled up; can show only errors and phase lines."""

    DEFAULT_CSS = """
    LogView { height: 1fr; scrollbar-size-vertical: 1; scrollbar-size-horizontal: 0; }
    """

    #: Scroll to each new line as it arrives.
    follow: reactive[bool] = reactive(True)
    #: Show only errors, phase lines and Watchtower's own markers.
    only_notable: reactive[bool] = reactive(False)
    #: The highlighted line (error navigation, search), by scrollback seq; -1 for none.
    cursor: reactive[int] = reactive(-1)
    #: Case-insensitive search term to highlight ("" for none).
    search: reactive[str] = reactive("")

    def __init__(self, session: WatchSession | ClusterSession, **kwargs) -> None:
        super().__init__(**kwargs)
        #: What it shows: a session's scrollback, or several nodes' merged log (a node column then).
        self.session = session
        self._widest = 0
        self._measured = 0  # seq up to which _widest has been measured
        self._notable: list[int] = []
        self._auto_scroll = False
        self._line_base: Style | None = None  # the widget's style while its lines are drawn
        # The line under the cursor and the line looked at (with its row on screen), as the log can
        # find them again after lines went above them (a node's backlog merged in by time): ``_hold``.
        self._cursor_anchor: object = None
        self._view_anchor: tuple[object, int] | None = None

    def show(self, session: WatchSession | ClusterSession) -> None:
        """Show another log (one node's own, or every node's merged): from its end, following."""
        self.session = session
        self._widest = self._measured = 0
        self._notable = []
        self._cursor_anchor = self._view_anchor = None
        self.cursor = -1
        self.follow = True
        self.sync()

    # ---------------------------------------------------------------- model -> rows

    @property
    def row_count(self) -> int:
        if self.only_notable:
            return len(self._notable)
        scrollback = self.session.scrollback
        return len(scrollback) + (1 if scrollback.progress is not None else 0)

    def seq_at(self, row: int) -> int | None:
        """The scrollback seq shown on ``row`` (None for the live progress line)."""
        if self.only_notable:
            return self._notable[row] if 0 <= row < len(self._notable) else None
        scrollback = self.session.scrollback
        if 0 <= row < len(scrollback):
            return scrollback.first_seq + row
        return None

    def row_of(self, seq: int) -> int | None:
        if self.only_notable:
            index = bisect.bisect_left(self._notable, seq)
            return index if index < len(self._notable) and self._notable[index] == seq else None
        row = seq - self.session.scrollback.first_seq
        return row if 0 <= row < len(self.session.scrollback) else None

    def entry_at(self, row: int) -> LogEntry | None:
        seq = self.seq_at(row)
        if seq is not None:
            return self.session.scrollback.get(seq)
        scrollback = self.session.scrollback
        if not self.only_notable and row == len(scrollback):
            return scrollback.progress
        return None

    def sync(self) -> None:
        """New lines arrived (called at most ~15 times a second): resize, follow (or keep the lines
        looked at where they were on screen, wherever lines went above them), repaint."""
        scrollback = self.session.scrollback
        cursor_anchor, view_anchor = self._cursor_anchor, self._view_anchor
        self._widest = min(MAX_DISPLAY, max(self._widest, scrollback.widest(self._measured)))
        self._measured = scrollback.end_seq
        if self.only_notable:
            self._notable = scrollback.notable_seqs()
        if self.cursor >= 0:
            cursor = scrollback.seq_of(cursor_anchor)
            self.cursor = -1 if cursor is None else cursor
        gutter = self._gutter_width()
        self.virtual_size = Size(self._widest + gutter + 1, self.row_count)
        if self.follow:
            self.scroll_to_end()
        elif view_anchor is not None:
            looked_at, on_screen = view_anchor
            seq = scrollback.seq_of(looked_at)
            row = None if seq is None else self.row_of(seq)
            if row is not None and row - on_screen != round(self.scroll_y):
                self.scroll_quietly(max(0, row - on_screen))
        self._hold()
        self.refresh()

    def _hold(self) -> None:
        """Remember the line under the cursor, and the line looked at — the cursor's if on screen,
        else the top one — with its row on screen, as the log finds them again (``sync``)."""
        scrollback = self.session.scrollback
        self._cursor_anchor = scrollback.anchor(self.cursor) if self.cursor >= 0 else None
        top = round(self.scroll_y)
        looked_at = self.row_of(self.cursor) if self.cursor >= 0 else None
        if looked_at is None or not top <= looked_at < top + self.scrollable_content_region.height:
            looked_at = top
        seq = self.seq_at(looked_at)
        self._view_anchor = None if seq is None else (scrollback.anchor(seq), looked_at - top)

    def on_resize(self) -> None:
        if self.follow:
            self.scroll_to_end()

    def scroll_to_end(self) -> None:
        """Put the last line on screen: now, and again once the layout settles (panels above
        the log may grow in the same refresh and shrink it, clamping a scroll made before)."""
        self._scroll_to_end()
        self.call_after_refresh(self._scroll_to_end)

    def _scroll_to_end(self) -> None:
        if self.follow:
            self.scroll_quietly(max(0, self.row_count - self.scrollable_content_region.height))

    def scroll_quietly(self, y: int) -> None:
        """Scroll without the scroll itself counting as the user pausing or resuming."""
        self._auto_scroll = True
        try:
            self.scroll_to(y=y, animate=False, immediate=True, force=True)  # (before the scrollbars know the new size)
        finally:
            self._auto_scroll = False

    def _gutter_width(self) -> int:
        scrollback = self.session.scrollback
        last = scrollback.get(scrollback.end_seq - 1)
        return len(str(max(1, last.number if last else 1))) + 3 + (NODE_WIDTH + 1 if self.merged else 0)

    @property
    def merged(self) -> bool:
        """Several nodes' lines: each led by its node (a node set's merged log, not one node's)."""
        return isinstance(self.session, ClusterSession) and not self.session.single

    # ---------------------------------------------------------------- follow / pause

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) == round(new_value):
            return
        self._hold()
        if self._auto_scroll:
            return
        at_bottom = round(new_value) >= self.max_scroll_y
        if at_bottom and new_value > old_value:
            self.follow = True  # scrolling back to the bottom resumes following
        elif new_value < old_value and not at_bottom:
            self.follow = False  # (a view that grew clamps the scroll to the bottom: not a pause)

    def watch_follow(self, follow: bool) -> None:
        if follow:
            self.scroll_to_end()

    def watch_only_notable(self) -> None:
        anchor = self.cursor if self.cursor >= 0 else None
        self._notable = self.session.scrollback.notable_seqs()
        self.sync()
        if anchor is not None:
            self.show_seq(anchor)

    def watch_cursor(self) -> None:
        self._hold()
        self.refresh()

    def watch_search(self) -> None:
        self.refresh()

    def show_seq(self, seq: int, context_above: float = 1 / 3) -> bool:
        """Put the line ``seq`` under the cursor, in view; stops following. False if not shown.
        Scrolled so that ``context_above`` of the view lies above it (an exception line: most of it,
        its traceback)."""
        row = self.row_of(seq)
        if row is None:
            return False
        self.follow = False
        self.cursor = seq
        height = self.scrollable_content_region.height or 1
        if not (self.scroll_y <= row < self.scroll_y + height):
            self.scroll_quietly(max(0, row - int(height * context_above)))
        self.refresh()
        return True

    # ---------------------------------------------------------------- drawing

    def render_lines(self, crop: Region) -> list[Strip]:
        self._line_base = self.rich_style  # (one look-up of the widget's style for the lines drawn now)
        try:
            return super().render_lines(crop)
        finally:
            self._line_base = None

    def render_line(self, y: int) -> Strip:
        """One row: [node] number, marker, text, as segments made directly (a row is drawn for
        every new line in a flood: no rich ``Text`` to build and render per row)."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        entry = self.entry_at(scroll_y + y)
        base = self.rich_style if self._line_base is None else self._line_base
        if entry is None:
            return Strip.blank(width, base)
        style = self.app.palette.style  # type: ignore[attr-defined]
        on_cursor = entry.seq >= 0 and entry.seq == self.cursor
        cursor = style("cursor") if on_cursor else None
        segments: list[Segment] = []

        def part(text: str, part_style: Style) -> None:
            if text:
                segments.append(Segment(text, base + (part_style + cursor if cursor is not None else part_style)))

        gutter = self._gutter_width()
        if self.merged:
            part(f"{clean(entry.node):<{NODE_WIDTH}.{NODE_WIDTH}} ", style("title"))
            gutter -= NODE_WIDTH + 1
        part(("" if entry.style == MARK else str(entry.number)).rjust(gutter - 2), style("line_number"))
        part(f" {MARKERS.get(entry.style, ' ')}", style(entry.style) if entry.style != NORMAL else style("line_number"))
        part(" ", Style())
        body = entry.text[:MAX_DISPLAY].expandtabs(8)[scroll_x : scroll_x + width]  # literal: never markup
        body_style, term = style(entry.style), self.search.lower()
        start = 0
        if term:
            lowered, match = body.lower(), body_style + style("match")
            found = lowered.find(term)
            while found >= 0:
                part(body[start:found], body_style)
                part(body[found : found + len(term)], match)
                start = found + len(term)
                found = lowered.find(term, start)
        part(body[start:], body_style)
        return Strip(segments).adjust_cell_length(width, base)

    # ---------------------------------------------------------------- queries for the app

    def current_entry(self) -> LogEntry | None:
        return self.session.scrollback.get(self.cursor) if self.cursor >= 0 else None

    def matches(self, term: str, forward: bool) -> int | None:
        """The seq of the next (or previous) line containing ``term`` after the cursor, wrapping."""
        term = term.lower()
        scrollback = self.session.scrollback
        rows = self._notable if self.only_notable else range(scrollback.first_seq, scrollback.end_seq)
        if not len(rows):
            return None
        seqs = list(rows) if forward else list(reversed(rows))
        start = self.cursor
        if start < 0:
            start = seqs[0] - (1 if forward else -1)
        after = [s for s in seqs if (s > start if forward else s < start)]
        for seq in after + seqs:
            entry = scrollback.get(seq)
            if entry is not None and term in entry.text.lower():
                return seq
        return None
