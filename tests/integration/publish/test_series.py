"""Recurring posts through the edge (issue 51 item 2): a daily series of 3 stories publishes
its first post, its next occurrence is created ahead of its date with the UUID a caller can
compute, status-series and list-posts show them, the same call again answers the same series,
cancel-series cancels the rest and keeps the published one; bad `repeat`s and an 11th active
series of an account are 400s that store nothing."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from storypost.testing.stack import StackHandle
from tests.integration.publish.conftest import IMAGE_STORY, username
from tests.support.accounts import connect_account, published
from tests.support.api import Api, Org
from tests.support.polling import wait_until

DAY = dt.timedelta(days=1)


def at(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def story(user: str, date: dt.datetime, **extra: Any) -> dict[str, Any]:
    return {
        "storyPostUuid": str(uuid.uuid4()),
        "photoappUsername": user,
        "html": IMAGE_STORY,
        "date": at(date),
        **extra,
    }


async def ok(api: Api, org: Org, procedure: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = await api.call(org, procedure, body)
    assert answer.status_code == 200, (procedure, answer.text)
    result: dict[str, Any] = answer.json()
    return result


async def refused(api: Api, org: Org, procedure: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = await api.call(org, procedure, body)
    assert answer.status_code == 400, (procedure, answer.text)
    result: dict[str, Any] = answer.json()
    return result


async def test_a_daily_series_creates_its_next_post_ahead_and_cancel_series_stops_it(
    api: Api, fresh_org: Org, photoapp_user: str, storypost_stack: StackHandle
) -> None:
    first = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=20)
    body = story(photoapp_user, first, repeat={"every": "P1D", "count": 3})
    answer = await ok(api, fresh_org, "schedule-photoapp-story", body)
    series = answer["seriesUuid"]
    assert answer["status"] == "scheduled"
    # The same call again: the same series, nothing created.
    assert (await ok(api, fresh_org, "schedule-photoapp-story", body))["seriesUuid"] == series

    started = await ok(api, fresh_org, "status-series", {"seriesUuid": series})
    assert started["status"] == "active"
    assert started["occurrences"] == [
        {"uuid": body["storyPostUuid"], "date": at(first), "status": "scheduled"}
    ]
    assert started["nextDate"] == at(first + DAY)

    # Once the first post's date comes (24 h before the second's), the second is created.
    async def two() -> dict[str, Any] | None:
        view = await ok(api, fresh_org, "status-series", {"seriesUuid": series})
        done = len(view["occurrences"]) == 2 and view["occurrences"][0]["status"] == "executed"
        return view if done else None

    view = await wait_until(two, 90, "the series' second post")
    second = str(uuid.uuid5(uuid.UUID(series), "1"))
    assert view["occurrences"][1] == {
        "uuid": second,
        "date": at(first + DAY),
        "status": "scheduled",
    }
    assert view["nextDate"] == at(first + 2 * DAY)
    status = await ok(api, fresh_org, "status-photoapp-story", {"storyPostUuid": second})
    assert status["status"] == "scheduled"
    listed = await ok(api, fresh_org, "list-posts", {"seriesUuid": series})
    assert sorted(p["uuid"] for p in listed["posts"]) == sorted([body["storyPostUuid"], second])
    assert {p["seriesUuid"] for p in listed["posts"]} == {series}
    assert len(await published(storypost_stack, "photoapp", photoapp_user)) == 1

    canceled = await ok(api, fresh_org, "cancel-series", {"seriesUuid": series})
    assert canceled["status"] == "canceled" and "nextDate" not in canceled
    assert [o["status"] for o in canceled["occurrences"]] == ["executed", "canceled"]
    again = await ok(api, fresh_org, "cancel-series", {"seriesUuid": series})
    assert again["status"] == "canceled"
    unknown = await refused(api, fresh_org, "status-series", {"seriesUuid": str(uuid.uuid4())})
    assert "not found" in unknown["errorMessage"]


async def test_bad_repeats_are_400s_naming_the_field_and_store_nothing(
    api: Api, fresh_org: Org, photoapp_user: str
) -> None:
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
    cases = [
        ({"every": "P1M", "count": 3}, "repeat.every"),  # the schema: PnD or PnW
        ({"every": "P7D", "count": 1}, "repeat.count"),
        ({"every": "P60W", "count": 3}, "repeat.every"),  # beyond P52W
        ({"every": "P7D"}, "repeat.count"),  # neither count nor until
        ({"every": "P7D", "count": 3, "until": at(later + 30 * DAY)}, "repeat.count"),
        ({"count": 3}, "repeat.every"),  # no every and no queue
        ({"every": "P7D", "until": at(later + DAY)}, "repeat.until"),  # no second post
        # Stories have no text fields to vary: the schema of their `repeat` has no variants.
        ({"every": "P7D", "count": 3, "variants": [{"caption": "x"}]}, "repeat"),
    ]
    for repeat, field in cases:
        body = story(photoapp_user, later, repeat=repeat)
        answer = await refused(api, fresh_org, "schedule-photoapp-story", body)
        explained = answer.get("validationErrorExplanation", {})
        assert field in explained or field == "repeat" == min(explained)[:6], (repeat, answer)
        status = await api.call(
            fresh_org, "status-photoapp-story", {"storyPostUuid": body["storyPostUuid"]}
        )
        assert status.status_code == 400, (repeat, status.text)  # nothing stored


async def test_an_account_has_at_most_10_active_series(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    # Social posts: the test stack's story quota (3 a day) would stop stories first.
    linknet = await connect_account(storypost_stack, fresh_org, "linknet", username())
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=2)

    def post() -> dict[str, Any]:
        return {
            "socialPostUuid": str(uuid.uuid4()),
            "socialAccountId": linknet.social_account_id,
            "postType": "IMAGE_POST",
            "html": IMAGE_STORY,
            "text": "weekly",
            "date": at(later),
            "repeat": {"every": "P1W", "count": 4, "variants": [{"text": "again"}]},
        }

    series: list[str] = []
    for _ in range(10):
        series.append((await ok(api, fresh_org, "schedule-social-post", post()))["seriesUuid"])
    assert len(set(series)) == 10
    eleventh = post()
    answer = await refused(api, fresh_org, "schedule-social-post", eleventh)
    assert "repeat" in answer["validationErrorExplanation"], answer
    status = await api.call(
        fresh_org, "status-social-post", {"socialPostUuid": eleventh["socialPostUuid"]}
    )
    assert status.status_code == 400, status.text  # nothing stored
    await ok(api, fresh_org, "cancel-series", {"seriesUuid": series[0]})
    # One stopped: the eleventh fits now.
    assert (await ok(api, fresh_org, "schedule-social-post", eleventh))["seriesUuid"]
