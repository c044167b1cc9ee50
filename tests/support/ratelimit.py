"""One check of a rate-limit bucket store, run against each store (MongoDB, NATS key-value)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from account_svc.identity.ratelimit import BucketStore, RateLimiter
from storypost_runtime.clock import FrozenClock


async def full_bucket_then_refuses_then_refills(store: BucketStore, clock: FrozenClock) -> None:
    """60 per minute: a full bucket of 60, then a refusal, one back per second, full again."""
    limiter = RateLimiter(store=store, clock=clock, per_minute=60)
    org, other = (f"org-{uuid.uuid4().hex}" for _ in range(2))
    decisions = [await limiter.consume(org) for _ in range(60)]
    assert all(d.allowed for d in decisions)
    assert [d.remaining for d in decisions[:3]] == [59, 58, 57]
    assert decisions[-1].remaining == 0
    refused = await limiter.consume(org)
    assert not refused.allowed and refused.remaining == 0
    assert refused.retry_after_seconds == 1
    # Another organization has its own bucket.
    assert (await limiter.consume(other)).allowed
    # One request per second comes back.
    clock.advance(timedelta(seconds=1))
    assert (await limiter.consume(org)).allowed
    assert not (await limiter.consume(org)).allowed
    clock.advance(timedelta(minutes=2))
    full = await limiter.consume(org)
    assert full.allowed and full.remaining == 59
