"""The embedded MongoDB stores an insert command's documents in one transaction and reports
each refused document as MongoDB does; a document's TTL entries are replaced by index."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mongoeco.engines.sqlite import SQLiteEngine
from mongoeco.wire.proxy import AsyncMongoEcoProxyServer
from pymongo import ASCENDING, AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from storypost_cli.embedded_mongo import (
    commit_insert_commands_in_one_transaction,
    index_ttl_entries_by_document,
    skip_full_scan_for_plain_ids,
)

Client = AsyncMongoClient[dict[str, Any]]


@asynccontextmanager
async def served(path: Path) -> AsyncIterator[Client]:
    """A client of a mongoeco wire server on the SQLite file `path`, closed afterwards."""
    server = AsyncMongoEcoProxyServer(engine=SQLiteEngine(str(path)), port=0)
    address = await server.start()
    mongo: Client = AsyncMongoClient(f"mongodb://127.0.0.1:{address.port}/?directConnection=true")
    try:
        yield mongo
    finally:
        await mongo.close()
        await server.close()


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    skip_full_scan_for_plain_ids()
    commit_insert_commands_in_one_transaction()
    async with served(tmp_path / "db.sqlite") as mongo:
        yield mongo


@pytest.fixture
def commits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per write transaction the engine commits."""
    counted: list[int] = []
    original = SQLiteEngine._commit_write

    def commit_write(self: SQLiteEngine, conn: sqlite3.Connection, context: Any) -> None:
        counted.append(1)
        original(self, conn, context)

    monkeypatch.setattr(SQLiteEngine, "_commit_write", commit_write)
    return counted


async def insert(db: AsyncDatabase[dict[str, Any]], docs: list[Any], ordered: bool) -> Any:
    """The server's raw reply to an `insert` command (write errors do not raise)."""
    return await db.command("insert", "c", documents=docs, ordered=ordered)


def duplicate(index: int, key: dict[str, Any], pattern: dict[str, Any]) -> dict[str, Any]:
    """MongoDB's write error for a refused duplicate of `key` at `index`."""
    return {"index": index, "code": 11000, "keyPattern": pattern, "keyValue": key}


def errors_of(reply: Any) -> list[dict[str, Any]]:
    """The reply's write errors, without the message of a duplicate (checked apart)."""
    found = []
    for error in reply.get("writeErrors", []):
        if error["code"] != 11000:
            found.append(error)
            continue
        assert error["errmsg"].startswith("E11000 duplicate key error collection: t.c index: ")
        found.append({k: v for k, v in error.items() if k != "errmsg"})
    return found


async def stored_ids(db: AsyncDatabase[dict[str, Any]]) -> list[Any]:
    return sorted(doc["_id"] for doc in await db["c"].find({}, {"_id": 1}).to_list())


async def test_an_insert_command_commits_once_and_reports_each_refused_document(
    client: Client, commits: list[int]
) -> None:
    db = client["t"]
    await db["c"].create_index([("slot", ASCENDING)], unique=True, sparse=True)
    await db["c"].insert_one({"_id": "old", "slot": 1})
    commits.clear()
    result = await db["c"].insert_many(
        [{"_id": f"d{n:02}", "n": n} for n in range(50)], ordered=False
    )
    assert len(result.inserted_ids) == 50
    assert len(commits) == 1  # one per document without the patch
    # Refused: an _id stored before, a twin _id in the same command, a taken unique key.
    reply = await insert(
        db,
        [
            {"_id": "a"},
            {"_id": "old"},
            {"_id": "b", "slot": 2},
            {"_id": "a"},
            {"_id": "c", "slot": 1},
            {"_id": "e"},
        ],
        ordered=False,
    )
    assert reply["n"] == 3
    assert errors_of(reply) == [
        duplicate(1, {"_id": "old"}, {"_id": 1}),
        duplicate(3, {"_id": "a"}, {"_id": 1}),
        duplicate(4, {"slot": 1}, {"slot": 1}),
    ]
    assert await stored_ids(db) == sorted(["a", "b", "e", "old", *(f"d{n:02}" for n in range(50))])
    assert (await db["c"].find_one({"_id": "b"})) == {"_id": "b", "slot": 2}


