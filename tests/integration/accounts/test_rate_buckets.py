"""The rate-limit buckets on NATS key-value: the same decisions as MongoDB's, shared by
replicas, MongoDB's while NATS is down, NATS again once it is back."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from pymongo import AsyncMongoClient

from account_svc.identity.rate_buckets_kv import (
    FailoverBuckets,
    KvBuckets,
    StoreUnavailable,
    keep_kv_attached,
    kv_key,
)
from account_svc.identity.ratelimit import MongoBuckets, RateLimiter, Take
from account_svc.records import AccountCollections
from storypost_cli.stack import EmbeddedStack, StackPorts
from storypost_runtime.clock import FrozenClock
from storypost_runtime.mongo import Document
from storypost_runtime.settings import NatsSettings
from storypost_runtime.tasks import background
from tests.support.mongo import stack_mongo_url
from tests.support.ratelimit import full_bucket_then_refuses_then_refills

pytestmark = pytest.mark.integration

START = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)
BUCKET = "test_rate_limits"


@pytest.fixture(scope="module")
async def deps(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EmbeddedStack]:
    stack = EmbeddedStack(
        Path(tmp_path_factory.mktemp("rate-buckets")),
        StackPorts.free(),
        components={"mongo", "nats"},
    )
    async with stack:
        yield stack


@pytest.fixture
async def records(deps: EmbeddedStack) -> AsyncIterator[AccountCollections]:
    client: AsyncMongoClient[Document] = AsyncMongoClient(stack_mongo_url(deps.env()))
    collections = AccountCollections.of(client["rate_bucket_tests"])
    await collections.rate_buckets.delete_many({})
    yield collections
    await client.close()


async def eventually(check: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


@asynccontextmanager
async def attached(deps: EmbeddedStack) -> AsyncIterator[KvBuckets]:
    """A replica's key-value buckets, attached the way account-svc attaches them."""
    kv = KvBuckets()
    settings = NatsSettings(nats_url=deps.env()["STORYPOST_NATS_URL"])
    attach = keep_kv_attached(settings, kv, bucket=BUCKET, timeout_seconds=0.5, retry_seconds=0.2)
    async with background(attach, "test rate buckets"):
        await eventually(lambda: kv.available)
        yield kv


def fresh_org() -> str:
    return f"org-{time.monotonic_ns()}"


async def test_key_value_buckets_decide_exactly_as_mongodb_buckets(deps: EmbeddedStack) -> None:
    # The same check as the MongoDB buckets' (tests/unit/account/test_store.py).
    async with attached(deps) as kv:
        await full_bucket_then_refuses_then_refills(kv, FrozenClock(START))


async def test_replicas_share_one_bucket_and_racing_calls_take_exactly_its_size(
    deps: EmbeddedStack,
) -> None:
    async with attached(deps) as first, attached(deps) as second:
        clock = FrozenClock(START)
        replicas = [RateLimiter(store=kv, clock=clock, per_minute=30) for kv in (first, second)]
        org = fresh_org()
        # 50 calls at once on each replica, interleaved: every write after the other
        # replica's is refused once and retried, none is lost or counted twice.
        decisions = await asyncio.gather(*(replicas[n % 2].consume(org) for n in range(100)))
        assert sum(d.allowed for d in decisions) == 30
        refused = [d for d in decisions if not d.allowed]
        assert all(d.retry_after_seconds >= 1 and d.remaining == 0 for d in refused)
        # Two requests come back in 4 s (one per 2 s); a replica that last saw an older
        # bucket still refuses on the stored one.
        clock.advance(timedelta(seconds=4))
        assert (await replicas[0].consume(org)).allowed
        assert (await replicas[1].consume(org)).allowed
        assert not (await replicas[0].consume(org)).allowed
        assert not (await replicas[1].consume(org)).allowed


async def test_mongodb_counts_while_nats_is_down_and_nats_again_once_it_is_back(
    deps: EmbeddedStack, records: AccountCollections
) -> None:
    async with attached(deps) as kv:
        registry = CollectorRegistry()
        failover = FailoverBuckets(primary=kv, fallback=MongoBuckets(records), registry=registry)

        def fallbacks() -> float | None:
            return registry.get_sample_value("storypost_rate_limit_fallbacks_total")

        limiter = RateLimiter(store=failover, clock=FrozenClock(START), per_minute=60)
        org = fresh_org()
        assert (await limiter.consume(org)).allowed
        assert fallbacks() == 0
        await deps.kill("nats", signal.SIGKILL)
        try:
            timed: list[float] = []
            for _ in range(5):
                began = time.monotonic()
                assert (await limiter.consume(org)).allowed
                timed.append(time.monotonic() - began)
            # Never a hang: at most the 0.5 s request timeout before MongoDB answers.
            assert max(timed) < 2.0, timed
            assert fallbacks() == 5
            stored = await records.rate_buckets.find_one({"_id": org})
            assert stored is not None and stored["tat"] == START.timestamp() + 5
        finally:
            await deps.start_component("nats")
        await eventually(lambda: kv.available)
        assert (await limiter.consume(org)).allowed
        assert fallbacks() == 5


async def test_a_take_without_nats_says_unavailable_at_once() -> None:
    kv = KvBuckets()
    take = Take(now=0.0, interval=1.0, latest_tat=59.0)
    began = time.monotonic()
    with pytest.raises(StoreUnavailable):
        await kv.take("org-x", take)
    assert time.monotonic() - began < 0.1


def test_keys_are_organization_ids_or_a_digest_of_odd_ones() -> None:
    assert kv_key("org_1-AbC") == "org_1-AbC"
    odd = kv_key("a.b c/*")
    assert odd.startswith("sha256-") and len(odd) == 7 + 64
    assert kv_key("a.b c/*") == odd != kv_key("a.b c/>")
