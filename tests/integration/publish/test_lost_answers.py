"""A platform's answer lost, through the whole stack (issue #23): clipapp's init performed
only after publish-svc's platform timeout (a `slow` switch: the look-up finds nothing at first
and must look again), and publish-svc killed between `executed` and taking the credit. Every
other call of every driver failing, answering late or lost with publish-svc is a cell of
test_failure_matrix.py.

Every case: the sandbox network holds at most one post for the UUID, the final status tells
the truth, every status change has its one event, and a credit is taken exactly once.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient

from storypost.testing.stack import StackHandle
from storypost_runtime.mongo import Document
from tests.integration.publish.conftest import IMAGE_STORY, events_of, platform_timeout, username
from tests.support.accounts import connect_account, published, reset_switches, set_switch
from tests.support.api import Api, Org
from tests.support.mongo import stack_database
from tests.support.polling import wait_until

CLIPAPP_EVENT = "clipapp_post.status_changed"
SOCIAL_EVENT = "social_post.status_changed"
PHOTO_INIT = "post/publish/content/init"


@dataclass
class Case:
    """A case's organization on the running stack, the bus and the stack's database."""

    org: Org
    stack: StackHandle
    bus: NatsClient
    database: Any


@pytest.fixture
async def case(
    fresh_org: Org, storypost_stack: StackHandle, bus: NatsClient
) -> AsyncIterator[Case]:
    async with stack_database(storypost_stack.env, tz_aware=True) as db:
        yield Case(fresh_org, storypost_stack, bus, db)


async def call(api: Api, org: Org, procedure: str, body: dict[str, Any]) -> dict[str, Any]:
    """One call as the spec tells callers to make it: 429 and 503 (a service restarting) are
    retried."""
    deadline = time.monotonic() + 60
    while True:
        answer = await api.call(org, procedure, body)
        if answer.status_code not in (429, 503) or time.monotonic() > deadline:
            assert answer.status_code == 200, answer.text
            result: dict[str, Any] = answer.json()
            return result
        await asyncio.sleep(float(answer.headers.get("Retry-After") or 1))


async def final_status(
    api: Api, org: Org, procedure: str, ref: dict[str, str], within: float = 120
) -> dict[str, Any]:
    async def final() -> dict[str, Any] | None:
        result = await call(api, org, procedure, ref)
        return result if result["status"] in ("executed", "failed") else None

    # Once a second: the organization's rate limit is 60 calls a minute.
    return await wait_until(final, within, f"{ref} to end", every=1.0)


async def schedule_clipapp(
    api: Api, org: Org, stack: StackHandle, name: str, privacy: str
) -> tuple[dict[str, str], str]:
    account = await connect_account(stack, org, "clipapp", name)
    body = {
        "clipappPostUuid": str(uuid.uuid4()),
        "clipappAccountId": account.platform_account_id,
        "html": IMAGE_STORY,
        "title": f"lost answer {uuid.uuid4().hex[:8]}",
        "privacyLevel": privacy,
    }
    await call(api, org, "schedule-clipapp-post", body)
    record_id = f"clipapp:{org.organization_id}:{body['clipappPostUuid']}"
    return {"clipappPostUuid": body["clipappPostUuid"]}, record_id


async def clipapp_statuses(bus: NatsClient, ref: dict[str, str], expected: int) -> list[str]:
    """The post's events on the bus (asks for one more than expected: none may follow)."""
    events = await events_of(
        bus, CLIPAPP_EVENT, "clipappPostUuid", ref["clipappPostUuid"], expected + 1, within=8
    )
    assert len({e["_id"] for e in events}) == len(events)
    return [e["status"] for e in events]


async def test_clipapp_init_answering_after_the_timeout_is_found_not_posted_again(
    api: Api, case: Case
) -> None:
    name = username()
    await connect_account(case.stack, case.org, "clipapp", name)
    # init performs the post only after publish-svc has given up waiting for its answer.
    await set_switch(
        case.stack,
        "clipapp",
        "slow",
        account=name,
        endpoint=PHOTO_INIT,
        seconds=platform_timeout(case.stack) + 3,
    )
    try:
        ref, record_id = await schedule_clipapp(
            api, case.org, case.stack, name, "PUBLIC_TO_EVERYONE"
        )
        done = await final_status(api, case.org, "status-clipapp-post", ref)
    finally:
        await reset_switches(case.stack, "clipapp", name)
    assert done["status"] == "executed", done
    items = await published(case.stack, "clipapp", name)
    assert len(items) == 1, items
    record = await case.database["posts"].find_one({"_id": record_id})
    # The answer was lost (a timeout, then looked for), and the post found is the one stored.
    last_error = record["progress"]["lastError"]
    assert "timed out" in last_error or "answer to the publish request was lost" in last_error
    assert record["platformPostId"] == items[0]["postId"]
    assert await clipapp_statuses(case.bus, ref, 3) == ["scheduled", "in-progress", "executed"]


async def test_kill_9_between_executed_and_the_credit_takes_it_once_after_restart(
    api: Api, case: Case
) -> None:
    name = username()
    account = await connect_account(case.stack, case.org, "pronet", name)
    org_id = case.org.organization_id
    await api.admin.set_credits(org_id, 5)
    body = {
        "socialPostUuid": str(uuid.uuid4()),
        "socialAccountId": account.social_account_id,
        "postType": "IMAGE_POST",
        "html": IMAGE_STORY,
        "text": "credit once",
    }
    record_id = f"social:{org_id}:{body['socialPostUuid']}"
    posts = case.database["posts"]
    # pronet publishes at once but answers 6 s later: account-svc is killed meanwhile, so
    # publish-svc records `executed` and cannot take the credit; then publish-svc dies too.
    await set_switch(case.stack, "pronet", "late-answer", account=name, endpoint="posts", seconds=6)
    killed: list[str] = []

    async def publishes() -> list[dict[str, Any]] | None:
        return await published(case.stack, "pronet", name) or None

    async def executed() -> Document | None:
        doc: Document | None = await posts.find_one({"_id": record_id, "status": "executed"})
        return doc

    try:
        await call(api, case.org, "schedule-social-post", body)
        await wait_until(publishes, 60, "pronet to publish", every=0.2)
        killed.append("account")
        await case.stack.processes.kill("account")
        await wait_until(executed, 30, "the executed transition", every=0.2)
        killed.append("publish")
        await case.stack.processes.kill("publish")
    finally:
        await reset_switches(case.stack, "pronet", name)
        for component in killed:
            await case.stack.processes.start_component(component)
    balances = case.database["credit_balances"]

    async def settled() -> Document | None:
        doc: Document | None = await posts.find_one({"_id": record_id})
        owed = doc is None or "creditDueAt" in doc
        balance = await balances.find_one({"_id": org_id})
        return None if owed or balance is None or balance["balance"] == 5 else doc

    await wait_until(settled, 60, "the credit to be taken", every=0.2)
    await asyncio.sleep(12)  # one more settling round: nothing more is taken
    balance = await balances.find_one({"_id": org_id})
    assert balance is not None and balance["balance"] == 4
    taken = await case.database["credit_consumptions"].count_documents(
        {"organizationId": org_id, "state": "applied"}
    )
    assert taken == 1
    assert len(await published(case.stack, "pronet", name)) == 1
    events = await events_of(
        case.bus, SOCIAL_EVENT, "socialPostUuid", body["socialPostUuid"], 3, within=8
    )
    assert [e["status"] for e in events] == ["in-progress", "executed"]
