"""The embedded MongoDB's shortcuts still refuse every duplicate key and match exactly."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from bson.decimal128 import Decimal128
from mongoeco import AsyncMongoClient as MongoecoClient
from mongoeco._change_streams.hub import ChangeStreamHub
from mongoeco.engines._sqlite_reader import SQLiteScanReader
from mongoeco.engines.semantic_core import compile_find_semantics
from mongoeco.engines.sqlite import SQLiteEngine
from mongoeco.errors import OperationFailure as MongoecoOperationFailure
from mongoeco.wire.proxy import AsyncMongoEcoProxyServer
from pymongo import ASCENDING, AsyncMongoClient, IndexModel
from pymongo.errors import DuplicateKeyError, OperationFailure

from storypost_cli.embedded_mongo import (
    ProbeIndexes,
    add_sqlite_indexes_for_mongo_indexes,
    answer_field_probes_from_indexes,
    coalesce_change_dispatch,
    finish_one_document_reads_under_the_lock,
    index_ids_of_every_collection,
    index_name,
    match_scalars_without_array_branches,
    read_on_the_engine_connection,
    read_one_document_when_an_id_is_required,
    record_no_changes_while_nobody_watches,
    skip_decimal_scans_without_decimals,
    skip_full_scan_for_plain_ids,
    use_id_lookup_for_guarded_writes,
    use_sql_prefilter_for_compound_unique_indexes,
)
from tests.support.mongo import (
    count_scans,
    memory_mongo_server,
    plans_of,
    trace_sqlite_statements,
)


@asynccontextmanager
async def served_engine(
    path: Path,
) -> AsyncIterator[tuple[SQLiteEngine, AsyncMongoClient[dict[str, object]]]]:
    """A mongoeco wire server's engine on the SQLite file `path` and a client of the server,
    closed afterwards."""
    engine = SQLiteEngine(str(path))
    server = AsyncMongoEcoProxyServer(engine=engine, port=0)
    address = await server.start()
    mongo: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
        f"mongodb://127.0.0.1:{address.port}/?directConnection=true"
    )
    try:
        yield engine, mongo
    finally:
        await mongo.close()
        await server.close()


@asynccontextmanager
async def served(path: Path) -> AsyncIterator[AsyncMongoClient[dict[str, object]]]:
    """A client of a mongoeco wire server on the SQLite file `path`, closed afterwards."""
    async with served_engine(path) as (_, mongo):
        yield mongo


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[AsyncMongoClient[dict[str, object]]]:
    skip_full_scan_for_plain_ids()
    use_id_lookup_for_guarded_writes()
    use_sql_prefilter_for_compound_unique_indexes()
    async with served(tmp_path / "db.sqlite") as mongo:
        yield mongo


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
    scans = count_scans(monkeypatch)
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
    scans = count_scans(monkeypatch)
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
    # A number beside a string (a slot) is compared as mongoeco's scan compares (1 and 1.0
    # are equal), among the documents holding that string only.
    scans.clear()
    await coll.insert_one({"org": "o9", "key": {"uuid": 1}})
    with pytest.raises(DuplicateKeyError):
        await coll.insert_one({"org": "o9", "key": {"uuid": 1.0}})
    await coll.insert_one({"org": "o8", "key": {"uuid": 1.0}})
    assert scans == []
    # Keys without any string keep the scan.
    await coll.insert_one({"org": 9, "key": {"uuid": 1}})
    with pytest.raises(DuplicateKeyError):
        await coll.insert_one({"org": 9.0, "key": {"uuid": 1.0}})
    assert scans, "keys without a string must still be compared by the scan"


def as_if_a_stream_were_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write records its change and asks for a dispatch, as while a stream is open
    (`record_no_changes_while_nobody_watches`, once installed, records none otherwise)."""
    monkeypatch.setattr(ChangeStreamHub, "should_publish_events", lambda _hub: True)


