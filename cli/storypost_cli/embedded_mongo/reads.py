"""Reads: one-document reads by key, reads of many documents on the engine's connection, one-
document reads finished under the engine's lock, filters without array branches, Decimal scans
skipped while no Decimal is stored."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from storypost_cli.embedded_mongo.patching import JSON_TYPES, _literal, replace_once
from storypost_cli.embedded_mongo.writes import NO_ID, _stored_row, plain_id

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


def look_up_sets_of_strings_by_index() -> None:
    """`{f: {$in: [strings]}}` on a top-level field that holds no array in the collection
    becomes one `IN` over the field's type-and-value index, not one test per value.

    After `match_scalars_without_array_branches` such a filter reads `(type = 'text' AND
    value = s1) OR (type = 'text' AND value = s2) ...`, which SQLite answered by reading
    every document of the collection where another index competed (it does not split that
    OR over the index): the webhook scheduler's read of a claimed batch (`{_id: {$in: [16
    ids]}, leaseId: L}`) took ~60 ms at 7,000 deliveries, growing with them; ~20 ms with the
    index (its `update_many` still reads through the `dueAt` index). For strings each test is
    exactly `type = 'text' AND value = s`, so `type = 'text' AND value IN (s1, s2, ...)`
    matches the same documents and is looked up in the index. Other values keep the OR.
    """
    from mongoeco.core.query_plan import InCondition
    from mongoeco.engines.sqlite import SQLiteEngine
    from mongoeco.engines.sqlite_query import json_path_for_field

    def wrap(original: Any) -> Callable[..., Any]:
        def translate(self: Any, db_name: str, coll_name: str, plan: Any) -> Any:
            if (
                isinstance(plan, InCondition)
                and plan.values
                and all(type(value) is str for value in plan.values)
                and "." not in plan.field
                and not self._field_is_top_level_array_in_collection(db_name, coll_name, plan.field)
            ):
                path = _literal(json_path_for_field(plan.field))
                marks = ", ".join("?" for _ in plan.values)
                sql = (
                    f"(json_type(document, {path}) = 'text' "
                    f"AND json_extract(document, {path}) IN ({marks}))"
                )
                return (sql, list(plan.values))
            return original(self, db_name, coll_name, plan)

        return translate

    replace_once(SQLiteEngine, "_translate_query_plan_with_multikey", wrap)
