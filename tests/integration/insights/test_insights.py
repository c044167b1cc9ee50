"""Insights on the whole stack (the points are seconds apart here, tests/conftest.py): a story
published on the sandbox network shows the exact figures of the sandbox's formula, a refresh
reads at once, a refusing sandbox moves the point and leaves the post executed, and another
organization's post is not found."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient

from sandbox_net.insights import followers, post_metrics
from storypost.testing.stack import StackHandle
from tests.integration.publish.conftest import IMAGE_STORY, events_of, username
from tests.reliability.support import wait_status
from tests.support.accounts import connect_account, published, sandbox_switch
from tests.support.api import Api, Org
from tests.support.polling import wait_until

INSIGHTS_EVENT = "post.insights_updated"


@pytest.fixture
async def bus(storypost_stack: StackHandle) -> Any:
    import nats

    client = await nats.connect(**storypost_stack.nats_options())
    yield client
    await client.close()


async def publish_story(
    api: Api, org: Org, stack: StackHandle, name: str | None = None
) -> tuple[str, str, Any]:
    """A story published on a sandbox account of its own: (uuid, media id, account)."""
    name = name or username()
    account = await connect_account(stack, org, "photoapp", name)
    story_uuid = str(uuid.uuid4())
    body = {"storyPostUuid": story_uuid, "photoappUsername": name, "html": IMAGE_STORY}
    answer = await api.call(org, "schedule-photoapp-story", body)
    assert answer.status_code == 200, answer.text
    ref = {"storyPostUuid": story_uuid}
    done = await wait_status(api, org, "status-photoapp-story", ref, {"executed", "failed"})
    assert done["status"] == "executed", done
    [item] = await published(stack, "photoapp", name)
    return story_uuid, str(item["postId"]), account


async def insights(api: Api, org: Org, story_uuid: str, **extra: Any) -> dict[str, Any]:
    answer = await api.call(
        org, "get-post-insights", {"kind": "story", "uuid": story_uuid, **extra}
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def history_of(api: Api, org: Org, story_uuid: str, count: int) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        body = await insights(api, org, story_uuid)
        return body if len(body["history"]) >= count else None

    return await wait_until(check, 60, f"{count} insight points of {story_uuid}")


async def test_a_story_shows_the_sandboxs_exact_figures_at_each_point(
    api: Api, fresh_org: Org, other_org: Org, storypost_stack: StackHandle, bus: NatsClient
) -> None:
    story_uuid, media_id, account = await publish_story(api, fresh_org, storypost_stack)
    expected = post_metrics("photoapp", media_id, 0, story=True)
    first = await history_of(api, fresh_org, story_uuid, 1)
    assert first["uuid"] == story_uuid and first["kind"] == "story"
    assert first["metrics"] == expected
    assert first["history"][0] == {"collectedAt": first["collectedAt"], "metrics": expected}
    assert first["collectionState"] == "collecting"
    # The planned points (0, +6 s, +12 s on this stack), each read once.
    done = await history_of(api, fresh_org, story_uuid, 3)
    assert [p["metrics"] for p in done["history"]] == [expected] * 3
    assert len({p["collectedAt"] for p in done["history"]}) == 3
    assert done["collectionState"] == "done" and "nextCollectionAt" not in done

    # refresh reads at once (beyond the planned points).
    async def refresh() -> dict[str, Any] | None:
        body = await insights(api, fresh_org, story_uuid, refresh=True)
        return body if len(body["history"]) == 4 else None

    refreshed = await wait_until(refresh, 10, "a refresh")  # at most once a second here
    assert refreshed["metrics"] == expected and refreshed["collectionState"] == "done"
    events = await events_of(bus, INSIGHTS_EVENT, "uuid", story_uuid, 4)
    assert [e["metrics"] for e in events] == [expected] * 4
    assert {e["kind"] for e in events} == {"story"}
    # The account's day: followers as the sandbox says, what its story gained once.
    today = datetime.now(UTC).date().isoformat()
    days = await api.call(
        fresh_org,
        "list-account-insights",
        {"socialAccountId": account.social_account_id, "from": today, "to": today},
    )
    assert days.status_code == 200, days.text
    assert days.json() == {
        "socialAccountId": account.social_account_id,
        "days": [
            {
                "day": today,
                "metrics": {
                    "followers": followers(
                        "photoapp", account.platform_account_id, datetime.now(UTC).date()
                    ),
                    **expected,
                },
            }
        ],
    }
    # Another organization: not found, and no days.
    foreign = await api.call(other_org, "get-post-insights", {"kind": "story", "uuid": story_uuid})
    assert foreign.status_code == 400
    assert foreign.json()["errorMessage"] == f"story post {story_uuid} not found"
    none = await api.call(
        other_org,
        "list-account-insights",
        {"socialAccountId": account.social_account_id, "from": today, "to": today},
    )
    assert none.json()["days"] == []


@pytest.mark.parametrize(
    "switch",
    [
        {"mode": "rate-limited", "retryAfterSeconds": 1},
        {"mode": "fail", "status": 500, "message": "insights are down"},
    ],
    ids=["429", "500"],
)
async def test_a_refusing_platform_moves_the_point_and_leaves_the_post_executed(
    api: Api, fresh_org: Org, storypost_stack: StackHandle, switch: dict[str, Any]
) -> None:
    name = username()
    async with sandbox_switch(
        storypost_stack, "photoapp", account=name, endpoint="media/*/insights", **switch
    ):
        story_uuid, media_id, _ = await publish_story(api, fresh_org, storypost_stack, name)

        async def refused() -> dict[str, Any] | None:
            body = await insights(api, fresh_org, story_uuid)
            return body if body.get("lastError") else None

        stalled = await wait_until(refused, 30, "an insights point refused")
        assert stalled["history"] == [] and stalled["collectionState"] == "collecting"
        assert "photoapp" in stalled["lastError"]
        status = await api.call(fresh_org, "status-photoapp-story", {"storyPostUuid": story_uuid})
        assert status.json()["status"] == "executed"
        # A refresh meanwhile is refused like the platform refuses it (retry later).
        again = await api.call(
            fresh_org, "get-post-insights", {"kind": "story", "uuid": story_uuid, "refresh": True}
        )
        assert again.status_code in (200, 429), again.text
    # The switch is gone: the moved point is read.
    body = await history_of(api, fresh_org, story_uuid, 1)
    assert body["metrics"] == post_metrics("photoapp", media_id, 0, story=True)
    assert "lastError" not in body
    status = await api.call(fresh_org, "status-photoapp-story", {"storyPostUuid": story_uuid})
    assert status.json()["status"] == "executed"
