"""The finishing lease is renewed while a finisher works, and given up when it is lost."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from render_svc.finisher import Finisher
from render_svc.records import RenderCollections
from render_svc.renderings import FINISHING
from storypost_runtime.clock import FrozenClock
from storypost_runtime.mongo import Document


async def test_a_working_finisher_keeps_its_short_lease(db: AsyncDatabase[Document]) -> None:
    records = RenderCollections.of(db)
    clock = FrozenClock(datetime(2026, 11, 23, 10, 0, tzinfo=UTC))
    none: Any = None
    finisher = Finisher(
        records=records,
        renderings=none,
        renderer=none,
        store=none,
        tools=none,
        clock=clock,
        lease_seconds=0.3,
    )
    doc = {"_id": "org:r1", "state": FINISHING, "leaseToken": "mine", "leaseUntil": clock.now()}
    await records.renderings.insert_one(doc)
    async with finisher._keeping_lease(doc, "mine"):
        clock.advance(timedelta(seconds=5))
        await asyncio.sleep(0.25)
        renewed = await records.renderings.find_one({"_id": "org:r1"})
        assert renewed is not None and renewed["leaseUntil"] > datetime(
            2026, 11, 23, 10, 0, 5, tzinfo=UTC
        )
        # Another finisher took it over: a renewal does not steal it back.
        theirs = {"leaseToken": "theirs", "leaseUntil": clock.now()}
        await records.renderings.update_one({"_id": "org:r1"}, {"$set": theirs})
        clock.advance(timedelta(seconds=5))
        await asyncio.sleep(0.25)
        after = await records.renderings.find_one({"_id": "org:r1"})
        assert after is not None and {k: after[k] for k in theirs} == theirs
