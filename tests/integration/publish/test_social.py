"""Clipapp and social posts through the edge against the sandbox network (issue #7)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient

from storypost.testing.stack import StackHandle
from tests.integration.publish.conftest import IMAGE_STORY, events_of, username
from tests.reliability.support import wait_status
from tests.support.accounts import connect_account, published, sandbox_switch
from tests.support.api import Api, Org

SOCIAL_EVENT = "social_post.status_changed"
# One image post type per platform that takes images (the video channel takes video only).
IMAGE_TYPES = {
    "linknet": "IMAGE_POST",
    "pronet": "IMAGE_POST",
    "pinboard": "PIN",
    "ephemeral": "IMAGE_STORY",
    "shorttext": "IMAGE_POST",
    "microblog": "IMAGE_POST",
    "clipapp": "PHOTO",
}


def social(account_id: str, post_type: str, **extra: Any) -> dict[str, Any]:
    return {
        "socialPostUuid": str(uuid.uuid4()),
        "socialAccountId": account_id,
        "postType": post_type,
        "html": IMAGE_STORY,
        "text": "Hello from storypost",
        **extra,
    }


@pytest.mark.parametrize("platform", sorted(IMAGE_TYPES))
async def test_every_platform_publishes_with_permalink(
    api: Api, fresh_org: Org, storypost_stack: StackHandle, platform: str
) -> None:
    name = username()
    account = await connect_account(storypost_stack, fresh_org, platform, name, connection="social")
    body = social(account.social_account_id, IMAGE_TYPES[platform])
    answer = await api.call(fresh_org, "schedule-social-post", body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "in-progress"
    ref = {"socialPostUuid": body["socialPostUuid"]}
    done = await wait_status(api, fresh_org, "status-social-post", ref, {"executed", "failed"})
    assert done["status"] == "executed", done
    assert done["platform"] == platform.upper()
    assert done["socialAccountId"] == account.social_account_id
    items = await published(storypost_stack, platform, name)
    assert len(items) == 1
    if platform != "clipapp":
        assert done["permalink"] == items[0]["permalink"]


async def test_event_rules_for_a_future_post(
    api: Api, fresh_org: Org, storypost_stack: StackHandle, bus: NatsClient
) -> None:
    account = await connect_account(storypost_stack, fresh_org, "linknet", username())
    date = (datetime.now(UTC) + timedelta(seconds=6)).isoformat()
    body = social(account.social_account_id, "IMAGE_POST", date=date)
    answer = await api.call(fresh_org, "schedule-social-post", body)
    assert answer.json()["status"] == "scheduled"
    ref = {"socialPostUuid": body["socialPostUuid"]}
    await wait_status(api, fresh_org, "status-social-post", ref, {"executed"})
    events = await events_of(
        bus, SOCIAL_EVENT, "socialPostUuid", body["socialPostUuid"], 3, within=5
    )
    # scheduled, then straight to the outcome: no event when the date arrives.
    assert [e["status"] for e in events] == ["scheduled", "executed"]
    assert events[1]["platform"] == "LINKNET" and events[1]["permalink"]
    assert events[1]["socialAccountId"] == account.social_account_id


async def test_event_rules_for_an_immediate_post_and_repeat_uuid(
    api: Api, fresh_org: Org, storypost_stack: StackHandle, bus: NatsClient
) -> None:
    account = await connect_account(storypost_stack, fresh_org, "pronet", username())
    body = social(account.social_account_id, "IMAGE_POST")
    assert (await api.call(fresh_org, "schedule-social-post", body)).json()[
        "status"
    ] == "in-progress"
    ref = {"socialPostUuid": body["socialPostUuid"]}
    await wait_status(api, fresh_org, "status-social-post", ref, {"executed"})
    events = await events_of(
        bus, SOCIAL_EVENT, "socialPostUuid", body["socialPostUuid"], 3, within=5
    )
    assert [e["status"] for e in events] == ["in-progress", "executed"]
    # Repeating the UUID answers the current status whatever the other parameters are.
    again = await api.call(
        fresh_org, "schedule-social-post", {**body, "text": "other", "postType": "X"}
    )
    assert again.json() == {"socialPostUuid": body["socialPostUuid"], "status": "executed"}
    other = await connect_account(storypost_stack, fresh_org, "pronet", username())
    moved = await api.call(
        fresh_org, "schedule-social-post", {**body, "socialAccountId": other.social_account_id}
    )
    assert moved.status_code == 400


async def test_bad_post_types_options_and_captions(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    pin = await connect_account(storypost_stack, fresh_org, "pinboard", username())
    unknown_type = await api.call(
        fresh_org, "schedule-social-post", social(pin.social_account_id, "REEL")
    )
    assert unknown_type.status_code == 400 and "REEL" in unknown_type.json()["errorMessage"]
    bad_option = await api.call(
        fresh_org,
        "schedule-social-post",
        social(pin.social_account_id, "PIN", options={"boardID": "x"}),
    )
    assert bad_option.status_code == 400
    explanation = bad_option.json()["validationErrorExplanation"]
    assert explanation["options.boardID"][0] == "disallowed key"
    micro = await connect_account(storypost_stack, fresh_org, "microblog", username())
    no_text = await api.call(
        fresh_org, "schedule-social-post", social(micro.social_account_id, "IMAGE_POST", text="")
    )
    assert no_text.status_code == 400
    channel = await connect_account(storypost_stack, fresh_org, "videochannel", username())
    image_for_video = await api.call(
        fresh_org, "schedule-social-post", social(channel.social_account_id, "SHORT")
    )
    assert image_for_video.status_code == 400 and "video" in image_for_video.json()["errorMessage"]


async def test_credit_hold_and_release(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    account = await connect_account(storypost_stack, fresh_org, "shorttext", username())
    await api.admin.set_credits(fresh_org.organization_id, 0)
    body = social(account.social_account_id, "IMAGE_POST")
    assert (await api.call(fresh_org, "schedule-social-post", body)).status_code == 200
    ref = {"socialPostUuid": body["socialPostUuid"]}
    await asyncio.sleep(4)
    assert (await api.call(fresh_org, "status-social-post", ref)).json()["status"] == "in-progress"
    await api.admin.set_credits(fresh_org.organization_id, 2)
    done = await wait_status(
        api, fresh_org, "status-social-post", ref, {"executed", "failed"}, within=60
    )
    assert done["status"] == "executed"


async def test_daily_limit_shared_by_two_organizations(
    api: Api, storypost_stack: StackHandle
) -> None:
    name = username()
    orgs = [await api.admin.create_org("daily a"), await api.admin.create_org("daily b")]
    accounts = [
        await connect_account(storypost_stack, o, "clipapp", name, connection="social")
        for o in orgs
    ]
    refs: list[tuple[Org, dict[str, str]]] = []
    for n in range(11):  # clipapp allows 10 posts per UTC day per account
        org, account = orgs[n % 2], accounts[n % 2]
        body = social(account.social_account_id, "PHOTO", text="x")
        answer = await api.call(org, "schedule-social-post", body)
        assert answer.status_code == 200, answer.text
        refs.append((org, {"socialPostUuid": body["socialPostUuid"]}))
    finals = [
        await wait_status(api, org, "status-social-post", ref, {"executed", "failed"}, within=120)
        for org, ref in refs
    ]
    assert [f["status"] for f in finals].count("executed") == 10
    failed = [f for f in finals if f["status"] == "failed"]
    assert len(failed) == 1 and "daily limit" in failed[0]["errorMessage"]
    assert len(await published(storypost_stack, "clipapp", name)) == 10


async def test_cancel_social_rules(api: Api, fresh_org: Org, storypost_stack: StackHandle) -> None:
    name = username()
    account = await connect_account(storypost_stack, fresh_org, "linknet", name)
    later = (datetime.now(UTC) + timedelta(hours=3)).isoformat()
    body = social(account.social_account_id, "IMAGE_POST", date=later)
    await api.call(fresh_org, "schedule-social-post", body)
    ref = {"socialPostUuid": body["socialPostUuid"]}
    async with sandbox_switch(storypost_stack, "linknet", "offline", account=name):
        offline = await api.call(fresh_org, "cancel-social-post", ref)
        assert offline.status_code == 429 and offline.headers["Retry-After"]
        assert (await api.call(fresh_org, "status-social-post", ref)).json()[
            "status"
        ] == "scheduled"
    canceled = await api.call(fresh_org, "cancel-social-post", ref)
    assert canceled.json() == {**ref, "status": "canceled"}
    assert (await api.call(fresh_org, "cancel-social-post", ref)).json()["status"] == "canceled"
    # While the upload runs (a slow platform), cancel answers 429 and the post goes on.
    slow_body = social(account.social_account_id, "IMAGE_POST")
    async with sandbox_switch(storypost_stack, "linknet", "slow", account=name, seconds=6):
        await api.call(fresh_org, "schedule-social-post", slow_body)
        slow_ref = {"socialPostUuid": slow_body["socialPostUuid"]}
        await asyncio.sleep(3)
        busy = await api.call(fresh_org, "cancel-social-post", slow_ref)
        assert busy.status_code == 429, busy.text
        done = await wait_status(
            api, fresh_org, "status-social-post", slow_ref, {"executed", "failed"}
        )
    assert done["status"] == "executed"
    refused = await api.call(fresh_org, "cancel-social-post", slow_ref)
    assert refused.status_code == 400


async def test_clipapp_post_states_and_creator_rules(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    name = username()
    account = await connect_account(storypost_stack, fresh_org, "clipapp", name)
    body = {
        "clipappPostUuid": str(uuid.uuid4()),
        "clipappAccountId": account.platform_account_id,
        "html": IMAGE_STORY,
        "title": "A photo",
        "privacyLevel": "PUBLIC_TO_EVERYONE",
    }
    answer = await api.call(fresh_org, "schedule-clipapp-post", body)
    assert answer.status_code == 200, answer.text
    ref = {"clipappPostUuid": body["clipappPostUuid"]}
    done = await wait_status(api, fresh_org, "status-clipapp-post", ref, {"executed", "failed"})
    assert done["status"] == "executed", done
    assert done["clipappStatus"] == "PUBLISH_COMPLETE"
    assert (await api.call(fresh_org, "cancel-clipapp-post", ref)).status_code == 400
    long_title = await api.call(
        fresh_org,
        "schedule-clipapp-post",
        {**body, "clipappPostUuid": str(uuid.uuid4()), "title": "x" * 91},
    )
    assert long_title.status_code == 400
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    future = {**body, "clipappPostUuid": str(uuid.uuid4()), "date": later}
    await api.call(fresh_org, "schedule-clipapp-post", future)
    future_ref = {"clipappPostUuid": future["clipappPostUuid"]}
    assert (await api.call(fresh_org, "cancel-clipapp-post", future_ref)).json()[
        "status"
    ] == "canceled"
