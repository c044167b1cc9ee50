"""Stories and reels through the edge against the sandbox network (issue #6)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from nats.aio.client import Client as NatsClient

from storypost.testing.stack import StackHandle
from tests.integration.publish.conftest import IMAGE_STORY, events_of, username
from tests.reliability.support import wait_status
from tests.support.accounts import connect_account, published, sandbox_switch
from tests.support.api import Api, Org

STORY_EVENT = "photoapp_story_post.status_changed"


def story(photoapp_user: str, **extra: object) -> dict[str, object]:
    return {
        "storyPostUuid": str(uuid.uuid4()),
        "photoappUsername": photoapp_user,
        "html": IMAGE_STORY,
        **extra,
    }


async def test_story_is_published_once_with_events_and_preview(
    api: Api, fresh_org: Org, photoapp_user: str, storypost_stack: StackHandle, bus: NatsClient
) -> None:
    body = story(photoapp_user)
    answer = await api.call(fresh_org, "schedule-photoapp-story", body)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"storyPostUuid": body["storyPostUuid"], "status": "scheduled"}
    ref = {"storyPostUuid": body["storyPostUuid"]}
    done = await wait_status(api, fresh_org, "status-photoapp-story", ref, {"executed", "failed"})
    assert done["status"] == "executed", done
    assert done["previewUrl"].startswith("http")
    assert "errorMessage" not in done
    items = await published(storypost_stack, "photoapp", photoapp_user)
    assert len(items) == 1 and items[0]["kind"] == "story"
    stickers = items[0]["request"]["stickers"]
    assert [s["type"] for s in stickers] == ["hashtag"]
    events = await events_of(bus, STORY_EVENT, "storyPostUuid", str(body["storyPostUuid"]), 2)
    assert [e["status"] for e in events] == ["scheduled", "executed"]
    assert set(events[1]) == {"storyPostUuid", "status", "occurredAt", "_id"}
    # Cancel of an executed story is an error and changes nothing.
    refused = await api.call(fresh_org, "cancel-photoapp-story", ref)
    assert refused.status_code == 400
    assert "already executed" in refused.json()["errorMessage"]
    # The same call again is the same success answer ("always scheduled"), publishing nothing.
    again = await api.call(fresh_org, "schedule-photoapp-story", body)
    assert again.status_code == 200, again.text
    assert again.json() == answer.json()
    assert len(await published(storypost_stack, "photoapp", photoapp_user)) == 1


async def test_twenty_concurrent_identical_schedules(
    api: Api, fresh_org: Org, photoapp_user: str, storypost_stack: StackHandle
) -> None:
    body = story(photoapp_user, date=(datetime.now(UTC) + timedelta(seconds=20)).isoformat())
    answers = await asyncio.gather(
        *(api.call(fresh_org, "schedule-photoapp-story", body) for _ in range(20))
    )
    assert {a.status_code for a in answers} == {200}, [a.text for a in answers]
    assert len({a.text for a in answers}) == 1
    ref = {"storyPostUuid": body["storyPostUuid"]}
    await wait_status(api, fresh_org, "status-photoapp-story", ref, {"executed"}, within=120)
    assert len(await published(storypost_stack, "photoapp", photoapp_user)) == 1


async def test_future_story_can_be_canceled_and_is_never_published(
    api: Api, fresh_org: Org, photoapp_user: str, storypost_stack: StackHandle, bus: NatsClient
) -> None:
    body = story(photoapp_user, date=(datetime.now(UTC) + timedelta(seconds=8)).isoformat())
    assert (await api.call(fresh_org, "schedule-photoapp-story", body)).status_code == 200
    ref = {"storyPostUuid": body["storyPostUuid"]}
    for _ in range(2):  # canceled stays canceled
        canceled = await api.call(fresh_org, "cancel-photoapp-story", ref)
        assert canceled.json() == {**ref, "status": "canceled"}
    await asyncio.sleep(10)
    assert (await api.call(fresh_org, "status-photoapp-story", ref)).json()["status"] == "canceled"
    assert await published(storypost_stack, "photoapp", photoapp_user) == []
    events = await events_of(bus, STORY_EVENT, "storyPostUuid", str(body["storyPostUuid"]), 2)
    assert [e["status"] for e in events] == ["scheduled", "canceled"]


async def test_platform_refusal_fails_the_story_with_its_reason(
    api: Api, fresh_org: Org, photoapp_user: str, storypost_stack: StackHandle
) -> None:
    async with sandbox_switch(
        storypost_stack,
        "photoapp",
        "fail",
        account=photoapp_user,
        message="media rejected",
        status=400,
    ):
        body = story(photoapp_user)
        assert (await api.call(fresh_org, "schedule-photoapp-story", body)).status_code == 200
        ref = {"storyPostUuid": body["storyPostUuid"]}
        failed = await wait_status(
            api, fresh_org, "status-photoapp-story", ref, {"failed", "executed"}
        )
    assert failed["status"] == "failed"
    assert "media rejected" in failed["errorMessage"]


async def test_offline_platform_is_retried_and_the_story_goes_out_when_it_returns(
    api: Api, fresh_org: Org, photoapp_user: str, storypost_stack: StackHandle
) -> None:
    body = story(photoapp_user)
    ref = {"storyPostUuid": body["storyPostUuid"]}
    async with sandbox_switch(storypost_stack, "photoapp", "offline", account=photoapp_user):
        assert (await api.call(fresh_org, "schedule-photoapp-story", body)).status_code == 200
        await asyncio.sleep(4)
        assert (await api.call(fresh_org, "status-photoapp-story", ref)).json()[
            "status"
        ] == "scheduled"
    done = await wait_status(
        api, fresh_org, "status-photoapp-story", ref, {"executed", "failed"}, within=120
    )
    assert done["status"] == "executed"
    assert len(await published(storypost_stack, "photoapp", photoapp_user)) == 1


async def test_account_and_linknet_checks(
    api: Api, fresh_org: Org, photoapp_user: str, storypost_stack: StackHandle
) -> None:
    unknown = await api.call(fresh_org, "schedule-photoapp-story", story("nobody-here"))
    assert unknown.status_code == 400 and "nobody-here" in unknown.json()["errorMessage"]
    unlinked = await api.call(
        fresh_org,
        "schedule-photoapp-story",
        story(photoapp_user, shareToLinknet=True, linknetDestinationId="999"),
    )
    assert unlinked.status_code == 400 and "999" in unlinked.json()["errorMessage"]
    body = story(photoapp_user, shareToLinknet=True, linknetDestinationId=42)
    assert (await api.call(fresh_org, "schedule-photoapp-story", body)).status_code == 200
    await wait_status(
        api,
        fresh_org,
        "status-photoapp-story",
        {"storyPostUuid": body["storyPostUuid"]},
        {"executed"},
    )
    items = await published(storypost_stack, "photoapp", photoapp_user)
    assert items[0]["linknetDestination"]["id"] == "42"


async def test_story_quota_refuses_with_429(
    api: Api, fresh_org: Org, photoapp_user: str, storypost_stack: StackHandle
) -> None:
    # The test stack sets STORYPOST_STORY_QUOTA_PER_DAY=3 (production: 100).
    future = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
    for _ in range(3):
        answer = await api.call(
            fresh_org, "schedule-photoapp-story", story(photoapp_user, date=future)
        )
        assert answer.status_code == 200, answer.text
    refused = await api.call(
        fresh_org, "schedule-photoapp-story", story(photoapp_user, date=future)
    )
    assert refused.status_code == 429
    assert refused.json()["errorCode"] == "QUOTA_EXCEEDED"
    assert int(refused.headers["Retry-After"]) > 3600


async def test_mention_busy_is_429_and_nothing_is_stored(
    api: Api, fresh_org: Org, photoapp_user: str, storypost_stack: StackHandle
) -> None:
    html = IMAGE_STORY + "<photoapp-mention username='someone'></photoapp-mention>"
    body = story(photoapp_user, html=html)
    # The platform rate-limits the only account: it stays busy for the Retry-After it gave.
    async with sandbox_switch(
        storypost_stack, "photoapp", "rate-limited", account=photoapp_user, retryAfterSeconds=2
    ):
        busy = await api.call(fresh_org, "schedule-photoapp-story", body)
        assert busy.status_code == 429, busy.text
        assert int(busy.headers["Retry-After"]) >= 1
        status = await api.call(
            fresh_org, "status-photoapp-story", {"storyPostUuid": body["storyPostUuid"]}
        )
        assert status.status_code == 400  # nothing stored
    await asyncio.sleep(2.5)
    again = await api.call(fresh_org, "schedule-photoapp-story", body)
    assert again.status_code == 200, again.text


async def test_reel_is_in_progress_then_executed_and_cancel_rules(
    api: Api,
    fresh_org: Org,
    photoapp_user: str,
    storypost_stack: StackHandle,
    sample_video_url: str,
) -> None:
    html = f"<photoapp-story src='{sample_video_url}'></photoapp-story><h1>reel</h1>"
    body = {
        "reelPostUuid": str(uuid.uuid4()),
        "photoappUsername": photoapp_user,
        "html": html,
        "caption": "c",
    }
    answer = await api.call(fresh_org, "schedule-photoapp-reel", body)
    assert answer.status_code == 200, answer.text
    ref = {"reelPostUuid": body["reelPostUuid"]}
    done = await wait_status(
        api, fresh_org, "status-photoapp-reel", ref, {"executed", "failed"}, within=120
    )
    assert done["status"] == "executed", done
    refused = await api.call(fresh_org, "cancel-photoapp-reel", ref)
    assert refused.status_code == 400
    image_only = {**body, "reelPostUuid": str(uuid.uuid4()), "html": IMAGE_STORY}
    no_video = await api.call(fresh_org, "schedule-photoapp-reel", image_only)
    assert no_video.status_code == 400 and "video" in no_video.json()["errorMessage"]


async def test_disconnected_account_is_refused(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    name = username()
    await connect_account(storypost_stack, fresh_org, "photoapp", name)
    async with sandbox_switch(storypost_stack, "photoapp", "token-expired", account=name):
        body = story(name)
        await api.call(fresh_org, "schedule-photoapp-story", body)
        ref = {"storyPostUuid": body["storyPostUuid"]}
        failed = await wait_status(
            api, fresh_org, "status-photoapp-story", ref, {"failed", "executed"}
        )
    assert failed["status"] == "failed" and "reconnect" in failed["errorMessage"]
    refused = await api.call(fresh_org, "schedule-photoapp-story", story(name))
    assert refused.status_code == 400 and "reconnect" in refused.json()["errorMessage"]
