"""`watchtower config`: the effective settings and where each came from (default, file,
environment, flag), and the config file's reading (``load``), which every command goes through.

The file is ``$XDG_CONFIG_HOME/watchtower/config.toml`` (``~/.config/…`` without it) or
``--config PATH``; what it may hold is in ``tui.core.config``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tui.core.config import DEFAULT, ENVIRONMENT, FILE, FLAG, SETTINGS, STALL, Config, ConfigError, Setting, parse
from tui.core.kept import parse_toml
from tui.core.secrets import mask_secrets


def default_path(environ: Mapping[str, str] = os.environ) -> Path:
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "watchtower" / "config.toml"


def load(path: str | None, environ: Mapping[str, str] = os.environ) -> Config:
    """The config from ``path`` (``--config``: it must exist), else from the default place if a
    file is there, over the defaults; the environment over it. ConfigError: one line, exit 2."""
    from tui.core.files import read_text

    file = Path(path).expanduser() if path else default_path(environ)
    if path is None and not os.path.exists(file):  # none there, or a place this user cannot look into
        return parse({}, None, environ)
    try:
        text = read_text(file)  # a regular file, capped (tui.core.files)
    except OSError as exc:
        raise ConfigError(f"config {file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config {file}: not a text file") from None
    try:
        data = parse_toml(text)
    except ValueError as exc:  # (TOMLDecodeError)
        raise ConfigError(f"config {file}: not valid TOML: {exc}") from None
    except RecursionError:  # (tomllib's own limit is Python's stack: an array thousands deep)
        raise ConfigError(f"config {file}: not valid TOML: nested too deeply") from None
    actions: tuple[str, ...] = ()
    if "keys" in data:  # the dashboard's action names (its imports only when there is a key map)
        from tui.app.keys import ACTIONS

        actions = tuple(ACTIONS)
    config = parse(data, str(file), environ, actions)
    if config.keys:
        from tui.app.keys import check_keymap

        why = check_keymap(config.keys)
        if why is not None:
            raise ConfigError(f"{file}: {why}")
    if config.values["display.theme"].origin == FILE:  # checked here, not at the first dashboard
        from tui.app.themes import discover, resolve
        from tui.core.errors import UsageError

        try:
            resolve(config.value("display.theme"), discover())
        except UsageError as exc:
            raise ConfigError(f"{file}: display.theme: {exc}") from None
    return config


def apply(parser: argparse.ArgumentParser, config: Config) -> None:
    """The file's and the environment's values as every subcommand's defaults: a flag still wins."""
    defaults = config.defaults()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if name == "config":  # its flags are what the command line says, to be told apart
                    continue
                dests = {a.dest for a in sub._actions}
                sub.set_defaults(**{dest: value for dest, value in defaults.items() if dest in dests})


def resolve_names(args: argparse.Namespace, config: Config) -> None:
    """``--host NAME`` and ``--cluster NAME`` as ``[hosts]`` and ``[clusters]`` name them."""
    if getattr(args, "host", None):
        args.host = config.host(args.host)
    if getattr(args, "hosts", None):
        args.hosts = [config.host(h) for h in args.hosts]
    nodes = getattr(args, "nodes", None)
    if isinstance(nodes, str) and not nodes.isdigit():
        args.nodes = ",".join(config.host(h.strip()) or h for h in nodes.split(","))
    cluster = getattr(args, "cluster", None)
    if isinstance(cluster, str) and cluster in config.clusters:
        args.cluster = os.path.expanduser(config.clusters[cluster])


def flag_value(setting: Setting, text: str) -> Any:
    """A flag's text as the setting's value (argparse's usage line and exit 2 when it is not one)."""
    from tui.core.limits import StallLimits

    try:
        if setting is STALL:
            StallLimits.parse(text)
            return text
        return setting.check(float(text) if setting.default.__class__ is float else text)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"expected {exc}") from None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="print the effective settings and where each came from",
                       description="The effective settings (the config file, the environment, these flags) "
                       "and where each came from.")
    for setting in (*SETTINGS, STALL):
        if isinstance(setting.default, bool):  # a switch, as the commands have it (--smoke)
            p.add_argument(setting.flag, dest=setting.dest, default=argparse.SUPPRESS, action="store_true",
                           help=setting.help)
            continue
        p.add_argument(setting.flag, dest=setting.dest, default=argparse.SUPPRESS, metavar="VALUE", help=setting.help,
                       type=lambda text, s=setting: flag_value(s, text))
    p.add_argument("--hosts", dest="hosts_only", action="store_true", help="only the [hosts] names, one a line (shell completion reads them)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tui.app.keys import ACTIONS

    config: Config = getattr(args, "settings", None) or load(None)
    if args.hosts_only:  # (not `hosts`: that is every command's --host list, resolved by name)
        print("\n".join(config.hosts))
        return 0
    given = vars(args)
    out = [f"# config file: {config.path or f'none ({default_path()} does not exist)'}"]

    def row(key: str, value: Any, origin: str) -> None:
        shown = "(unset)" if value is None else repr(value) if isinstance(value, str) else str(value)
        shown = mask_secrets(shown)  # a password in a URL, a token in a hook: as every other output
        out.append(f"{key:<20} {shown:<40} {origin}")

    for setting in (*SETTINGS, STALL):
        held = config.values[setting.key]
        if setting.dest in given:  # only a flag given sets it (no default: argparse.SUPPRESS)
            row(setting.key, given[setting.dest], f"{FLAG} {setting.flag}")
        elif held.origin == FILE:
            row(setting.key, held.value, f"{FILE} {config.path}")
        elif held.origin == ENVIRONMENT:
            row(setting.key, held.value, f"{ENVIRONMENT} {setting.env}")
        else:
            row(setting.key, held.value, DEFAULT)
    for name, value in config.hosts.items():
        row(f"hosts.{name}", value, f"{FILE} {config.path}")
    for name, value in config.clusters.items():
        row(f"clusters.{name}", value, f"{FILE} {config.path}")
    for action, binding in ACTIONS.items():
        if action in config.keys:
            row(f"keys.{action}", config.keys[action], f"{FILE} {config.path}")
        else:
            row(f"keys.{action}", binding.key_display or binding.key, DEFAULT)
    print("\n".join(out))
    return 0
