"""The photoapp driver: media container → status polling → publish → media id.

Idempotent towards the platform: the container id is recorded (with the irreversible mark)
before publishing, a retry (after a crash or a lost answer alike) first asks that container
whether it was published, and publishing a container twice returns the same media id on the
platform. A lost answer to the container creation leaves at most an unpublished container,
which expires.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from publish_svc.drivers.base import Credentials, Media, Outcome, Progress
from publish_svc.drivers.http import PlatformError, StepDriver, while_unsettled
from publish_svc.model import Kind, Post
from publish_svc.post_params import Params, ReelParams, SocialParams, StoryParams, expect

# The network fetched our media URL and got an error status. The URL is ours (a presigned
# object-store URL), so the status is our store's, not the media's: a 5xx, or a 404 for a
# moment while SeaweedFS restarts (seen). Retried within the post's window, where media
# that is really gone fails at its end.
STORE_ANSWER = re.compile(r"\bHTTP [45]\d\d\b")
POLL_START_SECONDS = 0.2
POLL_MAX_SECONDS = 2.0
# How long a container may stay IN_PROGRESS before this attempt gives up (it retries later).
POLL_LIMIT_SECONDS = 120.0
REEL_TYPES = {"REEL", "REELS"}


def _media_type(params: Params) -> str:
    if isinstance(params, ReelParams):
        return "REELS"
    if isinstance(params, SocialParams) and str(params.post_type).upper() in REEL_TYPES:
        return "REELS"
    return "STORIES"


def container_request(post: Post, media: Media) -> dict[str, Any]:
    params = post.params
    body: dict[str, Any] = {
        "media_type": _media_type(params),
        ("video_url" if media.kind == "video" else "image_url"): media.url,
        "ai_generated": isinstance(params, StoryParams | ReelParams) and params.ai_generated,
    }
    if isinstance(params, StoryParams):
        # Native stickers go with stories only (reels have them rendered into the video).
        body["stickers"] = [
            {
                "type": s["kind"],
                **s["attributes"],
                "x": s["x"],
                "y": s["y"],
                "width": s["width"],
                "height": s["height"],
            }
            for s in post.stickers
        ]
        destination = params.linknet_destination
        if params.share_to_linknet and destination:
            body["share_to_linknet"] = True
            body["linknet_destination_id"] = destination.id
    elif isinstance(params, ReelParams):
        body["caption"] = params.caption
        body["share_to_feed"] = params.share_to_feed
        body["share_to_linknet"] = params.share_to_linknet
    else:
        social = expect(params, SocialParams)
        body["caption"] = social.text
        body.update(social.options)
    return body


class PhotoappDriver(StepDriver):
    async def _publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome:
        token, user = credentials.access_token, credentials.platform_account_id
        container = progress.recorded.get("containerId")
        if container:
            # Recorded with the mark: the publish call may have gone through.
            try:
                status = await self._status(container, token)
            except PlatformError as error:
                return while_unsettled(error)
            if status.get("media_id"):
                return await self._executed(post, str(status["media_id"]), token)
            if status.get("status_code") == "EXPIRED":
                container = None
        if not container:
            # Not recorded yet: a container that is never published just expires, so a crash
            # before the publish call may leave one behind, never a post.
            created = await self.client.call(
                "POST", f"/users/{user}/media", token, json=container_request(post, media)
            )
            container = str(created["id"])
        outcome = await self._wait_ready(container, token)
        if outcome is not None:
            return outcome
        # From here on a retry must ask this container first: it is stored with the mark.
        await progress.irreversible(containerId=container)
        published = await self.client.call(
            "POST", f"/users/{user}/media_publish", token, json={"creation_id": container}
        )
        return await self._executed(post, str(published["id"]), token)

    async def _status(self, container: str, token: str) -> dict[str, Any]:
        status: dict[str, Any] = await self.client.call("GET", f"/containers/{container}", token)
        return status

    async def _wait_ready(self, container: str, token: str) -> Outcome | None:
        """None when the container can be published; else the outcome to report."""
        delay, waited = POLL_START_SECONDS, 0.0
        while True:
            status = await self._status(container, token)
            code = status.get("status_code")
            if code in ("FINISHED", "PUBLISHED"):
                return None
            if code == "ERROR":
                reason = str(status.get("status", ""))
                if "download" in reason.lower() or STORE_ANSWER.search(reason):
                    # The network could not fetch our media URL (our object store was away,
                    # say): a later attempt makes a new container, within the post's window.
                    return Outcome.retry(f"photoapp could not download the media: {reason}")
                return Outcome.failed(f"photoapp refused the media: {reason}")
            if code == "EXPIRED":
                return Outcome.retry("photoapp: the media container expired")
            if waited >= POLL_LIMIT_SECONDS:
                return Outcome.retry("photoapp: the media is still being processed")
            await asyncio.sleep(delay)
            waited += delay
            delay = min(POLL_MAX_SECONDS, delay * 2)

    async def _executed(self, post: Post, media_id: str, token: str) -> Outcome:
        permalink = None
        if post.kind is Kind.SOCIAL:
            details = await self.client.call("GET", f"/media/{media_id}", token)
            permalink = details.get("permalink")
        return Outcome.executed(media_id, permalink)

    async def reachable(self, credentials: Credentials | None = None) -> bool:
        return await self.client.reachable("/me", credentials.access_token if credentials else "")
