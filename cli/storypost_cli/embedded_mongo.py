"""Runs the mongoeco wire server over a SQLite file on a loopback port until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import importlib.metadata
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import Path
from typing import Any

# The mongoeco release whose private internals the patches below were written and tested
# against. pyproject.toml pins exactly this one (`embedded` extra, requirements.lock); any
# other version is refused at start, before a patch could misfire on code that moved.
MONGOECO_VERSION = "4.11.0"
# The path suffix under which mongoeco's codec stores a tagged value's type.
TAG = '."$mongoeco".type'
# Every value SQLite's json_type() gives for a field that is present.
JSON_TYPES = "'null', 'true', 'false', 'integer', 'real', 'text', 'array', 'object'"
# mongoeco's uniform sort types: every document's field of these JSON types.
UNIFORM_SORT_TYPES = {"number": ("integer", "real"), "string": ("text",), "bool": ("true", "false")}


class MongoecoVersionError(RuntimeError):
    """The installed mongoeco is not the version the patches were written for."""


def check_mongoeco_version(found: str | None = None) -> str:
    """Returns the installed mongoeco version; raises MongoecoVersionError unless it is
    exactly MONGOECO_VERSION."""
    if found is None:
        try:
            found = importlib.metadata.version("mongoeco")
        except importlib.metadata.PackageNotFoundError:
            raise MongoecoVersionError(
                f"embedded mongo needs mongoeco {MONGOECO_VERSION}, and none is installed: "
                "run `make venv` (it installs requirements.lock) or "
                f"`pip install 'mongoeco[wire]=={MONGOECO_VERSION}'`"
            ) from None
    if found != MONGOECO_VERSION:
        raise MongoecoVersionError(
            f"embedded mongo needs mongoeco {MONGOECO_VERSION} exactly, found {found}: "
            "storypost_cli.embedded_mongo patches mongoeco's internals as they are in "
            f"{MONGOECO_VERSION}. Install that version (`make venv` installs requirements.lock, "
            f"or `pip install 'mongoeco[wire]=={MONGOECO_VERSION}'`); to move to {found}, check "
            "every patch against it (tests/unit/cli/test_embedded_mongo.py), then raise "
            "MONGOECO_VERSION and the pin in pyproject.toml together and run `make lock`."
        )
    return found


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m storypost_cli.embedded_mongo",
        description="Serve the MongoDB wire protocol from a SQLite file (development and tests).",
    )
    parser.add_argument("--path", type=Path, required=True, help="SQLite database file")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=27017, help="port to listen on (0: any)")
    return parser.parse_args(argv)


def replace_once(owner: Any, name: str, wrap: Callable[[Any], Any]) -> None:
    """Sets `owner.<name>` to `wrap(original)`: each patch below, however often it is called,
    wraps mongoeco's function once (the replacement lists the patches applied in
    `storypost_patches`; two patches of one function wrap one another)."""
    original = getattr(owner, name)
    applied: frozenset[str] = getattr(original, "storypost_patches", frozenset())
    if wrap.__qualname__ in applied:
        return
    replacement = wrap(original)
    replacement.storypost_patches = applied | {wrap.__qualname__}
    setattr(owner, name, replacement)


def skip_slow_optional_imports() -> None:
    """Keeps jsonschema (imported by mongoeco) from loading its optional IRI checker.

    `rfc3987_syntax` compiles an Earley grammar at import: measured 5-6 s of start-up here
    (mongoeco 4.11, 2 cores) against 1 s without it, for `iri` formats that no MongoDB
    validator of ours uses. Marked absent, jsonschema simply skips those formats.
    """
    if "rfc3987_syntax" not in sys.modules:
        # None in sys.modules is how Python spells "this module cannot be imported".
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]


def skip_full_scan_for_plain_ids() -> None:
    """Makes inserts O(1) instead of O(collection size) for non-numeric `_id`s.

    mongoeco 4.11's SQLite engine re-checks `_id` uniqueness on insert by loading every
    document of the collection, so that numeric ids that compare equal (1 and 1.0) collide.
    The indexed storage-key lookup just before that scan already finds every duplicate of a
    string, ObjectId or other non-numeric id, so for those the scan adds nothing but time
    (measured: ~58 µs per stored document per insert; a growing deliveries collection fell
    behind at 100 events/s). Numeric ids keep the scan. tests/unit/cli/test_embedded_mongo.py
    checks that duplicates are still refused either way.
    """
    from mongoeco.core.identity import id_contains_numeric_value
    from mongoeco.engines.sqlite import SQLiteEngine

    def wrap(original: Any) -> Callable[..., None]:
        def validate(
            self: SQLiteEngine,
            db_name: str,
            coll_name: str,
            document: dict[str, object],
            *,
            exclude_storage_key: str | None = None,
            skip_id_check: bool = False,
            scan_payload_id: bool = False,
        ) -> None:
            if (
                scan_payload_id
                and "_id" in document
                and not id_contains_numeric_value(document["_id"])
            ):
                scan_payload_id = False
            original(
                self,
                db_name,
                coll_name,
                document,
                exclude_storage_key=exclude_storage_key,
                skip_id_check=skip_id_check,
                scan_payload_id=scan_payload_id,
            )

        return validate

    replace_once(SQLiteEngine, "_validate_document_against_unique_indexes", wrap)


def use_id_lookup_for_guarded_writes() -> None:
    """Finds the target of `{_id: X, <more conditions>}` writes by its key, not by a scan.

    Every guarded change of ours (a status transition guarded by the old status, a lease
    claim guarded by the lease's end) filters on `_id` plus a condition. mongoeco 4.11
    looks only a bare `{_id: X}` up by its storage key; with any other condition it
    evaluates a JSON filter over every document of the collection (measured: ~38 ms per
    update at 1,000 posts, growing with the collection). Here the document is fetched by
    its key and the whole filter is checked on it with mongoeco's own matcher, so the
    answer is the same. Numeric ids keep the original path (1 and 1.0 are equal ids with
    different keys).
    """
    import mongoeco.engines.sqlite as sqlite_engine_module
    from mongoeco.core.query_plan import AndCondition

    def wrap(original: Any) -> Callable[..., tuple[str, dict[str, Any]] | None]:
        def select_first(
            engine: Any, db_name: str, coll_name: str, plan: Any, *, hint: Any = None
        ) -> tuple[str, dict[str, Any]] | None:
            if hint is None and isinstance(plan, AndCondition):
                document_id = plain_id(plan)
                if document_id is not NO_ID:
                    return _by_storage_key(engine, db_name, coll_name, document_id, plan)
            found: tuple[str, dict[str, Any]] | None = original(
                engine, db_name, coll_name, plan, hint=hint
            )
            return found

        return select_first

    replace_once(sqlite_engine_module, "_sqlite_runtime_select_first_document_for_plan", wrap)


# What `plain_id` answers for a filter that names no plain `_id`.
NO_ID: Any = object()


def plain_id(plan: Any) -> Any:
    """The `_id` a filter requires (`{_id: X}`, alone or beside other conditions) when X has
    one storage key: not numeric (1 and 1.0 are equal ids with different keys) and not null.
    NO_ID otherwise."""
    from mongoeco.core.identity import id_contains_numeric_value
    from mongoeco.core.query_plan import AndCondition, EqualsCondition

    clauses = plan.clauses if isinstance(plan, AndCondition) else (plan,)
    for clause in clauses:
        if (
            isinstance(clause, EqualsCondition)
            and clause.field == "_id"
            and clause.value is not None
            and not id_contains_numeric_value(clause.value)
        ):
            return clause.value
    return NO_ID


def _stored_row(engine: Any, db_name: str, coll_name: str, storage_key: str) -> Any:
    """The (storage key, JSON) row stored under `storage_key`, or None."""
    return (
        engine._require_connection()
        .execute(
            "SELECT storage_key, document FROM documents "
            "WHERE db_name = ? AND coll_name = ? AND storage_key = ?",
            (db_name, coll_name, storage_key),
        )
        .fetchone()
    )


def _by_storage_key(
    engine: Any, db_name: str, coll_name: str, document_id: Any, plan: Any
) -> tuple[str, dict[str, Any]] | None:
    """The document stored under `document_id`'s key, if it matches the whole `plan`."""
    from mongoeco.core.filtering import QueryEngine

    row = _stored_row(engine, db_name, coll_name, engine._storage_key(document_id))
    if row is None:
        return None
    document = engine._deserialize_document(row[1])
    if not QueryEngine.match_plan(document, plan):
        return None
    return row[0], document


# The collection and `_id` of the one document a read in progress needs at most (set by
# `read_one_document_when_an_id_is_required` around the read; a ContextVar because mongoeco
# runs each engine job in a context of its own).
_ONLY_ID: ContextVar[tuple[str, str, Any] | None] = ContextVar("storypost_only_id", default=None)


def read_one_document_when_an_id_is_required() -> None:
    """A read whose filter requires a plain `_id` reads that one document, also where
    mongoeco evaluates the filter in Python.

    mongoeco 4.11 evaluates in Python a filter it cannot translate to SQL (a condition on a
    field inside an array: the story quota's `{_id: X, "slots.post": P}`), and the rows it
    evaluates are every document of the collection: 12-17 ms at 200 quota documents, on
    every schedule, and growing with the documents' slot lists. Only the document stored
    under X's key can match `_id: X`, so those reads are handed that row alone; mongoeco's
    own evaluation of the whole filter then decides, as before. Numeric ids keep the scan.
    """
    from mongoeco.engines.sqlite import SQLiteEngine

    def wrap_open(original: Any) -> Callable[[Any, Any], Any]:
        def open_scan(self: Any, reader: Any) -> Any:
            document_id = plain_id(reader.semantics.query_plan)
            if document_id is NO_ID:
                return original(self, reader)
            # Only the id: most such reads run in SQL and never load documents in Python.
            token = _ONLY_ID.set((reader.db_name, reader.coll_name, document_id))
            try:
                return original(self, reader)
            finally:
                _ONLY_ID.reset(token)

        return open_scan

    def wrap_load(original: Any) -> Callable[[Any, str, str], Any]:
        def load_documents(self: Any, db_name: str, coll_name: str) -> Any:
            only = _ONLY_ID.get()
            if only is None or only[:2] != (db_name, coll_name):
                return original(self, db_name, coll_name)
            return _documents_under(self, db_name, coll_name, self._storage_key(only[2]))

        return load_documents

    replace_once(SQLiteEngine, "_open_scan_documents_sync", wrap_open)
    replace_once(SQLiteEngine, "_load_documents", wrap_load)


def _documents_under(
    engine: Any, db_name: str, coll_name: str, storage_key: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """`_load_documents`' rows, narrowed to one key (read when first iterated, as it reads)."""
    row = _stored_row(engine, db_name, coll_name, storage_key)
    if row is not None:
        yield row[0], engine._deserialize_document(row[1])


def use_sql_prefilter_for_compound_unique_indexes() -> None:
    """Checks a compound unique index (`organizationId` + a UUID or a slot) in SQL, not by a
    scan.

    mongoeco 4.11 looks a unique key up in its scalar index table only for one-field
    indexes; for a compound one it deserializes every document of the collection on each
    insert or update to compare keys in Python (a 10-minute load of 100 organizations slowed
    down steadily as temp blobs, drafts and posts piled up; adding a webhook URL took 49 ms
    at 2,000 URLs). A clashing document must hold, in every field of the key where this
    document holds a plain string, exactly that string (strings compare by their bytes
    without a collation, which the caller has already ruled out, like arrays): SQLite picks
    the documents that do, and the comparison of mongoeco's scan decides on each, over every
    field (so a number in another field still equals its twin of another numeric type). A key
    with no plain string (only numbers, dates, missing fields) keeps the original scan.
    """
    from mongoeco.engines.sqlite import SQLiteEngine

    def wrap(original: Any) -> Callable[..., bool | None]:
        def conflict(
            self: Any,
            conn: Any,
            collection_id: int | None,
            index: Any,
            document: dict[str, Any],
            *,
            exclude_storage_key: str | None,
        ) -> bool | None:
            answer: bool | None = original(
                self, conn, collection_id, index, document, exclude_storage_key=exclude_storage_key
            )
            fields = list(index["fields"])
            if answer is not None or collection_id is None or len(fields) < 2:
                return answer
            strings = _plain_strings(document, fields)
            if not strings:
                return None
            rows = _rows_holding(conn, collection_id, strings)
            return _clashes(self, rows, index, document, exclude_storage_key)

        return conflict

    replace_once(SQLiteEngine, "_unique_index_conflict_via_scalar_entries", wrap)


def _plain_strings(document: dict[str, Any], fields: list[str]) -> list[tuple[str, str]]:
    """The fields of a key where `document` holds a plain string, with that string."""
    from mongoeco.core.paths import get_document_value

    strings: list[tuple[str, str]] = []
    for field in fields:
        found, value = get_document_value(document, field)
        if found and type(value) is str:
            strings.append((field, value))
    return strings


def _rows_holding(conn: Any, collection_id: int, strings: list[tuple[str, str]]) -> list[Any]:
    """The stored rows of the collection holding exactly each of `strings` in its field.

    The collection and the paths are written into the statement as literals: SQLite uses
    the collection's partial expression index (`add_sqlite_indexes_for_mongo_indexes`) only
    for a query naming the same collection and the same expression. With them bound as
    parameters it read every document of the collection on each insert (1 ms per thousand
    documents, under the engine's lock, growing through a load run).
    """
    from mongoeco.engines.sqlite_query import json_path_for_field

    namespace = conn.execute(
        "SELECT db_name, coll_name FROM collections WHERE collection_id = ?", (collection_id,)
    ).fetchone()
    if namespace is None:
        return []  # no such collection: nothing stored in it
    where = " AND ".join(
        f"json_extract(document, {_literal(json_path_for_field(field))}) = ?"
        for field, _ in strings
    )
    # Literals are quoted by `_literal`; every value is a parameter.
    sql = f"SELECT storage_key, document FROM documents WHERE {_namespace(*namespace)} AND {where}"  # noqa: S608
    rows: list[Any] = conn.execute(sql, tuple(value for _, value in strings)).fetchall()
    return rows


def _clashes(
    engine: Any,
    rows: list[Any],
    index: Any,
    document: dict[str, Any],
    exclude_storage_key: str | None,
) -> bool:
    """Whether another of `rows`, in the index, holds `document`'s key: the comparison of the
    scan this replaces, where equal BSON values (0 and 0.0) are equal."""
    from mongoeco.engines.virtual_indexes import document_in_virtual_index

    fields = list(index["fields"])
    key = tuple(engine._index_value(document, field) for field in fields)
    for storage_key, stored in rows:
        if exclude_storage_key is not None and storage_key == exclude_storage_key:
            continue
        existing = engine._deserialize_document(stored)
        if not document_in_virtual_index(existing, index):
            continue
        if tuple(engine._index_value(existing, field) for field in fields) == key:
            return True
    return False


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _typed_value(path: str) -> str:
    """The two expressions mongoeco's equality SQL tests for a field, as index columns."""
    return f"json_type(document, {_literal(path)}), json_extract(document, {_literal(path)})"


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
    from mongoeco.engines.sqlite import SQLiteEngine

    def wrap(original: Any) -> Callable[[Any], None]:
        def connect(self: Any) -> None:
            original(self)
            with self._lock:
                conn = self._require_connection()
                conn.execute(
                    'CREATE INDEX IF NOT EXISTS "storypost_id" '
                    f"ON documents(db_name, coll_name, {_typed_value('$._id')})"
                )
                if not conn.in_transaction:
                    conn.commit()

        return connect

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


def skip_decimal_scans_without_decimals(path: Path) -> None:
    """Skips mongoeco's per-query scans for Decimal values while none has ever been stored.

    Before running a filter in SQL, mongoeco 4.11 asks, for every field of it and three
    Decimal tags, whether any document of the collection holds such a value: three full
    scans per field (with `json_extract` on every document), cached only until the next
    write to the collection, which under load is milliseconds later. Measured: a lookup by
    organization and rendering id cost 6 ms at 3,000 documents and grew with the collection.
    Storypost stores no Decimal values. Every value mongoeco tags goes through
    `DocumentCodec._tagged_value`, so a Decimal being stored (or used in a query) is seen
    there; the database file is checked once at start for Decimals stored before. Until one
    appears the answer to those scans is known to be "no"; after that mongoeco's own checks
    run as before.
    """
    from mongoeco.core.codec import DocumentCodec
    from mongoeco.engines.sqlite import SQLiteEngine

    def wrap(original_plan_check: Any) -> Callable[..., bool]:
        seen = {"decimal": _stores_decimal(path)}
        original_tag = DocumentCodec._tagged_value

        def tagged_value(value_type: str, value: Any) -> dict[str, Any]:
            if value_type.startswith("decimal"):
                seen["decimal"] = True
            tagged: dict[str, Any] = original_tag(value_type, value)
            return tagged

        def plan_check(self: Any, db_name: str, coll_name: str, plan: Any) -> bool:
            if not seen["decimal"] and not self._plan_contains_decimal_operand(plan):
                return False
            answer: bool = original_plan_check(self, db_name, coll_name, plan)
            return answer

        DocumentCodec._tagged_value = staticmethod(tagged_value)  # type: ignore[method-assign]
        return plan_check

    replace_once(SQLiteEngine, "_plan_requires_python_for_decimal_numeric", wrap)


def _stores_decimal(path: Path) -> bool:
    """Whether the database file at `path` may hold a Decimal value already."""
    if not path.exists():
        return False
    with contextlib.closing(sqlite3.connect(path)) as conn:
        # Conservative: any text holding `"decimal` counts (a tag is `"type":"decimal..."`).
        row = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'documents'"
        ).fetchone()
        if row is None:
            return False
        found = conn.execute(
            "SELECT 1 FROM documents WHERE document LIKE '%\"decimal%' LIMIT 1"
        ).fetchone()
        return found is not None


def coalesce_change_dispatch(delay_seconds: float = 0.1) -> None:
    """Hands committed changes to mongoeco's change hub in batches, off the event loop.

    mongoeco 4.11 dispatches its change outbox on the server's event loop after each write:
    it takes a lease row in SQLite, starts a heartbeat thread, delivers each change with a
    SQLite commit of its checkpoint, and joins the thread (measured with py-spy under
    bench/load.py: about a third of the event loop's time, and that loop serves every
    connection, so every request waited for it). Storypost opens no change streams (its
    events go through NATS), and one dispatch delivers every change committed since the
    last, so here a write only asks for a dispatch: one runs `delay_seconds` later on a
    thread of its own, for all writes asked meanwhile. What the hub receives, and in which
    order, is unchanged (the hub and the outbox take their own locks); it arrives later by
    at most that delay. Writes inside a transaction keep the original path (it skips them
    until the commit, whose dispatch is deferred likewise).

    On the event loop a dispatch could never overlap the engine's disconnect; on a thread
    it can, and mongoeco's disconnect closes the SQLite connections a dispatch may be using
    (seen: a segmentation fault in `release_consumer_lease`). So a dispatch and a
    disconnect exclude each other, and a dispatch due after the engine closed is dropped:
    nobody can receive it, and the changes stay in the engine's outbox for the next one.
    """
    from mongoeco.api._async._collection_runtime import CollectionRuntimeCoordinator
    from mongoeco.core.operation_context import ChangePublicationPolicy
    from mongoeco.engines.sqlite import SQLiteEngine

    disabled = ChangePublicationPolicy.DISABLED
    # Taken by every deferred dispatch and by every disconnect, in that order of locks
    # (gate first, then the engine's own), so neither can wait on the other while holding one.
    gate = threading.Lock()

    def exclusive_disconnect(original: Any) -> Callable[..., None]:
        def disconnect_sync(self: Any) -> None:
            with gate:
                original(self)

        return disconnect_sync

    replace_once(SQLiteEngine, "_disconnect_sync", exclusive_disconnect)

    def wrap(original: Any) -> Callable[..., None]:
        # One thread: dispatches of a hub stay serial, as on the event loop.
        dispatcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="storypost-changes")
        asked: set[tuple[int, int]] = set()

        def dispatch(self: Any, operation_context: Any = None) -> None:
            if getattr(operation_context, "publication", None) is disabled:
                return  # the write recorded no change: nothing to deliver
            session = getattr(operation_context, "session", None)
            if session is not None and session.in_transaction:
                original(self, operation_context)
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop to defer to: dispatch now, as mongoeco does
                original(self, operation_context)
                return
            key = (id(self._engine_spi), id(self._collection._change_hub))
            if key in asked:
                return
            asked.add(key)

            def run() -> None:
                # Forgotten first: a write committed during this dispatch asks for the next.
                asked.discard(key)
                with gate:
                    engine = self._engine_spi.engine
                    if isinstance(engine, SQLiteEngine) and engine._connection is None:
                        return  # closed since the write: see the docstring
                    original(self, None)

            loop.call_later(delay_seconds, dispatcher.submit, run)

        return dispatch

    replace_once(CollectionRuntimeCoordinator, "_dispatch_engine_changes", wrap)


