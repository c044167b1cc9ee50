"""Indexes: an SQLite expression index for every MongoDB index and for `_id`, and mongoeco's
per-field probes answered from indexes."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from storypost_cli.embedded_mongo.patching import (
    TAG,
    UNIFORM_SORT_TYPES,
    _literal,
    _typed_value,
    replace_once,
)


def index_ids_of_every_collection() -> None:
    """Gives `_id` the SQLite index that mongoeco's reads by `_id` can use.

    mongoeco 4.11 looks a bare `find_one({_id: X})` up by its storage key, but a find with
    a limit above one, an `$in` of ids, or `_id` plus another condition (the outbox relay's
    `{_id, outboxPending}`, a quota slot's `{_id, "slots.post"}`) becomes
    `json_type(document, '$._id') = 'text' AND json_extract(document, '$._id') = ?` over
    every document of the collection: 9 ms at 8,000 posts, growing with them. One index on
    those two expressions over the documents table serves every collection (created once,
    when the engine opens its file); the query and its answers stay the same.
    """
    _create_on_open(
        "index_ids_of_every_collection",
        'CREATE INDEX IF NOT EXISTS "storypost_id" '
        f"ON documents(db_name, coll_name, {_typed_value('$._id')})",
    )


def _create_on_open(patch: str, statement: str) -> None:
    """Runs `statement` (a CREATE INDEX IF NOT EXISTS) each time mongoeco's SQLite engine
    opens its file. `patch` names the patch: replace_once wraps `_connect_sync` once per
    name, so each patch's statement runs once at every open."""
    from mongoeco.engines.sqlite import SQLiteEngine

    def wrap(original: Any) -> Callable[[Any], None]:
        def connect(self: Any) -> None:
            original(self)
            with self._lock:
                conn = self._require_connection()
                conn.execute(statement)
                if not conn.in_transaction:
                    conn.commit()

        return connect

    wrap.__qualname__ = f"{patch}.<locals>.wrap"
    replace_once(SQLiteEngine, "_connect_sync", wrap)


def index_name(kind: str, *parts: str) -> str:
    """The SQLite name of an index storypost adds: its kind and a digest of what it covers."""
    return f"storypost_{kind}_" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def _namespace(db_name: str, coll_name: str) -> str:
    return f"db_name = {_literal(db_name)} AND coll_name = {_literal(coll_name)}"


def _add_expression_indexes(conn: Any, db_name: str, coll_name: str, paths: list[str]) -> None:
    """The fields' index and each field's type-and-value index, over the collection's rows."""
    statements = [
        (index_name("px", db_name, coll_name, *paths),
         ", ".join(f"json_extract(document, {_literal(path)})" for path in paths)),
    ] + [
        (index_name("ptx", db_name, coll_name, path), _typed_value(path))
        for path in paths
    ]  # fmt: skip
    # Earlier versions' indexes over every collection: type only (SQLite may pick it over
    # the others), the fields, type and value.
    legacy = [index_name("x", db_name, coll_name, *paths)] + [
        index_name(kind, db_name, coll_name, path) for path in paths for kind in ("t", "tx")
    ]
    for old_name in legacy:
        conn.execute(f'DROP INDEX IF EXISTS "{old_name}"')
    for sqlite_name, columns in statements:
        conn.execute(_partial_index(sqlite_name, db_name, coll_name, columns))


def _partial_index(name: str, db_name: str, coll_name: str, columns: str) -> str:
    """The statement creating index `name` on `columns` over one collection's rows."""
    # Names are hex digests; paths are quoted literals (mongoeco's own format).
    return (
        f'CREATE INDEX IF NOT EXISTS "{name}" ON documents(db_name, coll_name, {columns}) '
        f"WHERE {_namespace(db_name, coll_name)}"
    )


def _confine_physical_index(conn: Any, db_name: str, coll_name: str, index: str) -> None:
    """Remakes mongoeco's SQLite index for a MongoDB index as one over its collection only.

    Same name and columns, so mongoeco's catalog and its drops still find it; a query can
    use it only with its collection's `db_name` and `coll_name`, the only rows it could
    have matched anyway.
    """
    row = conn.execute(
        "SELECT physical_name FROM indexes WHERE db_name = ? AND coll_name = ? AND name = ?",
        (db_name, coll_name, index),
    ).fetchone()
    if row is None or row[0] is None:
        return
    found = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (row[0],)
    ).fetchone()
    if found is None or found[0] is None or " WHERE " in found[0]:
        return
    # mongoeco's physical names are `idx_` and a hex digest: nothing to quote inside.
    conn.execute(f'DROP INDEX "{row[0]}"')
    conn.execute(f"{found[0]} WHERE {_namespace(db_name, coll_name)}")


