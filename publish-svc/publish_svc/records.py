"""The posts collection: idempotent inserts, guarded transitions with their events, leases."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel, ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from publish_svc.listing import LISTED_FIELD, ListQuery, Position
from publish_svc.model import OPEN, SERIES_FIELD, Kind, Post, Status, listed_at, post_id
from storypost_runtime.component import component
from storypost_runtime.migrations import Backfill
from storypost_runtime.mongo import Document, drop_indexes, ensure_indexes
from storypost_runtime.outbox import Event, new_record_outbox, with_event

NEVER = datetime(1970, 1, 1, tzinfo=UTC)
# Set while a driver call that cannot be taken back (upload, publish) runs.
PHASE_FIELD = "phase"
# Indexes of earlier versions: ListPosts went by (organizationId, dueAt), now by org_listed.
RETIRED_INDEXES = ("org_due",)
# ListPosts' filters, each with the index that serves it: (organizationId, the field, listedAt,
# _id), so on MongoDB a page filtered by it is read in order from its index, never sorted in
# memory; with several filters the planner picks one of them and checks the others on the
# documents it reads. No filter: `org_listed`. (No hint: the embedded stand-in answers a
# hinted find with "no query solution".)
ACCOUNT_FIELD = "account.socialAccountId"
LISTING_INDEXES = (
    (SERIES_FIELD, "org_series_listed"),
    (ACCOUNT_FIELD, "org_account_listed"),
    ("status", "org_status_listed"),
    ("kind", "org_kind_listed"),
)
LISTED_INDEX = "org_listed"


@component
class PostStore:
    posts: AsyncCollection[Document]
    wake_relay: Callable[[], None]

    async def ensure_indexes(self) -> None:
        await ensure_indexes(
            self.posts,
            [
                # The scheduler's claim: open posts whose due time came and whose lease ended.
                IndexModel([("status", ASCENDING), ("dueAt", ASCENDING)], name="status_due"),
                # ListPosts' pages and ranges: (listedAt, _id) newest first per organization,
                # and the same per filter (LISTING_INDEXES).
                _listing_index(LISTED_INDEX),
                *(_listing_index(name, field) for field, name in LISTING_INDEXES),
                IndexModel([("outboxPending", ASCENDING)], sparse=True, name="outbox_pending"),
                # Published social posts whose credit is not taken yet (few, if any).
                IndexModel([("creditDueAt", ASCENDING)], sparse=True, name="credit_due"),
                # Ended social posts whose daily reservation is not given back yet.
                IndexModel([("dailyReleaseDueAt", ASCENDING)], sparse=True, name="release_due"),
            ],
        )
        await drop_indexes(self.posts, RETIRED_INDEXES)

    def listed_at_backfill(self) -> Backfill:
        """Gives records stored before `listedAt` existed theirs (migration step: no index
        serves `$exists: false`, so never in the start path)."""
        return Backfill(
            self.posts,
            {LISTED_FIELD: {"$exists": False}},
            {"date": 1, "createdAt": 1},
            lambda doc: {"$set": {LISTED_FIELD: listed_at(doc.get("date"), doc["createdAt"])}},
        )

    async def get(self, kind: Kind, organization_id: str, post_uuid: str) -> Post | None:
        doc = await self.posts.find_one({"_id": post_id(kind, organization_id, post_uuid)})
        return Post.from_doc(doc) if doc else None

    async def get_by_id(self, record_id: str) -> Post | None:
        doc = await self.posts.find_one({"_id": record_id})
        return Post.from_doc(doc) if doc else None

    async def insert(self, post: Post, *events: Event) -> tuple[Post, bool]:
        """Stores a new post with its first events; a racing twin gets the stored one back.

        The record is the post's own (`Post.to_doc`) and the store's fields: where ListPosts
        places it, no lease, no driver call running, the events to relay."""
        record = {
            **post.to_doc(),
            LISTED_FIELD: post.listed_at,
            "leaseUntil": NEVER,
            PHASE_FIELD: None,
            **new_record_outbox(*events),
        }
        try:
            await self.posts.insert_one(record)
        except DuplicateKeyError:
            existing = await self.posts.find_one({"_id": post.id})
            assert existing is not None
            return Post.from_doc(existing), False
        self.wake_relay()
        return post, True

    async def transition(
        self,
        record_id: str,
        from_statuses: Iterable[Status],
        to_status: Status,
        *,
        now: datetime,
        event: Event | None = None,
        set_fields: Mapping[str, Any] | None = None,
        holder: str | None = None,
        idle_only: bool = False,
    ) -> Post | None:
        """Moves a post from one of `from_statuses`; None when it was not in one of them.

        `holder` requires that this attempt still holds the lease; `idle_only` requires that
        no irreversible driver call is running (cancel must not race a publish).
        """
        query: Document = {"_id": record_id, "status": {"$in": [s.value for s in from_statuses]}}
        if holder is not None:
            query["leaseOwner"] = holder
        if idle_only:
            query[PHASE_FIELD] = None
        fields: Document = {"status": to_status.value, "updatedAt": now, **(set_fields or {})}
        if to_status in (Status.EXECUTED, Status.FAILED, Status.CANCELED):
            fields.update({"finishedAt": now, "leaseUntil": NEVER, PHASE_FIELD: None})
        update: Document = {"$set": fields}
        if event is not None:
            update = with_event(update, event)
        doc = await self.posts.find_one_and_update(
            query, update, return_document=ReturnDocument.AFTER
        )
        if doc is None:
            return None
        if event is not None:
            self.wake_relay()
        return Post.from_doc(doc)

    async def update_fields(
        self, record_id: str, fields: Mapping[str, Any], *, holder: str | None = None
    ) -> bool:
        query: Document = {"_id": record_id}
        if holder is not None:
            query["leaseOwner"] = holder
        result = await self.posts.update_one(query, {"$set": dict(fields)})
        return result.matched_count == 1

    async def due_ids(self, now: datetime, limit: int) -> list[str]:
        """Ids of the most overdue open posts whose lease ended (candidates, not yet ours)."""
        cursor = (
            self.posts.find(
                {
                    "status": {"$in": list(OPEN)},
                    "dueAt": {"$lte": now},
                    "leaseUntil": {"$lte": now},
                },
                {"_id": 1},
            )
            .sort("dueAt", ASCENDING)
            .limit(limit)
        )
        return [doc["_id"] async for doc in cursor]

    async def claim(
        self, record_id: str, holder: str, now: datetime, lease_until: datetime
    ) -> Post | None:
        """Atomically leases one due post, so no two replicas take one post; None when another
        replica was first (or it changed meanwhile)."""
        doc = await self.posts.find_one_and_update(
            {
                "_id": record_id,
                "status": {"$in": list(OPEN)},
                "dueAt": {"$lte": now},
                "leaseUntil": {"$lte": now},
            },
            {"$set": {"leaseOwner": holder, "leaseUntil": lease_until}},
            return_document=ReturnDocument.AFTER,
        )
        return Post.from_doc(doc) if doc else None

    async def claim_due(self, holder: str, now: datetime, lease_until: datetime) -> Post | None:
        """The most overdue claimable post, leased to `holder` (None when there is none)."""
        for record_id in await self.due_ids(now, 4):
            post = await self.claim(record_id, holder, now, lease_until)
            if post is not None:
                return post
        return None

    async def next_due_at(self, now: datetime) -> datetime | None:
        """The next due time in the future (posts leased by others come back by polling)."""
        doc = await self.posts.find_one(
            {"status": {"$in": list(OPEN)}, "dueAt": {"$gt": now}},
            {"dueAt": 1},
            sort=[("dueAt", ASCENDING)],
        )
        if doc is None:
            return None
        due: datetime = doc["dueAt"]
        return due

    async def release(
        self,
        record_id: str,
        holder: str,
        *,
        due_at: datetime,
        set_fields: Mapping[str, Any] | None = None,
        inc_attempts: bool = False,
    ) -> bool:
        """Gives the lease back and sets when the post is due again.

        The phase stays: once an irreversible call was made, the post may be published
        already, so a cancel must keep being refused until the outcome is known.
        """
        update: Document = {"$set": {"dueAt": due_at, "leaseUntil": NEVER, **(set_fields or {})}}
        if inc_attempts:
            update["$inc"] = {"attempts": 1}
        result = await self.posts.update_one({"_id": record_id, "leaseOwner": holder}, update)
        return result.matched_count == 1

    async def mark_irreversible(
        self, record_id: str, holder: str, progress: Mapping[str, Any]
    ) -> Post | None:
        """Sets the phase (and progress fields) if the post is still open and ours; else
        returns it as it is."""
        fields = {f"progress.{key}": value for key, value in progress.items()}
        doc = await self.posts.find_one_and_update(
            {"_id": record_id, "leaseOwner": holder, "status": {"$in": list(OPEN)}},
            {"$set": {PHASE_FIELD: "publishing", "progress.irreversible": True, **fields}},
            return_document=ReturnDocument.AFTER,
        )
        if doc is not None:
            return None
        current = await self.posts.find_one({"_id": record_id}, {"outbox": 0})
        return Post.from_doc(current) if current else None

    async def renew_lease(self, record_id: str, holder: str, lease_until: datetime) -> bool:
        result = await self.posts.update_one(
            {"_id": record_id, "leaseOwner": holder}, {"$set": {"leaseUntil": lease_until}}
        )
        return result.matched_count == 1

    async def credits_due(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        """(record id, organization id) of posts whose credit is owed and due to be taken."""
        cursor = (
            self.posts.find({"creditDueAt": {"$lte": now}}, {"_id": 1, "organizationId": 1})
            .sort("creditDueAt", ASCENDING)
            .limit(limit)
        )
        return [(doc["_id"], doc["organizationId"]) async for doc in cursor]

    async def due(self, field: str, now: datetime, limit: int) -> list[str]:
        """Record ids whose owed action (`field` holds when it is due) is due now."""
        cursor = (
            self.posts.find({field: {"$lte": now}}, {"_id": 1}).sort(field, ASCENDING).limit(limit)
        )
        return [doc["_id"] async for doc in cursor]

    async def set_due(self, record_id: str, field: str, when: datetime) -> None:
        await self.posts.update_one(
            {"_id": record_id, field: {"$exists": True}}, {"$set": {field: when}}
        )

    async def clear_due(self, record_id: str, field: str, done_field: str, now: datetime) -> None:
        await self.posts.update_one(
            {"_id": record_id, field: {"$exists": True}},
            {"$unset": {field: ""}, "$set": {done_field: now}},
        )

    async def list(
        self, query: ListQuery, position: Position | None, limit: int
    ) -> tuple[list[Post], bool]:
        """A page of `limit` posts from `position` (the newest when None), newest first, and
        whether the listing goes on past it in the page's direction."""
        find: Document = {"organizationId": query.organization_id}
        if query.kinds:
            find["kind"] = _one_of([k.value for k in query.kinds])
        if query.statuses:
            find["status"] = _one_of([s.value for s in query.statuses])
        if query.social_account_id:
            find[ACCOUNT_FIELD] = query.social_account_id
        if query.series_uuid:
            find[SERIES_FIELD] = query.series_uuid
        span: Document = {}
        if query.date_from is not None:
            span["$gte"] = query.date_from
        if query.date_to is not None:
            span["$lt"] = query.date_to
        if span:
            find[LISTED_FIELD] = span
        newer = position is not None and position.newer
        order = ASCENDING if newer else DESCENDING
        if position is not None:
            beyond = "$gt" if newer else "$lt"
            find["$or"] = [
                {LISTED_FIELD: {beyond: position.listed_at}},
                {LISTED_FIELD: position.listed_at, "_id": {beyond: position.record_id}},
            ]
        cursor = (
            self.posts.find(find, {"outbox": 0})
            .sort([(LISTED_FIELD, order), ("_id", order)])
            .limit(limit + 1)
        )
        found = [Post.from_doc(doc) async for doc in cursor]
        page = found[:limit]
        return (page[::-1] if newer else page), len(found) > limit


def _listing_index(name: str, field: str | None = None) -> IndexModel:
    keys = [("organizationId", ASCENDING)]
    if field is not None:
        keys.append((field, ASCENDING))
    keys += [(LISTED_FIELD, DESCENDING), ("_id", DESCENDING)]
    return IndexModel(keys, name=name)


def _one_of(values: list[str]) -> Any:
    """A filter on one of `values`: an equality when there is one (which the embedded
    stand-in answers from the field's index, as MongoDB does either way), else `$in`."""
    return values[0] if len(values) == 1 else {"$in": values}
