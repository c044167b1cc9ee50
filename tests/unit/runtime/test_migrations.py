"""Schema migrations on the stand-in: steps run once and in order, a backfill resumes where it
stopped and changes each document once, a time limit keeps what was done, and a service that
needs migrations refuses in production and migrates itself only in development."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from pymongo import ASCENDING, IndexModel, InsertOne
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime import migrations
from storypost_runtime.migrations import (
    SCHEMA_COLLECTION,
    Backfill,
    MigrationsMissing,
    MigrationTimedOut,
    Plan,
    Step,
    migrate,
    missing,
    require_schema,
)
from storypost_runtime.mongo import Document, drop_indexes, ensure_indexes

ITEMS = 230  # 4 full batches of BATCH and a part
BATCH = 50


class Interrupted(Exception):
    pass


@dataclass
class Records:
    """A service's records with its index method (declared once, as the services do)."""

    db: AsyncDatabase[Document]
    extra: Sequence[IndexModel] = ()

    async def ensure_indexes(self) -> None:
        await ensure_indexes(
            self.db["items"],
            [IndexModel([("group", ASCENDING), ("rank", ASCENDING)], name="group_rank")],
        )
        await ensure_indexes(self.db["items"], list(self.extra))
        await drop_indexes(self.db["items"], ["retired"])


def ranked(db: AsyncDatabase[Document], limit: int | None = None) -> Backfill:
    """Gives items their `rank`; `times` counts how often an item was changed. Raises
    Interrupted on the item after `limit` (a migrator killed mid-backfill)."""
    seen = 0

    def change(doc: Document) -> Document:
        nonlocal seen
        seen += 1
        if limit is not None and seen > limit:
            raise Interrupted
        return {"$set": {"rank": doc["n"] * 2}, "$inc": {"times": 1}}

    return Backfill(db["items"], {"rank": {"$exists": False}}, {"n": 1}, change, batch=BATCH)


def plan_of(
    db: AsyncDatabase[Document], backfill: Backfill, *steps: Step, records: Records | None = None
) -> Plan:
    indexes = (records or Records(db)).ensure_indexes
    return Plan("demo-svc", db, indexes, [Step(1, "rank", backfill), *steps])


async def seed(db: AsyncDatabase[Document], count: int = ITEMS) -> None:
    await db["items"].bulk_write(
        [InsertOne({"_id": f"i{n:06d}", "n": n, "group": n % 7}) for n in range(count)]
    )
    await db["items"].create_index([("n", ASCENDING)], name="retired")


async def test_steps_run_once_in_order_then_the_indexes(db: AsyncDatabase[Document]) -> None:
    await seed(db)
    ran: list[int] = []

    async def second() -> None:
        # Step 2 runs after step 1 finished: every item has its rank.
        ran.append(await db["items"].count_documents({"rank": {"$exists": True}}))

    plan = plan_of(db, ranked(db), Step(2, "count", second))
    assert "schema version 0 of 2 (to run: 1 rank, 2 count)" in (await missing(plan) or "")
    report = await migrate(plan, limit_seconds=60)
    assert (report.version_before, report.version, report.changed) == (0, 2, ITEMS)
    assert ran == [ITEMS]
    assert await missing(plan) is None
    indexes = await db["items"].index_information()
    assert "group_rank" in indexes and "retired" not in indexes
    # Again: nothing left to run, nothing changed twice.
    again = await migrate(plan, limit_seconds=60)
    assert (again.steps_run, again.changed, ran) == ([], 0, [ITEMS])
    assert await db["items"].count_documents({"times": 1}) == ITEMS


async def test_an_interrupted_backfill_resumes_and_changes_each_item_once(
    db: AsyncDatabase[Document],
) -> None:
    await seed(db)
    with pytest.raises(Interrupted):
        await migrate(plan_of(db, ranked(db, limit=120)), limit_seconds=60)
    state = await db[SCHEMA_COLLECTION].find_one({"_id": "demo-svc"})
    # Two batches were written and their place kept; the step is not done.
    assert state is not None and state.get("version", 0) == 0
    assert state["cursors"]["1"] == {"after": "i000099", "changed": 100}
    assert await db["items"].count_documents({"rank": {"$exists": True}}) == 100
    # The lock was given back: the next run starts at once and goes on from item 100.
    resumed = await migrate(plan_of(db, ranked(db)), limit_seconds=60)
    assert resumed.changed == ITEMS - 100
    assert await db["items"].count_documents({"times": 1}) == ITEMS
    assert await db["items"].count_documents({"times": {"$ne": 1}}) == 0
    state = await db[SCHEMA_COLLECTION].find_one({"_id": "demo-svc"})
    assert state is not None and state["version"] == 1 and "1" not in state.get("cursors", {})