async def test_committed_changes_reach_the_hub_in_batches_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    coalesce_change_dispatch()
    as_if_a_stream_were_open(monkeypatch)
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
    async with served(tmp_path / "db.sqlite") as mongo:
        coll = mongo["t"]["changes"]
        for n in range(40):
            await coll.insert_one({"_id": f"doc-{n}"})
        await coll.update_one({"_id": "doc-0"}, {"$set": {"seen": True}})
        async with asyncio.timeout(10):
            while sum(len(delivered) for _, delivered in dispatches) < 41:
                await asyncio.sleep(0.05)
    # Every change reached the hub, in far fewer dispatches than writes, none on the loop.
    assert len(dispatches) <= 10
    assert {name.split("_")[0] for name, _ in dispatches} == {"storypost-changes"}
    # Each write's change, once and in order.
    sequences = [change.sequence for _, delivered in dispatches for change in delivered]
    assert sequences == sorted(set(sequences)) and len(sequences) >= 41


async def test_the_engine_closes_only_after_a_running_change_dispatch_and_drops_later_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deferred dispatch runs on a thread of its own: the engine's disconnect must wait for
    it (it closes the connections the dispatch uses) and a dispatch due after it must not
    touch the closed engine."""
    coalesce_change_dispatch()
    as_if_a_stream_were_open(monkeypatch)
    started = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []
    closed_at_call: list[bool] = []
    original = SQLiteEngine.dispatch_committed_changes

    def held(self: SQLiteEngine, consumer_id: str, consumer: Callable[[Any], None]) -> None:
        closed_at_call.append(self._connection is None)
        started.set()
        release.wait(10)
        try:
            original(self, consumer_id, consumer)
        except BaseException as error:  # mongoeco would swallow it into the hub
            errors.append(error)
            raise

    monkeypatch.setattr(SQLiteEngine, "dispatch_committed_changes", held)
    engine = SQLiteEngine(str(tmp_path / "db.sqlite"))
    server = AsyncMongoEcoProxyServer(engine=engine, port=0)
    address = await server.start()
    mongo: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
        f"mongodb://127.0.0.1:{address.port}/?directConnection=true"
    )
    try:
        await mongo["t"]["changes"].insert_one({"_id": "first"})
        assert await asyncio.to_thread(started.wait, 10), "the deferred dispatch never ran"
        await mongo.close()
        closing = asyncio.create_task(server.close())
        await asyncio.sleep(0.3)
        assert not closing.done(), "the engine closed under a running dispatch"
    finally:
        release.set()
    await asyncio.wait_for(closing, 10)
    assert errors == [] and engine._connection is None
    # A write whose dispatch comes due after the close (0.1 s after the write, the close is
    # quicker unless the machine stalls): dropped, the closed engine untouched.
    closed_at_call.clear()
    release.clear()
    second = SQLiteEngine(str(tmp_path / "db.sqlite"))
    server = AsyncMongoEcoProxyServer(engine=second, port=0)
    address = await server.start()
    mongo = AsyncMongoClient(f"mongodb://127.0.0.1:{address.port}/?directConnection=true")
    await mongo["t"]["changes"].insert_one({"_id": "second"})
    await mongo.close()
    await server.close()
    release.set()
    await asyncio.sleep(0.5)  # well past the dispatch's delay
    assert True not in closed_at_call and errors == []


def outbox_rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM change_outbox_identities").fetchone()[0])


async def test_writes_record_no_changes_while_nobody_watches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the wire server (which serves no change stream at all) a write records nothing
    in the change outbox and asks for no dispatch; every write is applied."""
    coalesce_change_dispatch()
    record_no_changes_while_nobody_watches()
    dispatched: list[str] = []
    original = SQLiteEngine.dispatch_committed_changes

    def recording(self: SQLiteEngine, consumer_id: str, consumer: Callable[[Any], None]) -> None:
        dispatched.append(consumer_id)
        original(self, consumer_id, consumer)

    monkeypatch.setattr(SQLiteEngine, "dispatch_committed_changes", recording)
    path = tmp_path / "db.sqlite"
    async with served(path) as mongo:
        coll = mongo["t"]["changes"]
        with pytest.raises(OperationFailure, match="changeStream"):
            await coll.watch()
        for n in range(20):
            await coll.insert_one({"_id": f"quiet-{n}"})
        await coll.update_many({}, {"$set": {"seen": True}})
        await coll.delete_one({"_id": "quiet-0"})
        await asyncio.sleep(0.3)  # past the dispatch delay
        assert outbox_rows(path) == 0
        assert dispatched == []
        assert await coll.count_documents({"seen": True}) == 19