def record_no_changes_while_nobody_watches() -> None:
    """Writes made while no change stream is open record nothing in mongoeco's change outbox.

    mongoeco 4.11 records every write in its change outbox, inside the write's transaction,
    also while nobody watches: the change is serialized and fingerprinted, an outbox row and
    an identity row are inserted, the outbox is compacted (six more statements), and a
    later dispatch checkpoints each row with a commit of its own on a second connection,
    which waits for SQLite's one write lock like the engine's writes do (under
    bench/load.py: a fifth of all the SQL the stand-in ran). Such a row is a gap marker: it
    lets a stream resumed later refuse a resume token older than changes it cannot replay.
    Storypost opens no change stream (its events go through NATS). So a write that
    mongoeco would record as a gap (it chooses that only while its hub has no watcher and no
    journal) records nothing, and its dispatch is not asked for; writes in a transaction, or
    while a stream is open, are recorded exactly as before. What a gap guarded stays
    guarded: once a write went unrecorded, the hub refuses every resume token (and start
    time) issued before the next stream opened, with mongoeco's own error.
    """
    from mongoeco._change_streams.hub import ChangeStreamHub
    from mongoeco.api._async.collection import AsyncCollection
    from mongoeco.core.operation_context import ChangePublicationPolicy
    from mongoeco.errors import OperationFailure

    def silence(hub: Any) -> dict[str, Any]:
        # Per hub: whether a write went unrecorded, and the token below which resume tokens
        # are refused (set when the next stream opens).
        state: dict[str, Any] = hub.__dict__.setdefault(
            "_storypost_silence", {"silenced": False, "floor": None}
        )
        return state

    def wrap_context(original: Any) -> Callable[..., Any]:
        def new_operation_context(self: Any, **kwargs: Any) -> Any:
            hub = self._change_hub
            if kwargs.get("publication") is ChangePublicationPolicy.RECORD_GAP and (
                hub is None or not hub.should_publish_events()
            ):
                kwargs["publication"] = ChangePublicationPolicy.DISABLED
                if hub is not None:
                    with hub._condition:
                        silence(hub).update(silenced=True, floor=None)
            return original(self, **kwargs)

        return new_operation_context

    def wrap_register(original: Any) -> Callable[[Any], None]:
        def register_watcher(self: Any) -> None:
            with self._condition:
                state = silence(self)
                if state["silenced"] and state["floor"] is None:
                    # Every token a stream has received so far is below the next one.
                    state["floor"] = self._next_token
            original(self)

        return register_watcher

    def wrap_resume(original: Any) -> Callable[..., int]:
        def offset(self: Any, token: int) -> int:
            with self._condition:
                state = silence(self)
                if state["silenced"] and (state["floor"] is None or token < state["floor"]):
                    raise OperationFailure(
                        "resume token is no longer available in retained change stream history"
                    )
            answer: int = original(self, token)
            return answer

        return offset

    replace_once(AsyncCollection, "_new_operation_context", wrap_context)
    replace_once(ChangeStreamHub, "register_watcher", wrap_register)
    replace_once(ChangeStreamHub, "offset_after_token", wrap_resume)
    replace_once(ChangeStreamHub, "offset_at_or_after_cluster_time", wrap_resume)


