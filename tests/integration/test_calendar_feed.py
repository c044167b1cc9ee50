"""The posting plan as an iCalendar feed: the posts of the feed's workspace only, each an
event at its date linking to its page in the app, a canceled one CANCELLED; a revoked or
unknown token answers 404 alike."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from icalendar import Calendar

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost.testing.stack import StackHandle
from storypost_runtime.service_auth import EDGE
from tests.integration.publish.conftest import IMAGE_STORY
from tests.support.accounts import connect_account
from tests.support.api import Api, Org

pytestmark = pytest.mark.integration


@pytest.fixture
async def feeds(
    storypost_stack: StackHandle,
) -> AsyncIterator[account_pb2_grpc.AccountServiceAsyncStub]:
    """account-svc as the edge calls it (the feeds answer only the edge)."""
    channel = storypost_stack.channel("account", 15.0, caller=EDGE)
    yield account_pb2_grpc.AccountServiceStub(channel)
    await channel.close()


async def schedule(api: Api, org: Org, user: str, when: datetime) -> str:
    post_uuid = str(uuid.uuid4())
    body = {
        "storyPostUuid": post_uuid,
        "photoappUsername": user,
        "html": IMAGE_STORY,
        "date": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    answer = await api.call(org, "schedule-photoapp-story", body)
    assert answer.status_code == 200, answer.text
    return post_uuid


async def test_a_feed_shows_the_workspace_plan_until_it_is_revoked(
    api: Api,
    fresh_org: Org,
    other_org: Org,
    storypost_stack: StackHandle,
    feeds: account_pb2_grpc.AccountServiceAsyncStub,
) -> None:
    user = f"cal{uuid.uuid4().hex[:8]}"
    await connect_account(storypost_stack, fresh_org, "photoapp", user)
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0, second=0)
    kept = await schedule(api, fresh_org, user, tomorrow)
    dropped = await schedule(api, fresh_org, user, tomorrow + timedelta(hours=2))
    answer = await api.call(fresh_org, "cancel-photoapp-story", {"storyPostUuid": dropped})
    assert answer.status_code == 200, answer.text
    other_user = f"cal{uuid.uuid4().hex[:8]}"
    await connect_account(storypost_stack, other_org, "photoapp", other_user)
    elsewhere = await schedule(api, other_org, other_user, tomorrow)

    made = await feeds.CreateCalendarFeed(
        pb.CreateCalendarFeedRequest(organization_id=fresh_org.organization_id, name="Team")
    )
    assert made.token.startswith("spcal_") and made.feed.name == "Team"
    url = f"{storypost_stack.edge_url}/calendar/{made.token}.ics"
    async with httpx.AsyncClient(timeout=30) as http:
        got = await http.get(url)
        assert got.status_code == 200, got.text
        assert got.headers["content-type"].startswith("text/calendar")
        assert got.headers["referrer-policy"] == "no-referrer"
        calendar = Calendar.from_ical(got.content)
        assert str(calendar["x-wr-calname"]) == "storypost · Team"
        events = {str(e["uid"]): e for e in calendar.walk("VEVENT")}
        assert set(events) == {f"story-{kept}@storypost", f"story-{dropped}@storypost"}
        assert f"story-{elsewhere}@storypost" not in events
        event = events[f"story-{kept}@storypost"]
        assert event.decoded("dtstart") == tomorrow
        assert user in str(event["summary"]) and "(scheduled)" in str(event["summary"])
        app = f"/o/{fresh_org.organization_id}/posts/story/{kept}"
        assert str(event["url"]).endswith(app)
        assert str(event["status"]) == "CONFIRMED"
        assert str(events[f"story-{dropped}@storypost"]["status"]) == "CANCELLED"

        # Listed without its token; revoked, the same URL answers as an unknown one.
        listed = await feeds.ListCalendarFeeds(
            pb.ListCalendarFeedsRequest(organization_id=fresh_org.organization_id)
        )
        assert [f.feed_id for f in listed.feeds] == [made.feed.feed_id]
        assert made.token not in str(listed)
        await feeds.RevokeCalendarFeed(
            pb.RevokeCalendarFeedRequest(
                organization_id=fresh_org.organization_id, feed_id=made.feed.feed_id
            )
        )
        assert (await http.get(url)).status_code == 404
        unknown = f"{storypost_stack.edge_url}/calendar/spcal_{'x' * 43}.ics"
        assert (await http.get(unknown)).status_code == 404
        # An API token is no feed token.
        api_token = f"{storypost_stack.edge_url}/calendar/{fresh_org.token}"
        assert (await http.get(api_token)).status_code == 404
