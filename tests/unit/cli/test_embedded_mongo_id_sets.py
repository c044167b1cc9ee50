"""The embedded MongoDB looks a set of string ids up by index and finds the same documents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mongoeco.engines.sqlite import SQLiteEngine
from mongoeco.wire.proxy import AsyncMongoEcoProxyServer
from pymongo import AsyncMongoClient

from storypost_cli.embedded_mongo import (
    add_sqlite_indexes_for_mongo_indexes,
    index_ids_of_every_collection,
    look_up_sets_of_strings_by_index,
    match_scalars_without_array_branches,
)
from tests.support.mongo import plans_of, trace_sqlite_statements

Client = AsyncMongoClient[dict[str, Any]]


@pytest.fixture
async def traced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Client, Path, list[str]]]:
    """A server with the patches of lookups by index, and the SQL statements it runs."""
    path = tmp_path / "db.sqlite"
    add_sqlite_indexes_for_mongo_indexes()
    index_ids_of_every_collection()
    match_scalars_without_array_branches()
    look_up_sets_of_strings_by_index()
    statements = trace_sqlite_statements(monkeypatch)
    server = AsyncMongoEcoProxyServer(engine=SQLiteEngine(str(path)), port=0)
    address = await server.start()
    mongo: Client = AsyncMongoClient(f"mongodb://127.0.0.1:{address.port}/?directConnection=true")
    try:
        yield mongo, path, statements
    finally:
        await mongo.close()
        await server.close()


async def test_a_set_of_string_ids_is_looked_up_by_index_and_finds_the_same(
    traced: tuple[Client, Path, list[str]],
) -> None:
    mongo, path, statements = traced
    coll = mongo["t"]["deliveries"]
    await coll.create_index("due")
    await coll.insert_many(
        [{"_id": f"d{n}", "lease": "L" if n % 2 else "M", "due": n} for n in range(300)]
        + [{"_id": 7, "lease": "L"}, {"_id": {"k": "d1"}, "lease": "L"}]
    )
    statements.clear()
    wanted = {"_id": {"$in": ["d1", "d2", "d3", "7", "nope"]}, "lease": "L"}
    found = sorted(doc["_id"] for doc in await coll.find(wanted).to_list())
    assert found == ["d1", "d3"]  # neither the number 7 nor the document id {k: "d1"}
    plans = plans_of(path, statements, "'d3'")
    assert plans and all("USING INDEX storypost_id" in plan for plan in plans), plans
    # An update finds the same; a set holding a number keeps mongoeco's own test.
    moved = await coll.update_many({"_id": {"$in": ["d5", "d6"]}}, {"$set": {"lease": "N"}})
    assert moved.modified_count == 2
    mixed = await coll.find({"_id": {"$in": [7, "d7"]}}).to_list()
    assert sorted(str(doc["_id"]) for doc in mixed) == ["7", "d7"]
    assert await coll.count_documents({"lease": "N"}) == 2