async def test_a_cancelled_batch_is_not_counted_twice(
    db: AsyncDatabase[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled between a batch's write and its recorded place: the next run reads that batch
    again, and its filter leaves the items already changed alone."""
    await seed(db, 100)
    plan = plan_of(db, ranked(db))
    record = migrations._record

    async def cancelled_at_the_place(plan: Plan, values: Document, **kwargs: Any) -> None:
        if any(key.startswith("cursors.") for key in values):
            raise asyncio.CancelledError
        await record(plan, values, **kwargs)

    monkeypatch.setattr(migrations, "_record", cancelled_at_the_place)
    with pytest.raises(asyncio.CancelledError):
        await migrate(plan, limit_seconds=60)
    monkeypatch.undo()
    assert await db["items"].count_documents({"times": 1}) == BATCH
    report = await migrate(plan, limit_seconds=60)
    assert report.changed == 100 - BATCH
    assert await db["items"].count_documents({"times": 1}) == 100


async def test_the_time_limit_keeps_what_was_done(db: AsyncDatabase[Document]) -> None:
    await seed(db, 60)

    async def slow() -> None:
        await asyncio.sleep(30)

    plan = plan_of(db, ranked(db), Step(2, "slow", slow))
    with pytest.raises(MigrationTimedOut) as stopped:
        await migrate(plan, limit_seconds=1.0)
    assert "demo-svc: stopped after 1 s at schema version 1 of 2" in str(stopped.value)
    assert "run `storypost migrate` again to resume" in str(stopped.value)
    assert await db["items"].count_documents({"rank": {"$exists": True}}) == 60

    async def quick() -> None:
        return None

    done = await migrate(plan_of(db, ranked(db), Step(2, "slow", quick)), limit_seconds=60)
    assert done.steps_run == ["2 slow"] and done.changed == 0


async def test_two_migrators_at_once_run_each_step_once(db: AsyncDatabase[Document]) -> None:
    await seed(db, 150)
    runs = 0

    async def counted() -> None:
        nonlocal runs
        runs += 1
        await asyncio.sleep(0.3)

    plan = plan_of(db, ranked(db), Step(2, "counted", counted))
    first, second = await asyncio.gather(
        migrate(plan, limit_seconds=60), migrate(plan, limit_seconds=60)
    )
    assert runs == 1 and first.changed + second.changed == 150
    assert await db["items"].count_documents({"times": 1}) == 150


async def test_production_refuses_a_schema_behind_and_development_migrates(
    db: AsyncDatabase[Document],
) -> None:
    await seed(db, 10)
    plan = plan_of(db, ranked(db))
    with pytest.raises(MigrationsMissing) as refused:
        await require_schema(plan, development=False)
    message = str(refused.value)
    assert message.startswith(f"demo-svc: the database '{db.name}' is not ready for this release")
    assert "schema version 0 of 1 (to run: 1 rank)" in message
    assert "Run `storypost migrate` (the migrate Job) before starting it" in message
    assert await db["items"].count_documents({"rank": {"$exists": True}}) == 0
    await require_schema(plan, development=True)
    assert await db["items"].count_documents({"rank": {"$exists": True}}) == 10
    await require_schema(plan, development=False)  # ready now


async def test_a_new_index_needs_migrate_and_a_rolled_back_release_still_starts(
    db: AsyncDatabase[Document],
) -> None:
    await seed(db, 10)
    old = plan_of(db, ranked(db))
    await migrate(old, limit_seconds=60)
    extra = [IndexModel([("n", ASCENDING), ("group", ASCENDING)], name="n_group")]
    new = plan_of(db, ranked(db), records=Records(db, extra))
    reason = await missing(new)
    assert reason is not None and "its indexes are not this release's" in reason
    assert "schema version" not in reason
    await migrate(new, limit_seconds=60)
    assert await missing(new) is None
    assert "n_group" in await db["items"].index_information()
    # The previous release's declaration was applied once: rolled back to, it starts.
    assert await missing(old) is None


def test_step_numbers_are_ordered() -> None:
    async def nothing() -> None:
        return None

    with pytest.raises(ValueError, match="step numbers must be 1, 2"):
        Plan("x", None, nothing, [Step(2, "b", nothing), Step(1, "a", nothing)])  # type: ignore[arg-type]