def _scalar_only(engine: Any, db_name: str, coll_name: str, plan: Any) -> Any:
    """Equality or `$in` on a top-level field without arrays as the scalar test alone (None:
    keep mongoeco's translation)."""
    from mongoeco.core.query_plan import EqualsCondition, InCondition
    from mongoeco.engines.sqlite_query import _translate_equals_scalar_only

    if isinstance(plan, EqualsCondition):
        values: tuple[Any, ...] = (plan.value,)
    elif isinstance(plan, InCondition) and plan.values:
        values = plan.values
    else:
        return None
    if "." in plan.field or engine._field_is_top_level_array_in_collection(
        db_name, coll_name, plan.field
    ):
        return None
    try:
        fragments = [
            _translate_equals_scalar_only(
                plan.field, value, null_matches_undefined=plan.null_matches_undefined
            )
            for value in values
        ]
    except NotImplementedError:
        return None
    sql = " OR ".join(f"({fragment})" for fragment, _ in fragments)
    return (f"({sql})", [param for _, params in fragments for param in params])


def _narrowed_range(plan: Any, sql: str, params: list[Any]) -> tuple[str, list[Any]]:
    """A comparison with a value never matches a document without the field, so only the
    rows that have it are read: the field's type index finds them. (Each JSON type listed:
    SQLite's planner looks these up in the index, where `IS NOT NULL` on an expression
    would read every row.)"""
    from mongoeco.core.query_plan import (
        GreaterThanCondition,
        GreaterThanOrEqualCondition,
        LessThanCondition,
        LessThanOrEqualCondition,
    )
    from mongoeco.engines.sqlite_query import json_path_for_field

    ranges = (
        GreaterThanCondition,
        GreaterThanOrEqualCondition,
        LessThanCondition,
        LessThanOrEqualCondition,
    )
    if not isinstance(plan, ranges) or plan.value is None:
        return (sql, params)
    present = f"json_type(document, {_literal(json_path_for_field(plan.field))})"
    return (f"({present} IN ({JSON_TYPES}) AND ({sql}))", params)


