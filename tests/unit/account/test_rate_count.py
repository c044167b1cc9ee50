"""ConsumeRateLimit's `count` (the edge takes a few requests ahead for a busy organization):
all of them or none, the bucket's remaining after them, one when not given."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from account_svc.identity.ratelimit import MongoBuckets, RateLimiter
from account_svc.records import AccountCollections
from storypost_runtime.clock import FrozenClock


async def test_a_count_is_taken_all_or_none(records: AccountCollections) -> None:
    clock = FrozenClock(datetime(2026, 1, 1, tzinfo=UTC))
    limiter = RateLimiter(store=MongoBuckets(records), clock=clock, per_minute=60)
    org = f"org-{uuid.uuid4().hex}"
    one = await limiter.consume(org)
    assert (one.allowed, one.taken, one.remaining) == (True, 1, 59)
    many = await limiter.consume(org, 50)
    assert (many.allowed, many.taken, many.remaining) == (True, 50, 9)
    # Not room for 10: none taken, the bucket as it was; one still fits.
    refused = await limiter.consume(org, 10)
    assert (refused.allowed, refused.taken, refused.remaining) == (False, 0, 9)
    assert (await limiter.consume(org, 9)).remaining == 0
    assert not (await limiter.consume(org)).allowed
    # Refilled one a second, as before.
    clock.advance(timedelta(seconds=5))
    assert (await limiter.consume(org, 5)).allowed
    assert not (await limiter.consume(org)).allowed
