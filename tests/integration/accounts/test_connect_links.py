"""create-connect-link over HTTP: idempotent, 100 per organization, and its pages (without a
browser; tests/e2e/test_connect_link.py drives a real one)."""

from __future__ import annotations

import asyncio
import uuid
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost.testing.stack import StackHandle
from storypost_runtime.service_auth import EDGE
from tests.support.api import Api, Org

pytestmark = pytest.mark.integration


async def test_the_same_uuid_returns_the_same_url_and_bad_input_is_refused(
    api: Api, fresh_org: Org
) -> None:
    link_uuid = str(uuid.uuid4())
    first = await api.call(
        fresh_org, "create-connect-link", {"connectLinkUuid": link_uuid, "description": "Lisbon"}
    )
    assert first.status_code == 200, first.text
    again = await api.call(fresh_org, "create-connect-link", {"connectLinkUuid": link_uuid})
    assert again.json() == first.json()
    url = first.json()["connectLinkUrl"]
    assert url.startswith(f"{api.edge_url}/connect/") and len(url.rsplit("/", 1)[1]) == 43
    too_long = await api.call(
        fresh_org,
        "create-connect-link",
        {"connectLinkUuid": str(uuid.uuid4()), "description": "x" * 501},
    )
    assert too_long.status_code == 400
    assert too_long.json()["validationErrorExplanation"]["description"] == [
        "must be at most 500 characters long (got 501)"
    ]


async def test_the_101st_connect_link_is_refused(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    # The first 100 straight over gRPC as the edge makes them (100 HTTP calls would wait for
    # the rate limit).
    channel = storypost_stack.channel("account", 30.0, caller=EDGE)
    try:
        accounts = account_pb2_grpc.AccountServiceStub(channel)
        uuids = [str(uuid.uuid4()) for _ in range(100)]
        for batch in range(0, 100, 20):
            await asyncio.gather(
                *(
                    accounts.CreateConnectLink(
                        pb.CreateConnectLinkRequest(
                            organization_id=fresh_org.organization_id, connect_link_uuid=u
                        )
                    )
                    for u in uuids[batch : batch + 20]
                )
            )
    finally:
        await channel.close()
    existing = await api.call(fresh_org, "create-connect-link", {"connectLinkUuid": uuids[7]})
    assert existing.status_code == 200
    refused = await api.call(
        fresh_org, "create-connect-link", {"connectLinkUuid": str(uuid.uuid4())}
    )
    assert refused.status_code == 400
    assert refused.json() == {
        "errorMessage": "an organization can have at most 100 connect links and this one has "
        "100; no link was created",
        "errorCode": "CONNECT_LINK_LIMIT",
    }
    # The existing links are unchanged.
    same = await api.call(fresh_org, "create-connect-link", {"connectLinkUuid": uuids[7]})
    assert same.json() == existing.json()


async def test_connect_pages_without_a_browser(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    link = await api.call(fresh_org, "create-connect-link", {"connectLinkUuid": str(uuid.uuid4())})
    url = link.json()["connectLinkUrl"]
    async with httpx.AsyncClient(timeout=30.0) as browser:
        page = await browser.get(url)
        assert page.status_code == 200 and "fresh test org" in page.text
        assert page.headers["Referrer-Policy"] == "no-referrer"
        started = await browser.post(url)
        assert started.status_code == 303
        authorize = started.headers["location"]
        assert authorize.startswith(storypost_stack.env["STORYPOST_SANDBOX_URL"])
        # Without the cookie set by the start, the callback refuses to finish.
        parts = urlsplit(authorize)
        form = dict(parse_qsl(parts.query)) | {"username": "paged.owner", "action": "allow"}
        signed_in = await browser.post(f"{parts.scheme}://{parts.netloc}{parts.path}", data=form)
        assert signed_in.status_code == 302
        callback = signed_in.headers["location"]
        assert callback.startswith(f"{api.edge_url}/connect/callback?")
        async with httpx.AsyncClient(timeout=30.0) as stranger:
            foreign = await stranger.get(callback)
        assert foreign.status_code == 400 and "Open the connect link again" in foreign.text
        done = await browser.get(callback)
        assert done.status_code == 200, done.text
        assert "@paged.owner" in done.text and "is now" in done.text
        used = await browser.get(url)
        assert used.status_code == 410 and "already used" in used.text
        assert (await browser.post(url)).status_code == 410
        unknown = await browser.get(f"{api.edge_url}/connect/{'A' * 43}")
        assert unknown.status_code == 404 and "does not exist" in unknown.text
        assert "Traceback" not in unknown.text
        odd = await browser.get(f"{api.edge_url}/connect/%3Cscript%3E")
        assert odd.status_code == 404 and "<script>" not in odd.text
        expired = await browser.get(
            f"{api.edge_url}/connect/callback", params={"state": "x", "code": "y"}
        )
        assert expired.status_code == 400
    users = await api.call(fresh_org, "list-photoapp-users", {})
    assert [u["photoappUsername"] for u in users.json()["photoappUsers"]] == ["paged.owner"]
