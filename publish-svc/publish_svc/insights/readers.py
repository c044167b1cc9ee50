"""Reading insights from each platform's API (photoapp's Graph-like insights, clipapp's video
query, the other platforms' post insights), through the drivers' PlatformClient: its
PlatformError says whether a refusal is worth retrying (429, 5xx), a lost token (401) or
final (other 4xx)."""

from __future__ import annotations

from datetime import date
from typing import Any, Protocol

import httpx

from publish_svc.drivers.base import Outcome
from publish_svc.drivers.http import PlatformClient, PlatformError
from storypost_runtime.component import component
from storypost_runtime.vocabulary import (
    CLIPAPP,
    CLIPAPP_INSIGHT_FIELDS,
    PHOTOAPP,
    SOCIAL_API_PLATFORMS,
)


class InsightsReader(Protocol):
    async def post(self, token: str, account_id: str, post_id: str) -> dict[str, int]:
        """The post's metrics now, by our names."""
        ...

    async def followers(self, token: str, account_id: str, day: date) -> int | None:
        """The account's followers on `day` (None when the platform does not say)."""
        ...


def _bad_answer(platform: str) -> PlatformError:
    return PlatformError(Outcome.retry(f"{platform}: an insights answer we cannot read"))


def _ints(values: dict[str, Any]) -> dict[str, int]:
    return {str(k): int(v) for k, v in values.items() if isinstance(v, int | float)}


@component
class PhotoappInsights:
    client: PlatformClient

    async def post(self, token: str, account_id: str, post_id: str) -> dict[str, int]:
        body = await self.client.call("GET", f"/media/{post_id}/insights", token)
        try:
            return {row["name"]: int(row["values"][0]["value"]) for row in body["data"]}
        except (KeyError, IndexError, TypeError, ValueError):
            raise _bad_answer(self.client.platform) from None

    async def followers(self, token: str, account_id: str, day: date) -> int | None:
        stamp = day.isoformat()
        body = await self.client.call(
            "GET",
            f"/users/{account_id}/insights",
            token,
            params={"metric": "follower_count", "period": "day", "since": stamp, "until": stamp},
        )
        try:
            return int(body["data"][0]["values"][-1]["value"])
        except (KeyError, IndexError, TypeError, ValueError):
            return None


@component
class ClipappInsights:
    client: PlatformClient

    async def post(self, token: str, account_id: str, post_id: str) -> dict[str, int]:
        body = await self.client.call(
            "POST",
            "/video/query/",
            token,
            params={"fields": ",".join(("id", *CLIPAPP_INSIGHT_FIELDS))},
            json={"filters": {"video_ids": [post_id]}},
        )
        try:
            videos = body["data"]["videos"]
        except (KeyError, TypeError):
            raise _bad_answer(self.client.platform) from None
        for video in videos:
            if str(video.get("id")) == post_id:
                return {ours: int(video[theirs]) for theirs, ours in CLIPAPP_INSIGHT_FIELDS.items()
                        if theirs in video}  # fmt: skip
        raise PlatformError(Outcome.failed(f"clipapp: no video {post_id} (not public?)"))

    async def followers(self, token: str, account_id: str, day: date) -> int | None:
        stamp = day.isoformat()
        body = await self.client.call(
            "GET", "/user/stats", token, params={"since": stamp, "until": stamp}
        )
        try:
            return int(body["data"]["days"][-1]["follower_count"])
        except (KeyError, IndexError, TypeError, ValueError):
            return None


@component
class SocialInsights:
    client: PlatformClient

    async def post(self, token: str, account_id: str, post_id: str) -> dict[str, int]:
        body = await self.client.call("GET", f"/posts/{post_id}/insights", token)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict):
            raise _bad_answer(self.client.platform)
        return _ints(data)

    async def followers(self, token: str, account_id: str, day: date) -> int | None:
        stamp = day.isoformat()
        body = await self.client.call(
            "GET", "/me/insights", token, params={"since": stamp, "until": stamp}
        )
        try:
            return int(body["data"][-1]["followers"])
        except (KeyError, IndexError, TypeError, ValueError):
            return None


class InsightsReaders:
    """The reader of each platform (uppercase names, as account-svc lists them)."""

    def __init__(self, http: httpx.AsyncClient, url: Any) -> None:
        """`url(api)`: the base URL of "photoapp", "clipapp" or "social" (PublishSettings)."""
        self._readers: dict[str, InsightsReader] = {
            PHOTOAPP.name: PhotoappInsights(
                PlatformClient(
                    http=http, base_url=url("photoapp") + "/photoapp/v1", platform=PHOTOAPP.key
                )
            ),
            CLIPAPP.name: ClipappInsights(
                PlatformClient(
                    http=http, base_url=url("clipapp") + "/clipapp/v2", platform=CLIPAPP.key
                )
            ),
        }
        for platform in SOCIAL_API_PLATFORMS:
            self._readers[platform.name] = SocialInsights(
                PlatformClient(
                    http=http, base_url=f"{url('social')}/{platform.key}/v1", platform=platform.key
                )
            )

    def get(self, platform: str) -> InsightsReader:
        reader = self._readers.get(platform.upper())
        if reader is None:
            raise KeyError(f"no insights reader for platform {platform}")
        return reader
