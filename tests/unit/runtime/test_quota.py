"""The rolling quota: the limit holds under races, twins take one slot, slots free in time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from storypost_runtime.mongo import Document
from storypost_runtime.quota import QuotaDecision, RollingQuota

NOW = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
DAY = timedelta(hours=24)


async def test_the_limit_holds_and_a_slot_frees_when_its_time_leaves_the_window(
    db: AsyncDatabase[Document],
) -> None:
    quota = RollingQuota(slots=db["quota"], limit=2, window=DAY)
    assert await quota.reserve("k", "a", NOW) == QuotaDecision(True)
    assert await quota.reserve("k", "b", NOW + timedelta(hours=1)) == QuotaDecision(True)
    assert await quota.reserve("k", "a", NOW + timedelta(hours=2)) == QuotaDecision(True)  # again
    assert await quota.reserve("k", "c", NOW + timedelta(hours=2)) == QuotaDecision(
        False, NOW + DAY
    )
    assert (await quota.reserve("other", "c", NOW)).allowed  # keys are counted apart
    assert (await quota.reserve("k", "c", NOW + DAY)).allowed  # `a` left the window
    assert not (await quota.reserve("k", "d", NOW + DAY)).allowed
    await quota.release("k", "c")
    assert (await quota.reserve("k", "d", NOW + DAY)).allowed


async def test_racers_on_a_new_key_all_get_the_room_there_is(db: AsyncDatabase[Document]) -> None:
    quota = RollingQuota(slots=db["quota"], limit=10, window=DAY, key_field="organizationId")
    # Twelve holders, two of them twice: ten slots, ten holders in, each once.
    holders = [f"h{n}" for n in range(12)] + ["h0", "h1"]
    decisions = await asyncio.gather(*(quota.reserve("k", h, NOW) for h in holders))
    allowed = {h for h, d in zip(holders, decisions, strict=True) if d.allowed}
    doc = await db["quota"].find_one({"_id": "k"})
    assert doc is not None and doc["organizationId"] == "k"
    assert len(allowed) == 10 and {s["post"] for s in doc["slots"]} == allowed
    few = RollingQuota(slots=db["few"], limit=5, window=DAY)
    assert all(
        d.allowed for d in await asyncio.gather(*(few.reserve("k", str(n), NOW) for n in range(5)))
    )


class LosesTheCreateRace:
    """A collection that answers the first update as MongoDB does when a racer created the
    key's document between the upsert's look and its insert: a duplicate `_id`. (The
    development stand-in runs upserts one at a time, so the race cannot happen there.)"""

    def __init__(self, collection: AsyncCollection[Document], racer: Callable[[], Awaitable[Any]]):
        self.collection = collection
        self.racer: Callable[[], Awaitable[Any]] | None = racer

    async def update_one(self, *args: Any, **kwargs: Any) -> Any:
        if self.racer is not None:
            racer, self.racer = self.racer, None
            await racer()
            raise DuplicateKeyError("E11000 duplicate key error: _id")
        return await self.collection.update_one(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.collection, name)


async def test_losing_the_race_to_create_the_key_s_document_is_not_a_refusal(
    db: AsyncDatabase[Document],
) -> None:
    racer = RollingQuota(slots=db["quota"], limit=3, window=DAY)
    raced = LosesTheCreateRace(db["quota"], lambda: racer.reserve("k", "first", NOW))
    quota = RollingQuota(slots=cast(AsyncCollection[Document], raced), limit=3, window=DAY)
    assert (await quota.reserve("k", "second", NOW)).allowed
    doc = await db["quota"].find_one({"_id": "k"})
    assert doc is not None and [s["post"] for s in doc["slots"]] == ["first", "second"]
    # A twin that lost the race finds its holder's slot: reserved, not twice.
    twin = LosesTheCreateRace(db["quota"], lambda: racer.reserve("k", "third", NOW))
    assert await RollingQuota(
        slots=cast(AsyncCollection[Document], twin), limit=3, window=DAY
    ).reserve("k", "third", NOW) == QuotaDecision(True)
    assert len((await db["quota"].find_one({"_id": "k"}) or {})["slots"]) == 3
