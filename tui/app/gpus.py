"""The GPU panel: one memory bar per GPU with GiB figures, utilisation, temperature, power, history."""

from __future__ import annotations

import textwrap

from rich.text import Text
from textual.widget import Widget

from tui.core.events import GpuInfo
from tui.present.wording import gib, sparkline
from tui.session import WatchSession


def render_gpus(session: WatchSession, width: int, palette, enabled: bool = True) -> Text:
    board = session.gpus
    sample = board.latest
    title = Text(no_wrap=True, end="")
    title.append(" GPUs", palette.style("title"))
    if sample is not None:
        model = (sample.gpus[0].name or "GPU").removeprefix("NVIDIA ") if sample.gpus else ""
        if sample.simulated:  # --gpus sim, the demo: first, where a narrow panel cannot cut it off
            title.append(" SIMULATED", palette.style("running"))
        title.append(f"  {sample.host}" + (f" · {len(sample.gpus)} × {model}" if model else ""), palette.style("dim"))
        if sample.simulated:
            title.append(" · made-up figures", palette.style("running"))
    lines = [title]
    if not enabled:
        lines.append(Text(" off (--gpus none)", palette.style("dim"), end=""))
    elif board.unavailable is not None and sample is not None:  # the last sample, and why it is the last
        title.append(f" · last sample; {board.unavailable}", palette.style("running"))
        lines.extend(_rows(session, width, palette))
    elif board.unavailable is not None:
        for part in textwrap.wrap(f"unavailable: {board.unavailable}", max(10, width - 2)):
            lines.append(Text(f" {part}", palette.style("running"), end=""))
    elif sample is None and not session.gpus.watched:  # (a node whose GPUs are not asked, or none yet)
        lines.append(Text(" none watched for this node", palette.style("dim"), end=""))
    elif sample is None:
        lines.append(Text(" waiting for the first GPU sample…", palette.style("dim"), end=""))
    else:
        lines.extend(_rows(session, width, palette))
    for line in lines:
        line.truncate(width)
    return Text("\n", end="").join(lines)


def _rows(session: WatchSession, width: int, palette) -> list[Text]:
    sample = session.gpus.latest
    assert sample is not None
    wide = width >= 64
    rows = []
    for gpu in sample.gpus:
        rows.append(_row(gpu, session.gpus.history.get(gpu.index, ()), width, wide, palette))
    return rows


def _row(gpu: GpuInfo, history, width: int, wide: bool, palette) -> Text:
    row = Text(no_wrap=True, end="")
    row.append(f" {gpu.index:>2} ", palette.style("title"))
    if gpu.error:
        row.append(f"✖ {gpu.error}", palette.style("failed"))
        return row
    used, total = gpu.memory_used, gpu.memory_total
    figures = f" {gib(used)}/{gib(total, 0)} GiB" if wide else f" {gib(used, 0)}/{gib(total, 0)}G"
    util = "N/A" if gpu.utilization is None else f"{gpu.utilization}%"
    temp = "N/A" if gpu.temperature is None else f"{gpu.temperature}°C"
    power = "N/A" if gpu.power_w is None else f"{gpu.power_w:.0f}W"
    stats = f" {util:>4} {temp:>5} {power:>5}" if wide else f" {util:>4}"
    spark_width = 12 if wide else 0
    bar_width = max(6, width - 4 - len(figures) - len(stats) - (spark_width + 1 if spark_width else 0) - 1)
    if used is None or not total:
        row.append("N/A".center(bar_width), palette.style("dim"))
    else:
        fraction = min(1.0, max(0.0, used / total))
        filled = fraction * bar_width
        full = int(filled)
        partial = "▏▎▍▌▋▊▉"[int((filled - full) * 7)] if full < bar_width and filled - full >= 1 / 7 else ""
        style = palette.style("gauge_high" if fraction >= 0.9 else "gauge")
        row.append("█" * full + partial, style)
        row.append("░" * (bar_width - full - len(partial)), palette.style("gauge_free"))
    row.append(figures, palette.style("normal"))
    row.append(stats, palette.style("dim"))
    if spark_width:
        top = float(total) if total else None
        row.append(" " + sparkline(list(history), top, spark_width).rjust(spark_width), palette.style("spark"))
    return row


class GpuPanel(Widget):
    """All GPUs of the watched host; says why when there is no GPU data."""

    DEFAULT_CSS = """
    GpuPanel { height: auto; min-height: 9; }
    """

    def __init__(self, session: WatchSession, enabled: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session
        self.enabled = enabled
        #: Whether the last frame drew a sample: the first one is drawn when it comes, later ones on the
        #: app's second.
        self.drew_sample = False
        #: The rows of the last frame: the panel's height, as each row is cut to its width.
        self._height = 0
        #: What ``draw_sample`` rendered for the next frame: for which node's session, at which width.
        self._next: tuple[WatchSession, int, Text] | None = None

    def draw_sample(self) -> None:
        """Draw the latest sample, laying the screen out again only where the rows change (a GPU comes
        or goes, a note): a sample a second, each relaying out the whole dashboard, was most of what
        it cost at rest (issue 35). Rendered here to count them, and kept for the frame."""
        width = self.size.width or 60
        text = self._text(width)
        self._next = (self.session, width, text)
        self.refresh(layout=_height(text) != self._height)

    def render(self) -> Text:
        width = self.size.width or 60
        ready, self._next = self._next, None
        text = ready[2] if ready is not None and ready[:2] == (self.session, width) else self._text(width)
        self.drew_sample = self.session.gpus.latest is not None
        self._height = _height(text)
        return text

    def _text(self, width: int) -> Text:
        return render_gpus(self.session, width, self.app.palette, self.enabled)  # type: ignore[attr-defined]


def _height(text: Text) -> int:
    return text.plain.count("\n") + 1
