"""The server's `storypost` command: `admin`, `dev` and the stack's commands, and the caller
commands of the SDK's CLI (storypost_client.cli: one implementation, installed alone by
`pip install storypost-client[cli]`)."""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Sequence

from storypost_cli import admin, admin_accounts, dev, keys, migrate, sandbox, webhooks
from storypost_client.cli import app, commands, completion


def build_parser() -> argparse.ArgumentParser:
    parser, subcommands = app.root_parser(
        "storypost: the API caller commands, and `dev` and `admin` for the stack",
        products=[f"storypost {importlib.metadata.version('storypost')}"],
    )
    # Each area adds its own top-level commands and `admin` subcommands here.
    admin_commands = admin.register(subcommands)
    webhooks.register(admin_commands)
    dev.register(subcommands)
    migrate.register(subcommands)
    admin_accounts.register(admin_commands)
    sandbox.register(subcommands)
    commands.register(subcommands)
    keys.register(subcommands)
    completion.register(subcommands)
    del admin_commands  # used as areas add admin subcommands
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    app.run(build_parser, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
