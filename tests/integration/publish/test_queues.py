"""Queues through the edge: set, list, preview and delete; posts scheduled into a queue take
distinct free slots (also when racing), a canceled post's slot is free again, and bad input
is a 400 naming the field with nothing stored (issue 51)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from storypost.testing.stack import StackHandle
from tests.integration.publish.conftest import IMAGE_STORY, username
from tests.support.accounts import connect_account
from tests.support.api import Api, Org

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
EVERY_DAY = [{"weekday": day, "time": at} for day in DAYS for at in ("09:00", "13:00", "18:30")]


def social(account_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "socialPostUuid": str(uuid.uuid4()),
        "socialAccountId": account_id,
        "postType": "IMAGE_POST",
        "html": IMAGE_STORY,
        **extra,
    }


async def ok(api: Api, org: Org, procedure: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = await api.call(org, procedure, body)
    assert answer.status_code == 200, (procedure, answer.text)
    result: dict[str, Any] = answer.json()
    return result


async def test_a_queue_gives_racing_posts_distinct_slots_and_frees_a_canceled_one(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    linknet = await connect_account(storypost_stack, fresh_org, "linknet", username())
    account = linknet.social_account_id
    body = {"socialAccountId": account, "timeZone": "Europe/Berlin", "slots": EVERY_DAY}
    queue = await ok(api, fresh_org, "set-queue", body)
    assert queue["queueName"] == "default" and len(queue["nextSlots"]) == 5
    assert all(slot.endswith("Z") for slot in queue["nextSlots"])
    listed = await ok(api, fresh_org, "list-queues", {"socialAccountId": account})
    assert [q["queueName"] for q in listed["queues"]] == ["default"]
    preview = await ok(
        api, fresh_org, "preview-queue", {"socialAccountId": account, "queueName": "default"}
    )
    assert preview["slots"][:5] == queue["nextSlots"]

    posts = [social(account, queueName="default") for _ in range(5)]
    answers = await asyncio.gather(*(api.call(fresh_org, "schedule-social-post", p) for p in posts))
    assert [a.status_code for a in answers] == [200] * 5, [a.text for a in answers]
    dates = [a.json()["date"] for a in answers]
    assert sorted(dates) == preview["slots"][:5]  # five distinct slots, the earliest ones
    assert {a.json()["status"] for a in answers} == {"scheduled"}
    # The same UUID again takes no second slot.
    again = await ok(api, fresh_org, "schedule-social-post", posts[0])
    assert again["date"] == dates[0]
    listed_posts = await ok(api, fresh_org, "list-posts", {"socialAccountId": account})
    assert sorted(p["date"] for p in listed_posts["posts"]) == sorted(dates)
    # Canceled: its slot is free again, and the next post takes it.
    earliest = posts[dates.index(min(dates))]
    await ok(api, fresh_org, "cancel-social-post", {"socialPostUuid": earliest["socialPostUuid"]})
    after = await ok(
        api, fresh_org, "preview-queue", {"socialAccountId": account, "queueName": "default"}
    )
    assert after["slots"][0] == min(dates)
    nxt = await ok(api, fresh_org, "schedule-social-post", social(account, queueName="default"))
    assert nxt["date"] == min(dates)

    deleted = await ok(
        api, fresh_org, "delete-queue", {"socialAccountId": account, "queueName": "default"}
    )
    assert deleted["deleted"] is True
    again_deleted = await ok(
        api, fresh_org, "delete-queue", {"socialAccountId": account, "queueName": "default"}
    )
    assert again_deleted["deleted"] is False


async def test_bad_input_names_the_field_and_stores_nothing(
    api: Api, fresh_org: Org, other_org: Org, storypost_stack: StackHandle
) -> None:
    mine = await connect_account(storypost_stack, fresh_org, "linknet", username())
    theirs = await connect_account(storypost_stack, other_org, "linknet", username())
    good = {"socialAccountId": mine.social_account_id, "timeZone": "UTC", "slots": EVERY_DAY[:1]}
    cases: list[tuple[dict[str, Any], str]] = [
        ({**good, "timeZone": "Mars/Olympus"}, "timeZone"),
        ({**good, "slots": [{"weekday": "monday", "time": "25:00"}]}, "slots.0.time"),
        ({**good, "slots": [{"weekday": "someday", "time": "09:00"}]}, "slots.0.weekday"),
        ({**good, "slots": EVERY_DAY[:1] * 101}, "slots"),
        ({**good, "socialAccountId": theirs.social_account_id}, "socialAccountId"),
        ({**good, "socialAccountId": "sa_nobody"}, "socialAccountId"),
    ]
    for body, field in cases:
        answer = await api.call(fresh_org, "set-queue", body)
        assert answer.status_code == 400, (body, answer.text)
        explained = answer.json()["validationErrorExplanation"]
        assert any(key == field or key.startswith(f"{field}.") for key in explained), (
            field,
            explained,
        )
    assert (await ok(api, fresh_org, "list-queues", {}))["queues"] == []
    # A 21st queue of one account is refused.
    for n in range(20):
        await ok(api, fresh_org, "set-queue", {**good, "queueName": f"q{n}"})
    too_many = await api.call(fresh_org, "set-queue", {**good, "queueName": "q20"})
    assert too_many.status_code == 400
    assert "queueName" in too_many.json()["validationErrorExplanation"]
    # date and queueName together, and an unknown queue: 400 naming them, nothing stored.
    both = social(mine.social_account_id, queueName="q1", date="2030-01-01T00:00:00Z")
    refused = await api.call(fresh_org, "schedule-social-post", both)
    assert refused.status_code == 400
    assert set(refused.json()["validationErrorExplanation"]) == {"date", "queueName"}
    unknown = await api.call(
        fresh_org, "schedule-social-post", social(mine.social_account_id, queueName="nightly")
    )
    assert unknown.status_code == 400
    assert "queueName" in unknown.json()["validationErrorExplanation"]
    assert (await ok(api, fresh_org, "list-posts", {}))["posts"] == []


async def test_a_story_takes_its_date_from_a_queue_of_its_photoapp_account(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    name = username()
    account = await connect_account(storypost_stack, fresh_org, "photoapp", name)
    body = {"socialAccountId": account.social_account_id, "timeZone": "America/New_York"}
    queue = await ok(api, fresh_org, "set-queue", {**body, "slots": EVERY_DAY})
    story = {"storyPostUuid": str(uuid.uuid4()), "photoappUsername": name, "html": IMAGE_STORY}
    answer = await ok(api, fresh_org, "schedule-photoapp-story", {**story, "queueName": "default"})
    assert answer["status"] == "scheduled" and answer["date"] == queue["nextSlots"][0]
    # Without queueName the answer is as it always was: no date.
    plain = {**story, "storyPostUuid": str(uuid.uuid4())}
    assert set(await ok(api, fresh_org, "schedule-photoapp-story", plain)) == {
        "storyPostUuid",
        "status",
    }
