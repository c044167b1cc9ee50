"""The edge over real HTTP against the running embedded stack: every error case of issue #3."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
from prometheus_client.parser import text_string_to_metric_families

from edge.catalog import build_catalog
from storypost.testing.stack import StackHandle
from tests.support.api import Api, Org

NOT_AUTHENTICATED = {"errorMessage": "not authenticated"}


async def test_generate_uuid_end_to_end(api: Api, org: Org) -> None:
    response = await api.call(org, "generate-uuid", {})
    assert response.status_code == 200, response.text
    body = response.json()
    assert uuid.UUID(body["uuid"]).version == 4
    assert response.headers["RateLimit-Limit"] == "60"
    assert int(response.headers["RateLimit-Remaining"]) <= 59
    assert response.headers["Content-Type"].startswith("application/json")
    assert len(response.headers["X-Request-Id"]) >= 8
    # A caller's own request id is echoed back.
    again = await api.call(org, "generate-uuid", {}, headers={"X-Request-Id": "my-trace-1"})
    assert again.headers["X-Request-Id"] == "my-trace-1"
    assert again.json()["uuid"] != body["uuid"]


async def test_auth_failures_are_401_with_the_spec_body(api: Api, org: Org, other_org: Org) -> None:
    cases: list[dict[str, str]] = [
        {},
        {"Authorization": ""},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer"},
        {"Authorization": f"Bearer {org.token}x"},
        {"Authorization": "Bearer sp_" + "A" * 43},
        # A valid token of another organization on this organization's base URL.
        {"Authorization": f"Bearer {other_org.token}"},
    ]
    for headers in cases:
        response = await api.post(f"{org.base_url}/generate-uuid", json={}, headers=headers)
        assert response.status_code == 401, headers
        assert response.json() == NOT_AUTHENTICATED
    # The scheme is case-insensitive.
    ok = await api.post(
        f"{org.base_url}/generate-uuid", json={}, headers={"Authorization": f"bearer {org.token}"}
    )
    assert ok.status_code == 200


async def test_revoked_token_stops_working(api: Api, org: Org) -> None:
    extra = await api.admin.create_token(org.organization_id)
    assert (await api.call(org, "generate-uuid", {}, token=extra.token)).status_code == 200
    await api.admin.revoke_token(org.organization_id, extra.credential_id)
    # The edge remembers token checks for STORYPOST_AUTH_CACHE_SECONDS (1 s in the tests).
    await asyncio.sleep(1.2)
    response = await api.call(org, "generate-uuid", {}, token=extra.token)
    assert response.status_code == 401
    assert response.json() == NOT_AUTHENTICATED
    assert (await api.call(org, "generate-uuid", {})).status_code == 200


async def authenticate_calls(stack: StackHandle) -> float:
    """Authenticate calls account-svc's replicas answered so far."""
    total = 0.0
    async with httpx.AsyncClient(timeout=10, trust_env=False) as http:
        for url in stack.metrics_urls("account"):
            for metric in text_string_to_metric_families((await http.get(url)).text):
                total += sum(
                    sample.value
                    for sample in metric.samples
                    if sample.name == "storypost_grpc_requests_total"
                    and sample.labels["method"].endswith("/Authenticate")
                )
    return total


async def test_a_token_in_steady_use_is_checked_once_and_still_revoked_in_time(
    api: Api, org: Org, storypost_stack: StackHandle
) -> None:
    # The edge reuses a valid token's check while account-svc's revocation feed is current,
    # and drops it when the feed lists the credential (edge/auth.py).
    cache_seconds = float(storypost_stack.env.get("STORYPOST_AUTH_CACHE_SECONDS", "5"))
    extra = await api.admin.create_token(org.organization_id)
    before = await authenticate_calls(storypost_stack)
    used_until = time.monotonic() + 3 * cache_seconds
    while time.monotonic() < used_until:
        assert (await api.call(org, "generate-uuid", {}, token=extra.token)).status_code == 200
        await asyncio.sleep(cache_seconds / 4)
    # Each edge replica asked once (an expiring cache would have asked three times each).
    edges = len(storypost_stack.metrics_urls("edge"))
    assert await authenticate_calls(storypost_stack) - before <= edges + 1
    await api.admin.revoke_token(org.organization_id, extra.credential_id)
    revoked = time.monotonic()
    while time.monotonic() < revoked + cache_seconds:
        await asyncio.sleep(cache_seconds / 10)
    # Every call begun a cache time after the revocation is refused, on every replica.
    for _ in range(2 * edges):
        response = await api.call(org, "generate-uuid", {}, token=extra.token)
        assert response.status_code == 401 and response.json() == NOT_AUTHENTICATED


