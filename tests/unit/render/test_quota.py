"""The draft quota: N drafts per organization in any rolling window, also under races."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from render_svc.quota import QUOTA_REASON, DraftQuota, fold_slot_documents
from render_svc.records import RenderCollections
from storypost_runtime.clock import FrozenClock
from storypost_runtime.errors import ResourceExhausted
from storypost_runtime.mongo import Document

DAY = timedelta(hours=24)


@pytest.fixture
async def slots(db: AsyncDatabase[Document]) -> RenderCollections:
    records = RenderCollections.of(db)
    await records.ensure_indexes()
    return records


async def taken(slots: RenderCollections, organization_id: str) -> int:
    doc = await slots.draft_quota.find_one({"organizationId": organization_id}) or {}
    return len(doc.get("slots", []))


def uuid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


async def test_the_limit_holds_and_says_when_a_slot_frees(slots: RenderCollections) -> None:
    clock = FrozenClock(datetime(2026, 7, 1, 9, 0, tzinfo=UTC))
    quota = DraftQuota(slots=slots.draft_quota, clock=clock, limit=3, window=DAY)
    for n in range(3):
        await quota.reserve("org", uuid(n))
        clock.advance(timedelta(hours=1))
    with pytest.raises(ResourceExhausted) as raised:
        await quota.reserve("org", uuid(9))
    error = raised.value
    assert error.reason == QUOTA_REASON
    # The oldest draft was made 3 hours ago: its slot frees in 21 hours.
    assert error.retry_after_seconds == pytest.approx(21 * 3600)
    assert "at most 3 drafts per organization in any rolling 24 hours" in error.message
    # Other organizations have quotas of their own.
    await quota.reserve("other", uuid(0))


async def test_a_slot_is_taken_again_only_after_the_window(slots: RenderCollections) -> None:
    clock = FrozenClock(datetime(2026, 7, 1, 9, 0, tzinfo=UTC))
    quota = DraftQuota(slots=slots.draft_quota, clock=clock, limit=2, window=DAY)
    await quota.reserve("org", uuid(0))
    clock.advance(timedelta(hours=12))
    await quota.reserve("org", uuid(1))
    clock.advance(timedelta(hours=11, minutes=59))
    with pytest.raises(ResourceExhausted):
        await quota.reserve("org", uuid(2))
    clock.advance(timedelta(minutes=1))
    # 24 hours after the first draft: exactly one slot is free again.
    await quota.reserve("org", uuid(2))
    with pytest.raises(ResourceExhausted):
        await quota.reserve("org", uuid(3))
    assert await taken(slots, "org") == 2


async def test_released_slots_are_free_at_once(slots: RenderCollections) -> None:
    clock = FrozenClock(datetime(2026, 7, 1, 9, 0, tzinfo=UTC))
    quota = DraftQuota(slots=slots.draft_quota, clock=clock, limit=1, window=DAY)
    slot = await quota.reserve("org", uuid(0))
    await quota.release(slot)
    again = await quota.reserve("org", uuid(1))
    # Releasing a slot that was taken again since changes nothing.
    await quota.release(slot)
    with pytest.raises(ResourceExhausted):
        await quota.reserve("org", uuid(2))
    await quota.release(again)
    await quota.reserve("org", uuid(3))


async def test_concurrent_reservations_never_exceed_the_limit(slots: RenderCollections) -> None:
    clock = FrozenClock(datetime(2026, 7, 1, 9, 0, tzinfo=UTC))
    quota = DraftQuota(slots=slots.draft_quota, clock=clock, limit=10, window=DAY)

    async def one(n: int) -> bool:
        try:
            await quota.reserve("org", uuid(n))
        except ResourceExhausted:
            return False
        return True

    results = await asyncio.gather(*(one(n) for n in range(25)))
    assert sum(results) == 10
    assert await taken(slots, "org") == 10


async def test_the_slot_documents_of_before_are_folded_and_still_count(
    slots: RenderCollections,
) -> None:
    clock = FrozenClock(datetime(2026, 7, 1, 9, 0, tzinfo=UTC))
    old = [
        {"_id": f"org:{n}", "organizationId": "org", "slot": n, "draftUuid": uuid(n),
         "takenAt": clock.now() - timedelta(hours=n)}
        for n in range(3)
    ] + [
        {"_id": "org:3", "organizationId": "org", "slot": 3, "draftUuid": uuid(3),
         "takenAt": datetime(1970, 1, 1, tzinfo=UTC)},  # released
        {"_id": "two:0", "organizationId": "two", "slot": 0, "draftUuid": uuid(9),
         "takenAt": clock.now()},
    ]  # fmt: skip
    await slots.draft_quota.insert_many(old)
    assert await fold_slot_documents(slots.draft_quota) == 5
    assert await fold_slot_documents(slots.draft_quota) == 0  # once is enough
    assert await slots.draft_quota.count_documents({}) == 2
    assert (await taken(slots, "org"), await taken(slots, "two")) == (3, 1)
    quota = DraftQuota(slots=slots.draft_quota, clock=clock, limit=4, window=DAY)
    await quota.reserve("org", uuid(5))
    with pytest.raises(ResourceExhausted) as raised:
        await quota.reserve("org", uuid(6))
    # The oldest folded slot was taken 2 hours ago: it frees in 22 hours.
    assert raised.value.retry_after_seconds == pytest.approx(22 * 3600)
