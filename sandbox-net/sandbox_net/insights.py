"""Insights of published posts and accounts: figures that grow with a post's age, derived from
its id (tests assert exact numbers), in each platform's API shape (docs/sandbox-net.md)."""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import KW_ONLY
from datetime import UTC, date, datetime, timedelta
from typing import Any

import falcon

from sandbox_net.errors import PlatformHttpError, bad_request, not_found
from sandbox_net.gate import Gate, json_body
from sandbox_net.identity import SOCIAL_PLATFORMS
from sandbox_net.state import Record, Store
from storypost_runtime.component import component
from storypost_runtime.vocabulary import CLIPAPP_INSIGHT_FIELDS

POST_METRICS = ("views", "reach", "likes", "comments", "shares", "saves")
STORY_METRICS = ("impressions", "reach", "replies", "taps_forward", "taps_back", "exits")
# Followers grow by a fixed number a day from this day on.
FOLLOWERS_EPOCH = date(2026, 1, 1)
STORY_EXPIRED = (
    "insights of a story are only available during the 24 hours after it was posted; "
    "this story expired"
)


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8])


def growth(steps: int) -> int:
    """How many times its first step's figures a post has after `steps` whole steps (hours
    by default): one more every step during the first 24, then one more every 24."""
    steps = max(0, steps)
    return steps + 1 if steps < 24 else 25 + (steps - 24) // 24


def post_metrics(platform: str, post_id: str, steps: int, *, story: bool) -> dict[str, int]:
    """A published post's metrics after `steps` whole steps of age (see docs/sandbox-net.md)."""
    seed = _seed(f"{platform}:{post_id}")
    views = (40 + seed % 461) * growth(steps)
    reach = views * (55 + (seed >> 10) % 36) // 100
    if story:
        return {
            "impressions": views,
            "reach": reach,
            "replies": views * (1 + (seed >> 20) % 3) // 100,
            "taps_forward": views * (20 + (seed >> 30) % 21) // 100,
            "taps_back": views * (2 + (seed >> 40) % 7) // 100,
            "exits": views * (5 + (seed >> 50) % 11) // 100,
        }
    likes = views * (2 + (seed >> 20) % 9) // 100
    return {
        "views": views,
        "reach": reach,
        "likes": likes,
        "comments": likes * (5 + (seed >> 30) % 16) // 100,
        "shares": likes * (3 + (seed >> 40) % 10) // 100,
        "saves": likes * (4 + (seed >> 50) % 12) // 100,
    }


def followers(platform: str, account_id: str, day: date) -> int:
    """An account's followers on a day (UTC)."""
    seed = _seed(f"{platform}:{account_id}:followers")
    days = max(0, (day - FOLLOWERS_EPOCH).days)
    return 500 + seed % 9500 + (1 + (seed >> 16) % 25) * days


def _clipapp_ok(data: dict[str, Any]) -> dict[str, Any]:
    """clipapp's success envelope."""
    return {"data": data, "error": {"code": "ok", "message": "", "log_id": uuid.uuid4().hex}}


def _today() -> date:
    return datetime.now(UTC).date()


