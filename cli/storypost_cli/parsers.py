"""How the server's commands declare a group (`storypost sandbox`) and its subcommands
(`storypost sandbox reset`): the parser, its example epilog and what runs it, in one place."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from storypost_client.cli.parsing import Subparsers, example

Handler = Callable[[argparse.Namespace], None]


def command_group(
    subparsers: Subparsers, name: str, help: str, *examples: str, handler: Handler | None = None
) -> Subparsers:
    """Adds `storypost NAME COMMAND …` and returns its subcommands; the chosen one's name is
    `args.NAME_command`. `handler`, when given, runs whichever was chosen (it finds that
    subcommand's function in `args.run`)."""
    group = subparsers.add_parser(name, help=help, epilog=example(*examples))
    if handler is not None:
        group.set_defaults(handler=handler)
    return group.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")


def subcommand(
    commands: Subparsers, name: str, run: Callable[..., None], help: str, *examples: str
) -> argparse.ArgumentParser:
    """Adds one subcommand of a group; its group's handler calls `run` (the parameters it
    passes are the group's). The caller adds the options."""
    parser = commands.add_parser(name, help=help, epilog=example(*examples))
    parser.set_defaults(run=run)
    return parser


def add_org(parser: argparse.ArgumentParser) -> None:
    """The `--org` option of every command that acts on one organization (`args.org`)."""
    parser.add_argument("--org", required=True, help="organization id")
