"""The clipapp driver: creator info → init (pull from URL) → publish status until final.

What the account may not do (a privacy level, turning duets/stitches/comments off, a video
longer than its maximum) fails the post at publish time with that reason, as the spec says.

init has no idempotency key: a second init is a second post. So the intent is stored before
init (`awaiting: "init"` with the irreversible mark and its time), the publish id right after
it; a retry with a publish id asks its status. A retry with only the intent (init's answer
was lost: a timeout, a crash) never calls init again: it looks for the post among the
creator's recent public posts (the only look-up clipapp offers without a publish id), and
fails the post with "outcome unknown" where it cannot be found (any other privacy level is
never listed).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from publish_svc.drivers.base import Credentials, Media, Outcome, Progress
from publish_svc.drivers.http import PlatformError, StepDriver, while_unsettled
from publish_svc.model import Post
from publish_svc.post_params import ClipappParams, SocialParams, expect
from storypost_runtime.vocabulary import CLIPAPP_PUBLIC

POLL_START_SECONDS = 0.3
POLL_MAX_SECONDS = 3.0
POLL_LIMIT_SECONDS = 300.0
FINAL_OK = "PUBLISH_COMPLETE"
PUBLIC = CLIPAPP_PUBLIC
# What the progress says while an init's answer is not recorded.
AWAITING_INIT = "init"
# A listed post counts as ours only if created at most this long before our init was sent
# (clock differences between us and the platform).
CLOCK_SLACK = timedelta(seconds=60)
LIST_PAGES = 5
LIST_FIELDS = "id,create_time,title,video_description,share_url,duration"


def unknown_outcome(reason: str) -> str:
    return (
        f"clipapp: the outcome is unknown: the answer to the publish request was lost and "
        f"{reason}; check the clipapp account before posting this again"
    )


def _settings(post: Post) -> ClipappParams:
    """The clipapp fields of a clipapp post, or of a social post's options."""
    if isinstance(post.params, ClipappParams):
        return post.params
    return ClipappParams.of_social(expect(post.params, SocialParams))


def _refusal(creator: dict[str, Any], wanted: ClipappParams, media: Media) -> str | None:
    level = wanted.privacy_level
    allowed = creator.get("privacy_level_options") or []
    if level not in allowed:
        return (
            f"privacy level {level} is not allowed for this account (allowed: {', '.join(allowed)})"
        )
    for feature, asked, field in (
        ("comment", wanted.disable_comment, "comment_disabled"),
        ("duet", wanted.disable_duet, "duet_disabled"),
        ("stitch", wanted.disable_stitch, "stitch_disabled"),
    ):
        # The account has the feature switched off for good: asking to enable it is refused.
        if creator.get(field) and asked is False:
            return f"{feature}s are disabled for this account"
    limit = creator.get("max_video_post_duration_sec")
    if media.kind == "video" and limit and media.duration_seconds > float(limit):
        return (
            f"the video is {media.duration_seconds:.1f} s long; this account may post videos "
            f"of at most {limit} s"
        )
    return None


def init_request(wanted: ClipappParams, media: Media) -> dict[str, Any]:
    post_info: dict[str, Any] = {
        "title": wanted.title,
        "description": wanted.description,
        "privacy_level": wanted.privacy_level,
        "disable_comment": bool(wanted.disable_comment),
        "disable_duet": bool(wanted.disable_duet),
        "disable_stitch": bool(wanted.disable_stitch),
        "brand_organic_toggle": wanted.brand_organic,
        "brand_content_toggle": wanted.branded_content,
        "is_aigc": wanted.ai_generated,
    }
    if media.kind == "video":
        cover = wanted.video_cover_timestamp_ms
        # Beyond the video (or absent) means the first frame, as the spec says.
        if cover is not None and 0 <= cover <= media.duration_seconds * 1000:
            post_info["video_cover_timestamp_ms"] = cover
        return {
            "post_info": post_info,
            "source_info": {"source": "PULL_FROM_URL", "video_url": media.url},
        }
    post_info["auto_add_music"] = wanted.auto_audio
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


def _same_post(video: dict[str, Any], post_info: dict[str, Any], media: Media) -> bool:
    """A listed post carries what our init sent (title, description, a video's length)."""
    title = str(post_info.get("title") or "")
    if str(video.get("title") or "") != title:
        return False
    description = str(post_info.get("description") or "") or title
    if str(video.get("video_description") or "") != description:
        return False
    duration = video.get("duration")
    if media.kind == "video" and media.duration_seconds and duration:
        return abs(float(duration) - media.duration_seconds) <= 1.5
    return True


