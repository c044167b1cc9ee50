"""The bounded set: at most `limit` members per key, each once, also under racing adds."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import cast

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.bounded_set import BoundedSet
from storypost_runtime.mongo import Document
from tests.unit.runtime.test_quota import LosesTheCreateRace

NOW = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)


async def test_members_are_added_under_the_limit_once_each_and_refused_at_it(
    db: AsyncDatabase[Document],
) -> None:
    names = BoundedSet(collection=db["names"], array="names", limit=3)
    assert await names.add("k", "a") and await names.add("k", "b")
    assert await names.add("k", "a")  # again: still there, counted once
    assert await names.add("k", "c")
    assert not await names.add("k", "d")  # full
    assert await names.add("k", "c")  # a member already there is always counted
    assert await names.add("other", "d")  # keys are counted apart
    assert await names.members("k") == ["a", "b", "c"]
    await names.remove("k", "b", "not-there")
    assert await names.add("k", "d") and not await names.add("k", "e")
    assert await names.members("k") == ["a", "c", "d"]
    assert await db["names"].find_one({"_id": "k"}) == {"_id": "k", "names": ["a", "c", "d"]}


async def test_document_members_are_named_by_their_field_and_keep_their_first_fields(
    db: AsyncDatabase[Document],
) -> None:
    active = BoundedSet(collection=db["active"], array="series", limit=2, member_field="s")
    assert await active.add("k", "s1", at=NOW)
    assert await active.add("k", "s1", at=NOW.replace(hour=10))  # again: not pushed twice
    assert await active.add("k", "s2", at=NOW)
    assert not await active.add("k", "s3", at=NOW)
    assert await active.entries("k") == [{"s": "s1", "at": NOW}, {"s": "s2", "at": NOW}]
    await active.remove("k", "s1")
    assert await active.members("k") == ["s2"]


async def test_racing_adds_never_pass_the_limit_and_twins_count_once(
    db: AsyncDatabase[Document],
) -> None:
    names = BoundedSet(collection=db["names"], array="names", limit=10)
    # Twelve members, two of them twice, all at once on a key without a document.
    members = [f"m{n}" for n in range(12)] + ["m0", "m1"]
    added = await asyncio.gather(*(names.add("k", m) for m in members))
    held = await names.members("k")
    assert len(held) == 10 == len(set(held))
    assert {m for m, ok in zip(members, added, strict=True) if ok} == set(held)


async def test_losing_the_race_to_create_the_key_s_document_is_not_a_refusal(
    db: AsyncDatabase[Document],
) -> None:
    racer = BoundedSet(collection=db["names"], array="names", limit=2)

    def raced(member: str) -> BoundedSet:
        collection = LosesTheCreateRace(db["names"], lambda: racer.add("k", member))
        return BoundedSet(
            collection=cast(AsyncCollection[Document], collection), array="names", limit=2
        )

    # A racer created the document first: there is room, so the write runs again.
    assert await raced("first").add("k", "second")
    # A twin that lost the race finds its member there: added, not twice.
    assert await raced("first").add("k", "first")
    # The racer took the last place: full.
    await racer.remove("k", "second")
    assert not await raced("third").add("k", "fourth")
    assert await racer.members("k") == ["first", "third"]