async def test_a_stream_sees_what_is_written_while_it_watches_and_refuses_older_tokens(
    tmp_path: Path,
) -> None:
    """Where a stream can be opened (mongoeco's own client), writes while it watches are
    delivered as before, and a resume token older than unrecorded writes is refused as a
    gap would have it refused."""
    coalesce_change_dispatch()
    record_no_changes_while_nobody_watches()
    path = tmp_path / "db.sqlite"
    async with MongoecoClient(SQLiteEngine(str(path))) as client:
        coll = client["t"]["changes"]

        async def first_change(resume_after: Any = None, *, write: str) -> dict[str, Any]:
            stream = await coll.watch(resume_after=resume_after)
            try:
                await coll.insert_one({"_id": write})
                async with asyncio.timeout(10):
                    change: dict[str, Any] = await stream.next()
                return change
            finally:
                stream.close()

        await coll.insert_one({"_id": "before"})
        seen = await first_change(write="watched")
        assert seen["documentKey"] == {"_id": "watched"}
        recorded = outbox_rows(path)
        await coll.insert_one({"_id": "quiet"})  # nobody watches: not recorded
        assert outbox_rows(path) == recorded
        with pytest.raises(MongoecoOperationFailure, match="no longer available"):
            await first_change(seen["_id"], write="refused")
        seen = await first_change(write="again")
        assert seen["documentKey"] == {"_id": "again"}
        later = await first_change(seen["_id"], write="later")
        assert later["documentKey"] == {"_id": "later"}


@pytest.fixture
async def indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[AsyncMongoClient[dict[str, object]], Path, list[str]]]:
    """A server with every patch, and the SQL statements its engine runs."""
    path = tmp_path / "db.sqlite"
    skip_decimal_scans_without_decimals(path)
    add_sqlite_indexes_for_mongo_indexes()
    index_ids_of_every_collection()
    statements = trace_sqlite_statements(monkeypatch)
    async with served(path) as mongo:
        yield mongo, path, statements


async def test_lookups_by_indexed_fields_use_sqlite_indexes_and_find_the_same(
    indexed: tuple[AsyncMongoClient[dict[str, object]], Path, list[str]],
) -> None:
    mongo, path, _statements = indexed
    coll = mongo["t"]["renderings"]
    await coll.create_indexes(
        [IndexModel([("organizationId", ASCENDING), ("renderingId", ASCENDING)], unique=True)]
    )
    await coll.create_index([("tags", ASCENDING)])
    docs: list[dict[str, object]] = [
        {"_id": f"r{n}", "organizationId": f"o{n % 10}", "renderingId": f"id{n}"}
        for n in range(300)
    ]
    docs += [
        {"_id": "arr", "organizationId": ["o1", "o2"], "renderingId": "idA"},
        {"_id": "tagged", "tags": ["a", "b"], "renderingId": "idT"},
        {"_id": "bare", "renderingId": "idB"},
    ]
    await coll.insert_many(docs)
    # The same answers as a scan gives, arrays and missing fields included.
    assert [d["_id"] for d in await coll.find({"organizationId": "o1", "renderingId": "id1"})
            .to_list()] == ["r1"]  # fmt: skip
    assert [d["_id"] for d in await coll.find({"organizationId": "o2", "renderingId": "idA"})
            .to_list()] == ["arr"]  # fmt: skip
    assert await coll.count_documents({"organizationId": "o2"}) == 31
    assert [d["_id"] for d in await coll.find({"tags": "a"}).to_list()] == ["tagged"]
    assert await coll.count_documents({"organizationId": "o3"}) == 30
    assert await coll.count_documents({"organizationId": None}) == 2
    with sqlite3.connect(path) as conn:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT document FROM documents WHERE db_name = 't' AND "
            "coll_name = 'renderings' AND json_extract(document, '$.organizationId') = 'o5' "
            "AND json_extract(document, '$.renderingId') = 'id5'"
        ).fetchall()
    assert "USING INDEX storypost_px_" in str(plan)
    # Creating the same indexes again (every service start) adds nothing.
    with sqlite3.connect(path) as conn:
        before = conn.execute("SELECT count(*) FROM sqlite_master WHERE type='index'").fetchone()
    await coll.create_index([("tags", ASCENDING)])
    with sqlite3.connect(path) as conn:
        after = conn.execute("SELECT count(*) FROM sqlite_master WHERE type='index'").fetchone()
    assert before == after


