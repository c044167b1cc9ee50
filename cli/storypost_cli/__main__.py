"""The `storypost` command."""

from __future__ import annotations

import argparse
import sys

from storypost_cli import admin, admin_accounts, callers, dev, keys, sandbox, webhooks


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="storypost", description="storypost command line")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Each area adds its own top-level commands and `admin` subcommands here.
    admin_commands = admin.register(commands)
    webhooks.register(admin_commands)
    dev.register(commands)
    admin_accounts.register(admin_commands)
    sandbox.register(commands)
    callers.register(commands)
    keys.register(commands)
    del admin_commands  # used as areas add admin subcommands
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.handler(args)


if __name__ == "__main__":
    main(sys.argv[1:])