def match_scalars_without_array_branches() -> None:
    """Equality and `$in` on a top-level field that holds no array in the collection become
    the scalar comparison alone, which the field's type-and-value index serves.

    mongoeco 4.11 translates `{f: v}` on a field with a single-field index into
    `scalar(f, v) OR EXISTS (SELECT .. FROM multikey_entries ..)`, and `{f: {$in: [..]}}`
    into one scalar test and one `json_each` array test per value: an OR with a correlated
    subquery, which SQLite answers only by reading every document of the collection. Those
    are the pollers' queries (the outbox relays' `{outboxPending: true}` after every write
    and twice a second, the scheduler's `status $in` open states), and their cost grew with
    the collection: at 3,000 posts the scheduler's claim query took 50 ms of CPU, the
    relay's 17 ms, and under bench/load.py's publishing they ran several times per post.
    The array branches can match only a document whose field is an array. When the
    collection has none (mongoeco's own check, `_field_is_top_level_array_in_collection`,
    cached until the next write to the collection and answered by the type-and-value index
    that an indexed field has here), the scalar test alone matches the same documents,
    which is what mongoeco itself does for an unindexed field. Dotted fields (an array
    anywhere on the path matters) and values mongoeco does not translate keep its own
    translation.
    """
    from mongoeco.engines.sqlite import SQLiteEngine

    def wrap(original: Any) -> Callable[..., Any]:
        def translate(self: Any, db_name: str, coll_name: str, plan: Any) -> Any:
            found = _scalar_only(self, db_name, coll_name, plan)
            if found is not None:
                return found
            sql, params = original(self, db_name, coll_name, plan)
            return _narrowed_range(plan, sql, params)

        return translate

    replace_once(SQLiteEngine, "_translate_query_plan_with_multikey", wrap)


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


