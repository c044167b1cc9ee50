"""The per-organization token bucket, kept in MongoDB so every edge replica shares it.

It is the GCRA form of a token bucket: one number per organization, the theoretical arrival
time (TAT). A bucket of B requests refilled one every T seconds allows a request at time t
when max(TAT, t) + T - t <= B*T, i.e. TAT <= t + (B-1)*T; allowing moves TAT to
max(TAT, t) + T. The check and the move are one conditional update; a refused request
causes a duplicate-key error on the upsert (the record exists but does not match).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    limit: int
    remaining: int
    retry_after_seconds: int
    reset_seconds: int


class RateLimiter:
    def __init__(self, records: AccountCollections, clock: Clock, per_minute: int) -> None:
        self._buckets = records.rate_buckets
        self._clock = clock
        self._size = per_minute
        self._interval = 60.0 / per_minute

    def _decision(self, allowed: bool, tat: float, now: float) -> RateDecision:
        capacity_time = self._size * self._interval
        backlog = max(0.0, tat - now)  # seconds of refill the bucket is short of full
        remaining = max(0, math.floor((capacity_time - backlog) / self._interval + 1e-9))
        retry_after = 0 if allowed else max(1, math.ceil(backlog + self._interval - capacity_time))
        return RateDecision(allowed, self._size, remaining, retry_after, math.ceil(backlog))

    async def consume(self, organization_id: str) -> RateDecision:
        now = self._clock.now().timestamp()
        interval = self._interval
        try:
            doc = await self._buckets.find_one_and_update(
                {"_id": organization_id, "tat": {"$lte": now + (self._size - 1) * interval}},
                [
                    {
                        "$set": {
                            "tat": {"$add": [{"$max": [{"$ifNull": ["$tat", now]}, now]}, interval]}
                        }
                    }
                ],
                upsert=True,
                return_document=ReturnDocument.AFTER,
            )
        except DuplicateKeyError:
            current = await self._buckets.find_one({"_id": organization_id})
            tat = float(current["tat"]) if current else now
            return self._decision(False, tat, now)
        assert doc is not None
        return self._decision(True, float(doc["tat"]), now)