def index_entries(path: Path) -> int:
    """Entries in the documents table's indexes (SQLite's dbstat), but for its primary key and
    the `_id` index every collection shares."""
    with sqlite3.connect(path) as conn:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'documents' "
                "AND name != 'storypost_id' AND name NOT LIKE 'sqlite_autoindex%'"
            )
        ]
        # An index B-tree keeps entries in its interior pages too: every cell counts.
        query = "SELECT coalesce(sum(ncell), 0) FROM dbstat WHERE name = ?"
        return sum(conn.execute(query, (name,)).fetchone()[0] for name in names)


async def test_writes_to_one_collection_leave_the_indexes_of_others_alone(
    indexed: tuple[AsyncMongoClient[dict[str, object]], Path, list[str]],
) -> None:
    mongo, path, statements = indexed
    posts = mongo["t"]["posts"]
    await posts.create_index([("organizationId", ASCENDING), ("uuid", ASCENDING)], unique=True)
    await posts.insert_many(
        [{"_id": f"p{n}", "organizationId": "o", "uuid": f"u{n}"} for n in range(50)]
    )
    before = index_entries(path)
    assert before >= 50 * 3  # the fields' index and each field's type-and-value index
    blobs = mongo["t"]["temp_blobs"]
    await blobs.insert_many([{"_id": f"b{n}", "organizationId": "o"} for n in range(300)])
    await blobs.update_many({}, {"$set": {"uuid": "u1"}})
    assert index_entries(path) == before
    # The collection's own writes still reach its indexes, lookups use them, and the unique
    # key still refuses a duplicate.
    await posts.insert_one({"_id": "p50", "organizationId": "o", "uuid": "u50"})
    assert index_entries(path) > before
    statements.clear()
    assert [d["_id"] for d in await posts.find({"organizationId": "o", "uuid": "u7"}).to_list()] \
        == ["p7"]  # fmt: skip
    plans = plans_of(path, statements, "'u7'")
    assert plans and all("USING INDEX storypost_p" in plan for plan in plans), plans
    with pytest.raises(DuplicateKeyError):
        await posts.insert_one({"_id": "p51", "organizationId": "o", "uuid": "u7"})