def add_sqlite_indexes_for_mongo_indexes() -> None:
    """Gives every MongoDB index an SQLite expression index that mongoeco's queries can use.

    mongoeco 4.11 turns an equality filter on a field into
    `json_extract(document, '$.field') = ?` over the rows of the collection, and before that
    asks whether the field holds an array anywhere (`json_type(document, '$.field')`): both
    read every document of the collection, so a lookup by organization and UUID took 6 ms
    at 3,000 documents and grew with the data. SQLite uses an index on an expression when a
    query contains that same expression, so when an index on fields f1..fn is created, an
    SQLite index on `(db_name, coll_name, json_extract(document, '$.f1'), ...)` and one on
    each field's `(json_type, json_extract)` are created beside it (same name each time:
    created once). The type index carries the value too: mongoeco's equality SQL is
    `json_type(...) = 'text' AND json_extract(...) = ?`, and an index on the type alone
    looks exactly as good to SQLite's planner (no statistics) while matching every row
    whose field is a string. They change how rows are found, never which: the query and
    mongoeco's own matching are the same. Indexes of other kinds (text, geo, hashed) get
    none.

    Every index here, and mongoeco's own for the MongoDB index, is partial: it holds only
    its collection's rows (`WHERE db_name = .. AND coll_name = ..`, which SQLite matches
    against the query's bound `db_name = ? AND coll_name = ?`). mongoeco puts every
    collection in one `documents` table, and a plain index there is written (its JSON
    expressions evaluated) on every write to any collection: with storypost's 36 MongoDB
    indexes that was 130 SQLite indexes per write, ~46 MB/s of database writes under
    bench/load.py. Indexes of earlier versions that span every collection are replaced.
    """
    from mongoeco.engines.sqlite import SQLiteEngine
    from mongoeco.engines.sqlite_query import json_path_for_field

    def wrap(original: Any) -> Callable[..., str]:
        def create_index(self: Any, db_name: str, coll_name: str, keys: Any, *args: Any) -> str:
            name: str = original(self, db_name, coll_name, keys, *args)
            fields = [field for field, direction in keys if direction in (1, -1)]
            if not fields or len(fields) != len(keys):
                return name
            paths = [json_path_for_field(field) for field in fields]
            with self._lock:
                conn = self._require_connection()
                _add_expression_indexes(conn, db_name, coll_name, paths)
                _confine_physical_index(conn, db_name, coll_name, name)
                if not conn.in_transaction:
                    conn.commit()
            return name

        return create_index

    replace_once(SQLiteEngine, "_create_index_sync", wrap)


def report_failure(done: Future[None]) -> None:
    """Prints why a background step of the launcher failed (its log is the supervisor's)."""
    error = done.exception()
    if error is not None:
        print(f"embedded mongo: {error!r}", file=sys.stderr, flush=True)


# How often, and how far apart, a probe index's builder tries to find the engine idle.
BUILD_TRIES = 600


BUILD_RETRY_SECONDS = 0.05