def read_on_the_engine_connection() -> None:
    """Runs reads of many documents on the engine's own SQLite connection, as mongoeco does
    for an in-memory database, instead of a new connection per read.

    mongoeco 4.11 opens a dedicated SQLite connection for every read that may return more
    than one document (a `find` without `limit(1)`, a list, an aggregate), begins a read
    transaction on it and closes it with the cursor. Each new connection reads and parses
    the whole schema again (the `documents` table carries an index per MongoDB index and
    field: ~130 statements), sets its pragmas and starts with an empty index catalog. Under
    bench/load.py that was ~8% of mongoeco's CPU in connection set-up alone, and with it the
    light calls stalled in stretches (p99 of 1-2 s for seconds at a time); on the engine's
    connection every window's p99 stayed at 0.14-0.31 s. The read is the same: its rows are
    taken under the engine lock in one statement, a snapshot as of the read's start, as the
    dedicated reader's transaction gave.
    """
    from mongoeco.engines.sqlite import SQLiteEngine

    def wrap(original: Any) -> Callable[[Any, Any], bool]:
        def can_use_dedicated_reader(self: Any, context: Any) -> bool:
            self._ensure_session_can_use_engine(context)  # mongoeco's own check, kept
            return False

        return can_use_dedicated_reader

    replace_once(SQLiteEngine, "_can_use_dedicated_reader", wrap)


