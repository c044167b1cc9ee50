"""The `storypost` commands for API callers: login, posts, drafts, blobs, accounts, status."""

from __future__ import annotations

import argparse

from storypost_cli.callers import accounts, bulk, drafts, login, lookup, media, posts


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds the caller commands beside `admin` and `dev`."""
    login.register(commands)
    posts.register(commands)
    drafts.register(commands)
    bulk.register(commands)  # adds `bulk` to the story and draft commands above
    media.register(commands)
    accounts.register(commands)
    lookup.register(commands)