class ProbeIndexes:
    """Builds the indexes that answer mongoeco's probes, once each, beside the engine.

    One thread, with a connection of its own per index: the engine's connection may be
    inside a transaction (a probe runs in mongoeco's read savepoint, or inside a write), and
    a DDL statement failing there (the write lock taken) could roll it back. The builder
    holds the engine's lock while it builds: in WAL mode a transaction that has read cannot
    write once another connection has committed (SQLite answers "database is locked" at
    once, whatever the busy timeout), so an index committed in the middle of an engine
    operation failed that operation (seen as 500s of 50 racing identical schedule calls).
    The probes scan until the index is there.
    """

    def __init__(self) -> None:
        self._builder = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="storypost-probe-indexes"
        )

    def ensure(self, engine: Any, db_name: str, coll_name: str, name: str, columns: str) -> None:
        asked: set[str] = engine.__dict__.setdefault("_storypost_probe_indexes", set())
        if name in asked or engine._path == ":memory:":
            return
        asked.add(name)
        statement = _partial_index(name, db_name, coll_name, columns)
        self._builder.submit(self._build, engine, statement).add_done_callback(report_failure)

    @staticmethod
    def _build(engine: Any, statement: str) -> None:
        # Under the engine's lock and only while its connection holds no transaction (a
        # session's transaction spans several operations): then no engine operation has read
        # without having written yet.
        for _ in range(BUILD_TRIES):
            with engine._lock:
                current = engine._connection
                if current is None or not current.in_transaction:
                    with contextlib.closing(sqlite3.connect(engine._path, timeout=30)) as conn:
                        conn.execute(statement)
                        conn.commit()
                    return
            time.sleep(BUILD_RETRY_SECONDS)
        raise TimeoutError(f"the engine stayed inside a transaction; not built: {statement}")


def _tagged_type_probe(
    indexes: ProbeIndexes, engine: Any, db_name: str, coll_name: str, field: str, value_type: str
) -> bool:
    """mongoeco's `_field_contains_tagged_value_type_in_collection`, from an index."""
    from mongoeco.engines.sqlite_query import json_path_for_field

    key = (db_name, coll_name, f"tagged_type:{field}:{value_type}")
    if key in engine._collection_features_cache:
        return bool(engine._collection_features_cache[key])
    tag_path = json_path_for_field(field) + TAG
    expression = f"json_extract(document, {_literal(tag_path)})"
    indexes.ensure(
        engine, db_name, coll_name, index_name("ptag", db_name, coll_name, tag_path), expression
    )
    # The path is a quoted literal (mongoeco's own format), so the index can match it.
    query = f"SELECT 1 FROM documents WHERE db_name = ? AND coll_name = ? AND {expression} = ?"  # noqa: S608
    row = (
        engine._require_connection()
        .execute(query + " LIMIT 1", (db_name, coll_name, value_type))
        .fetchone()
    )
    engine._collection_features_cache[key] = row is not None
    return row is not None


def _uniform_sort_type_probe(
    indexes: ProbeIndexes, engine: Any, db_name: str, coll_name: str, field: str
) -> str | None:
    """mongoeco's `_field_has_uniform_scalar_sort_type_in_collection`: counts by JSON type
    from the field's type-and-value index instead of one pass over every document."""
    from mongoeco.engines.sqlite_query import json_path_for_field

    key = (db_name, coll_name, f"uniform_scalar_sort_type:{field}")
    if key in engine._collection_features_cache:
        cached = engine._collection_features_cache[key]
        return cached if isinstance(cached, str) else None
    # The same index (name and columns) as an indexed field's type-and-value index.
    path = json_path_for_field(field)
    index = index_name("ptx", db_name, coll_name, path)
    indexes.ensure(engine, db_name, coll_name, index, _typed_value(path))
    conn = engine._require_connection()

    def count(condition: str) -> int:
        # `condition` compares the quoted path's type with quoted type names.
        row = conn.execute(
            "SELECT COUNT(*) FROM documents WHERE db_name = ? AND coll_name = ?"  # noqa: S608
            + condition,
            (db_name, coll_name),
        ).fetchone()
        return int(row[0]) if row else 0

    total = count("")
    found: str | bool = False
    for kind, types in UNIFORM_SORT_TYPES.items():
        listed = ", ".join(_literal(name) for name in types)
        if total and count(f" AND json_type(document, {_literal(path)}) IN ({listed})") == total:
            found = kind
            break
    engine._collection_features_cache[key] = found
    return found if isinstance(found, str) else None


