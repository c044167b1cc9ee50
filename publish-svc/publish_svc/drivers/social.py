"""The driver of the other platforms: one publish call with an Idempotency-Key.

The key is the post's id, so a repeat of the call gets the same post back from the platform
instead of a second one. A retry after an earlier call (whose answer may have been lost) first
asks the platform for the post made with that key: past the post's deadline that look-up is
all it may do, as a repeat would post late if the first call never arrived.
"""

from __future__ import annotations

from typing import Any

from publish_svc.drivers.base import Credentials, Media, Outcome, Progress
from publish_svc.drivers.http import PlatformClient, PlatformError, while_unsettled
from publish_svc.model import Post
from publish_svc.post_params import SocialParams, expect
from storypost_runtime.component import component


@component
class SocialDriver:
    client: PlatformClient

    async def publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome:
        params = expect(post.params, SocialParams)
        body = {
            "media_type": media.kind,
            "media_url": media.url,
            "text": params.text,
            "post_type": params.post_type,
            "options": params.options,
        }
        token = credentials.access_token
        try:
            if progress.recorded.get("irreversible"):
                try:
                    found = await self._made_with_key(post.id, token)
                except PlatformError as error:
                    return while_unsettled(error)
                if found is not None:
                    return Outcome.executed(str(found["id"]), found.get("permalink"))
            await progress.irreversible()
            reply = await self.client.call(
                "POST", "/posts", token, json=body, headers={"Idempotency-Key": post.id}
            )
        except PlatformError as error:
            return error.outcome
        return Outcome.executed(str(reply["id"]), reply.get("permalink"))

    async def _made_with_key(self, key: str, token: str) -> dict[str, Any] | None:
        reply = await self.client.call("GET", "/posts", token, params={"idempotency_key": key})
        found = reply.get("data") if isinstance(reply, dict) else None
        return found[0] if isinstance(found, list) and found else None

    async def reachable(self, credentials: Credentials | None = None) -> bool:
        return await self.client.reachable("/me", credentials.access_token if credentials else "")
