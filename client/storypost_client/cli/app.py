"""The `storypost` command of `pip install storypost-client[cli]`: the caller commands,
`--version` and `completion`. The server's `storypost` (storypost_cli) builds on the same
root parser and adds `admin`, `dev` and the stack's commands."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from typing import cast

from storypost_client.cli import commands, completion
from storypost_client.cli.parsing import Parser, Subparsers, example
from storypost_client.version import __version__

PROG = "storypost"
DESCRIPTION = "Schedule stories and posts rendered from web pages, through the storypost API."
# The package of the server's `storypost`, where the server is installed too.
SERVER_CLI = "storypost_cli"


def version_text(*products: str) -> str:
    """`storypost-client 0.1.0 (Python 3.12.3)`, after the server's version where it has one."""
    python = ".".join(str(part) for part in sys.version_info[:3])
    return f"{', '.join([*products, f'storypost-client {__version__}'])} (Python {python})"


def root_parser(
    description: str = DESCRIPTION, *, products: Sequence[str] = ()
) -> tuple[Parser, Subparsers]:
    """The `storypost` parser with --version, and its COMMAND subparsers."""
    parser = Parser(
        prog=PROG,
        description=description,
        epilog=example(
            "storypost login --base-url http://127.0.0.1:8080/o/<organizationId>/api/v1",
            "storypost story schedule --html page.html --account alice --wait",
        ),
    )
    parser.add_argument("--version", action="version", version=version_text(*products))
    # Typed as plain ArgumentParsers' subparsers, which every area's register() takes; they
    # are Parsers (argparse makes subparsers of their parent's class).
    subcommands = cast(
        "Subparsers", parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    )
    return parser, subcommands


def build_parser() -> argparse.ArgumentParser:
    parser, subcommands = root_parser()
    commands.register(subcommands)
    completion.register(subcommands)
    return parser


def run(build: Callable[[], argparse.ArgumentParser], argv: Sequence[str] | None) -> None:
    """Parses `argv` with the parser `build` makes and runs the command's handler; the
    completion scripts' `__complete` is answered from the same parser."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == [completion.COMPLETE]:
        completion.complete(build(), words[1:])
        return
    args = build().parse_args(words)
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> None:
    run(build_parser, argv)


def entry() -> None:
    """The console script. Where the server is installed in the same environment (the dev
    venv), both distributions install a `storypost` script: either runs the server's, which
    has these commands too."""
    if importlib.util.find_spec(SERVER_CLI) is not None:
        importlib.import_module(f"{SERVER_CLI}.__main__").main()
    else:
        main()