def _sort_check_as_reads_translate(
    engine: Any, db_name: str, coll_name: str, plan: Any, sort: Any
) -> bool:
    """mongoeco's own `_sort_requires_python`, with the filter translated as its reads
    translate it (so the patched, indexable SQL serves this check too)."""
    from mongoeco.engines._sqlite_plan_heuristics import sort_requires_python
    from mongoeco.engines.sqlite_query import json_path_for_field, type_expression_sql

    return bool(
        sort_requires_python(
            db_name=db_name,
            coll_name=coll_name,
            plan=plan,
            sort=sort,
            plan_has_array_traversing_paths=engine._plan_has_array_traversing_paths,
            translate_query_plan=lambda node: engine._translate_query_plan_with_multikey(
                db_name, coll_name, node
            ),
            field_traverses_array_in_collection=engine._field_traverses_array_in_collection,
            field_contains_tagged_bytes_in_collection=engine._field_contains_tagged_bytes_in_collection,
            field_contains_tagged_undefined_in_collection=engine._field_contains_tagged_undefined_in_collection,
            fetchone=lambda sql, params: (
                engine._require_connection().execute(sql, params).fetchone()
            ),
            type_expression_sql=type_expression_sql,
            json_path_for_field=json_path_for_field,
        )
    )


def answer_field_probes_from_indexes() -> None:
    """Answers mongoeco's per-field probes from SQLite indexes instead of reading every
    document of the collection.

    Before running a filter or a sort in SQL, mongoeco 4.11 asks of each field in it
    whether any document of the collection holds a tagged `bytes` or `undefined` value
    there, or only numbers, strings or booleans (a count over every document). Each answer
    is cached only until the next write to the collection, so under load every poll asked
    again: the scheduler's claim of due posts ran four such scans (12 ms of CPU each at
    3,000 posts) before its query. Here the first probe of a field asks for the index that
    answers it (the tagged type, `"$mongoeco".type`, and the field's `json_type`, which an
    indexed field's type-and-value index already is), partial to its collection like the
    others, and the probes' SQL names the field's path as a literal (mongoeco binds the
    tagged path as a parameter, which no index can match); its sort check translates the
    filter as its reads do. The questions and their answers are mongoeco's; only how the
    rows are found changes. (Its array probes are left as they are: with these wrapped too,
    an account lease in account-svc stopped matching under the test suite, for a reason not
    found; an indexed field's array probe already reads its type-and-value index.)
    """
    from mongoeco.engines.sqlite import SQLiteEngine

    def wrap(original: Any) -> Callable[..., bool]:
        indexes = ProbeIndexes()

        def tagged_type(
            self: Any, db_name: str, coll_name: str, field: str, value_type: str
        ) -> bool:
            return _tagged_type_probe(indexes, self, db_name, coll_name, field, value_type)

        def uniform_sort_type(self: Any, db_name: str, coll_name: str, field: str) -> str | None:
            return _uniform_sort_type_probe(indexes, self, db_name, coll_name, field)

        SQLiteEngine._field_has_uniform_scalar_sort_type_in_collection = uniform_sort_type  # type: ignore[method-assign]
        SQLiteEngine._sort_requires_python = _sort_check_as_reads_translate  # type: ignore[method-assign,assignment]
        return tagged_type

    replace_once(SQLiteEngine, "_field_contains_tagged_value_type_in_collection", wrap)


def index_ttl_entries_by_document() -> None:
    """Gives mongoeco's TTL entries the SQLite index that its per-document deletes need.

    mongoeco 4.11 keeps one row per document and TTL index in `ttl_index_entries` (primary
    key: collection, index name, document). Each insert and each update of a document in a
    collection with a TTL index first deletes that document's rows by collection and document
    alone, which neither the primary key nor the expiry index serves: SQLite read every TTL
    row of the collection, twice per document (measured: an insert of webhook delivery
    records, which expire, cost 0.2 ms more per record for each 1,000 records stored; 2 ms
    at 10,000). One index on (collection, document), created when the engine opens its file,
    serves those deletes; what they delete stays the same.
    """
    _create_on_open(
        "index_ttl_entries_by_document",
        'CREATE INDEX IF NOT EXISTS "storypost_ttl_storage" '
        "ON ttl_index_entries(collection_id, storage_key)",
    )
