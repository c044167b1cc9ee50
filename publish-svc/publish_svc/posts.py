"""Reading and canceling posts, with the spec's rules per kind."""

from __future__ import annotations

from dataclasses import dataclass, replace

import grpc

from publish_svc.daily import owes_release
from publish_svc.drivers.base import Credentials
from publish_svc.events import status_event
from publish_svc.listing import ListQuery, Position, decode, encode
from publish_svc.model import Kind, Post, Status, post_id
from publish_svc.processing import PostWork
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, NotFound, ResourceExhausted

RETRY_CANCEL_SECONDS = 60.0
# A cancel refused because the post is being uploaded or published right now.
CANCEL_IN_PROGRESS = "CANCEL_IN_PROGRESS"
NOUN = {
    Kind.STORY: "story post",
    Kind.REEL: "reel post",
    Kind.CLIPAPP: "clipapp post",
    Kind.SOCIAL: "social post",
}
# Which statuses a cancel moves from, per kind (the spec's tables).
CANCELABLE = {
    Kind.STORY: (Status.SCHEDULED,),
    Kind.REEL: (Status.SCHEDULED,),
    Kind.CLIPAPP: (Status.SCHEDULED, Status.IN_PROGRESS),
    Kind.SOCIAL: (Status.SCHEDULED, Status.IN_PROGRESS),
}


@component
class Posts(PostWork):
    """Reading, listing and canceling stored posts."""

    async def get(self, kind: Kind, organization_id: str, post_uuid: str) -> Post:
        post = await self._stored(kind, organization_id, post_uuid)
        if kind is Kind.STORY:
            return await self._with_preview(post)
        return post

    async def _stored(self, kind: Kind, organization_id: str, post_uuid: str) -> Post:
        """The post as stored (no preview: that is a call to render-svc)."""
        post = await self.store.get(kind, organization_id, post_uuid)
        if post is None:
            raise NotFound(f"{NOUN[kind]} {post_uuid} not found")
        return post

    async def _with_preview(self, post: Post) -> Post:
        """previewUrl appears once rendering finished (also long before the date).

        render-svc hands out presigned URLs that expire, so each answer asks for a fresh one
        instead of storing it.
        """
        try:
            rendering = await self.renderer.get(post.organization_id, post.rendering_id)
        except grpc.aio.AioRpcError:
            return post
        if not rendering.preview_url:
            return post
        return replace(post, preview_url=rendering.preview_url)

    async def cancel(self, kind: Kind, organization_id: str, post_uuid: str) -> Post:
        record_id = post_id(kind, organization_id, post_uuid)
        # A cancel answers with the status alone, so it does not ask render-svc for a preview.
        post = await self._stored(kind, organization_id, post_uuid)
        if post.status is Status.CANCELED:
            return post
        self._refuse_final(kind, post)
        if post.progress.get("irreversible"):
            raise ResourceExhausted(
                f"the {NOUN[kind]} is being uploaded or published right now and cannot be "
                "canceled; retry in a minute (it stays as it is until a retry succeeds)",
                retry_after_seconds=RETRY_CANCEL_SECONDS,
                reason=CANCEL_IN_PROGRESS,
            )
        if kind is Kind.SOCIAL and not await self._platform_reachable(post):
            raise ResourceExhausted(
                f"{post.account.platform} is unreachable, so the post cannot be canceled safely "
                "now; retry in a minute",
                retry_after_seconds=RETRY_CANCEL_SECONDS,
                reason="PLATFORM_UNREACHABLE",
            )
        now = self.clock.now()
        canceled = await self.store.transition(
            record_id,
            CANCELABLE[kind],
            Status.CANCELED,
            now=now,
            event=status_event(post, Status.CANCELED, now),
            idle_only=True,
            # The daily reservation it owes back, in the same write (publish_svc/daily.py).
            set_fields=self._releases.owed_fields(post, now),
        )
        if canceled is not None:
            if owes_release(post):
                await self._releases.give_back(post)
            return canceled
        # It moved meanwhile: answer from where it is now.
        current = await self._stored(kind, organization_id, post_uuid)
        if current.status is Status.CANCELED:
            return current
        self._refuse_final(kind, current)
        raise ResourceExhausted(
            f"the {NOUN[kind]} is being published right now; retry in a minute",
            retry_after_seconds=RETRY_CANCEL_SECONDS,
            reason=CANCEL_IN_PROGRESS,
        )

    @staticmethod
    def _refuse_final(kind: Kind, post: Post) -> None:
        if post.status in (Status.EXECUTED, Status.FAILED):
            raise FailedPrecondition(
                f"the {NOUN[kind]} is already {post.status.value} and cannot be canceled",
                reason="POST_FINISHED",
            )
        if post.status not in CANCELABLE[kind]:
            raise FailedPrecondition(
                f"the {NOUN[kind]} is {post.status.value}: posting already started, so it "
                "cannot be canceled",
                reason="POSTING_STARTED",
            )

    async def _platform_reachable(self, post: Post) -> bool:
        try:
            token = await self.accounts.access_token(
                post.organization_id, post.account.social_account_id
            )
        except grpc.aio.AioRpcError as error:
            # A disconnected account cannot publish anyway: canceling is safe.
            return error.code() != grpc.StatusCode.UNAVAILABLE
        credentials = Credentials(token.access_token, token.platform_account_id, token.username)
        return await self.drivers.get(post.account.platform).reachable(credentials)

    async def list(self, query: ListQuery, page_token: str, limit: int) -> Page:
        """A page of the listing: from `page_token` (the newest page when empty)."""
        position = decode(query, page_token) if page_token else None
        posts, more = await self.store.list(query, position, limit)
        if not posts:
            return Page(posts, "", "")
        older = Position(posts[-1].listed_at, posts[-1].id, newer=False)
        newer = Position(posts[0].listed_at, posts[0].id, newer=True)
        # Going back toward newer posts, `more` says whether newer ones are left; going
        # on, whether older ones are. A page reached by a token has the token's side left.
        has_older = more if position is None or not position.newer else True
        has_newer = position is not None and (more if position.newer else True)
        return Page(
            posts,
            encode(query, older) if has_older else "",
            encode(query, newer) if has_newer else "",
        )


@dataclass(frozen=True)
class Page:
    posts: list[Post]
    # Tokens of the older and the newer page; empty when there is none.
    next_token: str
    previous_token: str
