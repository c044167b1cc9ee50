"""The clipapp driver: creator info → init (pull from URL) → publish status until final.

What the account may not do (a privacy level, turning duets/stitches/comments off, a video
longer than its maximum) fails the post at publish time with that reason, as the spec says.
The publish id is recorded right after init; a retry asks its status instead of posting again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from publish_svc.drivers.base import Credentials, Media, Outcome, Progress
from publish_svc.drivers.http import PlatformClient, PlatformError
from publish_svc.model import Kind, Post

POLL_START_SECONDS = 0.3
POLL_MAX_SECONDS = 3.0
POLL_LIMIT_SECONDS = 300.0
FINAL_OK = "PUBLISH_COMPLETE"


def _settings(post: Post) -> dict[str, Any]:
    """The clipapp fields of a clipapp post, or of a social post's options."""
    if post.kind is Kind.CLIPAPP:
        return post.params
    options = dict(post.params.get("options") or {})
    options.setdefault("title", post.params.get("text") or "")
    return options


def _refusal(creator: dict[str, Any], wanted: dict[str, Any], media: Media) -> str | None:
    level = wanted.get("privacyLevel") or "SELF_ONLY"
    allowed = creator.get("privacy_level_options") or []
    if level not in allowed:
        return (
            f"privacy level {level} is not allowed for this account (allowed: {', '.join(allowed)})"
        )
    for toggle, field in (
        ("disableComment", "comment_disabled"),
        ("disableDuet", "duet_disabled"),
        ("disableStitch", "stitch_disabled"),
    ):
        # The account has the feature switched off for good: asking to enable it is refused.
        if creator.get(field) and wanted.get(toggle) is False and toggle in wanted:
            return f"{toggle[7:].lower()}s are disabled for this account"
    limit = creator.get("max_video_post_duration_sec")
    if media.kind == "video" and limit and media.duration_seconds > float(limit):
        return (
            f"the video is {media.duration_seconds:.1f} s long; this account may post videos "
            f"of at most {limit} s"
        )
    return None


def init_request(wanted: dict[str, Any], media: Media) -> dict[str, Any]:
    post_info: dict[str, Any] = {
        "title": wanted.get("title") or "",
        "description": wanted.get("description") or "",
        "privacy_level": wanted.get("privacyLevel") or "SELF_ONLY",
        "disable_comment": bool(wanted.get("disableComment")),
        "disable_duet": bool(wanted.get("disableDuet")),
        "disable_stitch": bool(wanted.get("disableStitch")),
        "brand_organic_toggle": bool(wanted.get("brandOrganic")),
        "brand_content_toggle": bool(wanted.get("brandedContent")),
        "is_aigc": bool(wanted.get("aiGenerated")),
    }
    if media.kind == "video":
        cover = wanted.get("videoCoverTimestampMs")
        # Beyond the video (or absent) means the first frame, as the spec says.
        if isinstance(cover, int) and 0 <= cover <= media.duration_seconds * 1000:
            post_info["video_cover_timestamp_ms"] = cover
        return {
            "post_info": post_info,
            "source_info": {"source": "PULL_FROM_URL", "video_url": media.url},
        }
    post_info["auto_add_music"] = bool(wanted.get("autoAudio"))
    return {
        "post_info": post_info,
        "source_info": {
            "source": "PULL_FROM_URL",
            "photo_images": [media.url],
            "photo_cover_index": 0,
        },
        "post_mode": "DIRECT_POST",
        "media_type": "PHOTO",
    }


class ClipappDriver:
    def __init__(self, client: PlatformClient) -> None:
        self._client = client

    async def publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome:
        try:
            return await self._publish(post, media, credentials, progress)
        except PlatformError as error:
            return error.outcome

    async def _publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome:
        token = credentials.access_token
        publish_id = progress.recorded.get("publishId")
        if not publish_id:
            reply = await self._client.call(
                "POST", "/post/publish/creator_info/query", token, json={}
            )
            refusal = _refusal(reply.get("data") or {}, _settings(post), media)
            if refusal:
                return Outcome.failed(f"clipapp: {refusal}")
            await progress.irreversible()
            path = (
                "/post/publish/video/init"
                if media.kind == "video"
                else "/post/publish/content/init"
            )
            init = await self._client.call(
                "POST", path, token, json=init_request(_settings(post), media)
            )
            publish_id = str(init["data"]["publish_id"])
            await progress.record(publishId=publish_id)
        return await self._until_final(publish_id, token, progress)

    async def _until_final(self, publish_id: str, token: str, progress: Progress) -> Outcome:
        delay, waited, status = POLL_START_SECONDS, 0.0, ""
        while waited < POLL_LIMIT_SECONDS:
            reply = await self._client.call(
                "POST", "/post/publish/status/fetch", token, json={"publish_id": publish_id}
            )
            data = reply.get("data") or {}
            status = str(data.get("status") or "")
            if status != progress.recorded.get("rawStatus"):
                await progress.record(rawStatus=status)
            if status == FINAL_OK:
                post_ids = data.get("publicly_available_post_id") or [publish_id]
                return Outcome.executed(str(post_ids[0]), raw_status=status)
            if status == "FAILED":
                reason = data.get("fail_message") or data.get("fail_reason") or "unknown reason"
                return Outcome.failed(f"clipapp: publishing failed: {reason}", raw_status=status)
            await asyncio.sleep(delay)
            waited += delay
            delay = min(POLL_MAX_SECONDS, delay * 2)
        return Outcome.retry("clipapp: still processing", raw_status=status)

    async def reachable(self, credentials: Credentials | None = None) -> bool:
        return await self._client.reachable(
            "/user/info", credentials.access_token if credentials else ""
        )
