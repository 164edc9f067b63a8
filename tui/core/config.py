"""The config file (``$XDG_CONFIG_HOME/watchtower/config.toml``, or ``--config PATH``): a default
for every option, which the environment and then the flags override.

Pure: the command line reads the file (capped, ``tui.core.files``) and ``tomllib`` parses it;
this module checks what it holds and says, for every setting, its value and where it came from
(``default``, ``file``, ``environment`` or ``flag``). An unknown key or a value of the wrong type
is a :class:`ConfigError` naming the key and the file: one line, exit 2.

::

    [gpu]
    source = "auto"            # --gpus: auto, nvml, smi, sim, none
    interval = 1.0             # --gpu-interval, seconds

    [display]
    theme = "dark"             # --theme

    [stall]                    # --stall-limit: a default and per-phase silences
    default = "5m"
    weight_load = "20m"

    [launch]
    log_dir = "/scratch/wt-logs"   # run --log-dir
    health = "http://127.0.0.1:30000/health"
    smoke = false              # --smoke
    stop_grace = "15,10"
    on_ready = "notify-send ready"
    on_fail = "notify-send failed"

    [hosts]                    # --host NAME
    gpu1 = "ops@gpu1.example.com:2222"

    [clusters]                 # --cluster NAME
    prod = "~/clusters/prod.toml"

    [keys]                     # the dashboard's keys, by action (``?`` shows them as mapped)
    next_error = "e"
    quit = "q"
    stop = "X"                 # the launcher's (stop, relaunch, edit_relaunch, attempts, checks,
    next_node = "O"            # kill_holders, apply_fix) and the node view's (next_node) too
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tui.core.errors import UsageError
from tui.core.limits import StallLimits

DEFAULT, FILE, ENVIRONMENT, FLAG = "default", "file", "environment", "flag"
#: Tmux's and screen's prefix keys: no default binding uses them (``[keys]`` may, on purpose).
MULTIPLEXER_PREFIXES = ("ctrl+b", "ctrl+a")


class ConfigError(UsageError):
    """A config file Watchtower cannot use: one line, naming the key and the file (exit 2)."""


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("a string")
    return value


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise TypeError("a number of seconds greater than 0")
    return float(value)


#: The shortest GPU poll: NVML answers in milliseconds, and a poll every microsecond would spin a core.
MIN_POLL_S = 0.1


def _poll_seconds(value: Any) -> float:
    seconds = _seconds(value)
    if seconds < MIN_POLL_S:
        raise TypeError(f"a number of seconds, at least {MIN_POLL_S:g}")
    return seconds


def _switch(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("true or false")
    return value


#: The words a switch may be given as in the environment (``WATCHTOWER_LAUNCH_SMOKE=1``).
SWITCH_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def switch_text(text: str) -> Any:
    """An environment variable's text as a switch (true/false, 1/0, yes/no, on/off); else the text, refused by ``_switch``."""
    return SWITCH_WORDS.get(text.strip().lower(), text)


def _gpu_source(value: Any) -> str:
    from tui.core.options import GPU_SOURCES  # (here: the options' classes are not built for `scan`)

    if value not in GPU_SOURCES:
        raise TypeError(f"one of {', '.join(GPU_SOURCES)}")
    return str(value)


def _grace(value: Any) -> str:
    parts = _string(value).split(",")
    try:
        if len(parts) != 2 or any(float(p) < 0 for p in parts):
            raise ValueError
    except ValueError:
        raise TypeError("seconds after SIGINT,SIGTERM, e.g. \"15,10\"") from None
    return str(value)


@dataclass(frozen=True, slots=True)
class Setting:
    """One option: ``key`` in the file (``section.name``), ``dest`` the argparse destination its
    flag fills, the environment variable that overrides the file, and its default."""

    key: str
    dest: str
    flag: str
    default: Any
    check: Callable[[Any], Any]
    help: str

    @property
    def env(self) -> str:
        return "WATCHTOWER_" + self.key.replace(".", "_").upper()


SETTINGS: tuple[Setting, ...] = (
    Setting("gpu.source", "gpus", "--gpus", "auto", _gpu_source, "GPU source: auto, nvml, smi, sim, none"),
    Setting("gpu.interval", "gpu_interval", "--gpu-interval", 1.0, _poll_seconds, "seconds between GPU polls"),
    Setting("display.theme", "theme", "--theme", None, _string, "dashboard theme: a name or a .toml file"),
    Setting("launch.log_dir", "log_dir", "--log-dir", None, _string, "where run's attempt logs go"),
    Setting("launch.health", "health", "--health", None, _string, "ready also needs this URL to answer 200"),
    Setting("launch.smoke", "smoke", "--smoke", False, _switch, "ready only once one tiny completion answered"),
    Setting("launch.stop_grace", "stop_grace", "--stop-grace", "15,10", _grace, "seconds after SIGINT, SIGTERM"),
    Setting("launch.on_ready", "on_ready", "--on-ready", None, _string, "shell command run when ready"),
    Setting("launch.on_fail", "on_fail", "--on-fail", None, _string, "shell command run on failure"),
)
BY_KEY = {s.key: s for s in SETTINGS}
#: ``[stall]``: ``default`` and phase names, each a duration ("20m", "90s", 300): ``--stall-limit``.
STALL = Setting("stall", "stall_limit", "--stall-limit", None, _string, "silence limits: default and per phase")


