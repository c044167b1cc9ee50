"""The insights collections: one schedule per published post (claimed under a lease like due
posts), its raw points (expiring), and the daily roll-ups per account (kept)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pymongo import ASCENDING, IndexModel, ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, OperationFailure

from storypost_runtime.component import component
from storypost_runtime.mongo import Document, ensure_indexes
from storypost_runtime.outbox import Event, with_event

NEVER = datetime(1970, 1, 1, tzinfo=UTC)
SCHEDULES = "post_insights"
POINTS = "insight_points"
DAILY = "account_insights_daily"
# Set on a post by the `executed` write (processing.py): its insights are to be planned.
POST_DUE_FIELD = "insightsDueAt"
COLLECTING, DONE, STOPPED = "collecting", "done", "stopped"
# Indexes, each serving one read (docs/insights.md).
STATE_DUE_INDEX = "state_due"
POINTS_INDEX = "post_collected"
POINTS_TTL_INDEX = "collected_ttl"
DAILY_INDEX = "org_account_day"
POSTS_DUE_INDEX = "insights_due"
HISTORY_LIMIT = 500


def day_key(moment: datetime) -> str:
    return moment.astimezone(UTC).date().isoformat()


def daily_id(organization_id: str, social_account_id: str, day: str) -> str:
    return f"{organization_id}:{social_account_id}:{day}"


@component
class InsightStore:
    _: KW_ONLY
    db: AsyncDatabase[Document]
    wake_relay: Callable[[], None]
    retention: timedelta

    @property
    def schedules(self) -> AsyncCollection[Document]:
        return self.db[SCHEDULES]

    @property
    def points(self) -> AsyncCollection[Document]:
        return self.db[POINTS]

    @property
    def daily(self) -> AsyncCollection[Document]:
        return self.db[DAILY]

    @property
    def posts(self) -> AsyncCollection[Document]:
        return self.db["posts"]

    async def ensure_indexes(self) -> None:
        await ensure_indexes(
            self.schedules,
            [
                # The collector's claim: collecting schedules whose point is due.
                IndexModel([("state", ASCENDING), ("dueAt", ASCENDING)], name=STATE_DUE_INDEX),
                IndexModel([("outboxPending", ASCENDING)], sparse=True, name="outbox_pending"),
            ],
        )
        # A post's history, oldest first.
        await ensure_indexes(
            self.points,
            [IndexModel([("postId", ASCENDING), ("collectedAt", ASCENDING)], name=POINTS_INDEX)],
        )
        await self._ensure_ttl()
        # list-account-insights: one account's days in a range.
        await ensure_indexes(
            self.daily,
            [
                IndexModel(
                    [
                        ("organizationId", ASCENDING),
                        ("socialAccountId", ASCENDING),
                        ("day", ASCENDING),
                    ],
                    name=DAILY_INDEX,
                )
            ],
        )
        # Executed posts whose schedule is not made yet (few, if any).
        await ensure_indexes(
            self.posts,
            [IndexModel([(POST_DUE_FIELD, ASCENDING)], sparse=True, name=POSTS_DUE_INDEX)],
        )

    async def _ensure_ttl(self) -> None:
        """Raw points expire `retention` after they were read; a changed retention replaces
        the index."""
        ttl = IndexModel(
            [("collectedAt", ASCENDING)],
            name=POINTS_TTL_INDEX,
            expireAfterSeconds=int(self.retention.total_seconds()),
        )
        try:
            await ensure_indexes(self.points, [ttl])
        except OperationFailure:
            await self.points.drop_index(POINTS_TTL_INDEX)
            await ensure_indexes(self.points, [ttl])

    # -- planning ---------------------------------------------------------------------------
    async def posts_to_plan(self, now: datetime, limit: int) -> list[Document]:
        cursor = (
            self.posts.find(
                {POST_DUE_FIELD: {"$lte": now}},
                {"outbox": 0, "params": 0, "progress": 0, "stickers": 0, "warnings": 0},
            )
            .sort(POST_DUE_FIELD, ASCENDING)
            .limit(limit)
        )
        return [doc async for doc in cursor]

    async def open(self, schedule: Document) -> bool:
        """Stores a new schedule (a repeat, by another replica or after a crash, changes
        nothing), then clears the post's mark; whether this call stored it."""
        try:
            await self.schedules.insert_one(schedule)
            stored = True
        except DuplicateKeyError:
            stored = False
        await self.posts.update_one({"_id": schedule["_id"]}, {"$unset": {POST_DUE_FIELD: ""}})
        return stored

    # -- claims -----------------------------------------------------------------------------
    async def due_ids(self, now: datetime, limit: int) -> list[str]:
        cursor = (
            self.schedules.find(
                {"state": COLLECTING, "dueAt": {"$lte": now}, "leaseUntil": {"$lte": now}},
                {"_id": 1},
            )
            .sort("dueAt", ASCENDING)
            .limit(limit)
        )
        return [doc["_id"] async for doc in cursor]

    async def claim(
        self, record_id: str, holder: str, now: datetime, until: datetime, *, due: bool = True
    ) -> Document | None:
        """Leases one schedule (its due point, or with `due=False` any state, for a refresh);
        None when another replica or a refresh holds it."""
        query: Document = {"_id": record_id, "leaseUntil": {"$lte": now}}
        if due:
            query.update({"state": COLLECTING, "dueAt": {"$lte": now}})
        doc: Document | None = await self.schedules.find_one_and_update(
            query,
            {"$set": {"leaseOwner": holder, "leaseUntil": until}},
            projection={"outbox": 0},
            return_document=ReturnDocument.AFTER,
        )
        return doc

    async def next_due_at(self, now: datetime) -> datetime | None:
        doc = await self.schedules.find_one(
            {"state": COLLECTING, "dueAt": {"$gt": now}}, {"dueAt": 1}, sort=[("dueAt", ASCENDING)]
        )
        return None if doc is None else doc["dueAt"]

    async def release(self, record_id: str, holder: str, fields: Mapping[str, Any]) -> bool:
        """Gives the lease back with `fields` (the next due time, the error, a stop)."""
        result = await self.schedules.update_one(
            {"_id": record_id, "leaseOwner": holder},
            {"$set": {**fields, "leaseUntil": NEVER}},
        )
        return result.matched_count == 1

    # -- points -----------------------------------------------------------------------------
    async def record(
        self,
        schedule: Document,
        holder: str,
        point_id: str,
        collected_at: datetime,
        metrics: Mapping[str, int],
        *,
        fields: Mapping[str, Any],
        event: Event | None,
        followers: int | None = None,
    ) -> bool:
        """Stores one point once: the raw point (its id is the point's), what it added to its
        account's day, then the schedule (latest figures, the next point, the lease given back,
        the event) guarded by this attempt's lease. Whether the schedule took it."""
        with contextlib.suppress(DuplicateKeyError):
            await self.points.insert_one(
                {
                    "_id": point_id,
                    "postId": schedule["_id"],
                    "organizationId": schedule["organizationId"],
                    "collectedAt": collected_at,
                    "metrics": dict(metrics),
                }
            )
        previous = (schedule.get("latest") or {}).get("metrics") or {}
        gained = {k: v - int(previous.get(k, 0)) for k, v in metrics.items()}
        await self.add_to_day(
            schedule["organizationId"],
            schedule["account"]["socialAccountId"],
            day_key(collected_at),
            point_id,
            {k: v for k, v in gained.items() if v > 0},
            followers,
        )
        update: Document = {
            "$set": {
                "latest": {"collectedAt": collected_at, "metrics": dict(metrics)},
                "leaseUntil": NEVER,
                **fields,
            }
        }
        if event is not None:
            update = with_event(update, event)
        result = await self.schedules.update_one(
            {"_id": schedule["_id"], "leaseOwner": holder}, update
        )
        if result.matched_count and event is not None:
            self.wake_relay()
        return result.matched_count == 1

    async def add_to_day(
        self,
        organization_id: str,
        social_account_id: str,
        day: str,
        point_id: str,
        gained: Mapping[str, int],
        followers: int | None,
    ) -> None:
        """Adds what a point gained to its account's day, once per point (the day lists the
        points it counted; a repeat matches nothing and its upsert hits the unique _id)."""
        update: Document = {
            "$setOnInsert": {
                "organizationId": organization_id,
                "socialAccountId": social_account_id,
                "day": day,
            },
            "$addToSet": {"points": point_id},
        }
        if gained:
            update["$inc"] = {f"metrics.{k}": v for k, v in gained.items()}
        if followers is not None:
            update["$max"] = {"metrics.followers": followers}
        with contextlib.suppress(DuplicateKeyError):
            await self.daily.update_one(
                {
                    "_id": daily_id(organization_id, social_account_id, day),
                    "points": {"$ne": point_id},
                },
                update,
                upsert=True,
            )

    async def has_followers(self, organization_id: str, social_account_id: str, day: str) -> bool:
        doc = await self.daily.find_one(
            {"_id": daily_id(organization_id, social_account_id, day)}, {"metrics.followers": 1}
        )
        return doc is not None and "followers" in (doc.get("metrics") or {})

    # -- reads ------------------------------------------------------------------------------
    async def get(self, record_id: str) -> Document | None:
        doc: Document | None = await self.schedules.find_one({"_id": record_id}, {"outbox": 0})
        return doc

    async def post_status(self, record_id: str) -> str | None:
        doc = await self.posts.find_one({"_id": record_id}, {"status": 1})
        return None if doc is None else str(doc["status"])

    async def history(self, schedule: Document, limit: int = HISTORY_LIMIT) -> list[Document]:
        """The newest `limit` points the schedule has taken, oldest first. A point is stored
        before its schedule takes it (`record`): one newer than the schedule's `latest` is
        still being recorded (or lost its lease) and is not shown, so the history and the
        latest figures always agree."""
        latest = (schedule.get("latest") or {}).get("collectedAt")
        if latest is None:
            return []
        query = {"postId": schedule["_id"], "collectedAt": {"$lte": latest}}
        cursor = (
            self.points.find(query, {"collectedAt": 1, "metrics": 1})
            .sort("collectedAt", -1)
            .limit(limit)
        )
        return [doc async for doc in cursor][::-1]

    async def days(
        self, organization_id: str, social_account_id: str, first: date, last: date
    ) -> list[Document]:
        cursor = self.daily.find(
            {
                "organizationId": organization_id,
                "socialAccountId": social_account_id,
                "day": {"$gte": first.isoformat(), "$lte": last.isoformat()},
            },
            {"day": 1, "metrics": 1},
        ).sort("day", ASCENDING)
        return [doc async for doc in cursor]
