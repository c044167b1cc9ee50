"""`storypost mcp`, the light client's MCP server over stdio, with the official SDK's stdio
client against the real stack: its tools are the API catalog's procedures, a story scheduled
through it is executed on the sandbox network, an error answer keeps the API's body."""

from __future__ import annotations

import uuid
from pathlib import Path

from storypost.testing.stack import StackHandle
from tests.integration.mcp.support import IMAGE_PAGE, body_of, call, stdio_session, wait_final
from tests.support.accounts import connect_account
from tests.support.api import Api, Org


async def test_the_tools_are_the_catalogs_and_errors_keep_the_apis_body(
    api: Api, org: Org, tmp_path: Path
) -> None:
    catalog = (await api.get("/api/v1/catalog.json")).json()
    arguments = {"storyPostUid": "9c0b1a1e-0000-4000-8000-000000000000"}
    direct = await api.call(org, "cancel-photoapp-story", arguments)
    async with stdio_session(org, str(tmp_path / "config.json")) as session:
        listed = await session.list_tools()
        fresh = await call(session, "generate-uuid", {})
        invalid = await call(session, "cancel-photoapp-story", arguments)
    assert [tool.name for tool in listed.tools] == [p["name"] for p in catalog["procedures"]]
    assert [tool.input_schema for tool in listed.tools] == [
        p["inputSchema"] for p in catalog["procedures"]
    ]
    assert not fresh.is_error and uuid.UUID(body_of(fresh)["uuid"]).version == 4
    assert invalid.is_error
    assert body_of(invalid) == direct.json()
    assert invalid.meta is not None and invalid.meta["storypost/httpStatus"] == 400


async def test_a_story_scheduled_through_storypost_mcp_is_executed(
    storypost_stack: StackHandle, fresh_org: Org, tmp_path: Path
) -> None:
    username = f"mcps{uuid.uuid4().hex[:10]}"
    await connect_account(storypost_stack, fresh_org, "photoapp", username)
    story = str(uuid.uuid4())
    arguments = {"storyPostUuid": story, "photoappUsername": username, "html": IMAGE_PAGE}
    async with stdio_session(fresh_org, str(tmp_path / "config.json")) as session:
        scheduled = await call(session, "schedule-photoapp-story", arguments)
        assert not scheduled.is_error, scheduled
        final = await wait_final(session, story)
    assert final["status"] == "executed", final