async def test_unknown_key_gets_the_validation_body(api: Api, org: Org) -> None:
    response = await api.call(org, "generate-uuid", {"foo": 1})
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {
        "errorMessage",
        "procedureName",
        "paramsJsonSchema",
        "validationErrorExplanation",
    }
    assert body["errorMessage"] == "invalid params for procedure: generate-uuid"
    assert body["procedureName"] == "generate-uuid"
    assert body["paramsJsonSchema"]["additionalProperties"] is False
    assert body["validationErrorExplanation"] == {"foo": ["disallowed key"]}


async def test_near_miss_key_gets_a_suggestion(api: Api, org: Org) -> None:
    response = await api.call(org, "cancel-photoapp-story", {"storyPostUid": str(uuid.uuid4())})
    assert response.status_code == 400
    explanation = response.json()["validationErrorExplanation"]
    assert explanation["storyPostUid"][0] == "disallowed key"
    assert any("storyPostUuid" in text for text in explanation["storyPostUid"])
    assert "storyPostUuid" in explanation


async def test_missing_wrong_type_and_bad_formats(api: Api, org: Org) -> None:
    missing = await api.call(org, "status-photoapp-story", {})
    assert missing.status_code == 400
    assert "storyPostUuid" in missing.json()["validationErrorExplanation"]

    wrong_type = await api.call(org, "status-photoapp-story", {"storyPostUuid": 12})
    assert wrong_type.status_code == 400
    assert wrong_type.json()["validationErrorExplanation"]["storyPostUuid"]

    bad_uuid = await api.call(org, "status-photoapp-story", {"storyPostUuid": "not-a-uuid"})
    assert bad_uuid.status_code == 400
    assert bad_uuid.json()["validationErrorExplanation"]["storyPostUuid"] == ["not a valid uuid"]

    bad_date = await api.call(
        org,
        "schedule-photoapp-story",
        {
            "html": "<photoapp-story></photoapp-story>",
            "photoappUsername": "alice",
            "storyPostUuid": str(uuid.uuid4()),
            "date": "tomorrow at noon",
        },
    )
    assert bad_date.status_code == 400
    assert bad_date.json()["procedureName"] == "schedule-photoapp-story"
    assert bad_date.json()["validationErrorExplanation"]["date"] == [
        "not a valid ISO 8601 date-time"
    ]


async def test_bodies_that_are_not_json_objects(api: Api, org: Org) -> None:
    url = f"{org.base_url}/generate-uuid"
    auth = {"Authorization": f"Bearer {org.token}"}
    json_header = {**auth, "Content-Type": "application/json"}
    cases = [
        ({**json_header}, b"{not json"),
        ({**json_header}, b"[1, 2]"),
        ({**json_header}, b'"text"'),
        ({**json_header}, b""),
        ({**json_header}, b'{"a": NaN}'),
        ({**auth, "Content-Type": "text/plain"}, b"{}"),
        ({**auth}, b"{}"),
    ]
    for headers, content in cases:
        response = await api.post(url, content=content, headers=headers)
        assert response.status_code == 400, (headers, content)
        assert isinstance(response.json()["errorMessage"], str)
    charset = await api.post(
        url, content=b"{}", headers={**auth, "Content-Type": "application/json; charset=utf-8"}
    )
    assert charset.status_code == 200