async def test_an_ordered_insert_command_stops_at_its_first_refused_document(
    client: Client, commits: list[int]
) -> None:
    db = client["t"]
    await db["c"].insert_one({"_id": "old"})
    commits.clear()
    reply = await insert(
        db, [{"_id": "a"}, {"_id": "b"}, {"_id": "old"}, {"_id": "c"}], ordered=True
    )
    assert reply["n"] == 2
    assert errors_of(reply) == [duplicate(2, {"_id": "old"}, {"_id": 1})]
    assert await stored_ids(db) == ["a", "b", "old"]
    assert len(commits) == 1  # the two before the refused one, together


async def test_documents_left_unstored_by_a_failed_batch_are_reported_one_by_one(
    client: Client, commits: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document that mongoeco's batch cannot prepare fails its whole batch; the documents
    not yet stored then go through the original loop, each stored once and each refusal
    reported at its index in the command. (Those before an invalid `_id` form a batch of
    their own, stored first.)"""
    prepare = SQLiteEngine._prepare_bulk_document_with_indexes_sync

    def failing(self: SQLiteEngine, document: dict[str, Any], **kwargs: Any) -> Any:
        if "unpreparable" in document:
            raise ValueError("cannot prepare this document in a batch")
        return prepare(self, document, **kwargs)

    monkeypatch.setattr(SQLiteEngine, "_prepare_bulk_document_with_indexes_sync", failing)
    db = client["t"]
    await db["c"].insert_one({"_id": "old"})
    commits.clear()
    # a0-a2 are stored as a batch; the one after the invalid id ("b" onwards) fails whole.
    reply = await insert(
        db,
        [
            *({"_id": f"a{n}"} for n in range(3)),
            {"_id": ["an array"]},
            {"_id": "b"},
            {"_id": "u", "unpreparable": 1},
            {"_id": "old"},
            {"_id": "c"},
        ],
        ordered=False,
    )
    assert reply["n"] == 6
    assert errors_of(reply) == [
        {"index": 3, "code": 53, "errmsg": "The '_id' value cannot be of type array"},
        duplicate(6, {"_id": "old"}, {"_id": 1}),
    ]
    assert await stored_ids(db) == ["a0", "a1", "a2", "b", "c", "old", "u"]
    assert len(commits) == 1 + 4  # a0-a2 together, then b, u, old (refused) and c one by one
    ordered = await insert(
        db, [{"_id": "d"}, {"_id": "v", "unpreparable": 1}, {"_id": "a0"}, {"_id": "f"}], True
    )
    assert ordered["n"] == 2
    assert errors_of(ordered) == [duplicate(2, {"_id": "a0"}, {"_id": 1})]
    assert await stored_ids(db) == ["a0", "a1", "a2", "b", "c", "d", "old", "u", "v"]


async def test_a_document_s_ttl_entries_are_replaced_through_an_index(tmp_path: Path) -> None:
    """Inserts and updates delete a document's TTL entries by collection and document: with
    the patch SQLite finds them by index instead of reading every entry of the collection,
    and the entries (and what expires) stay the same."""
    path = tmp_path / "db.sqlite"
    index_ttl_entries_by_document()
    async with served(path) as mongo:
        coll = mongo["t"]["c"]
        await coll.create_index([("expireAt", ASCENDING)], expireAfterSeconds=0)
        later = datetime.now(UTC) + timedelta(days=1)
        await coll.insert_many([{"_id": f"d{n}", "expireAt": later} for n in range(20)])
        past = datetime.now(UTC) - timedelta(seconds=1)
        await coll.update_one({"_id": "d3"}, {"$set": {"expireAt": past}})
        await coll.insert_one({"_id": "new", "expireAt": later})  # purges what has expired
        assert await coll.count_documents({}) == 20
        assert await coll.find_one({"_id": "d3"}) is None
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM ttl_index_entries").fetchone() == (20,)
        plan = conn.execute(
            "EXPLAIN QUERY PLAN DELETE FROM ttl_index_entries "
            "WHERE collection_id = 1 AND storage_key = 'k'"
        ).fetchall()
    assert any("USING COVERING INDEX storypost_ttl_storage" in row[-1] for row in plan), plan
