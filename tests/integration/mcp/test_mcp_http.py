"""The edge's MCP server (`/o/<organizationId>/mcp`) with the official SDK's client against
the real stack: the tools are the catalog's procedures, a story scheduled through MCP is
executed on the sandbox network, and the API's walls and answers hold: a wrong token is
refused, another organization's story is not found, a validation error keeps its body, every
answer carries the rate-limit headers (and Retry-After on 429)."""

from __future__ import annotations

import uuid

import httpx
import mcp.types as types
import pytest

from storypost.testing.stack import StackHandle
from tests.integration.client.conftest import rate_limit_exhausted
from tests.integration.mcp.support import (
    IMAGE_PAGE,
    body_of,
    call,
    http_session,
    mcp_url,
    wait_final,
)
from tests.support.accounts import connect_account
from tests.support.api import Api, Org
from tests.support.mcp_clients import INITIALIZE, MCP_HEADERS

RATE_HEADERS = ("ratelimit-limit", "ratelimit-remaining", "ratelimit-reset")


async def test_the_tools_are_the_catalogs_procedures(api: Api, org: Org) -> None:
    catalog = (await api.get("/api/v1/catalog.json")).json()
    async with http_session(org) as session:
        listed = await session.list_tools()
        resources = await session.list_resources()
        read = await session.read_resource(resources.resources[0].uri)
    procedures = catalog["procedures"]
    assert [tool.name for tool in listed.tools] == [p["name"] for p in procedures]
    for tool, procedure in zip(listed.tools, procedures, strict=True):
        assert tool.input_schema == procedure["inputSchema"]
        assert tool.output_schema == procedure["outputSchema"]
        assert tool.description is not None and procedure["summary"] in tool.description
    content = read.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert content.mime_type == "application/json"
    assert httpx.Response(200, text=content.text).json() == catalog


async def test_a_story_scheduled_through_mcp_is_executed_and_walled_off(
    storypost_stack: StackHandle, fresh_org: Org, other_org: Org
) -> None:
    username = f"mcp{uuid.uuid4().hex[:10]}"
    await connect_account(storypost_stack, fresh_org, "photoapp", username)
    story = str(uuid.uuid4())
    arguments = {"storyPostUuid": story, "photoappUsername": username, "html": IMAGE_PAGE}
    async with http_session(fresh_org) as session:
        scheduled = await call(session, "schedule-photoapp-story", arguments)
        assert not scheduled.is_error, scheduled
        assert body_of(scheduled)["status"] == "scheduled"
        final = await wait_final(session, story)
    assert final["status"] == "executed", final
    assert final.get("previewUrl")

    # Another organization's session does not find it: the API's answer, as a tool error.
    async with http_session(other_org) as session:
        result = await call(session, "status-photoapp-story", {"storyPostUuid": story})
    assert result.is_error
    assert "not found" in body_of(result)["errorMessage"]
    assert result.meta is not None and result.meta["storypost/httpStatus"] == 400


async def test_a_wrong_token_or_another_organizations_url_is_refused(
    api: Api, org: Org, other_org: Org
) -> None:
    for url, token in ((mcp_url(org), org.token + "x"), (mcp_url(other_org), org.token)):
        answer = await api.post(
            url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 401
        assert answer.json() == {"errorMessage": "not authenticated"}
        assert not any(name in answer.headers for name in RATE_HEADERS)
    # The SDK's client gets no session either.
    with pytest.raises(Exception):  # noqa: B017 (the SDK's error for a refused request)
        async with http_session(org, token=org.token + "x"):
            pass


async def test_a_validation_error_keeps_the_apis_body(api: Api, org: Org) -> None:
    arguments = {"storyPostUid": "9c0b1a1e-0000-4000-8000-000000000000"}
    direct = await api.call(org, "cancel-photoapp-story", arguments)
    assert direct.status_code == 400
    async with http_session(org) as session:
        result = await call(session, "cancel-photoapp-story", arguments)
        unknown = await call(session, "schedule-story", {})
    assert result.is_error
    assert body_of(result) == direct.json()
    assert body_of(result)["validationErrorExplanation"]["storyPostUid"] == [
        "disallowed key",
        "did you mean 'storyPostUuid'?",
    ]
    assert unknown.is_error
    assert body_of(unknown) == {"errorMessage": "unknown procedure: schedule-story"}


async def test_mcp_answers_carry_the_rate_limit_headers_and_429_retry_after(
    api: Api, fresh_org: Org
) -> None:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {fresh_org.token}"}
    answer = await api.post(mcp_url(fresh_org), json=INITIALIZE, headers=headers)
    assert answer.status_code == 200, answer.text
    assert all(answer.headers[name].isdigit() for name in RATE_HEADERS)
    assert int(answer.headers["ratelimit-limit"]) == 60
    async with rate_limit_exhausted(api, fresh_org):
        limited = await api.post(mcp_url(fresh_org), json=INITIALIZE, headers=headers)
    assert limited.status_code == 429
    assert limited.json()["errorCode"] == "RATE_LIMITED"
    assert int(limited.headers["retry-after"]) >= 1
    assert limited.headers["ratelimit-remaining"] == "0"
