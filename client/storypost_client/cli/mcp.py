"""`storypost mcp`: the API as an MCP server over stdio, for MCP hosts on the caller's machine
(the server itself: `storypost_client.cli.mcp_stdio`, imported when the command runs)."""

from __future__ import annotations

import argparse
import os

from storypost_client.cli import render, session
from storypost_client.cli.exits import EXIT_AUTH, EXIT_BAD_INPUT, EXIT_UNAVAILABLE
from storypost_client.cli.parsing import Subparsers, example

# argparse's own exit code for a usage error: the command cannot run here at all.
EXIT_NO_MCP = 2


def run(args: argparse.Namespace) -> None:
    import asyncio

    import httpx

    from storypost_client.async_client import AsyncStorypostClient
    from storypost_client.cli import profile
    from storypost_client.retry import RetryPolicy

    try:
        # The MCP SDK comes with the SDK's `cli` extra; the server's `storypost` may lack it.
        from storypost_client.cli.mcp_stdio import serve_stdio
    except ImportError:
        render.fail(
            "`storypost mcp` needs the MCP SDK: pip install 'storypost-client[cli]'", EXIT_NO_MCP
        )
    login = profile.resolve(args.base_url, os.environ, profile.config_path())
    if login is None:
        render.fail(
            "not logged in: run `storypost login --base-url URL` (or set "
            f"{profile.BASE_URL_ENV} and {profile.TOKEN_ENV})",
            EXIT_AUTH,
        )
    if args.attempts < 1:
        render.fail("--attempts must be at least 1", EXIT_BAD_INPUT)

    async def main() -> None:
        client = AsyncStorypostClient(
            login.base_url, login.token, retry=RetryPolicy(max_attempts=args.attempts)
        )
        async with client:
            await serve_stdio(client)

    try:
        asyncio.run(main())
    except httpx.HTTPError as error:
        render.fail(f"cannot read the API's catalog: {error!r}", EXIT_UNAVAILABLE)
    except KeyboardInterrupt:
        pass


def register(commands: Subparsers) -> None:
    parser = commands.add_parser(
        "mcp",
        parents=[session.common_options()],
        help="serve the API's procedures as MCP tools over stdio (for an MCP host)",
        description="An MCP server on stdin/stdout: one tool per procedure of the API's "
        "catalog, called with the saved login (docs/mcp.md has host configurations).",
        epilog=example(
            "storypost mcp", "storypost mcp --base-url URL   # token: $STORYPOST_API_TOKEN"
        ),
    )
    parser.set_defaults(handler=run)
