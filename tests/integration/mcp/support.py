"""MCP clients of the test stack, with the official SDK's own client: streamable HTTP to the
edge's `/o/<organizationId>/mcp`, stdio to `storypost mcp` (the light client's server)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.support.api import Org
from tests.support.mcp_clients import body_of as body_of
from tests.support.mcp_clients import storypost_mcp_session

# Final statuses of a post (the spec's).
FINAL = frozenset({"executed", "failed", "canceled"})

IMAGE_PAGE = (
    "<!doctype html><html><body style='margin:0;width:1080px;height:1920px;"
    "background:linear-gradient(160deg,#59a5ff,#47ffb3)'><photoapp-story>"
    "<h1 style='font-size:96px;color:#fff'>MCP test</h1></photoapp-story></body></html>"
)


def mcp_url(org: Org) -> str:
    """`http://HOST:PORT/o/<org>/api/v1` → `http://HOST:PORT/o/<org>/mcp`."""
    return org.base_url.rstrip("/").removesuffix("/api/v1") + "/mcp"


@contextlib.asynccontextmanager
async def http_session(
    org: Org, *, token: str | None = None, url: str | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with the edge, as `org` (or with `token`)."""
    headers = {"Authorization": f"Bearer {token or org.token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url or mcp_url(org), http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def stdio_session(org: Org, cli_home: str) -> contextlib.AbstractAsyncContextManager[ClientSession]:
    """An initialized MCP session with `storypost mcp`, logged in as `org`."""
    return storypost_mcp_session(base_url=org.base_url, token=org.token, config=cli_home)


async def call(session: ClientSession, name: str, arguments: Mapping[str, Any]) -> Any:
    result = await session.call_tool(name, dict(arguments))
    assert isinstance(result, types.CallToolResult)
    return result


async def wait_final(session: ClientSession, story_post_uuid: str) -> dict[str, Any]:
    """Polls status-photoapp-story through MCP until the story is final (every 2 s: under
    the bucket's refill of one request a second)."""
    deadline = time.monotonic() + 240
    while True:
        result = await call(session, "status-photoapp-story", {"storyPostUuid": story_post_uuid})
        status = body_of(result)
        assert not result.is_error, status
        if status["status"] in FINAL or time.monotonic() > deadline:
            return status
        await asyncio.sleep(2)
