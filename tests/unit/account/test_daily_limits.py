"""Daily per-platform-account limits: atomic, idempotent per post, shared across
organizations, exact at the limit (also under concurrent reservations)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from account_svc.connections.connected_accounts import AccountRef
from account_svc.connections.daily_limits import DailyLimits
from storypost_runtime.errors import InvalidArgument, NotFound
from tests.support.accounts import AccountWorld

DAY = datetime(2026, 7, 4, 9, 30, tzinfo=UTC)


def post() -> str:
    return str(uuid.uuid4())


async def test_a_retry_never_counts_twice(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "PRONET", "proposter")
    ref = AccountRef("id", account.social_account_id)
    limits = world.parts.daily_limits
    post_uuid = post()
    first = await limits.reserve(org, ref, post_uuid, DAY)
    assert (first.reserved, first.already_reserved, first.used, first.limit) == (True, False, 1, 18)
    assert first.day == "2026-07-04"
    again = await limits.reserve(org, ref, post_uuid.upper(), DAY + timedelta(hours=10))
    assert (again.reserved, again.already_reserved, again.used) == (True, True, 1)
    # Another day is another counter.
    other_day = await limits.reserve(org, ref, post(), DAY + timedelta(days=1))
    assert (other_day.day, other_day.used) == ("2026-07-05", 1)
    # A local time belongs to its UTC day.
    local = datetime(2026, 7, 5, 1, 0, tzinfo=UTC).astimezone(ZoneInfo("America/New_York"))
    assert local.day == 4
    assert (await limits.reserve(org, ref, post(), local)).day == "2026-07-05"


async def test_the_limit_is_exact_and_a_release_frees_one(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "PRONET", "busyposter")
    ref = AccountRef("id", account.social_account_id)
    limits = world.parts.daily_limits
    posts = [post() for _ in range(18)]
    for index, post_uuid in enumerate(posts, start=1):
        granted = await limits.reserve(org, ref, post_uuid, DAY)
        assert granted.reserved and granted.used == index
    refused = await limits.reserve(org, ref, post(), DAY)
    assert (refused.reserved, refused.already_reserved, refused.used) == (False, False, 18)
    # A post that holds a reservation still gets "reserved" on retry at the limit.
    assert (await limits.reserve(org, ref, posts[5], DAY)).already_reserved
    released = await limits.release(org, ref, posts[5], DAY)
    assert (released.reserved, released.used) == (False, 17)
    # Releasing twice changes nothing.
    assert (await limits.release(org, ref, posts[5], DAY)).used == 17
    late = post()
    assert (await limits.reserve(org, ref, late, DAY)).reserved
    assert not (await limits.reserve(org, ref, post(), DAY)).reserved


async def test_organizations_sharing_a_platform_account_share_its_counter(
    world: AccountWorld,
) -> None:
    org_a, org_b = await world.organization("A"), await world.organization("B")
    mine = await world.connect(org_a, "MICROBLOG", "shared")
    theirs = await world.connect(org_b, "MICROBLOG", "shared")
    assert mine.platform_account_id == theirs.platform_account_id
    limits = world.parts.daily_limits
    same_uuid = post()
    for _ in range(10):
        await limits.reserve(org_a, AccountRef("id", mine.social_account_id), post(), DAY)
    # The same post uuid in another organization is another post.
    assert (
        await limits.reserve(org_a, AccountRef("id", mine.social_account_id), same_uuid, DAY)
    ).used == 11
    b_ref = AccountRef("id", theirs.social_account_id)
    b_first = await limits.reserve(org_b, b_ref, same_uuid, DAY)
    assert (b_first.reserved, b_first.already_reserved, b_first.used) == (True, False, 12)
    for _ in range(3):
        assert (await limits.reserve(org_b, b_ref, post(), DAY)).reserved
    assert not (await limits.reserve(org_b, b_ref, post(), DAY)).reserved  # 15 in all
    # A different microblog account has its own counter.
    other = await world.connect(org_b, "MICROBLOG", "someone.else")
    assert (
        await limits.reserve(org_b, AccountRef("id", other.social_account_id), post(), DAY)
    ).used == 1


async def test_concurrent_reservations_stop_exactly_at_the_limit(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "CLIPAPP", "racer")
    ref = AccountRef("clipapp", account.platform_account_id)
    # Two "replicas": independent objects over the same collections.
    replicas = [
        world.parts.daily_limits,
        DailyLimits(records=world.records, accounts=world.parts.accounts, clock=world.clock),
    ]
    uuids = [post() for _ in range(16)]
    # Every post is reserved twice at once (a retry racing the first try).
    results = await asyncio.gather(
        *(replicas[i % 2].reserve(org, ref, uuids[i % 16], DAY) for i in range(32))
    )
    granted = {uuids[i % 16] for i, r in enumerate(results) if r.reserved}
    assert len(granted) == 10
    counter = await world.records.daily_post_counters.find_one(
        {"_id": f"clipapp:{account.platform_account_id}:2026-07-04"}
    )
    assert counter is not None and counter["count"] == 10 and len(counter["keys"]) == 10


async def test_photoapp_has_no_daily_limit_here_and_bad_input_is_refused(
    world: AccountWorld,
) -> None:
    org = await world.organization()
    account = await world.connect(org, "PHOTOAPP", "storyteller")
    ref = AccountRef("username", "storyteller", "PHOTOAPP")
    for _ in range(30):
        granted = await world.parts.daily_limits.reserve(org, ref, post(), DAY)
        assert granted.reserved and granted.limit is None
    assert await world.records.daily_post_counters.count_documents({}) == 0
    with pytest.raises(InvalidArgument):
        await world.parts.daily_limits.reserve(org, ref, " ", DAY)
    with pytest.raises(InvalidArgument):
        await world.parts.daily_limits.reserve(org, ref, post(), DAY.replace(tzinfo=None))
    with pytest.raises(NotFound):
        await world.parts.daily_limits.reserve(org, AccountRef("id", "sa_nope"), post(), DAY)
    assert account.platform.daily_limit is None
