"""Publishing one claimed post: window, rendering, credits and limits, the driver, the outcome.

A published social post owes one credit. The debt is stored with the `executed` transition
(`creditDueAt`, the same single-document write as the status and its event), then paid with
account-svc's ConsumeCredit keyed by the post (a repeat takes nothing), then cleared. A crash
or an unreachable account-svc in between leaves the debt on the record, and `settle_credits`
(run by every replica's scheduler) pays it later: never lost, never taken twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import KW_ONLY, field
from datetime import datetime, timedelta
from typing import Any, Protocol

import grpc
from opentelemetry import trace
from opentelemetry.trace import Tracer

from publish_svc.accounts_client import AccountsClient
from publish_svc.daily import DailyReleases
from publish_svc.drivers.base import (
    Canceled,
    Credentials,
    Driver,
    LeaseLost,
    Media,
    Outcome,
    OutcomeKind,
)
from publish_svc.events import status_event
from publish_svc.insights.store import POST_DUE_FIELD
from publish_svc.metrics import PublishMetrics
from publish_svc.model import Kind, Post, Status
from publish_svc.progress import ANSWER_GRACE, StoredProgress, TooLate, Unsettled
from publish_svc.records import PostStore
from publish_svc.render_client import RenderClient
from storypost.render.v1 import render_pb2 as rpb
from storypost_runtime.backoff import PLATFORM_RETRY
from storypost_runtime.clock import Clock, iso_utc
from storypost_runtime.component import component
from storypost_runtime.leases import renewing
from storypost_runtime.logs import get_logger
from storypost_runtime.tracing import context_of_traceparent, tracer
from storypost_runtime.vocabulary import OPEN_STATUSES

log = get_logger(__name__)


class DriverLookup(Protocol):
    def get(self, platform: str) -> Driver: ...


RENDER_RECHECK = timedelta(seconds=1)
# A credit debt the publishing replica did not pay at once is looked at again after this.
CREDIT_RETRY = timedelta(seconds=10)
CREDIT_BATCH = 20
# The post an attempt's span is about (its record id).
POST_ATTRIBUTE = "storypost.post_id"


def late_message(post: Post, window: timedelta, last_error: str | None = None) -> str:
    minutes = int(window.total_seconds() // 60)
    message = (
        f"not posted within {minutes} minutes after its scheduled time "
        f"({iso_utc(post.deadline_base)}); it was not posted late"
    )
    return f"{message}; last error: {last_error}" if last_error else message


def unknown_message(post: Post, window: timedelta, last_error: str | None = None) -> str:
    """The post was sent, and the platform could not be asked what became of it in time."""
    minutes = int(window.total_seconds() // 60)
    message = (
        f"the outcome is unknown: {post.account.platform.lower()} did not tell within "
        f"{minutes} minutes after the post's deadline whether the post was published; check "
        f"the account before posting it again"
    )
    return f"{message}; last error: {last_error}" if last_error else message


@component
class PostWork:
    """What acting on stored posts goes through, reading and canceling them (posts.Posts) as
    publishing them (PostProcessor): the collaborators, and the daily reservations that an
    ended post gives back (publish_svc/daily.py)."""

    _: KW_ONLY
    store: PostStore
    accounts: AccountsClient
    renderer: RenderClient
    drivers: DriverLookup
    clock: Clock
    _releases: DailyReleases = field(init=False)

    def __post_init__(self) -> None:
        self._releases = DailyReleases(store=self.store, accounts=self.accounts, clock=self.clock)


@component
class PostProcessor(PostWork):
    _: KW_ONLY
    window: timedelta
    lease: timedelta
    hold_recheck: timedelta
    metrics: PublishMetrics | None = None
    answer_grace: timedelta = ANSWER_GRACE
    spans: Tracer | None = None
    _metrics: PublishMetrics = field(init=False)
    _spans: Tracer = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._metrics = self.metrics or PublishMetrics.create(None)
        self._spans = self.spans or tracer()

    @staticmethod
    def _holder(post: Post) -> str:
        """The lease this attempt holds: every write of the attempt is guarded by it, so an
        attempt whose lease was taken over (by another replica, or by a later claim of this
        one) changes nothing any more."""
        if post.lease_holder is None:
            raise LeaseLost(post.id)
        return post.lease_holder

    def deadline(self, post: Post) -> datetime:
        return post.deadline_base + self.window

    def driver_for(self, post: Post) -> Driver:
        return self.drivers.get(post.account.platform)

    async def process(self, post: Post) -> None:
        """Runs one attempt in the trace of the call that scheduled the post, when it stored
        one and tracing is on; otherwise as before, outside any trace."""
        parent = context_of_traceparent(post.traceparent)
        if parent is None:
            await self._process(post)
            return
        span = self._spans.start_span(
            "publish post", context=parent, attributes={POST_ATTRIBUTE: post.id}
        )
        if not span.is_recording():
            # Tracing off: the no-op span would only pass the stored context on.
            await self._process(post)
            return
        with trace.use_span(span, end_on_exit=True):
            await self._process(post)

    async def _process(self, post: Post) -> None:
        """Runs one attempt; every path ends with the lease given back or a final status."""
        try:
            await self._attempt(post)
        except (LeaseLost, Canceled):
            log.info("attempt stopped", post=post.id)
        except TooLate:
            await self._fail(post, late_message(post, self.window, post.progress.get("lastError")))
        except Unsettled:
            # Past the deadline, an earlier call may still be performed: ask again later.
            await self._retry(
                post,
                Outcome.retry(
                    post.progress.get("lastError") or "the earlier platform call is not settled"
                ),
            )
        except grpc.aio.AioRpcError as error:
            # account-svc or render-svc did not answer: a transient failure like any other.
            await self._retry(post, Outcome.retry(f"internal dependency: {error.code().name}"))
        except Exception:
            log.exception("attempt crashed", post=post.id)
            await self._retry(post, Outcome.retry("internal error"))

    async def _attempt(self, post: Post) -> None:
        now = self.clock.now()
        # After an irreversible call whose outcome is unknown, attempts go on past the deadline
        # only to ask the platform what became of it (never to send anything new), for at
        # most one more window.
        limit = self.deadline(post) + (
            self.window if post.progress.get("irreversible") else timedelta(0)
        )
        if now > limit:
            last = post.progress.get("lastError")
            sent = post.progress.get("irreversible")
            message = (unknown_message if sent else late_message)(post, self.window, last)
            await self._fail(post, message)
            return
        media = await self._rendered_media(post)
        if media is None:
            return
        if post.kind is Kind.SOCIAL and not await self._social_gates(post):
            return
        moved = await self._mark_in_progress(post)
        if moved is None:
            return
        post = moved
        credentials = await self._credentials(post)
        if credentials is None:
            return
        outcome, sent = await self._publish(post, media, credentials)
        if outcome.kind is OutcomeKind.UNAUTHORIZED:
            # The token may have expired early: refresh once before calling it a disconnect.
            credentials = await self._credentials(post, force_refresh=True, sent=sent)
            if credentials is None:
                return
            outcome, sent_again = await self._publish(post, media, credentials)
            sent = sent or sent_again
            if outcome.kind is OutcomeKind.UNAUTHORIZED:
                await self.accounts.mark_disconnected(
                    post.organization_id, post.account.social_account_id, outcome.message
                )
                await self._fail_disconnected(post, outcome.message, sent=sent)
                return
        await self._conclude(post, outcome, sent=sent)

    async def _rendered_media(self, post: Post) -> Media | None:
        rendering = await self.renderer.get(post.organization_id, post.rendering_id)
        if rendering.state == rpb.RENDERING_STATE_FAILED:
            await self._fail(post, f"rendering failed: {rendering.error_message}")
            return None
        if rendering.state != rpb.RENDERING_STATE_FINISHED:
            if rendering.state == rpb.RENDERING_STATE_PREPARED:
                await self.renderer.finish(post.organization_id, post.rendering_id)
            await self.store.release(
                post.id, self._holder(post), due_at=self.clock.now() + RENDER_RECHECK
            )
            return None
        return Media(
            kind="video" if rendering.media_kind == rpb.MEDIA_KIND_VIDEO else "image",
            url=rendering.media_url,
            preview_url=rendering.preview_url or None,
            duration_seconds=rendering.duration_seconds,
        )

    async def _social_gates(self, post: Post) -> bool:
        """Credits (wait, in progress) and the platform's daily limit (fail)."""
        # A post already sent is concluded whatever the balance (its credit may be the one
        # that made it zero): only a post that has not gone out waits.
        sent = bool(post.progress.get("irreversible"))
        if not sent and await self.accounts.credits(post.organization_id) <= 0:
            if post.status is Status.SCHEDULED:
                # The date came: in progress from now on, without an event (spec).
                await self.store.transition(
                    post.id,
                    [Status.SCHEDULED],
                    Status.IN_PROGRESS,
                    now=self.clock.now(),
                    holder=self._holder(post),
                )
            await self.store.release(
                post.id,
                self._holder(post),
                due_at=self.clock.now() + self.hold_recheck,
                set_fields={"progress.waitingForCredits": True},
            )
            return False
        reservation = await self.accounts.reserve_daily(
            post.organization_id,
            post.account.social_account_id,
            post.id,
            post.date or post.created_at,
        )
        if not reservation.reserved:
            await self._fail(
                post,
                f"daily limit reached: {post.account.platform} allows {reservation.limit} posts "
                f"per day for account '{post.account.username}' and {reservation.used} are "
                f"scheduled on {reservation.day} (UTC)",
                release_daily=False,
            )
            return False
        return True

    async def _mark_in_progress(self, post: Post) -> Post | None:
        if post.kind is Kind.STORY or post.status is Status.IN_PROGRESS:
            return post
        now = self.clock.now()
        # Reels and clipapp posts announce in-progress; a social post whose date came does not.
        event = None if post.kind is Kind.SOCIAL else status_event(post, Status.IN_PROGRESS, now)
        moved = await self.store.transition(
            post.id,
            [Status.SCHEDULED],
            Status.IN_PROGRESS,
            now=now,
            event=event,
            holder=self._holder(post),
        )
        if moved is None:
            log.info("post changed before publishing", post=post.id)
        return moved

    async def _credentials(
        self, post: Post, *, force_refresh: bool = False, sent: bool = False
    ) -> Credentials | None:
        try:
            token = await self.accounts.access_token(
                post.organization_id, post.account.social_account_id, force_refresh=force_refresh
            )
        except grpc.aio.AioRpcError as error:
            if error.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                await self._fail_disconnected(post, error.details() or "", sent=sent)
                return None
            raise
        return Credentials(token.access_token, token.platform_account_id, token.username)

    async def _fail_disconnected(self, post: Post, detail: str, *, sent: bool = False) -> None:
        """Fails a post whose account can no longer be used. If a publishing call went out
        before (an earlier attempt, or this one: `sent`), the platform cannot be asked what
        became of it any more: the outcome is unknown, never "not published", and the daily
        reservation is kept (the post may count against it)."""
        reason = f" ({detail})" if detail else ""
        account = f"{post.account.platform} account '{post.account.username}'"
        if sent or post.progress.get("irreversible"):
            message = (
                f"the outcome is unknown: the {account} was disconnected{reason} before "
                f"{post.account.platform.lower()} could be asked whether the post sent earlier "
                f"was published; check the account before posting it again, and reconnect it "
                f"in the app"
            )
            await self._fail(post, message, release_daily=False)
            return
        await self._fail(post, f"{account} is disconnected{reason}: reconnect it in the app")

    async def _publish(
        self, post: Post, media: Media, credentials: Credentials
    ) -> tuple[Outcome, bool]:
        """The driver's outcome, and whether an irreversible call was sent (this attempt or
        an earlier one): the post as claimed does not know what this attempt marked."""
        progress = StoredProgress(
            store=self.store,
            record_id=post.id,
            holder=self._holder(post),
            recorded=post.progress,
            clock=self.clock,
            deadline=self.deadline(post),
            answer_grace=self.answer_grace,
        )
        async with self._renewing_lease(post):
            outcome = await self.driver_for(post).publish(post, media, credentials, progress)
        return outcome, bool(progress.recorded.get("irreversible"))

    def _renewing_lease(self, post: Post) -> AbstractAsyncContextManager[None]:
        holder = self._holder(post)

        def renew() -> Awaitable[bool]:
            return self.store.renew_lease(post.id, holder, self.clock.now() + self.lease)

        def failed(error: Exception) -> None:
            log.warning("renewing a post's lease failed", post=post.id, error=str(error))

        return renewing(renew, failed, lease=self.lease, name=f"lease {post.id}")

    async def _conclude(self, post: Post, outcome: Outcome, *, sent: bool = False) -> None:
        self._metrics.outcomes.labels(post.account.platform, outcome.kind.value).inc()
        raw: dict[str, Any] = {"clipappStatus": outcome.raw_status} if outcome.raw_status else {}
        if outcome.kind is OutcomeKind.EXECUTED:
            now = self.clock.now()
            # The credit it owes, in the same write as the status (paid just below).
            debt = {"creditDueAt": now + CREDIT_RETRY} if post.kind is Kind.SOCIAL else {}
            done = await self._end(
                post,
                Status.EXECUTED,
                now,
                {
                    "permalink": outcome.permalink,
                    "platformPostId": outcome.platform_post_id,
                    # Its insights are to be planned (publish_svc.insights, docs/insights.md).
                    POST_DUE_FIELD: now,
                    **raw,
                    **debt,
                },
                permalink=outcome.permalink,
                clipapp_status=outcome.raw_status,
            )
            if done is not None:
                due = post.date if post.date and post.future_date else post.created_at
                self._metrics.lag.labels(post.kind.value).observe((now - due).total_seconds())
            if done is not None and post.kind is Kind.SOCIAL:
                await self._pay_credit(post.id, post.organization_id)
            log.info("published", post=post.id, platform=post.account.platform)
        elif outcome.kind is OutcomeKind.FAILED:
            await self._fail(post, outcome.message, extra=raw)
        else:
            await self._retry(post, outcome, sent=sent)

    async def _pay_credit(self, record_id: str, organization_id: str) -> bool:
        """Takes the post's credit (idempotent in account-svc) and clears the debt; on any
        failure the debt stays for `settle_credits`."""
        try:
            consumed = await self.accounts.consume_credit(organization_id, record_id)
        except Exception as error:  # account-svc away: the debt is on the record
            log.warning("credit not taken yet", post=record_id, error=str(error))
            consumed = False
        now = self.clock.now()
        if consumed:
            await self.store.clear_due(record_id, "creditDueAt", "creditTakenAt", now)
        else:
            # Not reachable, or no credit left (taken when the balance is positive again).
            await self.store.set_due(record_id, "creditDueAt", now + CREDIT_RETRY)
        return consumed

    async def settle_credits(self) -> int:
        """Pays credits of published posts still owed (a crash or an outage between the
        transition and ConsumeCredit); every replica may run it, a repeat takes nothing."""
        paid = 0
        for record_id, organization_id in await self.store.credits_due(
            self.clock.now(), CREDIT_BATCH
        ):
            if await self._pay_credit(record_id, organization_id):
                paid += 1
        return paid

    async def settle_owed(self) -> int:
        """Everything ended posts still owe account-svc: credits and daily reservations."""
        return await self.settle_credits() + await self._releases.settle()

    async def _retry(self, post: Post, outcome: Outcome, *, sent: bool = False) -> None:
        """Plans the next attempt; a post never sent fails instead when that attempt would
        come past the deadline. `sent`: this attempt sent an irreversible call (the post as
        claimed does not show it): it may have been published, so it is looked up later."""
        now = self.clock.now()
        delay = timedelta(seconds=PLATFORM_RETRY.delay(post.attempts + 1))
        if outcome.retry_after_seconds:
            delay = max(delay, timedelta(seconds=outcome.retry_after_seconds))
        if now + delay > self.deadline(post) and not (sent or post.progress.get("irreversible")):
            await self._fail(post, late_message(post, self.window, outcome.message))
            return
        fields: dict[str, Any] = {"progress.lastError": outcome.message}
        if outcome.raw_status:
            fields["clipappStatus"] = outcome.raw_status
        await self.store.release(
            post.id, self._holder(post), due_at=now + delay, set_fields=fields, inc_attempts=True
        )
        log.info("retry later", post=post.id, error=outcome.message, delay_s=delay.total_seconds())

    async def _fail(
        self,
        post: Post,
        message: str,
        *,
        extra: Mapping[str, Any] | None = None,
        release_daily: bool = True,
    ) -> None:
        now = self.clock.now()
        # The daily reservation it owes back, in the same write as the status (given back just
        # below, or by settle_owed after a crash).
        owed = self._releases.owed_fields(post, now) if release_daily else {}
        failed = await self._end(
            post,
            Status.FAILED,
            now,
            {"errorMessage": message, **(extra or {}), **owed},
            error_message=message,
        )
        if failed is None:
            return
        log.info("failed", post=post.id, error=message)
        if owed:
            await self._releases.give_back(post)

    async def _end(
        self,
        post: Post,
        status: Status,
        now: datetime,
        set_fields: Mapping[str, Any],
        **details: str | None,
    ) -> Post | None:
        """Moves the post this attempt holds to a final status: the status, its event (with
        `details`) and `set_fields` in one write; None when it moved meanwhile."""
        return await self.store.transition(
            post.id,
            OPEN_STATUSES,
            status,
            now=now,
            holder=self._holder(post),
            event=status_event(post, status, now, **details),
            set_fields=set_fields,
        )
