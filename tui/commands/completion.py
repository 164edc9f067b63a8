"""`watchtower completion bash|zsh|fish`: the shell completion script (shtab writes it from the
parser itself, so it never lags behind the options); launch names for `attach` and `history`
come from `watchtower history --names` as the user types, hosts from the config's ``[hosts]``.

    source <(watchtower completion bash)                       # ~/.bashrc
    watchtower completion zsh > ~/.zfunc/_watchtower           # a directory on $fpath
    watchtower completion fish > ~/.config/fish/completions/watchtower.fish

``--install`` writes it where the shell itself looks (``INSTALL_PATHS``) and says where, in one line.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

SHELLS = ("bash", "zsh", "fish")

#: Per shell: a function that lists the launch names (the history's), and one that lists the
#: config's [hosts] names; each asks watchtower itself, quietly (no history yet: no names).
#: A name is data written by whoever can write the history or the config: bash reads it as one
#: line and compares it as a literal prefix, never through ``compgen -W`` (which expands ``$(…)``
#: and backticks in its word list: a name would run as code on <TAB>).
PREAMBLE = {
    "bash": (
        "_watchtower_matching() { local word=$1 name; shift; while IFS= read -r name; do "
        "[[ $name == \"$word\"* ]] && printf '%s\\n' \"$name\"; done < <(\"$@\" 2>/dev/null); }\n"
        "_watchtower_launches() { _watchtower_matching \"$1\" watchtower history --names; }\n"
        "_watchtower_hosts() { _watchtower_matching \"$1\" watchtower config --hosts; }\n"
    ),
    "zsh": (
        "_watchtower_launches() { local -a names; names=(${(f)\"$(watchtower history --names 2>/dev/null)\"}); "
        "_describe 'launch' names; }\n"
        "_watchtower_hosts() { local -a names; names=(${(f)\"$(watchtower config --hosts 2>/dev/null)\"}); "
        "_describe 'host' names; _hosts; }\n"
    ),
    "fish": "",
}
LAUNCHES = {"bash": "_watchtower_launches", "zsh": "_watchtower_launches",
            "fish": "(watchtower history --names 2>/dev/null)"}
HOSTS = {"bash": "_watchtower_hosts", "zsh": "_watchtower_hosts",
         "fish": "(watchtower config --hosts 2>/dev/null; __fish_print_hostnames)"}


#: Where each shell loads a user's completions by itself: bash-completion's per-user directory
#: (loaded on demand for `watchtower`), a directory zsh's compinit finds on $fpath (the line to add
#: is said), fish's completions directory. (``~``, XDG_DATA_HOME / XDG_CONFIG_HOME as each shell reads it.)
INSTALL_PATHS = {
    "bash": ("XDG_DATA_HOME", ".local/share", "bash-completion/completions/watchtower"),
    "zsh": (None, "", ".zfunc/_watchtower"),
    "fish": ("XDG_CONFIG_HOME", ".config", "fish/completions/watchtower.fish"),
}


def install_path(shell: str, environ: Mapping[str, str] = os.environ) -> Path:
    """Where ``--install`` writes ``shell``'s script for this user."""
    variable, fallback, rest = INSTALL_PATHS[shell]
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    base = Path(environ[variable]) if variable and environ.get(variable) else home / fallback
    return base / rest


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help="print (or --install) the shell completion script (bash, zsh, fish)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("shell", choices=SHELLS, help="the shell")
    p.add_argument("--install", action="store_true",
                   help="write it where the shell loads completions for this user (bash: "
                   "~/.local/share/bash-completion/completions, zsh: ~/.zfunc, fish: ~/.config/fish/completions)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    script = completion_script(args.shell)
    if not args.install:
        print(script)
        return 0
    from tui.core.errors import UsageError

    path = install_path(args.shell)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(script + "\n")
    except OSError as exc:
        raise UsageError(f"completion --install: {path}: {exc.strerror or exc}") from None
    after = {"bash": "new bash shells load it (bash-completion)",
             "zsh": "add `fpath=(~/.zfunc $fpath); autoload -Uz compinit; compinit` to ~/.zshrc",
             "fish": "new fish shells load it"}[args.shell]
    print(f"{args.shell} completion written to {path}; {after}")
    return 0


def completion_script(shell: str) -> str:
    """The completion script of ``shell``, from the parser as it is now."""
    import shtab

    from tui.commands.parser import build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                for option in command._actions:
                    if name in ("attach", "history") and option.dest == "name":
                        option.complete = LAUNCHES  # type: ignore[attr-defined]
                    elif option.dest in ("host", "hosts"):
                        option.complete = HOSTS  # type: ignore[attr-defined]
                    elif option.dest in ("log", "file", "cluster", "env_file", "output", "server", "theme",
                                         "metrics_textfile"):
                        option.complete = shtab.FILE  # type: ignore[attr-defined]
                    elif option.dest in ("log_dir", "shm"):
                        option.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
        elif action.dest == "config":
            action.complete = shtab.FILE  # type: ignore[attr-defined]
    return str(shtab.complete(parser, shell=shell, preamble=PREAMBLE[shell]))
