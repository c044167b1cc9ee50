"""The sandbox network's insights: exact figures from a post's id and age, a story's 24 hours,
followers per day, and the switches on insight endpoints."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import falcon.testing
import pytest

from sandbox_net.app import Sandbox
from sandbox_net.insights import followers, growth, post_metrics
from tests.unit.sandbox.test_network import bearer, connect, switch, wait_for_status


def publish_story(client: falcon.testing.TestClient, username: str) -> tuple[dict[str, str], str]:
    tokens = connect(client, "photoapp", username)
    headers, user = bearer(tokens), tokens["user_id"]
    body = {"media_type": "STORIES", "image_url": "http://cdn.test/a.jpg"}
    container = client.simulate_post(f"/photoapp/v1/users/{user}/media", json=body, headers=headers)
    assert wait_for_status(client, container.json["id"], headers, "FINISHED")
    published = client.simulate_post(
        f"/photoapp/v1/users/{user}/media_publish",
        json={"creation_id": container.json["id"]},
        headers=headers,
    )
    return headers, str(published.json["id"])


def age(sandbox: Sandbox, media_id: str, seconds: float) -> None:
    """Makes a published post `seconds` old (the clock cannot be moved)."""
    for item in sandbox.store.published:
        if item["postId"] == media_id:
            item["publishedAtEpoch"] -= seconds


def values(answer: falcon.testing.Result) -> dict[str, Any]:
    return {row["name"]: row["values"][0]["value"] for row in answer.json["data"]}


def test_growth_is_hourly_for_a_day_then_daily() -> None:
    assert [growth(h) for h in (0, 1, 23, 24, 47, 48, 168, 720)] == [1, 2, 24, 25, 25, 26, 31, 54]


def test_metrics_are_exact_and_grow_with_age() -> None:
    first = post_metrics("photoapp", "18000000000000002", 0, story=False)
    assert first == post_metrics("photoapp", "18000000000000002", 0, story=False)
    assert set(first) == {"views", "reach", "likes", "comments", "shares", "saves"}
    later = post_metrics("photoapp", "18000000000000002", 6, story=False)
    assert later["views"] == first["views"] * 7
    assert all(later[k] >= first[k] for k in first)
    story = post_metrics("photoapp", "18000000000000002", 0, story=True)
    assert set(story) == {"impressions", "reach", "replies", "taps_forward", "taps_back", "exits"}
    assert story["impressions"] == first["views"]
    assert post_metrics("photoapp", "18000000000000003", 0, story=False) != first


def test_a_story_has_insights_during_its_24_hours(
    client: falcon.testing.TestClient, sandbox: Sandbox
) -> None:
    headers, media_id = publish_story(client, "insightful")
    path = f"/photoapp/v1/media/{media_id}/insights"
    now = client.simulate_get(path, headers=headers)
    assert now.status_code == 200, now.text
    assert values(now) == post_metrics("photoapp", media_id, 0, story=True)
    age(sandbox, media_id, 6 * 3600 + 5)
    assert values(client.simulate_get(path, headers=headers)) == post_metrics(
        "photoapp", media_id, 6, story=True
    )
    age(sandbox, media_id, 18 * 3600)
    expired = client.simulate_get(path, headers=headers)
    assert expired.status_code == 400
    assert expired.json["error"]["code"] == "story_expired"
    other = connect(client, "photoapp", "someoneelse")
    assert client.simulate_get(path, headers=bearer(other)).status_code == 404


def test_insight_endpoints_take_switches(client: falcon.testing.TestClient) -> None:
    headers, media_id = publish_story(client, "switched")
    path = f"/photoapp/v1/media/{media_id}/insights"
    switch(client, platform="photoapp", mode="rate-limited", endpoint="media/*/insights",
           retryAfterSeconds=7, times=1)  # fmt: skip
    limited = client.simulate_get(path, headers=headers)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "7"
    assert client.simulate_get(path, headers=headers).status_code == 200
    switch(client, platform="photoapp", mode="fail", endpoint="insights", status=500, times=1)
    assert client.simulate_get(path, headers=headers).status_code == 500
    # The publishing endpoints are not affected by an insights switch.
    switch(client, platform="photoapp", mode="offline", endpoint="insights")
    assert client.simulate_get("/photoapp/v1/me", headers=headers).status_code == 200
    assert client.simulate_get(path, headers=headers).status_code == 503


@pytest.mark.parametrize("platform", ["photoapp", "clipapp", "microblog"])
def test_followers_per_day(client: falcon.testing.TestClient, platform: str) -> None:
    tokens = connect(client, platform, "counted")
    headers = bearer(tokens)
    account_id = tokens.get("open_id") or tokens["user_id"]
    params = {"since": "2026-11-01", "until": "2026-11-03"}
    if platform == "photoapp":
        answer = client.simulate_get(
            f"/photoapp/v1/users/{account_id}/insights",
            params={**params, "metric": "follower_count", "period": "day"},
            headers=headers,
        )
        got = [v["value"] for v in answer.json["data"][0]["values"]]
    elif platform == "clipapp":
        answer = client.simulate_get("/clipapp/v2/user/stats", params=params, headers=headers)
        got = [d["follower_count"] for d in answer.json["data"]["days"]]
    else:
        answer = client.simulate_get(f"/{platform}/v1/me/insights", params=params, headers=headers)
        got = [d["followers"] for d in answer.json["data"]]
    days = [date(2026, 11, d) for d in (1, 2, 3)]
    assert got == [followers(platform, account_id, day) for day in days]
    assert got[0] < got[1] < got[2]
    today = datetime.now(UTC).date()
    assert followers(platform, account_id, today) >= got[2]


def test_social_and_clipapp_post_insights(client: falcon.testing.TestClient) -> None:
    headers = bearer(connect(client, "microblog", "poster"))
    body = {"media_url": "http://cdn.test/a.jpg", "media_type": "image", "text": "hi"}
    post = client.simulate_post("/microblog/v1/posts", json=body, headers=headers).json
    answer = client.simulate_get(f"/microblog/v1/posts/{post['id']}/insights", headers=headers)
    assert answer.json["data"] == post_metrics("microblog", post["id"], 0, story=False)
    assert client.simulate_get("/microblog/v1/posts/1/insights", headers=headers).status_code == 404
    clip = bearer(connect(client, "clipapp", "clipper"))
    query = client.simulate_post(
        "/clipapp/v2/video/query/",
        params={"fields": "id,view_count"},
        json={"filters": {"video_ids": ["123"]}},
        headers=clip,
    )
    assert query.status_code == 200 and query.json["data"] == {"videos": []}