def finish_one_document_reads_under_the_lock() -> None:
    """Ends a one-document read's SQLite statement before the engine's lock is let go.

    mongoeco 4.11 opens a read of at most one document (`find_one`, `limit(1)`) on the
    engine's connection under its lock, takes the first row, lets the lock go and closes
    the cursor only in a later step. Until then the statement, unfinished when more rows
    matched, holds a read snapshot on the engine's connection (outside any transaction, so
    the probe-index builder's check cannot see it). If another connection commits meanwhile
    (mongoeco's change delivery, after every write), the next write on the engine's
    connection — from another request's thread, which took the lock in between — fails at
    `BEGIN IMMEDIATE` with SQLITE_BUSY_SNAPSHOT ("database is locked", at once, whatever the
    busy timeout): seen as 500s of 50 racing identical schedule calls. Here the first
    document is taken and the read's cursors are closed while the lock is still held; the
    reader gets that document, as it did.
    """
    from mongoeco.engines.sqlite import SQLiteEngine

    def wrap(original: Any) -> Callable[[Any, Any], Any]:
        def open_scan(self: Any, reader: Any) -> Any:
            documents = original(self, reader)
            if reader.owns_connection or reader.semantics.limit != 1:
                return documents
            first = next(documents, None)
            for resource in reader._resources:
                close = getattr(resource, "close", None)
                if callable(close):
                    close()
            return iter(()) if first is None else iter((first,))

        return open_scan

    replace_once(SQLiteEngine, "_open_scan_documents_sync", wrap)


