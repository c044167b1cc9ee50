"""The edge's rate-limit gate: one request per take below LEASE_MIN_LIMIT (exactly as before),
a few taken ahead for a busy organization with a large limit, never more admitted than the
shared bucket gave, and the 429 of an empty bucket exactly as account-svc answers it."""

from __future__ import annotations

import math
from typing import Any

import pytest

from edge.errors import ApiError
from edge.rate_limit import LEASE_MIN_LIMIT, LEASE_SECONDS, LEASE_SHARE, MAX_LEASE, RateLimitGate
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime.errors import Unavailable
from tests.support.rpc import rpc_error

ORG = "org-1"


class SharedBucket:
    """account-svc's bucket as the gates see it: `count` requests taken all or none, no refill
    (the tests hold the clock), shared by every gate (replica) given it."""

    def __init__(self, limit: int, *, knows_count: bool = True) -> None:
        self.limit = limit
        self.left = limit
        self.knows_count = knows_count
        self.counts: list[int] = []
        self.down = False

    def ConsumeRateLimit(self, request: pb.ConsumeRateLimitRequest, **_: Any) -> Any:
        if self.down:
            raise rpc_error(Unavailable("account-svc is down"))
        count = max(1, request.count) if self.knows_count else 1
        self.counts.append(count)
        allowed = count <= self.left
        if allowed:
            self.left -= count
        return pb.ConsumeRateLimitResponse(
            allowed=allowed,
            limit=self.limit,
            remaining=self.left,
            retry_after_seconds=0 if allowed else 1,
            reset_seconds=math.ceil((self.limit - self.left) * 60 / self.limit),
            taken=count if allowed and self.knows_count else 0,
        )


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def gate(bucket: SharedBucket, clock: Clock | None = None) -> RateLimitGate:
    return RateLimitGate(bucket, timer=clock or Clock())  # type: ignore[arg-type]


def remaining(headers: dict[str, str]) -> int:
    return int(headers["RateLimit-Remaining"])


def test_a_small_limit_is_one_take_per_request_with_the_buckets_own_headers() -> None:
    bucket = SharedBucket(60)
    limiter = gate(bucket)
    answers = [limiter.consume(ORG) for _ in range(60)]
    assert bucket.counts == [1] * 60
    assert [remaining(h) for h in answers[:3]] == [59, 58, 57]
    assert answers[0] == {
        "RateLimit-Limit": "60",
        "RateLimit-Remaining": "59",
        "RateLimit-Reset": "1",
    }
    with pytest.raises(ApiError) as refused:
        limiter.consume(ORG)
    assert refused.value.status == 429
    assert refused.value.body == {
        "errorMessage": "rate limit exceeded: 60 requests per minute; retry after 1 s",
        "errorCode": "RATE_LIMITED",
    }
    assert refused.value.headers == {
        "RateLimit-Limit": "60",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": "60",
        "Retry-After": "1",
    }


def test_a_busy_organization_takes_ahead_and_reports_what_it_holds_as_remaining() -> None:
    bucket = SharedBucket(100_000)
    limiter = gate(bucket)
    answers = [limiter.consume(ORG) for _ in range(2_000)]
    # Doubling takes up to MAX_LEASE: a few dozen calls for 2,000 requests.
    assert bucket.counts[:4] == [1, 2, 4, 8]
    assert max(bucket.counts) == MAX_LEASE
    assert len(bucket.counts) < 2_000 / MAX_LEASE * 1.5
    held = sum(bucket.counts) - 2_000
    assert 0 <= held <= 2 * MAX_LEASE
    # Each answer counts down by one, as one take per request would have.
    assert [remaining(h) for h in answers] == list(range(99_999, 99_999 - 2_000, -1))
    assert remaining(answers[-1]) == bucket.left + held


def test_a_quiet_second_makes_the_next_take_one_request_again() -> None:
    bucket, clock = SharedBucket(100_000), Clock()
    limiter = gate(bucket, clock)
    for _ in range(20):
        limiter.consume(ORG)
    taken_before = len(bucket.counts)
    clock.now += LEASE_SECONDS
    headers = limiter.consume(ORG)
    # What was held lapsed (the bucket keeps it taken); the take is of one request.
    assert bucket.counts[taken_before:] == [1]
    assert remaining(headers) == bucket.left


