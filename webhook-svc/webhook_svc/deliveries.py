"""Delivery records: one per event and URL, their retry schedule and lease in MongoDB, the log.

A pending delivery carries `dueAt`: when its next attempt may start. Claiming it moves
`dueAt` to the end of a lease and sets `leaseId` in one atomic update, so replicas never run
the same attempt twice, and a replica that dies mid-attempt loses the claim when the lease
runs out. Finished deliveries have no `dueAt`, so the due scan never reads them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError

from storypost_runtime.backoff import RetrySchedule
from storypost_runtime.component import component
from storypost_runtime.documents import from_document
from storypost_runtime.errors import FailedPrecondition, NotFound
from storypost_runtime.mongo import Document

# Namespace of delivery ids: uuid5(namespace, "<eventId>/<webhookId>").
_DELIVERY_NAMESPACE = uuid.UUID("6f1d7a52-3c1e-4b8e-9a51-0c9f0e4c2d17")
DUPLICATE_KEY = 11000
# The backlog gauge's label of deliveries due and not claimed (storypost_runtime.backlog).
DELIVERIES_DUE = "webhook_deliveries_due"
MAX_LIST = 200
DEFAULT_LIST = 50


def delivery_uuid(event_id: str, webhook_id: str) -> str:
    """The X-Service-Delivery id of an event for a URL: the same however often the bus hands
    the event out, so a redelivered message can never make a second delivery."""
    return str(uuid.uuid5(_DELIVERY_NAMESPACE, f"{event_id}/{webhook_id}"))


class Status(StrEnum):
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class AttemptResult:
    """What one HTTP attempt came to."""

    ok: bool
    # HTTP status; 0 when no answer came.
    status_code: int
    latency_ms: int
    # Empty on success.
    error: str
    started_at: datetime


@dataclass(frozen=True)
class DeliveryFacts:
    """What a delivery is made of: the event, where it goes and the body it carries."""

    delivery_id: str
    organization_id: str
    webhook_id: str
    event_id: str
    event: str
    url: str
    body: str
    occurred_at: datetime
    test: bool = False
    # The trace of the event's consumption (W3C traceparent), when it was traced: retries
    # join it. Absent from records stored before traces.
    traceparent: str | None = None


@dataclass(frozen=True, kw_only=True)
class Delivery(DeliveryFacts):
    """A stored delivery: its facts and where its attempts stand."""

    created_at: datetime
    status: Status
    attempts: int
    # Failed attempts since the schedule (re)started: picks the next wait.
    retry_step: int
    due_at: datetime | None
    lease_id: str | None
    last_response_code: int
    last_latency_ms: int
    last_error: str
    last_attempt_at: datetime | None

    @classmethod
    def from_doc(cls, doc: Document) -> Delivery:
        return from_document(
            cls,
            doc,
            delivery_id=doc["_id"],
            test=bool(doc.get("test")),
            status=Status(doc["status"]),
            attempts=int(doc.get("attempts", 0)),
            retry_step=int(doc.get("retryStep", 0)),
            due_at=doc.get("dueAt"),
            lease_id=doc.get("leaseId"),
            last_response_code=int(doc.get("lastResponseCode", 0)),
            last_latency_ms=int(doc.get("lastLatencyMs", 0)),
            last_error=doc.get("lastError", ""),
            last_attempt_at=doc.get("lastAttemptAt"),
        )


@dataclass(frozen=True)
class NewDelivery(DeliveryFacts):
    """A delivery before it is stored."""

    def document(self, now: datetime, retention: timedelta) -> Document:
        """The pending record, due at once (callers add an attempt's outcome or a lease)."""
        doc: Document = {
            "_id": self.delivery_id,
            "organizationId": self.organization_id,
            "webhookId": self.webhook_id,
            "eventId": self.event_id,
            "event": self.event,
            "url": self.url,
            "body": self.body,
            "test": self.test,
            "occurredAt": self.occurred_at,
            "createdAt": now,
            "updatedAt": now,
            "status": Status.PENDING.value,
            "attempts": 0,
            "retryStep": 0,
            "dueAt": now,
            "expireAt": now + retention,
        }
        if self.traceparent:
            doc["traceparent"] = self.traceparent
        return doc


@dataclass(frozen=True)
class Outcome:
    """The change an attempt makes to its record."""

    set: dict[str, Any]
    unset: tuple[str, ...]

    def update(self) -> dict[str, Any]:
        change: dict[str, Any] = {"$set": self.set}
        if self.unset:
            change["$unset"] = dict.fromkeys(self.unset, "")
        return change

    def apply(self, doc: Document) -> Document:
        """The record with the outcome applied (for inserting a fresh one in one write)."""
        merged = {**doc, **self.set}
        for key in self.unset:
            merged.pop(key, None)
        return merged


def outcome(
    result: AttemptResult,
    *,
    attempts: int,
    retry_step: int,
    test: bool,
    schedule: RetrySchedule,
    now: datetime,
) -> Outcome:
    """Success ends the delivery; a failure schedules the next attempt, or fails it when the
    schedule has run out. Test deliveries get one attempt (send another test to retry)."""
    fields: dict[str, Any] = {
        "attempts": attempts + 1,
        "lastAttemptAt": result.started_at,
        "lastResponseCode": result.status_code,
        "lastLatencyMs": result.latency_ms,
        "lastError": result.error,
        "updatedAt": now,
    }
    if result.ok:
        fields |= {"status": Status.SUCCEEDED.value, "retryStep": 0}
        return Outcome(fields, ("dueAt", "leaseId"))
    failures = retry_step + 1
    fields["retryStep"] = failures
    due = None if test else schedule.next_attempt(failures, now)
    if due is None:
        fields["status"] = Status.FAILED.value
        return Outcome(fields, ("dueAt", "leaseId"))
    fields |= {"status": Status.PENDING.value, "dueAt": due}
    return Outcome(fields, ("leaseId",))


@component
class DeliveryStore:
    """Reads and writes delivery records; every query the API makes is organization-scoped."""

    collection: AsyncCollection[Document]
    retention: timedelta

    async def existing_ids(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        cursor = self.collection.find({"_id": {"$in": list(ids)}}, {"_id": 1})
        return {doc["_id"] async for doc in cursor}

    async def insert_new(self, docs: Sequence[Document]) -> int:
        """Stores records; one that exists already (a racing replica) is left as it is."""
        if not docs:
            return 0
        try:
            result = await self.collection.insert_many(list(docs), ordered=False)
        except BulkWriteError as error:
            others = [e for e in error.details.get("writeErrors", []) if e["code"] != DUPLICATE_KEY]
            if others:
                raise
            return int(error.details.get("nInserted", 0))
        return len(result.inserted_ids)

    async def claim_batch(
        self,
        now: datetime,
        lease_until: datetime,
        lease_id: str,
        *,
        room: Callable[[str], int],
        limit: int,
        skip_webhooks: Sequence[str] = (),
    ) -> list[Delivery]:
        """Takes up to `limit` due deliveries under one lease, at most `room(webhook_id)` of
        each URL: a read of candidates, one update that claims them, a read of what it claimed.
        The update matches only records still due, so a record another replica claimed or
        finished meanwhile stays with it: each record has at most one live lease."""
        query: Document = {"dueAt": {"$lte": now}, "status": Status.PENDING.value}
        wanted = dict(query)
        if skip_webhooks:
            wanted["webhookId"] = {"$nin": list(skip_webhooks)}
        candidates = (
            self.collection.find(wanted, {"_id": 1, "webhookId": 1})
            .sort("dueAt", ASCENDING)
            .limit(limit)
        )
        left: dict[str, int] = {}
        picked: list[str] = []
        async for doc in candidates:
            webhook_id = doc["webhookId"]
            if webhook_id not in left:
                left[webhook_id] = room(webhook_id)
            if left[webhook_id] > 0:
                left[webhook_id] -= 1
                picked.append(doc["_id"])
        if not picked:
            return []
        await self.collection.update_many(
            {"_id": {"$in": picked}, **query},
            {"$set": {"dueAt": lease_until, "leaseId": lease_id}},
        )
        claimed = self.collection.find({"_id": {"$in": picked}, "leaseId": lease_id})
        return [Delivery.from_doc(doc) async for doc in claimed]

    async def release(self, delivery_ids: Sequence[str], lease_id: str, due: datetime) -> None:
        """Gives claims under one lease back unattempted, due then (no capacity after all)."""
        await self.collection.update_many(
            {"_id": {"$in": list(delivery_ids)}, "leaseId": lease_id},
            {"$set": {"dueAt": due}, "$unset": {"leaseId": ""}},
        )

    async def finish_many(self, changes: Sequence[tuple[str, str, Outcome]]) -> int:
        """Writes attempts' outcomes (delivery id, lease id, outcome) in one bulk write, each
        unless its lease was lost meanwhile; answers how many found their lease."""
        if not changes:
            return 0
        result = await self.collection.bulk_write(
            [
                UpdateOne({"_id": delivery_id, "leaseId": lease_id}, change.update())
                for delivery_id, lease_id, change in changes
            ],
            ordered=False,
        )
        return result.matched_count

    async def get(self, organization_id: str, delivery_id: str) -> Delivery:
        doc = await self.collection.find_one(
            {"_id": delivery_id, "organizationId": organization_id}
        )
        if doc is None:
            raise NotFound(f"delivery {delivery_id} not found")
        return Delivery.from_doc(doc)

    async def list(
        self, organization_id: str, limit: int, webhook_id: str | None = None
    ) -> list[Delivery]:
        limit = DEFAULT_LIST if limit <= 0 else min(limit, MAX_LIST)
        query: Document = {"organizationId": organization_id}
        if webhook_id:
            query["webhookId"] = webhook_id
        cursor = (
            self.collection.find(query)
            .sort([("createdAt", DESCENDING), ("_id", DESCENDING)])
            .limit(limit)
        )
        return [Delivery.from_doc(doc) async for doc in cursor]

    async def redeliver(self, organization_id: str, delivery_id: str, now: datetime) -> Delivery:
        """Due at once with a fresh schedule; refused while an attempt of it is running."""
        # Not while a live lease holds it; an expired lease (its holder died) does not count.
        doc = await self.collection.find_one_and_update(
            {
                "_id": delivery_id,
                "organizationId": organization_id,
                "$or": [{"leaseId": None}, {"dueAt": {"$lte": now}}],
            },
            {
                "$set": {
                    "status": Status.PENDING.value,
                    "dueAt": now,
                    "retryStep": 0,
                    "updatedAt": now,
                    "expireAt": now + self.retention,
                },
                "$unset": {"leaseId": ""},
            },
            return_document=ReturnDocument.AFTER,
        )
        if doc is not None:
            return Delivery.from_doc(doc)
        await self.get(organization_id, delivery_id)
        raise FailedPrecondition(
            f"delivery {delivery_id} is being attempted right now; try again when it ends"
        )
