"""Account health against the running stack: a refused refresh found by the check of an
account with a post due sends one `account.status_changed` to the webhook that asked for it,
the account lists as disconnected with its reason, and its due post fails saying to
reconnect (nothing was sent, so never "outcome unknown"); a platform outage changes nothing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost.testing.stack import StackHandle
from storypost.webhook.v1 import webhook_pb2, webhook_pb2_grpc
from storypost_runtime.service_auth import PUBLISH_SVC
from storypost_runtime.vocabulary import ACCOUNT_STATUS_EVENT
from tests.integration.publish.conftest import IMAGE_STORY
from tests.reliability.support import wait_status
from tests.support.accounts import connect_account, published, sandbox_switch
from tests.support.api import Api, Org
from tests.support.hook_server import serving_hook
from tests.support.polling import wait_until

pytestmark = pytest.mark.integration

Received = list[dict[str, Any]]


@dataclass
class Watching:
    """An organization whose account status changes a webhook receives: the bodies it
    accepted, and account-svc as publish-svc calls it (CheckAccounts answers only
    publish-svc)."""

    stack: StackHandle
    org: Org
    accounts: account_pb2_grpc.AccountServiceAsyncStub
    received: Received

    async def connect(self, platform: str, prefix: str) -> tuple[str, str]:
        """A new account of `platform` named `prefix`…: its username and id."""
        name = f"{prefix}{uuid.uuid4().hex[:8]}"
        account = await connect_account(self.stack, self.org, platform, name)
        return name, account.social_account_id


@pytest.fixture
async def watching(storypost_stack: StackHandle, fresh_org: Org) -> AsyncIterator[Watching]:
    """fresh_org with a plain-HTTP webhook receiver on loopback (the test stack allows it)
    subscribed to its account status changes."""
    received: Received = []

    async def handle(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response(status=204)

    channel = storypost_stack.channel("account", 30.0, caller=PUBLISH_SVC)
    try:
        async with serving_hook(handle) as url:
            await subscribe(storypost_stack, fresh_org, url)
            accounts = account_pb2_grpc.AccountServiceStub(channel)
            yield Watching(storypost_stack, fresh_org, accounts, received)
    finally:
        await channel.close()


async def subscribe(stack: StackHandle, org: Org, url: str) -> None:
    async with stack.channel("webhook", 10.0) as channel:
        await webhook_pb2_grpc.WebhookServiceStub(channel).AddWebhook(
            webhook_pb2.AddWebhookRequest(
                organization_id=org.organization_id, url=url, events=[ACCOUNT_STATUS_EVENT.name]
            )
        )


def changes(received: Received, social_account_id: str) -> list[tuple[str, str]]:
    return [
        (body["status"], body["reason"])
        for body in received
        if body["event"] == ACCOUNT_STATUS_EVENT.name
        and body["socialAccountId"] == social_account_id
    ]


def arrived(
    received: Received, social_account_id: str, count: int
) -> Callable[[], Awaitable[bool | None]]:
    """A probe for wait_until: true once `count` status changes of the account arrived."""

    async def probe() -> bool | None:
        return True if len(changes(received, social_account_id)) >= count else None

    return probe


async def check(
    accounts: account_pb2_grpc.AccountServiceAsyncStub, org: Org, social_account_id: str
) -> dict[str, str]:
    answer = await accounts.CheckAccounts(
        pb.CheckAccountsRequest(
            organization_id=org.organization_id, social_account_ids=[social_account_id]
        )
    )
    return {a.social_account_id: a.status for a in answer.accounts}


async def social_entry(api: Api, org: Org, social_account_id: str) -> dict[str, Any]:
    answer = await api.call(org, "list-social-accounts", {})
    assert answer.status_code == 200, answer.text
    entry: dict[str, Any] = next(
        s for s in answer.json()["socialAccounts"] if s["socialAccountId"] == social_account_id
    )
    return entry


async def test_a_refused_refresh_is_one_event_and_the_due_post_fails_saying_to_reconnect(
    api: Api, watching: Watching
) -> None:
    storypost_stack, fresh_org, accounts = watching.stack, watching.org, watching.accounts
    received = watching.received
    name, sid = await watching.connect("photoapp", "health")
    await wait_until(arrived(received, sid, 1), 30, "the connected event")
    assert changes(received, sid) == [("connected", "connected")]
    # A story due in a minute, scheduled while the account is healthy.
    date = (datetime.now(UTC) + timedelta(seconds=45)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {"storyPostUuid": str(uuid.uuid4()), "photoappUsername": name, "html": IMAGE_STORY}
    answer = await api.call(fresh_org, "schedule-photoapp-story", {**body, "date": date})
    assert answer.status_code == 200, answer.text
    async with sandbox_switch(storypost_stack, "photoapp", "token-expired", account=name):
        # What publish-svc's account checks ask for an account with a post due within a day.
        assert await check(accounts, fresh_org, sid) == {sid: "needs_reconnect"}
        assert await check(accounts, fresh_org, sid) == {sid: "needs_reconnect"}
        await wait_until(arrived(received, sid, 2), 30, "the needs_reconnect event")
        entry = await social_entry(api, fresh_org, sid)
        assert entry["disconnected"] is True and "revoked" in entry["disconnectReason"]
        ref = {"storyPostUuid": body["storyPostUuid"]}
        done = await wait_status(api, fresh_org, "status-photoapp-story", ref, {"failed"})
    assert "reconnect" in done["errorMessage"]
    assert "outcome is unknown" not in done["errorMessage"]
    assert await published(storypost_stack, "photoapp", name) == []
    await asyncio.sleep(2)  # anything more would have come by now
    (_, (status, reason)) = changes(received, sid)
    assert status == "needs_reconnect" and "revoked" in reason
    (event,) = [b for b in received if b["socialAccountId"] == sid and b["status"] == status]
    assert event["platform"] == "PHOTOAPP" and event["username"] == name
    assert event["occurredAt"].endswith("Z")
    # Connecting again: one `connected` more, and the listing is clean.
    await connect_account(storypost_stack, fresh_org, "photoapp", name)
    await wait_until(arrived(received, sid, 3), 30, "the connected-again event")
    assert changes(received, sid)[-1] == ("connected", "connected again")
    entry = await social_entry(api, fresh_org, sid)
    assert entry["disconnected"] is False and "disconnectReason" not in entry


async def test_a_platform_outage_during_a_check_changes_nothing(
    api: Api, watching: Watching
) -> None:
    name, sid = await watching.connect("pinboard", "patient")
    async with sandbox_switch(watching.stack, "pinboard", "offline", account=name):
        assert await check(watching.accounts, watching.org, sid) == {sid: "connected"}
    await asyncio.sleep(2)
    assert changes(watching.received, sid) == [("connected", "connected")]
    assert (await social_entry(api, watching.org, sid))["disconnected"] is False
    # Another organization cannot check it: its id is unknown there.
    other = await api.admin.create_org("health other")
    assert await check(watching.accounts, other, sid) == {}
