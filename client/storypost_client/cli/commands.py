"""The `storypost` commands for API callers: login, posts, drafts, blobs, accounts, status."""

from __future__ import annotations

from storypost_client.cli import accounts, bulk, drafts, login, lookup, mcp, media, planning, posts
from storypost_client.cli.parsing import Subparsers


def register(commands: Subparsers) -> None:
    """Adds the caller commands (beside `admin` and `dev` in the server's `storypost`)."""
    login.register(commands)
    posts.register(commands)
    drafts.register(commands)
    bulk.register(commands)  # adds `bulk` to the story and draft commands above
    media.register(commands)
    accounts.register(commands)
    lookup.register(commands)
    planning.register(commands)
    mcp.register(commands)
