"""Themes: TOML files holding a Textual theme ([colors]) and Rich styles ([styles]).

Where themes come from, later ones replacing earlier ones of the same name:
1. the themes shipped with Watchtower: the repository's ``themes/`` directory (a
   source checkout or an editable install), or ``<prefix>/share/watchtower/themes``
   where a wheel installs them (pyproject ``data-files``);
2. the user's own: ``<user config dir>/watchtower/themes/*.toml``;
3. ``--theme PATH`` names one file directly.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from textual.filter import LineFilter
from textual.theme import Theme

from tui.core.errors import UsageError
from tui.core.files import read_text
from tui.core.kept import TABLES, parse_toml

DEFAULT = "dark"
#: Every style a theme may set, with the fallback used when a user theme omits one.
STYLE_DEFAULTS: dict[str, str] = {
    "error": "bold red",
    "warning": "yellow",
    "phase": "bold cyan",
    "progress": "green",
    "mark": "italic",
    "normal": "",
    "line_number": "dim",
    "cursor": "reverse",
    "match": "reverse",
    "title": "bold",
    "dim": "dim",
    "gauge": "blue",
    "gauge_high": "yellow",
    "gauge_free": "dim",
    "spark": "blue",
    "done": "green",
    "running": "yellow",
    "failed": "bold red",
    "gap": "dim",
    "skipped": "dim",
    "behind": "bold yellow",
    "verdict_starting": "bold black on yellow",
    "verdict_ready": "bold black on green",
    "verdict_failed": "bold white on red",
    "verdict_stopped": "bold black on white",
}
#: Under NO_COLOR: what carries each meaning that colour alone carried (kept when the theme's
#: style already has an attribute of its own).
MONOCHROME: dict[str, str] = {
    "error": "bold",
    "warning": "underline",
    "phase": "bold",
    "cursor": "reverse",
    "match": "bold underline",
    "failed": "bold reverse",
    "running": "bold",
    "behind": "bold underline",
    "gauge_free": "dim",
    "line_number": "dim",
    "verdict_starting": "bold reverse",
    "verdict_ready": "bold reverse",
    "verdict_failed": "bold reverse",
    "verdict_stopped": "bold reverse",
}
_COLOR_KEYS = (
    "primary", "secondary", "accent", "foreground", "background",
    "surface", "panel", "success", "warning", "error",
)


@dataclass(frozen=True)
class Palette:
    """One theme: the Textual theme for CSS, and the Rich styles the widgets draw with."""

    name: str
    textual: Theme
    styles: dict[str, Style] = field(default_factory=dict)
    path: Path | None = None

    def style(self, key: str) -> Style:
        return self.styles.get(key) or Style.parse(STYLE_DEFAULTS.get(key, ""))


def monochrome(palette: Palette) -> Palette:
    """``palette`` without a colour: attributes (bold, reverse, underline) carry the meaning."""
    styles = {}
    for key in STYLE_DEFAULTS:
        plain = palette.style(key).without_color
        if not _has_attributes(plain) and key in MONOCHROME:
            plain = Style.parse(MONOCHROME[key])
        styles[key] = plain
    return Palette(palette.name, palette.textual, styles, palette.path)


def _has_attributes(style: Style) -> bool:
    return any((style.bold, style.dim, style.italic, style.underline, style.reverse, style.strike))


class Colourless(LineFilter):
    """Drops every colour from what reaches the terminal (NO_COLOR): not one SGR colour code,
    where Textual's own filter only turns colours grey."""

    def apply(self, segments: list[Segment], background) -> list[Segment]:
        return [Segment(text, style.without_color if style else style, None) for text, style, _ in segments]


def builtin_dirs() -> list[Path]:
    """The shipped themes: the checkout's themes/, else where the wheel put them (venv, system, --user)."""
    here = Path(__file__).resolve()
    candidates = [here.parents[2] / "themes"]
    for scheme in (None, f"{os.name}_user"):
        try:
            data = sysconfig.get_path("data", scheme) if scheme else sysconfig.get_path("data")
        except KeyError:  # no such install scheme here
            continue
        candidates.append(Path(data) / "share" / "watchtower" / "themes")
    return [d for d in candidates if d.is_dir()][:1]


def user_dir() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("watchtower")) / "themes"


def load_file(path: Path) -> Palette:
    """One theme file; a UsageError naming the file and the problem if it is not valid."""
    try:
        data = TABLES.parse(read_text(path), parse_toml)  # a regular file, capped (tui.core.files)
    except FileNotFoundError:
        raise UsageError(f"theme file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"theme file {path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    except ValueError as exc:  # (TOMLDecodeError)
        raise UsageError(f"theme file {path}: invalid TOML ({exc})") from None
    except RecursionError:
        raise UsageError(f"theme file {path}: invalid TOML (nested too deeply)") from None
    name = str(data.get("name") or path.stem)
    colors = data.get("colors", {})
    if not isinstance(colors, dict) or "primary" not in colors:
        raise UsageError(f"theme file {path}: needs a [colors] table with at least 'primary'")
    try:
        theme = Theme(
            name=name,
            dark=bool(data.get("dark", True)),
            **{k: str(colors[k]) for k in _COLOR_KEYS if k in colors},  # type: ignore[arg-type]  # (all colour strings)
        )
        theme.to_color_system()  # validates the colours now, not at first paint
        styles = {k: Style.parse(str(v)) for k, v in dict(data.get("styles", {})).items()}
    except Exception as exc:  # a bad colour or style string
        raise UsageError(f"theme file {path}: {exc}") from None
    return Palette(name, theme, styles, path)


def discover(extra_dirs: list[Path] | None = None) -> dict[str, Palette]:
    """Every theme found, by name: shipped ones first, then the user's own."""
    found: dict[str, Palette] = {}
    dirs = builtin_dirs() + [user_dir()] + list(extra_dirs or [])
    for directory in dirs:
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.toml")):
            try:
                palette = load_file(path)
            except UsageError as exc:
                print(f"watchtower: skipping {exc}", file=sys.stderr)
                continue
            found[palette.name] = palette
    if DEFAULT not in found:  # a broken install: still start, plainly
        found[DEFAULT] = Palette(DEFAULT, Theme(name=DEFAULT, primary="#5fa8ff", dark=True))
    return found


def resolve(choice: str | None, palettes: dict[str, Palette]) -> Palette:
    """``--theme NAME`` or ``--theme PATH`` (a PATH is added to ``palettes``)."""
    if not choice:
        return palettes[DEFAULT]
    if choice in palettes:
        return palettes[choice]
    if choice.endswith(".toml") or "/" in choice:
        palette = load_file(Path(choice).expanduser())
        palettes[palette.name] = palette
        return palette
    names = ", ".join(sorted(palettes))
    raise UsageError(f"unknown theme {choice!r} (themes: {names}; or give a .toml file)")