@dataclass(frozen=True, slots=True)
class Origin:
    value: Any
    origin: str  # default, file, environment, flag


@dataclass(slots=True)
class Config:
    """What the file (and the environment) say; ``path`` the file read, if any."""

    path: str | None = None
    values: dict[str, Origin] = field(default_factory=dict)  # setting key -> value and origin
    hosts: dict[str, str] = field(default_factory=dict)
    clusters: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # action -> key(s), Textual's names

    def value(self, key: str) -> Any:
        return self.values[key].value

    def defaults(self) -> dict[str, Any]:
        """argparse destination -> value, for every setting not at its built-in default."""
        out = {BY_KEY[k].dest if k in BY_KEY else STALL.dest: o.value
               for k, o in self.values.items() if o.origin != DEFAULT}
        return out

    def host(self, name: str | None) -> str | None:
        """``--host NAME`` as ``[hosts]`` names it (a ``NAME:/log`` keeps its log), else as given."""
        if name is None:
            return None
        head, colon, rest = name.partition(":")
        if head in self.hosts:
            return self.hosts[head] + (colon + rest if rest.startswith("/") else "")
        return name


def stall_text(table: Mapping[str, Any], where: str) -> str:
    """``[stall]`` as ``--stall-limit`` text ("5m,weight_load=20m"), checked by StallLimits."""
    parts = []
    for phase, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(f"{where}: stall.{phase}: expected a duration such as \"20m\" or 300")
        text = f"{value}s" if not isinstance(value, str) else value
        parts.append(text if phase == "default" else f"{phase}={text}")
    text = ",".join(parts)
    try:
        StallLimits.parse(text)
    except ValueError as exc:
        raise ConfigError(f"{where}: stall: {str(exc).removeprefix('--stall-limit: ')}") from None
    return text


def parse(data: Mapping[str, Any], path: str | None, environ: Mapping[str, str] = {},
          actions: tuple[str, ...] = ()) -> Config:
    """The config ``data`` (a parsed TOML document from ``path``; {} for none) over the defaults,
    then the environment (``WATCHTOWER_GPU_SOURCE`` …). ``actions``: the key map's action names."""
    where = path or "config"
    config = Config(path=path, values={s.key: Origin(s.default, DEFAULT) for s in SETTINGS})
    config.values[STALL.key] = Origin(None, DEFAULT)
    sections = {s.key.split(".")[0] for s in SETTINGS} | {"stall", "hosts", "clusters", "keys"}
    for section, table in data.items():
        if section not in sections:
            raise ConfigError(f"{where}: unknown key {section!r} (known: {', '.join(sorted(sections))})")
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: {section}: expected a table ([{section}])")
        if section == "stall":
            config.values[STALL.key] = Origin(stall_text(table, where), FILE)
            continue
        if section in ("hosts", "clusters", "keys"):
            for name, value in table.items():
                if not isinstance(value, str) or not value:
                    raise ConfigError(f"{where}: {section}.{name}: expected a non-empty string")
                if section == "keys" and actions and name not in actions:
                    raise ConfigError(f"{where}: unknown key 'keys.{name}' (actions: {', '.join(actions)})")
            getattr(config, section).update(table)
            continue
        for name, value in table.items():
            setting = BY_KEY.get(f"{section}.{name}")
            if setting is None:
                raise ConfigError(f"{where}: unknown key '{section}.{name}'")
            try:
                config.values[setting.key] = Origin(setting.check(value), FILE)
            except TypeError as exc:
                raise ConfigError(f"{where}: {setting.key}: expected {exc}, got {value!r}") from None
    for setting in SETTINGS:
        if setting.env in environ:
            raw = environ[setting.env]
            given: Any = raw
            if setting.check is _seconds:
                try:
                    given = float(raw)
                except ValueError:
                    raise ConfigError(f"{setting.env}: expected a number of seconds, got {raw!r}") from None
            elif setting.check is _switch:
                given = switch_text(raw)
            try:
                config.values[setting.key] = Origin(setting.check(given), ENVIRONMENT)
            except TypeError as exc:
                raise ConfigError(f"{setting.env}: expected {exc}, got {raw!r}") from None
    return config


_active: list[Config] = []


def activate(config: Config) -> None:
    """The config this process runs with (the command line sets it once; the dashboard's key map reads it)."""
    _active[:] = [config]


def active() -> Config:
    return _active[0] if _active else Config()
