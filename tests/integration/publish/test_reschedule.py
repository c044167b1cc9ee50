"""reschedule-post through the edge: a scheduled post moves (its event sent again with the new
date) and publishes at the new date; anything else is a 400 that changes nothing (issue 51)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from nats.aio.client import Client as NatsClient

from storypost.testing.stack import StackHandle
from tests.integration.publish.conftest import IMAGE_STORY, events_of
from tests.reliability.support import wait_status
from tests.support.accounts import published
from tests.support.api import Api, Org

STORY_EVENT = "photoapp_story_post.status_changed"


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


async def schedule(api: Api, org: Org, user: str, date: datetime) -> dict[str, str]:
    ref = {"storyPostUuid": str(uuid.uuid4())}
    body = {**ref, "photoappUsername": user, "html": IMAGE_STORY, "date": iso(date)}
    answer = await api.call(org, "schedule-photoapp-story", body)
    assert answer.status_code == 200, answer.text
    return ref


async def reschedule(api: Api, org: Org, ref: dict[str, str], date: str) -> Any:
    body = {"kind": "story", "uuid": ref["storyPostUuid"], "date": date}
    return await api.call(org, "reschedule-post", body)


async def test_a_scheduled_story_moves_sends_its_event_and_publishes_at_the_new_date(
    api: Api,
    fresh_org: Org,
    storypost_stack: StackHandle,
    photoapp_user: str,
    bus: NatsClient,
) -> None:
    ref = await schedule(api, fresh_org, photoapp_user, datetime.now(UTC) + timedelta(hours=1))
    later = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0)
    berlin = later.astimezone(timezone(timedelta(hours=2))).isoformat()
    moved = await reschedule(api, fresh_org, ref, berlin)
    assert moved.status_code == 200, moved.text
    assert moved.json() == {
        "kind": "story",
        "uuid": ref["storyPostUuid"],
        "status": "scheduled",
        "date": iso(later),
    }
    listed = (await api.call(fresh_org, "list-posts", {"kind": "story"})).json()["posts"]
    assert [(p["uuid"], p["date"]) for p in listed] == [(ref["storyPostUuid"], iso(later))]
    events = await events_of(bus, STORY_EVENT, "storyPostUuid", ref["storyPostUuid"], 2)
    assert [(e["status"], e.get("date")) for e in events] == [
        ("scheduled", None),
        ("scheduled", iso(later)),
    ]
    # Moved to now: due at once, published once.
    now = await reschedule(api, fresh_org, ref, iso(datetime.now(UTC)))
    assert now.status_code == 200, now.text
    done = await wait_status(api, fresh_org, "status-photoapp-story", ref, {"executed", "failed"})
    assert done["status"] == "executed", done
    assert len(await published(storypost_stack, "photoapp", photoapp_user)) == 1
    # Published: no longer movable, and nothing changes.
    refused = await reschedule(api, fresh_org, ref, iso(later))
    assert refused.status_code == 400
    assert refused.json()["errorCode"] == "POST_NOT_SCHEDULED"
    assert "executed" in refused.json()["errorMessage"]
    after = await api.call(fresh_org, "status-photoapp-story", ref)
    assert after.json()["status"] == "executed"


async def test_refusals_change_nothing(
    api: Api, fresh_org: Org, other_org: Org, photoapp_user: str
) -> None:
    date = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    ref = await schedule(api, fresh_org, photoapp_user, date)
    too_old = await reschedule(api, fresh_org, ref, iso(datetime.now(UTC) - timedelta(hours=2)))
    assert too_old.status_code == 400
    assert "date is more than 60 minutes in the past" in too_old.json()["errorMessage"]
    unknown = await reschedule(api, fresh_org, {"storyPostUuid": str(uuid.uuid4())}, iso(date))
    assert unknown.status_code == 400 and "not found" in unknown.json()["errorMessage"]
    # Another organization cannot see, let alone move, the post.
    elsewhere = await reschedule(api, other_org, ref, iso(date + timedelta(hours=1)))
    assert elsewhere.status_code == 400 and "not found" in elsewhere.json()["errorMessage"]
    wrong_kind = {"kind": "reel", "uuid": ref["storyPostUuid"], "date": iso(date)}
    assert (await api.call(fresh_org, "reschedule-post", wrong_kind)).status_code == 400
    canceled = await api.call(fresh_org, "cancel-photoapp-story", ref)
    assert canceled.status_code == 200
    refused = await reschedule(api, fresh_org, ref, iso(date + timedelta(hours=1)))
    assert refused.status_code == 400 and refused.json()["errorCode"] == "POST_NOT_SCHEDULED"
    listed = (await api.call(fresh_org, "list-posts", {})).json()["posts"]
    assert [(p["status"], p["date"]) for p in listed] == [("canceled", iso(date))]
    missing = await api.call(
        fresh_org, "reschedule-post", {"kind": "story", "uuid": str(uuid.uuid4())}
    )
    assert missing.status_code == 400
    assert "date" in missing.json()["validationErrorExplanation"]