async def test_unknown_procedure_and_wrong_method(api: Api, org: Org) -> None:
    unknown = await api.call(org, "make-coffee", {})
    assert unknown.status_code == 404
    assert "make-coffee" in unknown.json()["errorMessage"]
    got = await api.get(f"{org.base_url}/generate-uuid", headers=api.auth(org))
    assert got.status_code == 405
    assert "POST" in got.json()["errorMessage"]
    nowhere = await api.get("/nowhere")
    assert nowhere.status_code == 404
    assert nowhere.json()["errorMessage"]


async def test_render_input_needs_exactly_one_of_url_and_html(api: Api, org: Org) -> None:
    base = {"draftUuid": str(uuid.uuid4())}
    both = await api.call(
        org, "create-draft", {**base, "url": "https://example.com", "html": "<p>"}
    )
    assert both.status_code == 400
    assert "exactly one of url or html" in both.json()["errorMessage"]
    assert "validationErrorExplanation" not in both.json()
    neither = await api.call(org, "create-draft", base)
    assert neither.status_code == 400
    assert "exactly one of url or html" in neither.json()["errorMessage"]
    huge = await api.call(org, "create-draft", {**base, "html": "x" * 10_485_761})
    assert huge.status_code == 400
    assert huge.json()["validationErrorExplanation"]["html"]


async def test_rate_limit_is_60_per_minute_with_retry_after(api: Api, fresh_org: Org) -> None:
    statuses: list[int] = []
    last: httpx.Response | None = None
    for _ in range(90):
        last = await api.call(fresh_org, "generate-uuid", {})
        statuses.append(last.status_code)
        if last.status_code == 429:
            break
    assert last is not None and last.status_code == 429
    assert statuses.count(200) >= 60
    body = last.json()
    assert "rate limit" in body["errorMessage"]
    assert int(last.headers["Retry-After"]) >= 1
    assert last.headers["RateLimit-Limit"] == "60"
    assert last.headers["RateLimit-Remaining"] == "0"
    await asyncio.sleep(int(last.headers["Retry-After"]))
    assert (await api.call(fresh_org, "generate-uuid", {})).status_code == 200


async def test_catalog_and_openapi_need_no_auth(api: Api) -> None:
    catalog = await api.get("/api/v1/catalog.json")
    assert catalog.status_code == 200
    document = catalog.json()
    assert document["catalogVersion"] == 1
    names = {p["name"] for p in document["procedures"]}
    # The spec's 22, then the ones added since (catalogVersion stays 1).
    assert len(names) == len(build_catalog()) >= 22 and "schedule-photoapp-story" in names
    for procedure in document["procedures"]:
        assert {"name", "doc", "inputSchema", "outputSchema", "exampleInput"} <= set(procedure)
    openapi = await api.get("/api/v1/openapi.json")
    assert openapi.status_code == 200
    assert openapi.json()["openapi"].startswith("3.1")
    assert len(openapi.json()["paths"]) == len(build_catalog())


async def test_health_endpoints(api: Api) -> None:
    assert (await api.get("/healthz")).json() == {"status": "ok"}
    assert (await api.get("/readyz")).status_code == 200


async def test_idle_keep_alive_connections_do_not_lock_out_new_callers(api: Api, org: Org) -> None:
    """A pool of idle keep-alive connections (more than waitress's default limit of 100)
    must not keep a new connection from being answered."""
    url = httpx.URL(api.edge_url)
    idle: list[asyncio.StreamWriter] = []
    try:
        for _ in range(150):
            _reader, writer = await asyncio.open_connection(url.host, url.port)
            idle.append(writer)
        await asyncio.sleep(0.5)  # let the edge accept them all
        async with httpx.AsyncClient(timeout=10.0) as fresh:
            answer = await fresh.post(
                f"{org.base_url}/generate-uuid", json={}, headers=api.auth(org)
            )
        assert answer.status_code == 200, answer.text
    finally:
        for writer in idle:
            writer.close()
