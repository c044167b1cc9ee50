"""list-posts through the edge: every kind of the caller's organization only, newest date
first, each filter, and a cursor that stays correct while posts are added (issue 51)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from storypost.testing.stack import StackHandle
from tests.integration.publish.conftest import IMAGE_STORY, username
from tests.support.accounts import connect_account
from tests.support.api import Api, Org

BASE = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)


def at(hours: int) -> str:
    return (BASE + timedelta(hours=hours)).isoformat().replace("+00:00", "Z")


async def story(api: Api, org: Org, user: str, hours: int) -> str:
    post_uuid = str(uuid.uuid4())
    body = {"storyPostUuid": post_uuid, "photoappUsername": user, "html": IMAGE_STORY}
    answer = await api.call(org, "schedule-photoapp-story", {**body, "date": at(hours)})
    assert answer.status_code == 200, answer.text
    return post_uuid


async def listing(api: Api, org: Org, **params: Any) -> dict[str, Any]:
    answer = await api.call(org, "list-posts", params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def test_filters_order_and_organization_scope(
    api: Api, fresh_org: Org, other_org: Org, storypost_stack: StackHandle
) -> None:
    alice, bob = username(), username()
    alice_account = await connect_account(storypost_stack, fresh_org, "photoapp", alice)
    bob_account = await connect_account(storypost_stack, fresh_org, "photoapp", bob)
    linknet = await connect_account(storypost_stack, fresh_org, "linknet", username())
    stories = [await story(api, fresh_org, alice, hours) for hours in (1, 3)]
    bobs = await story(api, fresh_org, bob, 2)
    social_uuid = str(uuid.uuid4())
    social = {
        "socialPostUuid": social_uuid,
        "socialAccountId": linknet.social_account_id,
        "postType": "IMAGE_POST",
        "html": IMAGE_STORY,
        "date": at(4),
    }
    assert (await api.call(fresh_org, "schedule-social-post", social)).status_code == 200
    canceled = await api.call(fresh_org, "cancel-photoapp-story", {"storyPostUuid": stories[0]})
    assert canceled.status_code == 200, canceled.text
    other_user = username()
    await connect_account(storypost_stack, other_org, "photoapp", other_user)
    await story(api, other_org, other_user, 5)

    everything = await listing(api, fresh_org)
    assert [(p["kind"], p["uuid"]) for p in everything["posts"]] == [
        ("social", social_uuid),
        ("story", stories[1]),
        ("story", bobs),
        ("story", stories[0]),
    ]
    assert "nextCursor" not in everything
    first = everything["posts"][1]
    assert first == {
        "kind": "story",
        "uuid": stories[1],
        "status": "scheduled",
        "date": at(3).replace("+00:00", "Z"),
        "socialAccountId": alice_account.social_account_id,
    }
    uuids = {p["uuid"] for p in everything["posts"]}
    assert len(uuids) == 4  # the other organization's story is not listed

    async def only(**params: Any) -> list[str]:
        return [p["uuid"] for p in (await listing(api, fresh_org, **params))["posts"]]

    assert await only(kind="social") == [social_uuid]
    assert await only(status="canceled") == [stories[0]]
    assert await only(socialAccountId=alice_account.social_account_id) == [stories[1], stories[0]]
    assert await only(socialAccountId=bob_account.social_account_id, status="scheduled") == [bobs]
    assert await only(**{"from": at(2), "to": at(4)}) == [stories[1], bobs]
    assert await only(seriesUuid=str(uuid.uuid4())) == []
    # Another organization's account id finds nothing here.
    assert await only(socialAccountId="sa_of_someone_else") == []


async def test_the_cursor_stays_correct_while_posts_are_added(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    # The test stack's story quota is 3 per account: three accounts take the nine stories.
    users = [username() for _ in range(3)]
    for user in users:
        await connect_account(storypost_stack, fresh_org, "photoapp", user)
    # Newest first: 50, 40, 30, 20, 10 hours ahead.
    before = [
        await story(api, fresh_org, users[i % 3], hours)
        for i, hours in enumerate((10, 20, 30, 40, 50))
    ]
    page = await listing(api, fresh_org, limit=2)
    seen = [p["uuid"] for p in page["posts"]]
    # Posts added meanwhile, newer than the page, in the middle and older than everything.
    for i, hours in enumerate((60, 35, 25, 5)):
        await story(api, fresh_org, users[(i + 2) % 3], hours)
    while "nextCursor" in page:
        page = await listing(api, fresh_org, limit=2, cursor=page["nextCursor"])
        seen += [p["uuid"] for p in page["posts"]]
    original = [u for u in seen if u in before]
    assert original == before[::-1]  # each of them once, in order: no repeat, no gap
    assert len(seen) == len(set(seen))


async def test_bad_input_names_the_field(api: Api, fresh_org: Org) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"kind": "tweet"}, "kind"),
        ({"status": "done"}, "status"),
        ({"from": "tomorrow"}, "from"),
        ({"seriesUuid": "not-a-uuid"}, "seriesUuid"),
        ({"from": at(2), "to": at(1)}, "to"),
    ]
    for params, key in cases:
        answer = await api.call(fresh_org, "list-posts", params)
        assert answer.status_code == 400, (params, answer.text)
        assert key in answer.json()["validationErrorExplanation"], (params, answer.text)
    answer = await api.call(fresh_org, "list-posts", {"cursor": "garbage"})
    assert answer.status_code == 400
    assert "cursor" in answer.json()["errorMessage"]
