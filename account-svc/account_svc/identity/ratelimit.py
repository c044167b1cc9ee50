"""The per-organization token bucket, in a store every account-svc replica shares.

It is the GCRA form of a token bucket: one number per organization, the theoretical arrival
time (TAT). A bucket of B requests refilled one every T seconds allows a request at time t
when max(TAT, t) + T - t <= B*T, i.e. TAT <= t + (B-1)*T; allowing moves TAT to
max(TAT, t) + T. The check and the move are one conditional write in the store:
`MongoBuckets` here (a conditional upsert; a refused request causes a duplicate-key error
because the record exists but does not match) or `KvBuckets` in rate_buckets_kv.py (a
compare-and-set on a NATS key-value bucket, the default: one JetStream write per request
instead of a database write; MongoDB takes over while NATS cannot be reached).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol

from pymongo import ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.mongo import Document


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    limit: int
    remaining: int
    retry_after_seconds: int
    reset_seconds: int
    # Requests taken: the count asked for when allowed, none when not.
    taken: int = 1


@dataclass(frozen=True)
class Take:
    """One request against a bucket: the time now, the refill interval, the latest TAT allowed."""

    now: float
    interval: float
    latest_tat: float

    def next_tat(self, tat: float | None) -> float:
        return max(self.now if tat is None else tat, self.now) + self.interval


class BucketStore(Protocol):
    async def take(self, key: str, request: Take) -> tuple[bool, float]:
        """Moves the bucket to `request.next_tat(TAT)` if TAT <= `request.latest_tat`.

        Returns whether it moved and the TAT after (the current one when refused).
        """
        ...


async def take_in_document(
    collection: AsyncCollection[Document],
    key: str,
    request: Take,
    also: Mapping[str, Any] | None = None,
) -> tuple[bool, float]:
    """`BucketStore.take` on a document `{_id: key, tat}` of `collection`: one conditional
    upsert, which also sets the fields of `also` when it moves the bucket."""
    now = request.now
    try:
        doc = await collection.find_one_and_update(
            {"_id": key, "tat": {"$lte": request.latest_tat}},
            [
                {
                    "$set": {
                        "tat": {
                            "$add": [
                                {"$max": [{"$ifNull": ["$tat", now]}, now]},
                                request.interval,
                            ]
                        },
                        **(also or {}),
                    }
                }
            ],
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )
    except DuplicateKeyError:
        current = await collection.find_one({"_id": key})
        return False, float(current["tat"]) if current else now
    assert doc is not None
    return True, float(doc["tat"])


@component
class MongoBuckets:
    """Buckets as documents `{_id: organization id, tat}`: one conditional upsert each."""

    records: AccountCollections

    async def take(self, key: str, request: Take) -> tuple[bool, float]:
        return await take_in_document(self.records.rate_buckets, key, request)


@component
class RateLimiter:
    _: KW_ONLY
    store: BucketStore
    clock: Clock
    per_minute: int
    _interval: float = field(init=False)

    def __post_init__(self) -> None:
        self._interval = 60.0 / self.per_minute

    def _decision(self, allowed: bool, tat: float, now: float, count: int = 1) -> RateDecision:
        capacity_time = self.per_minute * self._interval
        backlog = max(0.0, tat - now)  # seconds of refill the bucket is short of full
        remaining = max(0, math.floor((capacity_time - backlog) / self._interval + 1e-9))
        retry_after = 0 if allowed else max(1, math.ceil(backlog + self._interval - capacity_time))
        return RateDecision(
            allowed,
            self.per_minute,
            remaining,
            retry_after,
            math.ceil(backlog),
            count if allowed else 0,
        )

    async def consume(self, organization_id: str, count: int = 1) -> RateDecision:
        """Takes `count` requests from the bucket, all or none (the edge takes a few ahead
        for a busy organization): the bucket must hold them all."""
        count = max(1, min(count, self.per_minute))
        now = self.clock.now().timestamp()
        request = Take(
            now, count * self._interval, now + (self.per_minute - count) * self._interval
        )
        allowed, tat = await self.store.take(organization_id, request)
        return self._decision(allowed, tat, now, count)
