"""The edge's MCP endpoint with fake backends, served by the edge's HTTP server, with the
official SDK's client: both protocol eras (the 2025 `initialize` handshake and 2026-07-28's
`server/discover`), tools from the catalog, the API's error bodies, the rate-limit headers,
the API's 401 and 429, and a tool call on the request's own thread and request id."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx
import mcp.types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from edge.catalog import build_catalog
from edge.config import EdgeSettings
from edge.errors import ApiError
from edge.mcp.endpoint import as_api_reads
from edge.procedures.base import CallContext, JsonObject
from storypost_runtime.context import current_request_id
from tests.support.edge_server import serving
from tests.support.mcp_clients import INITIALIZE, MCP_HEADERS
from tests.support.mcp_clients import body_of as body
from tests.unit.edge.test_app import ORG, TOKEN, FakeAccounts, client_of


@pytest.fixture
def accounts(monkeypatch: pytest.MonkeyPatch) -> FakeAccounts:
    fake = FakeAccounts()
    monkeypatch.setattr("edge.backends.account_pb2_grpc.AccountServiceStub", lambda _channel: fake)
    return fake


@pytest.fixture
def seen() -> list[tuple[str, str | None, str]]:
    """(thread name, request id, organization) of each call of the echo handler."""
    return []


@pytest.fixture
def edge_url(accounts: FakeAccounts, seen: list[tuple[str, str | None, str]]) -> Iterator[str]:
    def echo(ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        seen.append((threading.current_thread().name, current_request_id(), ctx.organization_id))
        return {"uuid": "c02eacbc-e1df-4fd9-a77a-6638dff92f2b"}

    settings = EdgeSettings(auth_cache_seconds=60, edge_port=0)
    app = client_of(settings, {"generate-uuid": echo}).app
    yield from serving(app, settings)


@contextlib.asynccontextmanager
async def session(url: str, *, modern: bool = False) -> AsyncIterator[ClientSession]:
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        streamable_http_client(f"{url}/o/{ORG}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as opened,
    ):
        if modern:
            await opened.discover()
        else:
            await opened.initialize()
        yield opened


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026-07-28"])
async def test_tools_calls_and_errors_in_both_protocol_eras(
    edge_url: str, seen: list[tuple[str, str | None, str]], modern: bool
) -> None:
    catalog = build_catalog().to_catalog_json()
    async with session(edge_url, modern=modern) as opened:
        listed = await opened.list_tools()
        answer = await opened.call_tool("generate-uuid", {})
        invalid = await opened.call_tool("generate-uuid", {"storyPostUid": "x"})
        unknown = await opened.call_tool("schedule-story", {})
        read = await opened.read_resource("storypost://api/v1/catalog.json")
    assert [tool.name for tool in listed.tools] == [p["name"] for p in catalog["procedures"]]
    assert [tool.input_schema for tool in listed.tools] == [
        p["inputSchema"] for p in catalog["procedures"]
    ]
    assert body(answer) == {"uuid": "c02eacbc-e1df-4fd9-a77a-6638dff92f2b"}
    assert invalid.is_error and invalid.meta and invalid.meta["storypost/httpStatus"] == 400
    assert body(invalid)["errorMessage"] == "invalid params for procedure: generate-uuid"
    assert body(invalid)["validationErrorExplanation"] == {"storyPostUid": ["disallowed key"]}
    assert unknown.is_error and body(unknown) == {
        "errorMessage": "unknown procedure: schedule-story"
    }
    content = read.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert json.loads(content.text) == catalog
    # The handler ran once (the invalid call never reached it), on a worker thread of the
    # edge's server, in the request's scope: its request id and organization.
    [(thread, request_id, organization)] = seen
    assert thread != threading.main_thread().name and request_id and organization == ORG


def test_answers_carry_rate_limit_headers_and_the_apis_401_and_429(
    edge_url: str, accounts: FakeAccounts
) -> None:
    url = f"{edge_url}/o/{ORG}/mcp"
    with httpx.Client() as http:
        answer = http.post(
            url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
        )
        refused = http.post(
            url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer sp_wrong"}
        )
        # Stateless: no stream to open, no session to end (the SDK's GET would never end).
        get = http.get(url, headers={"Authorization": f"Bearer {TOKEN}", **MCP_HEADERS})
        delete = http.delete(url, headers={"Authorization": f"Bearer {TOKEN}"})
        accounts.allowed = False
        limited = http.post(
            url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
        )
    assert answer.status_code == 200
    assert answer.json()["result"]["serverInfo"]["name"] == "storypost"
    assert (answer.headers["ratelimit-limit"], answer.headers["ratelimit-remaining"]) == (
        "60",
        "10",
    )
    assert answer.headers["ratelimit-reset"] == "50" and answer.headers["x-request-id"]
    assert refused.status_code == 401 and refused.json() == {"errorMessage": "not authenticated"}
    assert "ratelimit-limit" not in refused.headers
    assert get.status_code == delete.status_code == 405
    assert "POST" in get.headers["allow"]
    assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
    assert limited.json()["errorCode"] == "RATE_LIMITED"


def test_tool_arguments_are_read_as_the_api_reads_a_body() -> None:
    read = as_api_reads({"durationMs": 2.0, "ratio": 1.5, "nested": [{"n": 3.0}]})
    assert read == {"durationMs": 2, "ratio": 1.5, "nested": [{"n": 3}]}
    assert type(read["durationMs"]) is int and type(read["nested"][0]["n"]) is int
    with pytest.raises(ApiError) as refused:
        as_api_reads({"x": float("nan")})
    assert refused.value.status == 400
    assert refused.value.body == {"errorMessage": "request body is not valid JSON"}