class ClipappDriver(StepDriver):
    async def _publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome:
        token = credentials.access_token
        publish_id = progress.recorded.get("publishId")
        if publish_id:
            return await self._until_final(str(publish_id), token, progress)
        if self._init_answer_lost(progress):
            return await self._find_lost_post(post, media, token, progress)
        reply = await self.client.call("POST", "/post/publish/creator_info/query", token, json={})
        refusal = _refusal(reply.get("data") or {}, _settings(post), media)
        if refusal:
            return Outcome.failed(f"clipapp: {refusal}")
        path = "/post/publish/video/init" if media.kind == "video" else "/post/publish/content/init"
        body = init_request(_settings(post), media)
        # The intent, durably, before the call: from here on a retry must not init again.
        await progress.irreversible(awaiting=AWAITING_INIT)
        try:
            init = await self.client.call("POST", path, token, json=body)
        except PlatformError as error:
            if not error.answer_lost:
                # The platform said no (or never got it): nothing was posted.
                await progress.record(awaiting=None)
            return error.outcome
        publish_id = str(init["data"]["publish_id"])
        await progress.record(publishId=publish_id, awaiting=None)
        return await self._until_final(publish_id, token, progress)

    @staticmethod
    def _init_answer_lost(progress: Progress) -> bool:
        recorded = progress.recorded
        if recorded.get("awaiting") == AWAITING_INIT:
            return True
        # Recorded before the intent existed: the mark alone, and no publish id.
        return bool(recorded.get("irreversible")) and "awaiting" not in recorded

    async def _find_lost_post(
        self, post: Post, media: Media, token: str, progress: Progress
    ) -> Outcome:
        """init may or may not have posted: look, never init again."""
        post_info = init_request(_settings(post), media)["post_info"]
        if post_info["privacy_level"] != PUBLIC:
            return Outcome.failed(
                unknown_outcome(
                    f"clipapp lists only public posts (this one is {post_info['privacy_level']})"
                )
            )
        sent = progress.sent_at
        since = (sent - CLOCK_SLACK) if sent else None
        try:
            recent = await self._recent_public_posts(token, since)
        except PlatformError as error:
            return while_unsettled(error)
        found = [video for video in recent if _same_post(video, post_info, media)]
        if len(found) == 1:
            video = found[0]
            await progress.record(awaiting=None, foundPostId=str(video["id"]))
            return Outcome.executed(str(video["id"]), video.get("share_url") or None)
        if len(found) > 1:
            ids = ", ".join(str(video["id"]) for video in found)
            return Outcome.failed(
                unknown_outcome(f"{len(found)} recent posts of the account match it ({ids})")
            )
        if progress.unsettled():
            # init may still be under way, or the post still processing: look again later.
            return Outcome.retry(
                "clipapp: the answer to the publish request was lost; the post is not among "
                "the account's public posts yet"
            )
        return Outcome.failed(unknown_outcome("the account's recent public posts do not show it"))

    async def _recent_public_posts(
        self, token: str, since: datetime | None
    ) -> list[dict[str, Any]]:
        """The creator's public posts created at or after `since`, newest first."""
        videos: list[dict[str, Any]] = []
        cursor: int | None = None
        for _ in range(LIST_PAGES):
            body: dict[str, Any] = {"max_count": 20}
            if cursor is not None:
                body["cursor"] = cursor
            reply = await self.client.call(
                "POST", "/video/list/", token, json=body, params={"fields": LIST_FIELDS}
            )
            data = reply.get("data") or {}
            for video in data.get("videos") or []:
                if since is not None and int(video.get("create_time") or 0) < since.timestamp():
                    return videos
                videos.append(video)
            if not data.get("has_more"):
                break
            cursor = int(data.get("cursor") or 0)
        return videos

    async def _until_final(self, publish_id: str, token: str, progress: Progress) -> Outcome:
        delay, waited, status = POLL_START_SECONDS, 0.0, ""
        while waited < POLL_LIMIT_SECONDS:
            try:
                reply = await self.client.call(
                    "POST", "/post/publish/status/fetch", token, json={"publish_id": publish_id}
                )
            except PlatformError as error:
                # init went through: the post may be published whatever this call says.
                return while_unsettled(error)
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
        return await self.client.reachable(
            "/user/info", credentials.access_token if credentials else ""
        )