async def test_indexes_of_earlier_versions_over_every_collection_are_replaced(
    indexed: tuple[AsyncMongoClient[dict[str, object]], Path, list[str]],
) -> None:
    mongo, path, _statements = indexed
    await mongo["t"]["posts"].insert_one({"_id": "p0", "uuid": "u0"})
    legacy = index_name("tx", "t", "posts", "$.uuid")
    with sqlite3.connect(path) as conn:
        conn.execute(
            f'CREATE INDEX "{legacy}" ON documents(db_name, coll_name, '
            "json_type(document, '$.uuid'), json_extract(document, '$.uuid'))"
        )
    # Every service start creates its indexes again.
    await mongo["t"]["posts"].create_index([("uuid", ASCENDING)])
    with sqlite3.connect(path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert legacy not in names
    assert index_name("ptx", "t", "posts", "$.uuid") in names


async def test_reads_by_id_with_more_conditions_use_the_id_index_and_find_the_same(
    indexed: tuple[AsyncMongoClient[dict[str, object]], Path, list[str]],
) -> None:
    mongo, path, statements = indexed
    coll = mongo["t"]["posts"]
    await coll.create_index([("outboxPending", ASCENDING)], sparse=True)
    docs: list[dict[str, object]] = [
        {"_id": f"p{n}", "outboxPending": True} if n % 7 == 0 else {"_id": f"p{n}"}
        for n in range(300)
    ]
    await coll.insert_many([*docs, {"_id": 7, "outboxPending": True}, {"_id": {"k": "p14"}}])
    statements.clear()
    # The outbox relay's and the quota's form: `_id` plus a condition, a limit above one.
    found = await coll.find({"_id": "p14", "outboxPending": True}).limit(5).to_list()
    assert [d["_id"] for d in found] == ["p14"]
    plans = plans_of(path, statements, "'p14'")
    assert plans and all("USING INDEX storypost_id " in plan for plan in plans), plans
    assert await coll.find({"_id": "p15", "outboxPending": True}).limit(5).to_list() == []
    assert await coll.count_documents({"_id": "p15", "outboxPending": {"$exists": False}}) == 1
    ids = await coll.find({"_id": {"$in": ["p1", "p2", "nope"]}}).limit(5).to_list()
    assert sorted(str(d["_id"]) for d in ids) == ["p1", "p2"]
    assert [d["_id"] for d in await coll.find({"_id": 7.0}).limit(5).to_list()] == [7]
    assert [d["_id"] for d in await coll.find({"_id": {"k": "p14"}}).limit(5).to_list()] == [
        {"k": "p14"}
    ]
    # A field's equality (`json_type = 'text' AND json_extract = ?`) is looked up by both
    # expressions in the type-and-value index, not in one that matches every string.
    statements.clear()
    await coll.create_index([("status", ASCENDING), ("kind", ASCENDING)])
    await coll.insert_many(
        [{"_id": f"s{n}", "status": f"st{n % 3}", "kind": "k"} for n in range(30)]
    )
    assert await coll.count_documents({"status": "st1"}) == 10
    plans = plans_of(path, statements, "'st1'")
    assert plans and all(
        "USING INDEX storypost_ptx_" in plan and "<expr>=? AND <expr>=?" in plan for plan in plans
    ), plans


async def test_reads_by_id_that_mongoeco_filters_in_python_read_one_document(
    indexed: tuple[AsyncMongoClient[dict[str, object]], Path, list[str]],
) -> None:
    # The story quota's read: `_id` plus a condition inside an array, which mongoeco
    # evaluates in Python, over every document of the collection without the patch.
    read_one_document_when_an_id_is_required()
    mongo, _, statements = indexed
    coll = mongo["t"]["quota"]
    docs: list[dict[str, object]] = [
        {"_id": f"q{n}", "slots": [{"post": f"p{n}"}, {"post": "shared"}]} for n in range(200)
    ]
    await coll.insert_many([*docs, {"_id": 5, "slots": [{"post": "numeric"}]}])
    statements.clear()
    assert await coll.find_one({"_id": "q3", "slots.post": "p3"}, {"_id": 1}) == {"_id": "q3"}
    assert await coll.find_one({"_id": "q3", "slots.post": "p4"}) is None
    assert await coll.find_one({"_id": "nope", "slots.post": "p4"}) is None
    assert await coll.count_documents({"_id": "q7", "slots.post": "shared"}, limit=1) == 1
    assert await coll.count_documents({"_id": "q7", "slots.post": "p8"}, limit=1) == 0
    assert [d["_id"] async for d in coll.find({"_id": "q9", "slots.post": "shared"})] == ["q9"]
    whole = [
        s
        for s in statements
        if "SELECT storage_key, document" in s and "'quota'" in s and "storage_key =" not in s
    ]
    assert whole == [], "a read by _id read the whole collection"
    # Without a plain `_id` (or with a numeric one) the filter still sees every document.
    assert await coll.count_documents({"slots.post": "shared"}) == 200
    assert await coll.find_one({"_id": 5.0, "slots.post": "numeric"}, {"_id": 1}) == {"_id": 5}


async def test_decimal_scans_are_skipped_until_a_decimal_is_stored(
    indexed: tuple[AsyncMongoClient[dict[str, object]], Path, list[str]],
) -> None:
    mongo, _path, statements = indexed
    coll = mongo["t"]["amounts"]
    await coll.insert_many([{"_id": n, "amount": n} for n in range(5)])
    statements.clear()
    assert await coll.count_documents({"amount": {"$gte": 3}}) == 2
    assert not [s for s in statements if "decimal" in s]
    # Once a Decimal is stored, mongoeco's own checks run again and answers stay exact.
    await coll.insert_one({"_id": 9, "amount": Decimal128("3.5")})
    statements.clear()
    assert await coll.count_documents({"amount": {"$gte": 3}}) == 3
    assert await coll.count_documents({"amount": {"$gt": 3.4, "$lt": 3.6}}) == 1
    assert [s for s in statements if "decimal" in s]


async def test_reads_of_many_documents_open_no_connection_and_keep_their_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_on_the_engine_connection()
    async with served(tmp_path / "db.sqlite") as mongo:
        coll = mongo["t"]["posts"]
        await coll.insert_many([{"_id": f"p{n}", "n": n} for n in range(50)])
        opened: list[object] = []
        connect = sqlite3.connect

        def counting(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            opened.append(args)
            conn: sqlite3.Connection = connect(*args, **kwargs)
            return conn

        monkeypatch.setattr(sqlite3, "connect", counting)
        for _ in range(5):
            assert len(await coll.find({"n": {"$gte": 10}}).to_list()) == 40
            assert [d["_id"] async for d in await coll.aggregate([{"$match": {"n": 3}}])] == ["p3"]
        assert opened == []
        # A cursor read in batches answers as of its start, writes meanwhile or not.
        cursor = coll.find({}).sort("n", 1).batch_size(10)
        first = await cursor.next()
        await coll.insert_one({"_id": "late", "n": -1})
        await coll.delete_one({"_id": "p49"})
        rest = [d["_id"] for d in await cursor.to_list()]
        assert first["_id"] == "p0" and rest == [f"p{n}" for n in range(1, 50)]


def collection_scans(path: Path, statements: list[str]) -> list[str]:
    """The statements that read every row of a collection (their plan searches the documents
    by namespace alone, or scans them, and reads the rows, not just an index's entries)."""
    reads = [
        s
        for s in statements
        if s.lstrip().startswith("SELECT") and "FROM documents" in " ".join(s.split())
    ]
    with sqlite3.connect(path) as conn:
        return [
            " ".join(s.split())[:200]
            for s in reads
            if any(
                ("(db_name=? AND coll_name=?)" in row[-1] or row[-1].startswith("SCAN documents"))
                and "COVERING" not in row[-1]
                for row in conn.execute("EXPLAIN QUERY PLAN " + s).fetchall()
            )
        ]


def scans_of(path: Path, statements: list[str], collection: str) -> list[str]:
    """The statements that read every row of `collection`."""
    namespace = f"coll_name = '{collection}'"
    return [s for s in collection_scans(path, statements) if namespace in s]


async def test_a_compound_unique_key_is_checked_through_its_index(
    indexed: tuple[AsyncMongoClient[dict[str, object]], Path, list[str]],
) -> None:
    """The check of a compound unique key reads the documents holding the key's strings,
    found by the collection's index, not every document of the collection."""
    skip_full_scan_for_plain_ids()
    use_sql_prefilter_for_compound_unique_indexes()
    mongo, path, statements = indexed
    blobs = mongo["t"]["blobs"]
    await blobs.create_index([("organizationId", ASCENDING), ("uuid", ASCENDING)], unique=True)
    await blobs.insert_many(
        [{"_id": f"b{n}", "organizationId": f"o{n % 3}", "uuid": f"u{n}"} for n in range(300)]
    )
    statements.clear()
    await blobs.insert_one({"_id": "new", "organizationId": "o1", "uuid": "fresh"})
    with pytest.raises(DuplicateKeyError):
        await blobs.insert_one({"_id": "twin", "organizationId": "o1", "uuid": "u1"})
    assert any("json_extract(document, '$.uuid')" in s for s in statements)
    assert collection_scans(path, statements) == []
    assert await blobs.count_documents({"organizationId": "o1", "uuid": "u1"}) == 1


async def test_the_pollers_queries_read_only_the_rows_they_match_and_find_the_same(
    indexed: tuple[AsyncMongoClient[dict[str, object]], Path, list[str]],
) -> None:
    match_scalars_without_array_branches()
    answer_field_probes_from_indexes()
    mongo, path, statements = indexed
    now = datetime(2026, 11, 27, 12, tzinfo=UTC)
    docs: list[dict[str, object]] = [
        {
            "_id": f"p{n}",
            "status": ["scheduled", "publishing", "executed", "failed"][n % 4],
            "dueAt": now + timedelta(minutes=n - 200),
            **({"outboxPending": True} if n % 9 == 0 else {}),
            **({"creditDueAt": now - timedelta(seconds=n)} if n % 50 == 0 else {}),
        }
        for n in range(400)
    ] + [{"_id": "bare"}, {"_id": "nulls", "status": None, "creditDueAt": None}]
    # The scheduler's claim and next due time, the relay's poll, the credit settler's.
    polls: list[tuple[dict[str, Any], list[tuple[str, int]] | None]] = [
        ({"outboxPending": True}, None),
        ({"status": {"$in": ["scheduled", "publishing"]}, "dueAt": {"$lte": now}}, [("dueAt", 1)]),
        ({"status": {"$in": ["scheduled", "publishing"]}, "dueAt": {"$gt": now}}, [("dueAt", 1)]),
        ({"creditDueAt": {"$lte": now}}, [("creditDueAt", 1)]),
    ]
    # And forms whose meaning the shortcut must keep: null matches a missing field.
    checks = [*polls, ({"status": None}, None), ({"status": {"$in": ["failed", None]}}, None)]
    indexes = [
        IndexModel([("status", ASCENDING), ("dueAt", ASCENDING)]),
        IndexModel([("outboxPending", ASCENDING)], sparse=True),
        IndexModel([("creditDueAt", ASCENDING)], sparse=True),
    ]

    async def answers(coll: Any) -> list[list[object]]:
        found = []
        for query, sort in checks:
            cursor = coll.find(query, sort=sort) if sort else coll.find(query)
            ids = [d["_id"] for d in await cursor.to_list()]
            found.append(ids if sort else sorted(ids))
        return found

    async with memory_mongo_server() as url:
        reference: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(url)
        try:
            for coll in (mongo["t"]["posts"], reference["t"]["posts"]):
                await coll.create_indexes(indexes)
                await coll.insert_many([dict(doc) for doc in docs])
            # A field's first probe asks for its index, built beside the engine: the polls
            # read every document until it is there, and none afterwards.
            for _attempt in range(50):
                statements.clear()
                for query, sort in polls:
                    await mongo["t"]["posts"].find(query, sort=sort).to_list()
                scans = scans_of(path, statements, "posts")
                if not scans:
                    break
                await asyncio.sleep(0.1)
            assert scans == []
            assert await answers(mongo["t"]["posts"]) == await answers(reference["t"]["posts"])
            # Arrays and tagged values where the shortcuts assume none: mongoeco's own SQL
            # again, with the same answers.
            odd: list[dict[str, object]] = [
                {"_id": "arr", "status": ["x", "scheduled"], "dueAt": now - timedelta(days=1)},
                {"_id": "flags", "outboxPending": [True, False]},
                {"_id": "bytes", "creditDueAt": b"\x01", "status": "failed"},
            ]
            for coll in (mongo["t"]["posts"], reference["t"]["posts"]):
                await coll.insert_many([dict(doc) for doc in odd])
            assert await answers(mongo["t"]["posts"]) == await answers(reference["t"]["posts"])
        finally:
            await reference.close()


async def test_a_probe_index_is_committed_between_engine_operations_never_inside_one(
    tmp_path: Path,
) -> None:
    """An engine operation that has read and then writes must not fail because a probe index
    was committed in between (WAL: "database is locked" at once, whatever the timeout)."""
    async with served_engine(tmp_path / "db.sqlite") as (engine, mongo):
        await mongo["t"]["posts"].insert_one({"_id": "p1", "n": 1})
        # mongoeco's change delivery commits on a connection of its own, after the write
        # (deferred by coalesce_change_dispatch when an earlier test installed it).
        await asyncio.sleep(0.5)
        name = index_name("ptest", "t", "posts", "$.n")
        builder = ProbeIndexes()
        with engine._lock:
            conn = engine._require_connection()
            conn.execute("BEGIN")
            conn.execute("SELECT COUNT(*) FROM documents").fetchone()
            builder.ensure(engine, "t", "posts", name, "json_extract(document, '$.n')")
            await asyncio.sleep(0.5)
            # The operation's write after its read: fails if the index was committed meanwhile.
            conn.execute("UPDATE documents SET document = document WHERE storage_key IS NOT NULL")
            conn.execute("COMMIT")

        def built() -> bool:
            with contextlib.closing(sqlite3.connect(tmp_path / "db.sqlite")) as check:
                found = check.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)
                ).fetchone()
            return found is not None

        for _ in range(100):
            if built():
                break
            await asyncio.sleep(0.05)
        assert built()


