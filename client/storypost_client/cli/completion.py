"""Shell completion: `storypost completion bash|zsh|fish [--install]`.

The shell scripts (shells/) are small: at each Tab they run `storypost __complete WORD…`
(the words after `storypost`, the last one being completed), and this module answers from
the command's own parsers, one `candidate<TAB>description` a line, or `__files__` when a file
name is expected (the shell completes those itself).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from storypost_client.cli.parsing import Subparsers, example

COMPLETE = "__complete"
FILES = "__files__"
SHELLS = ("bash", "zsh", "fish")
SCRIPTS = Path(__file__).with_name("shells")


def script(shell: str) -> str:
    return (SCRIPTS / f"storypost.{shell}").read_text(encoding="utf-8")


def install_path(shell: str, env: Mapping[str, str]) -> Path:
    """Where each shell loads a user's completions from without further setup (zsh: a
    folder to add to $fpath)."""
    home = Path(env.get("HOME") or Path.home())
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    if shell == "bash":
        user_dir = env.get("BASH_COMPLETION_USER_DIR")
        base = Path(user_dir) if user_dir else data / "bash-completion"
        return base / "completions" / "storypost"
    if shell == "zsh":
        return home / ".zfunc" / "_storypost"
    return config / "fish" / "completions" / "storypost.fish"


def show(args: argparse.Namespace) -> None:
    if not args.install:
        sys.stdout.write(script(args.shell))
        return
    path = install_path(args.shell, os.environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script(args.shell), encoding="utf-8")
    print(f"installed {path}")
    if args.shell == "zsh":
        print(f"add to ~/.zshrc, before compinit: fpath=({path.parent} $fpath)")
    else:
        print("it loads in new shells")


def register(commands: Subparsers) -> None:
    p = commands.add_parser(
        "completion",
        help="shell completion for bash, zsh or fish",
        description="Prints the completion script of a shell, or installs it for this user "
        "(--install): bash in ~/.local/share/bash-completion/completions (bash-completion "
        "loads it), fish in ~/.config/fish/completions, zsh in ~/.zfunc (add it to $fpath).",
        epilog=example(
            "storypost completion bash --install",
            "source <(storypost completion zsh)   # this shell only, after compinit",
        ),
    )
    p.add_argument("shell", choices=SHELLS, help="bash, zsh or fish")
    p.add_argument("--install", action="store_true", help="write it where the shell loads it")
    p.set_defaults(handler=show)


def complete(parser: argparse.ArgumentParser, words: Sequence[str]) -> None:
    """Prints the candidates for the last of `words` (the words after `storypost`)."""
    found = candidates(parser, list(words))
    print(FILES if found is None else "\n".join(f"{name}\t{about}" for name, about in found))


def candidates(parser: argparse.ArgumentParser, words: list[str]) -> list[tuple[str, str]] | None:
    """(candidate, description) pairs for the last word, or None where a file name goes."""
    *done, current = words or [""]
    pending: argparse.Action | None = None  # an option whose value comes next
    positionals = 0
    for word in done:
        if pending is not None:
            pending = None
        elif word.startswith("-"):
            action = parser._option_string_actions.get(word)
            if action is not None and action.nargs != 0:
                pending = action
        elif (sub := _subparsers(parser)) is not None and word in sub.choices:
            parser, positionals = sub.choices[word], 0
        else:
            positionals += 1
    if pending is not None:
        return _values(pending, current)
    if current.startswith("-"):
        return [
            (option, _about(action))
            for action in parser._actions
            if action.help != argparse.SUPPRESS
            for option in action.option_strings
            if option.startswith(current)
        ]
    sub = _subparsers(parser)
    if sub is not None:
        about = {choice.dest: _about(choice) for choice in sub._choices_actions}
        return [
            (name, about.get(name, ""))
            for name in sub.choices
            if name.startswith(current) and not name.startswith("_")
        ]
    plain = [a for a in parser._actions if not a.option_strings]
    return _values(plain[positionals], current) if positionals < len(plain) else []


def _subparsers(parser: argparse.ArgumentParser) -> Subparsers | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _values(action: argparse.Action, current: str) -> list[tuple[str, str]] | None:
    if action.choices is not None:
        return [(str(c), "") for c in action.choices if str(c).startswith(current)]
    return None if action.metavar == "FILE" else []


def _about(action: argparse.Action) -> str:
    return "" if action.help in (None, argparse.SUPPRESS) else str(action.help).split("\n")[0]
