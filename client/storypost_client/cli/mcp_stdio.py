"""The MCP server of `storypost mcp` (docs/mcp.md): the API catalog's procedures as tools over
stdio, on the official MCP SDK (`mcp`, in the SDK's `cli` extra) and this SDK.

The tools are read from the API's own catalog (`GET /api/v1/catalog.json`, at start, so a
procedure newer than this client is a tool too), each call is `AsyncStorypostClient.call`
with the saved login (retries, pacing from the rate-limit headers). An error answer is a tool
result with `isError`, the API's error body and its HTTP status in `_meta`. The edge serves the
same tools over streamable HTTP at `/o/<organizationId>/mcp`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import mcp.types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from storypost_client.async_client import AsyncStorypostClient
from storypost_client.cli.generated.mcp_tool import tool_of
from storypost_client.errors import ApiError, StorypostError
from storypost_client.transport import USER_AGENT
from storypost_client.version import __version__

SERVER_NAME = "storypost"
CATALOG_URI = "storypost://api/v1/catalog.json"
# The HTTP status the API answered, in an error result's `_meta` (as the edge's server does).
STATUS_META_KEY = "storypost/httpStatus"
CATALOG_TIMEOUT_SECONDS = 30.0


def catalog_url(base_url: str) -> str:
    """`http://HOST:PORT/o/<org>/api/v1` → `http://HOST:PORT/api/v1/catalog.json`."""
    root = base_url.rstrip("/").rsplit("/o/", 1)[0]
    return f"{root}/api/v1/catalog.json"


def result_of(body: Mapping[str, Any], status: int | None = None) -> types.CallToolResult:
    """A success answer (status None) or an error answer as a tool result."""
    text: list[types.ContentBlock] = [types.TextContent(text=json.dumps(body, ensure_ascii=False))]
    if status is None:
        return types.CallToolResult(content=text, structured_content=dict(body))
    return types.CallToolResult(
        content=text,
        structured_content=dict(body),
        is_error=True,
        _meta={STATUS_META_KEY: status},
    )


def build_server(client: AsyncStorypostClient, catalog: Mapping[str, Any]) -> Server[Any]:
    """The MCP server of `catalog`'s procedures, each called with `client`."""
    entries = {entry["name"]: entry for entry in catalog["procedures"]}
    listed = types.ListToolsResult(tools=[tool_of(entry) for entry in entries.values()])
    resource = types.Resource(
        uri=CATALOG_URI,
        name="catalog",
        title="storypost API catalog",
        description="Every procedure of the API: input and output JSON Schemas, examples.",
        mime_type="application/json",
    )
    contents = types.ReadResourceResult(
        contents=[
            types.TextResourceContents(
                uri=CATALOG_URI, mime_type="application/json", text=json.dumps(catalog)
            )
        ]
    )

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        return listed

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        entry = entries.get(params.name)
        if entry is None:
            # What the API answers for a name it does not know.
            return result_of({"errorMessage": f"unknown procedure: {params.name}"}, 404)
        try:
            answer = await client.call(
                params.name,
                params.arguments or {},
                timeout=float(entry.get("clientTimeoutSeconds") or 120),
            )
        except ApiError as error:
            return result_of(error.body, error.status)
        except StorypostError as error:
            # No answer at all (connection failures, after the retries).
            return result_of({"errorMessage": str(error)}, 503)
        return result_of(answer)

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        return types.ListResourcesResult(resources=[resource])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
        if str(params.uri) != CATALOG_URI:
            raise ValueError(f"unknown resource: {params.uri}")
        return contents

    return Server(
        SERVER_NAME,
        version=__version__,
        title="storypost",
        instructions=(
            "Each tool is one procedure of the storypost API, with the same input schema and "
            "answer. An error answer is a tool result with isError true and the API's error "
            f"body. The catalog of every procedure is the resource {CATALOG_URI}."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


async def fetch_catalog(base_url: str) -> dict[str, Any]:
    """The API's catalog.json (public: no token needed)."""
    async with httpx.AsyncClient(timeout=CATALOG_TIMEOUT_SECONDS) as http:
        response = await http.get(catalog_url(base_url), headers={"User-Agent": USER_AGENT})
        response.raise_for_status()
        catalog: dict[str, Any] = response.json()
    return catalog


async def serve_stdio(client: AsyncStorypostClient) -> None:
    """Serves the API's catalog as MCP tools on stdin/stdout until the host closes stdin."""
    server = build_server(client, await fetch_catalog(client.base_url))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
