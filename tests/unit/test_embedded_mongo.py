"""The embedded MongoDB's shortcuts still refuse every duplicate key and match exactly."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mongoeco.engines.sqlite import SQLiteEngine
from mongoeco.wire.proxy import AsyncMongoEcoProxyServer
from pymongo import AsyncMongoClient
from pymongo.errors import DuplicateKeyError

from storypost_cli.embedded_mongo import (
    coalesce_change_dispatch,
    skip_full_scan_for_plain_ids,
    use_id_lookup_for_guarded_writes,
    use_sql_prefilter_for_compound_unique_indexes,
)


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[AsyncMongoClient[dict[str, object]]]:
    skip_full_scan_for_plain_ids()
    use_id_lookup_for_guarded_writes()
    use_sql_prefilter_for_compound_unique_indexes()
    server = AsyncMongoEcoProxyServer(engine=SQLiteEngine(str(tmp_path / "db.sqlite")), port=0)
    address = await server.start()
    mongo: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
        f"mongodb://127.0.0.1:{address.port}/?directConnection=true"
    )
    yield mongo
    await mongo.close()
    await server.close()


async def test_duplicates_are_refused_for_every_kind_of_id(
    client: AsyncMongoClient[dict[str, object]],
) -> None:
    coll = client["t"]["c"]
    for first, twin in [("a", "a"), (1, 1.0), ({"k": "x"}, {"k": "x"}), (2, 2)]:
        await coll.insert_one({"_id": first})
        with pytest.raises(DuplicateKeyError):
            await coll.insert_one({"_id": twin})


async def test_plain_ids_skip_the_collection_scan_numeric_ids_keep_it(
    client: AsyncMongoClient[dict[str, object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    coll = client["t"]["grow"]
    await coll.insert_many([{"_id": f"seed-{n}"} for n in range(50)])
    scans: list[str] = []
    load = SQLiteEngine._load_documents

    def counting(self: SQLiteEngine, *args: object, **kwargs: object) -> object:
        scans.append(str(args[1]) if len(args) > 1 else "?")
        return load(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SQLiteEngine, "_load_documents", counting)
    await coll.insert_one({"_id": "plain"})
    assert scans == []
    await coll.insert_one({"_id": 7})
    assert scans, "numeric ids must still be compared with every stored id"


async def test_guarded_writes_by_id_match_exactly_as_before(
    client: AsyncMongoClient[dict[str, object]],
) -> None:
    coll = client["t"]["guarded"]
    await coll.insert_many(
        [{"_id": f"p{n}", "status": "scheduled", "n": n} for n in range(30)] + [{"_id": 5, "n": 5}]
    )
    moved = await coll.update_one(
        {"_id": "p3", "status": {"$in": ["scheduled", "x"]}, "n": {"$lte": 3}},
        {"$set": {"status": "executed"}},
    )
    assert moved.modified_count == 1
    # The guard no longer holds: nothing changes, and no other document is touched.
    again = await coll.find_one_and_update(
        {"_id": "p3", "status": "scheduled"}, {"$set": {"status": "canceled"}}
    )
    assert again is None
    missing = await coll.update_one({"_id": "nope", "status": "scheduled"}, {"$set": {"x": 1}})
    assert missing.matched_count == 0
    assert (await coll.find_one({"_id": "p3"}) or {})["status"] == "executed"
    assert await coll.count_documents({"status": "scheduled"}) == 29
    numeric = await coll.update_one({"_id": 5.0, "n": 5}, {"$set": {"hit": True}})
    assert numeric.modified_count == 1  # 5.0 finds the document stored with _id 5


async def test_compound_unique_keys_are_checked_in_sql_and_still_refuse_every_duplicate(
    client: AsyncMongoClient[dict[str, object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    coll = client["t"]["compound"]
    await coll.create_index([("org", 1), ("key.uuid", 1)], unique=True)
    await coll.insert_many(
        [{"org": f"o{n % 3}", "key": {"uuid": f"u{n}"}, "n": n} for n in range(60)]
    )
    scans: list[str] = []
    load = SQLiteEngine._load_documents

    def counting(self: SQLiteEngine, *args: object, **kwargs: object) -> object:
        scans.append("scan")
        return load(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SQLiteEngine, "_load_documents", counting)
    # A twin of a stored key, whatever the other fields, in insert and update alike.
    with pytest.raises(DuplicateKeyError):
        await coll.insert_one({"org": "o1", "key": {"uuid": "u1"}, "n": -1})
    await coll.insert_one({"org": "o2", "key": {"uuid": "u1"}})  # same uuid, other org
    await coll.insert_one({"org": "o1", "key": {"uuid": "U1"}})  # strings compare exactly
    with pytest.raises(DuplicateKeyError):
        await coll.update_one({"n": 5}, {"$set": {"org": "o1", "key": {"uuid": "u1"}}})
    # A document keeps its own key through an update.
    await coll.update_one({"n": 4}, {"$set": {"note": "kept"}})
    assert scans == []
    assert await coll.count_documents({"org": "o1", "key.uuid": "u1"}) == 1
    # Keys that are not all strings keep mongoeco's own comparison (1 and 1.0 are equal).
    await coll.insert_one({"org": "o9", "key": {"uuid": 1}})
    with pytest.raises(DuplicateKeyError):
        await coll.insert_one({"org": "o9", "key": {"uuid": 1.0}})
    assert scans, "numeric keys must still be compared by the scan"


async def test_committed_changes_reach_the_hub_in_batches_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    coalesce_change_dispatch()
    dispatches: list[tuple[str, list[Any]]] = []
    original = SQLiteEngine.dispatch_committed_changes

    def recording(self: SQLiteEngine, consumer_id: str, consumer: Callable[[Any], None]) -> None:
        delivered: list[Any] = []
        dispatches.append((threading.current_thread().name, delivered))

        def deliver(change: Any) -> None:
            delivered.append(change)
            consumer(change)

        original(self, consumer_id, deliver)

    monkeypatch.setattr(SQLiteEngine, "dispatch_committed_changes", recording)
    server = AsyncMongoEcoProxyServer(engine=SQLiteEngine(str(tmp_path / "db.sqlite")), port=0)
    address = await server.start()
    mongo: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
        f"mongodb://127.0.0.1:{address.port}/?directConnection=true"
    )
    try:
        coll = mongo["t"]["changes"]
        for n in range(40):
            await coll.insert_one({"_id": f"doc-{n}"})
        await coll.update_one({"_id": "doc-0"}, {"$set": {"seen": True}})
        async with asyncio.timeout(10):
            while sum(len(delivered) for _, delivered in dispatches) < 41:
                await asyncio.sleep(0.05)
    finally:
        await mongo.close()
        await server.close()
    # Every change reached the hub, in far fewer dispatches than writes, none on the loop.
    assert len(dispatches) <= 10
    assert {name.split("_")[0] for name, _ in dispatches} == {"storypost-changes"}
    # Each write's change, once and in order (without a watcher mongoeco records them as gaps).
    sequences = [change.sequence for _, delivered in dispatches for change in delivered]
    assert sequences == sorted(set(sequences)) and len(sequences) >= 41
