"""Moving a scheduled post to another date, never one a scheduler replica is publishing.

The move is one conditional update of the post: still `scheduled`, not leased by an attempt,
no irreversible call made; with the new date, due time and listing place, and the status
event (`scheduled`, with the new date) in its outbox. A reschedule racing the scheduler's
claim is settled by that one document: whichever write comes first wins, and the other finds
the post changed (the claim requires `dueAt <= now`, the move requires no lease).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY
from datetime import datetime, timedelta

from pymongo import ReturnDocument

from publish_svc.accounts_client import AccountsClient, clipapp_ref, photoapp_ref, social_ref
from publish_svc.events import rescheduled_event
from publish_svc.listing import LISTED_FIELD
from publish_svc.model import Kind, Post, Status, post_id
from publish_svc.posts import NOUN
from publish_svc.queue_times import invalid
from publish_svc.queues import Queues, QueueStore, Taken
from publish_svc.records import PHASE_FIELD, PostStore
from storypost.account.v1 import account_pb2 as apb
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, NotFound
from storypost_runtime.mongo import Document
from storypost_runtime.outbox import with_event

NOT_SCHEDULED = "POST_NOT_SCHEDULED"
BEING_PUBLISHED = "POST_BEING_PUBLISHED"


def account_ref(post: Post) -> tuple[apb.AccountRef, str]:
    """The account a post goes to, named as its schedule call named it (and for errors)."""
    if post.kind in (Kind.STORY, Kind.REEL):
        username = post.account.username
        return photoapp_ref(username), f"photoapp account '{username}'"
    if post.kind is Kind.CLIPAPP:
        account_id = post.account.platform_account_id
        return clipapp_ref(account_id), f"clipapp account '{account_id}'"
    social_id = post.account.social_account_id
    return social_ref(social_id), f"social account '{social_id}'"


@component
class Rescheduler:
    _: KW_ONLY
    store: PostStore
    accounts: AccountsClient
    clock: Clock
    window: timedelta
    wake_scheduler: Callable[[], None]
    # Queue slots: a post moved off its slot gives it back.
    slots: QueueStore | None = None
    # Where a post moved into a queue takes its new date (none: queueName is refused).
    queues: Queues | None = None

    async def reschedule(
        self,
        kind: Kind,
        organization_id: str,
        post_uuid: str,
        date: datetime | None,
        *,
        queue_name: str = "",
    ) -> Post:
        _date_or_queue(date, queue_name)
        post = await self.store.get(kind, organization_id, post_uuid)
        if post is None:
            raise NotFound(f"{NOUN[kind]} {post_uuid} not found")
        self._refuse_unmovable(post)
        now = self.clock.now()
        if date is not None:
            self._check_date(post, date, now)
        ref, label = account_ref(post)
        # The account must still be connected, as when it was scheduled (400 naming it).
        account = await self.accounts.connected(organization_id, ref, label)
        slot = await self._take_slot(post, account, queue_name, date) if queue_name else None
        new_date = slot.at if slot is not None else date
        assert new_date is not None  # _date_or_queue: one of them
        try:
            moved = await self._move(post, new_date, now)
        except BaseException:
            if slot is not None and self.queues is not None:
                await self.queues.store.release(slot.id, post.id)
            raise
        if moved is None and slot is not None and self.queues is not None:
            await self.queues.store.release(slot.id, post.id)
        if moved is None:
            # It changed between the read and the move: say where it stands now.
            current = await self.store.get(kind, organization_id, post_uuid)
            assert current is not None
            self._refuse_unmovable(current)
            raise FailedPrecondition(
                f"the {NOUN[kind]} is being published right now and cannot be rescheduled",
                reason=BEING_PUBLISHED,
            )
        self.store.wake_relay()
        if self.slots is not None and slot is None:
            await self.slots.release_post(moved.id)
        if moved.due_at <= now:
            self.wake_scheduler()
        return moved

    async def _take_slot(
        self, post: Post, account: apb.ConnectedAccount, queue_name: str, date: datetime | None
    ) -> Taken:
        """The slot at `date` of the account's queue (one of its free slots: a move onto a
        slot in the calendar), else its earliest free one, taken for the post. Its old slot,
        if it had one, is given back first (a post holds one slot); a `date` that is not a
        free slot is refused before that."""
        if self.queues is None:
            raise invalid("queueName", "queues are not available here")
        queue = await self.queues.get(post.organization_id, account.social_account_id, queue_name)
        if date is None:
            await self.queues.store.release_post(post.id)
            return await self.queues.take(post.organization_id, queue, account, post.id)
        held = await self.queues.store.slot_of(post.id)
        if held is not None and held.at == date:
            return held  # a repeat of this move
        stale = await self.queues.stale_at(queue, account, date)
        await self.queues.store.release_post(post.id)
        return await self.queues.take_at(post.organization_id, queue, date, post.id, stale)

    def _check_date(self, post: Post, date: datetime, now: datetime) -> None:
        """The date rules of scheduling: never more than the window in the past (the post
        could not be published in time); a social post is `scheduled` only while its date is
        ahead (a past one would make it `in-progress` at once, which a move does not do)."""
        if post.kind is Kind.SOCIAL and date <= now:
            raise InvalidArgument(
                "date must be in the future to reschedule a social post (a social post with "
                "a past date is published at once: cancel it and schedule it again instead)"
            )
        if date < now - self.window:
            minutes = int(self.window.total_seconds() // 60)
            raise InvalidArgument(
                f"date is more than {minutes} minutes in the past: the post could never be "
                "published in time"
            )

    @staticmethod
    def _refuse_unmovable(post: Post) -> None:
        noun = NOUN[post.kind]
        if post.status is not Status.SCHEDULED:
            raise FailedPrecondition(
                f"the {noun} is {post.status.value}: only a scheduled post can be rescheduled",
                reason=NOT_SCHEDULED,
            )
        if post.progress.get("irreversible"):
            raise FailedPrecondition(
                f"the {noun} is being published right now and cannot be rescheduled",
                reason=BEING_PUBLISHED,
            )

    async def _move(self, post: Post, date: datetime, now: datetime) -> Post | None:
        """One guarded write: the new date and its event, or None when the post is no longer
        scheduled, is leased by an attempt, or an irreversible call was made."""
        future = date > now
        query: Document = {
            "_id": post_id(post.kind, post.organization_id, post.post_uuid),
            "status": Status.SCHEDULED.value,
            "leaseUntil": {"$lte": now},
            PHASE_FIELD: None,
            "progress.irreversible": {"$ne": True},
        }
        event = rescheduled_event(post, date, now)
        update = with_event(
            {
                "$set": {
                    "date": date,
                    "dueAt": date if future else now,
                    "futureDate": future,
                    LISTED_FIELD: date,
                    "updatedAt": now,
                }
            },
            event,
        )
        doc = await self.store.posts.find_one_and_update(
            query, update, projection={"outbox": 0}, return_document=ReturnDocument.AFTER
        )
        return Post.from_doc(doc) if doc else None


def _date_or_queue(date: datetime | None, queue_name: str) -> None:
    """A move names its new date, a queue to take the earliest free slot of, or both (that
    slot of the queue); not neither (400 naming both)."""
    if date is None and not queue_name:
        raise InvalidArgument(
            "give date, queueName or both (neither was given)",
            field_violations={
                "date": ["give date, queueName or both"],
                "queueName": ["give date, queueName or both"],
            },
        )
