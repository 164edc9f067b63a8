"""`watchtower completion bash|zsh|fish`: the shell completion script (shtab writes it from the
parser itself, so it never lags behind the options); launch names for `attach` and `history`
come from `watchtower history --names` as the user types, hosts from the config's ``[hosts]``.

    source <(watchtower completion bash)                       # ~/.bashrc
    watchtower completion zsh > ~/.zfunc/_watchtower           # a directory on $fpath
    watchtower completion fish > ~/.config/fish/completions/watchtower.fish
"""

from __future__ import annotations

import argparse

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


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help="print the shell completion script (bash, zsh, fish)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("shell", choices=SHELLS, help="the shell")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
    print(shtab.complete(parser, shell=args.shell, preamble=PREAMBLE[args.shell]))
    return 0