@component
class Insights:
    """Finds a published post of an account and computes its metrics now."""

    store: Store

    def published(self, platform: str, account_id: str, post_id: str) -> Record:
        with self.store.lock:
            for item in reversed(self.store.published):
                if item["platform"] == platform and item["postId"] == post_id:
                    if item["accountId"] != account_id:
                        break
                    return item
        raise not_found(f"no post {post_id}")

    def metrics(self, item: Record) -> dict[str, int]:
        """The post's metrics now; a story's only during its lifetime (else 400)."""
        config = self.store.config
        age = time.time() - float(item["publishedAtEpoch"])
        story = item["kind"] == "story"
        if story and age >= config.story_lifetime_seconds:
            raise PlatformHttpError(400, "story_expired", STORY_EXPIRED)
        steps = int(max(0.0, age) // config.insights_step_seconds)
        return post_metrics(item["platform"], item["postId"], steps, story=story)


def _day(value: str | None, default: date) -> date:
    """A day given as YYYY-MM-DD or a Unix time (Graph-like `since`/`until`)."""
    if not value:
        return default
    try:
        if value.isdigit():
            return datetime.fromtimestamp(int(value), UTC).date()
        return date.fromisoformat(value)
    except (ValueError, OverflowError):
        raise bad_request(f"not a day: {value!r}") from None


def _days(req: falcon.Request) -> list[date]:
    today = _today()
    since = _day(req.get_param("since"), today)
    until = _day(req.get_param("until"), today)
    if until < since or (until - since).days > 92:
        raise bad_request("since must not be after until, at most 93 days apart")
    return [since + timedelta(days=n) for n in range((until - since).days + 1)]


@component
class PhotoappMediaInsights:
    """GET /photoapp/v1/media/{media_id}/insights: Graph-like, lifetime values."""

    gate: Gate
    insights: Insights

    def on_get(self, req: falcon.Request, resp: falcon.Response, media_id: str) -> None:
        account = self.gate.enter(req, "photoapp")
        values = self.insights.metrics(self.insights.published("photoapp", account["id"], media_id))
        resp.media = {
            "data": [
                {"name": name, "period": "lifetime", "values": [{"value": value}]}
                for name, value in values.items()
            ]
        }


@component
class PhotoappUserInsights:
    """GET /photoapp/v1/users/{user_id}/insights?metric=follower_count&period=day&since&until."""

    gate: Gate

    def on_get(self, req: falcon.Request, resp: falcon.Response, user_id: str) -> None:
        account = self.gate.enter(req, "photoapp")
        if user_id != account["id"]:
            raise PlatformHttpError(403, "forbidden", "the token does not belong to this user")
        metric = req.get_param("metric") or "follower_count"
        if metric != "follower_count":
            raise bad_request("metric must be follower_count")
        values = [
            {
                "value": followers("photoapp", account["id"], day),
                "end_time": f"{day.isoformat()}T00:00:00+0000",
            }
            for day in _days(req)
        ]
        resp.media = {"data": [{"name": metric, "period": "day", "values": values}]}


@component
class ClipappVideoQuery:
    """POST /clipapp/v2/video/query/?fields=id,view_count,… {"filters": {"video_ids": […]}}."""

    gate: Gate
    insights: Insights

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, "clipapp")
        wanted = [f for f in (req.get_param("fields") or "").split(",") if f]
        fields = wanted or ["id", *CLIPAPP_INSIGHT_FIELDS]
        unknown = sorted(set(fields) - {"id", *CLIPAPP_INSIGHT_FIELDS})
        if unknown:
            raise bad_request("unknown fields: " + ", ".join(unknown))
        ids = (json_body(req).get("filters") or {}).get("video_ids")
        if not isinstance(ids, list) or not 1 <= len(ids) <= 20:
            raise bad_request("filters.video_ids must list 1 to 20 ids")
        videos: list[dict[str, Any]] = []
        for video_id in ids:
            try:
                item = self.insights.published("clipapp", account["id"], str(video_id))
            except PlatformHttpError:
                continue  # like the real API: unknown ids are left out
            values = self.insights.metrics(item)
            row = {
                "id": item["postId"],
                **{k: values[v] for k, v in CLIPAPP_INSIGHT_FIELDS.items()},
            }
            videos.append({k: row[k] for k in fields})
        resp.media = _clipapp_ok({"videos": videos})


@component
class ClipappUserStats:
    """GET /clipapp/v2/user/stats?since&until: followers per day."""

    gate: Gate

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, "clipapp")
        days = [
            {"date": day.isoformat(), "follower_count": followers("clipapp", account["id"], day)}
            for day in _days(req)
        ]
        resp.media = _clipapp_ok({"days": days})


@component
class SocialPostInsights:
    """GET /<platform>/v1/posts/{post_id}/insights → {"data": {metric: value}}."""

    _: KW_ONLY
    gate: Gate
    insights: Insights
    platform: str

    def on_get(self, req: falcon.Request, resp: falcon.Response, post_id: str) -> None:
        account = self.gate.enter(req, self.platform)
        item = self.insights.published(self.platform, account["id"], post_id)
        resp.media = {"data": self.insights.metrics(item)}


@component
class SocialAccountInsights:
    """GET /<platform>/v1/me/insights?since&until → {"data": [{"date", "followers"}]}."""

    gate: Gate
    platform: str

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, self.platform)
        resp.media = {
            "data": [
                {"date": day.isoformat(), "followers": followers(self.platform, account["id"], day)}
                for day in _days(req)
            ]
        }


def add_routes(app: falcon.App, gate: Gate) -> None:
    insights = Insights(gate.store)
    app.add_route("/photoapp/v1/media/{media_id}/insights", PhotoappMediaInsights(gate, insights))
    app.add_route("/photoapp/v1/users/{user_id}/insights", PhotoappUserInsights(gate))
    app.add_route("/clipapp/v2/video/query", ClipappVideoQuery(gate, insights))
    app.add_route("/clipapp/v2/user/stats", ClipappUserStats(gate))
    for platform in SOCIAL_PLATFORMS:
        base = f"/{platform}/v1"
        app.add_route(
            f"{base}/posts/{{post_id}}/insights",
            SocialPostInsights(gate=gate, insights=insights, platform=platform),
        )
        app.add_route(f"{base}/me/insights", SocialAccountInsights(gate, platform))
