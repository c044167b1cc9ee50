"""The driver of the other platforms: one publish call with an Idempotency-Key.

The key is the post's id, so a retry after a crash gets the same post back from the
platform instead of a second one.
"""

from __future__ import annotations

from publish_svc.drivers.base import Credentials, Media, Outcome, Progress
from publish_svc.drivers.http import PlatformClient, PlatformError
from publish_svc.model import Post


class SocialDriver:
    def __init__(self, client: PlatformClient) -> None:
        self._client = client

    async def publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome:
        body = {
            "media_type": media.kind,
            "media_url": media.url,
            "text": post.params.get("text") or "",
            "post_type": post.params.get("postType"),
            "options": post.params.get("options") or {},
        }
        try:
            await progress.irreversible()
            reply = await self._client.call(
                "POST",
                "/posts",
                credentials.access_token,
                json=body,
                headers={"Idempotency-Key": post.id},
            )
        except PlatformError as error:
            return error.outcome
        return Outcome.executed(str(reply["id"]), reply.get("permalink"))

    async def reachable(self, credentials: Credentials | None = None) -> bool:
        return await self._client.reachable("/me", credentials.access_token if credentials else "")