async def test_a_one_document_read_holds_no_snapshot_once_the_engine_lock_is_let_go(
    tmp_path: Path,
) -> None:
    """A write on the engine's connection after a `find_one` (whose reader closes later) must
    not fail because another connection committed in between (WAL: SQLITE_BUSY_SNAPSHOT)."""
    read_on_the_engine_connection()
    finish_one_document_reads_under_the_lock()
    path = tmp_path / "db.sqlite"
    async with served_engine(path) as (engine, mongo):
        await mongo["t"]["posts"].insert_many([{"_id": f"p{n}", "n": n} for n in range(5)])
        with contextlib.closing(sqlite3.connect(path)) as other:
            other.execute("CREATE TABLE elsewhere (x)")
            other.commit()
            # The read's first step, as mongoeco runs it: under the lock, then let go. A filter
            # SQL answers only in part (checked again in Python) leaves its statement open.
            one = compile_find_semantics({"$expr": {"$gte": ["$n", 0]}}, limit=1)
            reader = SQLiteScanReader(engine, "t", "posts", one)
            reader._open()
            # A commit of another connection (mongoeco's change delivery, for one).
            other.execute("INSERT INTO elsewhere VALUES (1)")
            other.commit()
        # Another operation's write on the engine's connection, before the reader closes.
        with engine._lock:
            conn = engine._require_connection()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        batch = reader.fetch(10, 1 << 20)
        assert [d["_id"] for d in batch.documents] == ["p0"] and batch.exhausted
        found = await mongo["t"]["posts"].find_one({"n": {"$mod": [3, 0]}, "_id": {"$ne": "p0"}})
        assert found == {"_id": "p3", "n": 3}