def test_a_limit_below_the_lease_minimum_never_takes_ahead() -> None:
    bucket = SharedBucket(LEASE_MIN_LIMIT - 1)
    limiter = gate(bucket)
    for _ in range(100):
        limiter.consume(ORG)
    assert bucket.counts == [1] * 100


def test_replicas_sharing_a_bucket_admit_exactly_its_size_then_429() -> None:
    bucket = SharedBucket(1_000)
    replicas = [gate(bucket), gate(bucket)]
    admitted = 0
    refusals = 0
    for turn in range(1_500):
        try:
            replicas[turn % 2].consume(ORG)
            admitted += 1
        except ApiError as error:
            assert error.status == 429
            refusals += 1
    # Takes near the empty bucket are of one request (at most 1/LEASE_SHARE of what is
    # left), so the only requests lost are those a replica held when the other emptied it.
    assert bucket.left == 0
    assert admitted <= 1_000
    assert admitted >= 1_000 - 2 * 1_000 // LEASE_SHARE
    assert refusals == 1_500 - admitted


def test_a_take_refused_for_lack_of_room_for_all_asks_again_for_one() -> None:
    bucket = SharedBucket(1_000)
    limiter = gate(bucket)
    limiter.consume(ORG)
    bucket.left = 1  # another replica spent the rest
    headers = limiter.consume(ORG)
    assert bucket.counts == [1, 2, 1]
    assert remaining(headers) == 0
    with pytest.raises(ApiError) as refused:
        limiter.consume(ORG)
    assert refused.value.status == 429
    assert refused.value.headers["RateLimit-Remaining"] == "0"


def test_what_a_replica_holds_is_admitted_then_the_empty_bucket_answers_429() -> None:
    bucket = SharedBucket(1_000)
    limiter = gate(bucket)
    for _ in range(10):
        limiter.consume(ORG)
    held = sum(bucket.counts) - 10
    bucket.left = 1  # another replica spent the rest
    admitted = 0
    with pytest.raises(ApiError) as refused:
        for _ in range(100):
            limiter.consume(ORG)
            admitted += 1
    assert refused.value.status == 429
    assert admitted == held + 1
    assert bucket.left == 0


def test_an_account_svc_without_count_is_asked_once_per_request() -> None:
    bucket = SharedBucket(100_000, knows_count=False)
    limiter = gate(bucket)
    answers = [limiter.consume(ORG) for _ in range(50)]
    assert len(bucket.counts) == 50
    assert [remaining(h) for h in answers] == list(range(99_999, 99_949, -1))


def test_account_svc_down_is_503_and_a_failed_take_ahead_fails_no_request() -> None:
    bucket = SharedBucket(100_000)
    limiter = gate(bucket)
    for _ in range(3):
        limiter.consume(ORG)
    bucket.down = True
    # Held requests are still admitted (the take ahead that failed costs nothing) ...
    held = 0
    with pytest.raises(ApiError) as unavailable:
        while True:
            limiter.consume(ORG)
            held += 1
    assert held >= 1
    # ... then a request that must take answers 503.
    assert unavailable.value.status == 503
    assert unavailable.value.headers == {"Retry-After": "2"}
    bucket.down = False
    assert remaining(limiter.consume(ORG)) == bucket.left


def test_organizations_have_their_own_leases() -> None:
    bucket = SharedBucket(100_000)
    limiter = gate(bucket)
    for _ in range(10):
        limiter.consume(ORG)
    before = len(bucket.counts)
    limiter.consume("org-2")
    assert bucket.counts[before:] == [1]


def test_a_take_ahead_that_breaks_fails_no_admitted_request() -> None:
    bucket = SharedBucket(100_000)
    limiter = gate(bucket)
    limiter.consume(ORG)
    limiter.consume(ORG)  # took 2: one held

    def broken(request: pb.ConsumeRateLimitRequest, **_: Any) -> Any:
        raise RuntimeError("a bug")

    bucket.ConsumeRateLimit = broken  # type: ignore[method-assign]
    # Spends the held request, then its take ahead breaks: logged, the request admitted.
    assert remaining(limiter.consume(ORG)) == 99_997
