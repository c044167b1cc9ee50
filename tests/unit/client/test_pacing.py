"""The SDK's pacing from the rate-limit headers: the rule on a clock the test moves, then both
clients against a local token bucket (the edge's GCRA) that they must never overrun."""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from storypost_client import AsyncStorypostClient, RateLimitedError, StorypostClient
from storypost_client.pacing import NO_PACING, Pacer, RateLimit
from storypost_client.retry import NO_RETRY
from tests.unit.client.support import Reply, Seen, scripted

TOKEN = "sp_test-token"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def headers(limit: int, remaining: int, reset: float) -> dict[str, str]:
    return {
        "ratelimit-limit": str(limit),
        "ratelimit-remaining": str(remaining),
        "ratelimit-reset": str(reset),
    }


def test_headers_are_read_and_bad_ones_ignored() -> None:
    assert RateLimit.from_headers(headers(60, 3, 57)) == RateLimit(60, 3, 57.0)
    assert RateLimit.from_headers({}) is None
    assert RateLimit.from_headers(headers(60, 61, 0)) is None
    assert RateLimit.from_headers({**headers(60, 1, 1), "ratelimit-reset": "soon"}) is None


def test_the_refill_interval_is_the_period_or_slower_as_reset_says() -> None:
    assert RateLimit(60, 0, 60).refill_interval(60) == 1.0
    assert RateLimit(60, 59, 1).refill_interval(60) == 1.0
    assert RateLimit(60, 60, 0).refill_interval(60) == 1.0
    # 30 missing tokens back in 61 s: slower than the minute's rate.
    assert RateLimit(60, 30, 61).refill_interval(60) == 2.0
    # A reset rounded up to whole seconds is not read as a slower refill.
    assert RateLimit(4, 3, 1).refill_interval(2) == 0.5


def test_nothing_waits_before_an_answer_told_the_bucket() -> None:
    pacer = Pacer(clock=Clock())
    assert [pacer.reserve().wait for _ in range(100)] == [0.0] * 100


def test_calls_wait_for_the_next_token_once_the_bucket_is_empty() -> None:
    clock = Clock()
    pacer = Pacer(clock=clock)
    pacer.settle(pacer.reserve(), headers(60, 2, 58))
    waits = [pacer.reserve().wait for _ in range(5)]
    # Two tokens left, one kept in hand (MARGIN_TOKENS), then one a second.
    assert waits == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_tokens_refill_with_time() -> None:
    clock = Clock()
    pacer = Pacer(clock=clock)
    pacer.settle(pacer.reserve(), headers(60, 0, 60))
    clock.now += 2.5
    # 2.5 tokens back, one of them kept in hand.
    assert [pacer.reserve().wait for _ in range(3)] == [
        0.0,
        pytest.approx(0.5),
        pytest.approx(1.5),
    ]


def test_calls_not_yet_answered_count_as_spent() -> None:
    clock = Clock()
    pacer = Pacer(clock=clock)
    pacer.settle(pacer.reserve(), headers(60, 60, 0))
    open_slots = [pacer.reserve() for _ in range(3)]
    # The first answer back says 3 left; the two others may not be counted in it yet, and one
    # token is kept in hand.
    pacer.settle(open_slots[0], headers(60, 3, 57))
    assert [pacer.reserve().wait for _ in range(2)] == [1.0, 2.0]


def test_an_older_answer_does_not_overwrite_a_newer_one() -> None:
    clock = Clock()
    pacer = Pacer(clock=clock)
    first, second = pacer.reserve(), pacer.reserve()
    pacer.settle(second, headers(60, 0, 60))
    pacer.settle(first, headers(60, 1, 59))  # sent earlier: it tells an older state
    # As the newer answer left it: none left, less `first` (open when that answer came) and
    # the token kept in hand.
    assert pacer.reserve().wait == 3.0


def test_answers_without_headers_change_nothing() -> None:
    clock = Clock()
    pacer = Pacer(clock=clock)
    pacer.settle(pacer.reserve(), headers(60, 0, 60))
    pacer.settle(pacer.reserve(), None)  # no answer (a connection failure)
    pacer.settle(pacer.reserve(), {})  # a 401 carries no rate-limit headers
    assert pacer.reserve().wait == pytest.approx(4.0)


def test_no_pacing_never_waits() -> None:
    NO_PACING.settle(NO_PACING.reserve(), headers(60, 0, 60))
    assert NO_PACING.reserve().wait == 0.0


class Bucket:
    """The edge's bucket (account-svc's GCRA), `limit` calls a `period`, whole-second resets;
    counts the 429s it answers."""

    def __init__(self, limit: int, period: float) -> None:
        self.limit, self.interval = limit, period / limit
        self.tat = 0.0
        self.refused = 0
        self.allowed = 0
        self._lock = threading.Lock()

    def __call__(self, seen: Seen) -> Reply:
        with self._lock:
            now = time.monotonic()
            allowed = self.tat <= now + (self.limit - 1) * self.interval
            if allowed:
                self.tat = max(self.tat, now) + self.interval
                self.allowed += 1
            else:
                self.refused += 1
            backlog = max(0.0, self.tat - now)
            remaining = max(0, math.floor((self.limit * self.interval - backlog) / self.interval))
            rate = headers(self.limit, remaining, math.ceil(backlog))
        if not allowed:
            return Reply(429, {"errorMessage": "rate limit exceeded"}, {**rate, "Retry-After": "1"})
        return Reply(200, {"uuid": "c02eacbc-e1df-4fd9-a77a-6638dff92f2b"}, rate)


# 4 calls a 2 s: the 16 calls below take the 6 s the bucket allows (4 at once, 12 at 0.5 s).
LIMIT, PERIOD, CALLS = 4, 2.0, 16
LEAST_SECONDS = (CALLS - LIMIT) * PERIOD / LIMIT


def test_threads_sharing_a_sync_client_meet_no_429() -> None:
    bucket = Bucket(LIMIT, PERIOD)
    with scripted(bucket) as server:
        client = StorypostClient(server.base_url, TOKEN, pacer=Pacer(period=PERIOD))
        with client, ThreadPoolExecutor(max_workers=4) as pool:
            client.generate_uuid()  # the first answer tells the bucket
            started = time.monotonic()
            list(pool.map(lambda _: client.generate_uuid(), range(CALLS - 1)))
            took = time.monotonic() - started
    assert bucket.refused == 0
    assert LEAST_SECONDS - 1 <= took <= LEAST_SECONDS + 2.5


async def test_tasks_sharing_an_async_client_meet_no_429() -> None:
    bucket = Bucket(LIMIT, PERIOD)
    with scripted(bucket) as server:
        async with AsyncStorypostClient(
            server.base_url, TOKEN, pacer=Pacer(period=PERIOD)
        ) as client:
            await client.generate_uuid()
            started = time.monotonic()
            await asyncio.gather(*(client.generate_uuid() for _ in range(CALLS - 1)))
            took = time.monotonic() - started
    assert bucket.refused == 0
    assert LEAST_SECONDS - 1 <= took <= LEAST_SECONDS + 2.5


def test_without_pacing_the_same_calls_meet_429s() -> None:
    """The bucket above does refuse what overruns it: the check of the two tests is real."""
    bucket = Bucket(LIMIT, PERIOD)
    with scripted(bucket) as server:
        client = StorypostClient(server.base_url, TOKEN, pacer=NO_PACING, retry=NO_RETRY)

        def call(_: int) -> None:
            with contextlib.suppress(RateLimitedError):
                client.generate_uuid()

        with client, ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(call, range(CALLS)))
    assert bucket.refused > 0
