"""Accepting posts: idempotent on the UUID, account and design checked, rendering started."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import grpc

from publish_svc.accounts_client import (
    AccountsClient,
    account_info,
    clipapp_ref,
    photoapp_ref,
    social_ref,
)
from publish_svc.events import status_event
from publish_svc.model import Kind, Post, Status, post_id
from publish_svc.post_params import (
    ClipappParams,
    LinknetDestination,
    Params,
    ReelParams,
    SocialParams,
    StoryParams,
)
from publish_svc.queues import Queue, Queues
from publish_svc.quota import StoryQuota
from publish_svc.records import PostStore
from publish_svc.render_client import RenderClient
from publish_svc.social_options import check_options, shorten_caption
from storypost.account.v1 import account_pb2 as apb
from storypost.render.v1 import render_pb2 as rpb
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument, ResourceExhausted
from storypost_runtime.logs import get_logger
from storypost_runtime.tracing import current_traceparent
from storypost_runtime.vocabulary import PHOTOAPP

log = get_logger(__name__)

NOT_NATIVE_REEL = "stickers are not native on reels: they are rendered into the video"
NOT_NATIVE_CLIPAPP = "sticker metadata is not sent to clipapp: stickers are rendered into the media"
NO_LINKNET_FOR_REEL = (
    "shareToLinknet: the account has no linknet destination; the reel is not shared to linknet"
)
PHOTO_TITLE_LIMIT = 90


@dataclass(frozen=True)
class Accepted:
    post: Post
    warnings: list[str]


@dataclass(frozen=True)
class NewPost[P: Params]:
    """What a schedule call asks for, before checks."""

    organization_id: str
    post_uuid: str
    design: rpb.Design
    date: datetime | None
    params: P
    # A queue of the account to take the date from (the earliest free slot); "" for none.
    queue_name: str = ""
    # The series the post belongs to (publish_svc/series.py); "" for none.
    series_uuid: str = ""
    # A stored rendering to reuse instead of rendering `design` (a series' occurrence of an
    # `html` design reuses the first post's); "" to render the design.
    rendering_id: str = ""

    @property
    def kind(self) -> Kind:
        return self.params.KIND


def _media(rendering: rpb.Rendering) -> str:
    return "video" if rendering.media_kind == rpb.MEDIA_KIND_VIDEO else "image"


def _stickers(rendering: rpb.Rendering) -> list[dict[str, Any]]:
    return [
        {
            "kind": s.kind,
            "attributes": dict(s.attributes),
            "x": s.x,
            "y": s.y,
            "width": s.width,
            "height": s.height,
        }
        for s in rendering.stickers
    ]


@component
class PostIntake:
    _: KW_ONLY
    store: PostStore
    quota: StoryQuota
    accounts: AccountsClient
    renderer: RenderClient
    clock: Clock
    window: timedelta
    wake_scheduler: Callable[[], None]
    # Where a post scheduled into a queue takes its date (none: queues are refused).
    queues: Queues | None = None
    _finishing: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    # -- per kind ---------------------------------------------------------------------------

    async def story(self, new: NewPost[StoryParams], username: str) -> Accepted:
        return await self._existing(new) or await self._new_story(new, username)

    async def reel(self, new: NewPost[ReelParams], username: str) -> Accepted:
        return await self._existing(new) or await self._new_reel(new, username)

    async def clipapp(self, new: NewPost[ClipappParams], account_id: str) -> Accepted:
        return await self._existing(new) or await self._new_clipapp(new, account_id)

    async def social(
        self, new: NewPost[SocialParams], social_account_id: str, post_type: str
    ) -> Accepted:
        existing = await self._existing(new)
        if existing:
            if existing.post.account.social_account_id != social_account_id:
                raise InvalidArgument(
                    f"social post {new.post_uuid} exists with another socialAccountId "
                    f"({existing.post.account.social_account_id})"
                )
            return existing
        return await self._new_social(new, social_account_id, post_type)

    async def _new_story(self, new: NewPost[StoryParams], username: str) -> Accepted:
        account = await self._photoapp_account(new, username)
        params = replace(
            new.params,
            linknet_destination=_linknet_destination(account, new.params, username)
            if new.params.share_to_linknet
            else None,
            photoapp_username=account.username,
        )
        quota_key = f"{PHOTOAPP.name}:{account.platform_account_id}"
        record_id = post_id(Kind.STORY, new.organization_id, new.post_uuid)
        await self._reserve_story(quota_key, record_id, account.username)
        try:
            return await self._accept(new, account, params)
        except BaseException:
            # The slot goes back unless a twin call stored the post meanwhile.
            if await self.store.get_by_id(record_id) is None:
                await self.quota.release(quota_key, record_id)
            raise

    async def _reserve_story(self, quota_key: str, record_id: str, username: str) -> None:
        now = self.clock.now()
        decision = await self.quota.reserve(quota_key, record_id, now)
        if not decision.allowed:
            retry = (decision.retry_at - now).total_seconds() if decision.retry_at else 60.0
            raise ResourceExhausted(
                f"story quota reached: at most {self.quota.per_day} story posts per account "
                f"in any 24 hours for '{username}'",
                retry_after_seconds=max(1.0, retry),
                reason="QUOTA_EXCEEDED",
            )

    async def _new_reel(self, new: NewPost[ReelParams], username: str) -> Accepted:
        account = await self._photoapp_account(new, username)
        params = replace(new.params, photoapp_username=account.username)
        notes: list[str] = []
        if params.share_to_linknet and not account.linknet_destinations:
            # The default is true; an account without a linknet destination posts the reel
            # without the recommendation instead of failing.
            params = replace(params, share_to_linknet=False)
            notes.append(NO_LINKNET_FOR_REEL)
        return await self._accept(new, account, params, notes=notes)

    async def _new_clipapp(self, new: NewPost[ClipappParams], account_id: str) -> Accepted:
        account = await self._account_for(
            new, clipapp_ref(account_id), f"clipapp account '{account_id}'"
        )
        if account.connection != apb.CONNECTION_DIRECT:
            raise InvalidArgument(
                f"clipapp account '{account_id}' is connected through the social integrations: "
                "post to it with schedule-social-post"
            )
        params = replace(new.params, clipapp_account_id=account.platform_account_id)
        return await self._accept(new, account, params)

    async def _new_social(
        self, new: NewPost[SocialParams], social_account_id: str, post_type: str
    ) -> Accepted:
        _refuse_date_and_queue(new)
        account = await self.accounts.connected(
            new.organization_id,
            social_ref(social_account_id),
            f"social account '{social_account_id}'",
        )
        types = {t.post_type: t for t in account.post_types}
        chosen = types.get(post_type)
        if chosen is None:
            offered = ", ".join(sorted(types)) or "none (this account cannot be posted to yet)"
            raise InvalidArgument(
                f"post type '{post_type}' is not offered by {account.platform} account "
                f"'{social_account_id}'; its post types: {offered}"
            )
        if chosen.procedure and chosen.procedure != "schedule-social-post":
            raise InvalidArgument(
                f"post type '{post_type}' of this account is scheduled with {chosen.procedure}"
            )
        params = replace(
            new.params,
            options=check_options(chosen, new.params.options),
            text=shorten_caption(chosen, new.params.text),
            post_type=post_type,
        )
        return await self._accept(new, account, params, post_type=chosen)

    # -- shared steps -----------------------------------------------------------------------

    async def _existing(self, new: NewPost[Params]) -> Accepted | None:
        post = await self.store.get(new.kind, new.organization_id, new.post_uuid)
        return Accepted(post, post.warnings) if post else None

    async def _photoapp_account(
        self, new: NewPost[StoryParams] | NewPost[ReelParams], username: str
    ) -> apb.ConnectedAccount:
        return await self._account_for(
            new, photoapp_ref(username), f"photoapp account '{username}'"
        )

    async def _account_for(
        self, new: NewPost[Params], ref: apb.AccountRef, label: str
    ) -> apb.ConnectedAccount:
        """The account the post goes to, once its date (if any) is known to be usable."""
        _refuse_date_and_queue(new)
        if new.date is not None and new.date < self.clock.now() - self.window:
            minutes = int(self.window.total_seconds() // 60)
            raise InvalidArgument(
                f"date is more than {minutes} minutes in the past: the post could never be "
                "published in time"
            )
        return await self.accounts.connected(new.organization_id, ref, label)

    async def _accept(
        self,
        new: NewPost[Params],
        account: apb.ConnectedAccount,
        params: Params,
        *,
        post_type: apb.PostType | None = None,
        notes: Sequence[str] = (),
    ) -> Accepted:
        record_id = post_id(new.kind, new.organization_id, new.post_uuid)
        # The queue is looked up before rendering (an unknown one costs no render); its slot
        # is taken after, once the design is accepted.
        queue = await self._queue(new, account) if new.queue_name else None
        rendering = (
            await self.renderer.get(new.organization_id, new.rendering_id)
            if new.rendering_id
            else await self.renderer.prepare(
                new.organization_id,
                record_id,
                new.design,
                new.kind,
                min_duration_seconds=(post_type.min_duration_seconds if post_type else 0.0),
                max_duration_seconds=(post_type.max_duration_seconds if post_type else 0.0),
            )
        )
        _check_media(_media(rendering), params, post_type)
        if queue is None or self.queues is None:
            return await self._insert(self._post(record_id, new, account, params, rendering, notes))
        slot = await self.queues.take(new.organization_id, queue, account, record_id)
        try:
            dated = replace(new, date=slot.at)
            return await self._insert(
                self._post(record_id, dated, account, params, rendering, notes)
            )
        except BaseException:
            # The slot goes back unless the post (or a twin call's) was stored with it.
            if await self.store.get_by_id(record_id) is None:
                await self.queues.store.release(slot.id, record_id)
            raise

    async def _queue(self, new: NewPost[Params], account: apb.ConnectedAccount) -> Queue:
        """The named queue of the post's account (400 naming queueName when it has none)."""
        if self.queues is None:
            raise InvalidArgument("queueName: queues are not available here")
        return await self.queues.get(new.organization_id, account.social_account_id, new.queue_name)

    def _post(
        self,
        record_id: str,
        new: NewPost[Params],
        account: apb.ConnectedAccount,
        params: Params,
        rendering: rpb.Rendering,
        notes: Sequence[str],
    ) -> Post:
        """The post as first stored."""
        now = self.clock.now()
        future = new.date is not None and new.date > now
        status = Status.IN_PROGRESS if new.kind is Kind.SOCIAL and not future else Status.SCHEDULED
        return Post(
            id=record_id,
            organization_id=new.organization_id,
            kind=new.kind,
            post_uuid=new.post_uuid.lower(),
            status=status,
            account=account_info(account),
            params=params,
            date=new.date,
            due_at=new.date if new.date is not None and future else now,
            future_date=future,
            media=_media(rendering),
            duration_seconds=rendering.duration_seconds,
            warnings=_warnings(new.kind, rendering, notes),
            stickers=_stickers(rendering),
            created_at=now,
            updated_at=now,
            series_uuid=new.series_uuid or None,
            reused_rendering=new.rendering_id or None,
            # The call's trace, so that processing the post later (its events, their webhook
            # deliveries) joins it; none when tracing is off.
            traceparent=current_traceparent() or None,
        )

    async def _insert(self, post: Post) -> Accepted:
        """Stores the record with its first status event; rendering finishes meanwhile."""
        stored, created = await self.store.insert(
            post, status_event(post, post.status, post.created_at)
        )
        if created:
            self._start_finish(stored)
            if not stored.future_date:
                self.wake_scheduler()
        return Accepted(stored, stored.warnings)

    def _start_finish(self, post: Post) -> None:
        """Rendering finishes at once, also for a future date; the worker retries if this fails."""

        async def finish() -> None:
            try:
                await self.renderer.finish(post.organization_id, post.rendering_id)
            except grpc.aio.AioRpcError as error:
                log.warning("finish not started", post=post.id, code=error.code().name)

        task = asyncio.create_task(finish())
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)