async def serve(path: Path, host: str, port: int) -> None:
    """Serves until SIGTERM or SIGINT, then closes the listener and the SQLite engine."""
    # Imported here, after skip_slow_optional_imports() ran.
    from mongoeco.engines.sqlite import SQLiteEngine
    from mongoeco.wire.proxy import AsyncMongoEcoProxyServer

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    path.parent.mkdir(parents=True, exist_ok=True)
    server = AsyncMongoEcoProxyServer(engine=SQLiteEngine(str(path)), host=host, port=port)
    address = await server.start()
    try:
        # The supervisor reads this line; flush so it reaches the log file at once.
        print(f"embedded mongo listening on {address.host}:{address.port} ({path})", flush=True)
        await stopping.wait()
        print("embedded mongo stopping", flush=True)
    finally:
        await server.close()
    print("embedded mongo stopped", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        check_mongoeco_version()
    except MongoecoVersionError as error:
        print(error, file=sys.stderr)
        return 2
    skip_slow_optional_imports()
    skip_full_scan_for_plain_ids()
    use_id_lookup_for_guarded_writes()
    read_one_document_when_an_id_is_required()
    use_sql_prefilter_for_compound_unique_indexes()
    coalesce_change_dispatch()
    record_no_changes_while_nobody_watches()
    read_on_the_engine_connection()
    finish_one_document_reads_under_the_lock()
    match_scalars_without_array_branches()
    answer_field_probes_from_indexes()
    skip_decimal_scans_without_decimals(args.path)
    add_sqlite_indexes_for_mongo_indexes()
    index_ids_of_every_collection()
    try:
        asyncio.run(serve(args.path, args.host, args.port))
    except OSError as error:
        # A taken port is the usual cause: one clear line, no traceback.
        print(f"embedded mongo cannot start on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
