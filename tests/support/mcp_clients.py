"""What the MCP tests share, with the official SDK's own client: the raw `initialize` request,
`storypost mcp` run as a process over stdio, and the API body a tool result carries."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

# The headers and the first request of an MCP session over plain HTTP (no SDK).
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


@contextlib.asynccontextmanager
async def storypost_mcp_session(
    *, base_url: str, token: str, config: str
) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with `storypost mcp` (the light client's command, run as
    `python -m storypost_client.cli mcp`), logged in by its environment: the API at
    `base_url` with `token`, its config file at `config`."""
    env = {
        **{key: value for key, value in os.environ.items() if key.startswith(("PATH", "PYTHON"))},
        "STORYPOST_CONFIG": config,
        "STORYPOST_BASE_URL": base_url,
        "STORYPOST_API_TOKEN": token,
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "storypost_client.cli", "mcp"], env=env
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def body_of(result: Any) -> dict[str, Any]:
    """The API's JSON body a tool result carries: its structured content, which its text
    content repeats."""
    assert isinstance(result, types.CallToolResult), result
    assert isinstance(result.structured_content, dict), result
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert json.loads(text.text) == result.structured_content
    return result.structured_content