def _refuse_date_and_queue(new: NewPost[Params]) -> None:
    """A post takes its date from `date` or from a queue, not from both (400 naming both)."""
    if new.date is not None and new.queue_name:
        raise InvalidArgument(
            "give either date or queueName, not both",
            field_violations={
                "date": ["not together with queueName"],
                "queueName": ["not together with date"],
            },
        )


def _linknet_destination(
    account: apb.ConnectedAccount, params: StoryParams, username: str
) -> LinknetDestination:
    destinations = list(account.linknet_destinations)
    if not destinations:
        raise InvalidArgument(
            f"shareToLinknet: photoapp account '{username}' has no linked linknet destination"
        )
    wanted = params.linknet_destination_id
    if wanted is None:
        chosen = destinations[0]
    else:
        matches = [d for d in destinations if d.id == wanted]
        if not matches:
            linked = ", ".join(d.id for d in destinations)
            raise InvalidArgument(
                f"linknetDestinationId '{wanted}' is not linked to photoapp account "
                f"'{username}'; linked destinations: {linked}"
            )
        chosen = matches[0]
    return LinknetDestination(chosen.id, chosen.name, chosen.type)


def _check_media(media: str, params: Params, post_type: apb.PostType | None) -> None:
    if isinstance(params, ReelParams) and media != "video":
        raise InvalidArgument(
            "a reel needs a video: give the <photoapp-story> element a src pointing to a video"
        )
    photo_title = params.title if isinstance(params, ClipappParams) and media == "image" else ""
    if len(photo_title) > PHOTO_TITLE_LIMIT:
        raise InvalidArgument(
            f"title is {len(photo_title)} characters; photo posts allow at most "
            f"{PHOTO_TITLE_LIMIT} (use description for longer text)"
        )
    if post_type is not None and post_type.media != media:
        raise InvalidArgument(
            f"post type '{post_type.post_type}' takes {post_type.media}, but the design "
            f"renders {'a video' if media == 'video' else 'an image'}"
        )


def _warnings(kind: Kind, rendering: rpb.Rendering, notes: Sequence[str]) -> list[str]:
    """The rendering's warnings, the intake's notes, and where stickers are not native."""
    warnings = [*rendering.warnings, *notes]
    if rendering.stickers and kind is Kind.REEL:
        warnings.append(NOT_NATIVE_REEL)
    if rendering.stickers and kind is Kind.CLIPAPP:
        warnings.append(NOT_NATIVE_CLIPAPP)
    return warnings
