"""`storypost mcp` as a process, with the official SDK's stdio client, against a scripted API:
the tools are the served catalog's (a procedure newer than the client too), a call is the
API call with the saved login, an error answer keeps the API's body and status."""

from __future__ import annotations

import json
from pathlib import Path

import mcp.types as types

from storypost_client.cli.mcp_stdio import catalog_url
from tests.support.mcp_clients import body_of as body
from tests.support.mcp_clients import storypost_mcp_session
from tests.unit.client.support import ORG_PATH, Reply, Seen, scripted

TOKEN = "sp_test-token"
NEW = {
    "name": "list-posts",
    "summary": "A procedure newer than the client.",
    "doc": "Lists posts.",
    "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
    "outputSchema": {"type": "object", "properties": {"posts": {"type": "array"}}},
    "exampleInput": {},
    "exampleOutput": {"posts": []},
    "renderInput": False,
    "idempotent": True,
    "clientTimeoutSeconds": 30,
}
UUID = {
    **NEW,
    "name": "generate-uuid",
    "summary": "Returns a fresh random UUID.",
    "outputSchema": {"type": "object", "properties": {"uuid": {"type": "string"}}},
}
CATALOG = {"catalogVersion": 1, "procedures": [UUID, NEW]}
INVALID = {
    "errorMessage": "invalid params for procedure: generate-uuid",
    "procedureName": "generate-uuid",
    "paramsJsonSchema": UUID["inputSchema"],
    "validationErrorExplanation": {"x": ["disallowed key"]},
}


def api(seen: Seen) -> Reply:
    if seen.method == "GET" and seen.path == "/api/v1/catalog.json":
        return Reply(200, CATALOG)
    if seen.headers.get("Authorization") != f"Bearer {TOKEN}":
        return Reply(401, {"errorMessage": "not authenticated"})
    if seen.path == f"{ORG_PATH}/generate-uuid":
        if seen.json():
            return Reply(400, INVALID)
        return Reply(200, {"uuid": "c02eacbc-e1df-4fd9-a77a-6638dff92f2b"})
    if seen.path == f"{ORG_PATH}/list-posts":
        return Reply(200, {"posts": []})
    return Reply(404, {"errorMessage": "no such endpoint"})


def test_the_catalog_url_is_the_base_urls_root() -> None:
    assert catalog_url("http://h:1/o/abc/api/v1/") == "http://h:1/api/v1/catalog.json"
    assert catalog_url("https://h/edge/o/abc/api/v1") == "https://h/edge/api/v1/catalog.json"


async def test_storypost_mcp_serves_the_catalogs_procedures(tmp_path: Path) -> None:
    with scripted(api) as server:
        config = str(tmp_path / "config.json")
        async with storypost_mcp_session(
            base_url=server.base_url, token=TOKEN, config=config
        ) as session:
            listed = await session.list_tools()
            fresh = await session.call_tool("generate-uuid", {})
            newer = await session.call_tool("list-posts", {})
            invalid = await session.call_tool("generate-uuid", {"x": 1})
            unknown = await session.call_tool("schedule-story", {})
            read_back = await session.read_resource("storypost://api/v1/catalog.json")
    assert [tool.name for tool in listed.tools] == ["generate-uuid", "list-posts"]
    assert listed.tools[1].input_schema == NEW["inputSchema"]
    assert listed.tools[1].description == "A procedure newer than the client.\n\nLists posts."
    assert body(fresh) == {"uuid": "c02eacbc-e1df-4fd9-a77a-6638dff92f2b"}
    assert body(newer) == {"posts": []}
    assert isinstance(invalid, types.CallToolResult) and invalid.is_error
    assert body(invalid) == INVALID
    assert invalid.meta is not None and invalid.meta["storypost/httpStatus"] == 400
    assert isinstance(unknown, types.CallToolResult) and unknown.is_error
    assert body(unknown) == {"errorMessage": "unknown procedure: schedule-story"}
    content = read_back.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert json.loads(content.text) == CATALOG
    # One HTTP call per tool call (the invalid one is not retried), with the token.
    calls = [seen.path for seen in server.seen if seen.method == "POST"]
    assert calls == [
        f"{ORG_PATH}/generate-uuid",
        f"{ORG_PATH}/list-posts",
        f"{ORG_PATH}/generate-uuid",
    ]
