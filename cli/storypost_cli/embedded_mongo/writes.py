"""Writes: `_id` and compound unique keys checked, and guarded updates found, by key or in SQL
instead of by reading every document of the collection."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storypost_cli.embedded_mongo.indexes import _namespace
from storypost_cli.embedded_mongo.patching import _literal, replace_once


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


def commit_insert_commands_in_one_transaction() -> None:
    """Stores the documents of one `insert` command (a driver's `insert_many`) in one SQLite
    transaction instead of one per document.

    mongoeco 4.11's wire `insert` command calls `insert_one` for each document: a write
    transaction, a commit and three trips to the engine's thread per document (measured:
    1.5-1.9 ms per webhook delivery record in batches of 100 on an idle host, 3-9 ms under
    load; 500 records a second needed more than a core). mongoeco's own `insert_many` already
    stores a batch in one transaction, splitting it where a document is refused, and reports
    each refused document by its index; the command now calls it. Its errors are reported as
    the per-document loop reported them (code, message, key pattern and value, by index,
    ordered or not). An error that `insert_many` raises for the whole batch instead (a
    document it cannot prepare) leaves the documents it has not stored to the original loop,
    so each is reported by its index as before.
    """
    from mongoeco.api._async._database_admin_write_commands import (
        DatabaseAdminWriteCommandService,
    )

    def wrap(original: Any) -> Callable[..., Any]:
        async def command_insert(
            self: Any, spec: dict[str, object], *, session: Any = None
        ) -> object:
            return await _insert_in_one_transaction(self, original, spec, session)

        return command_insert

    replace_once(DatabaseAdminWriteCommandService, "command_insert", wrap)


async def _insert_in_one_transaction(
    service: Any, original: Any, spec: dict[str, object], session: Any
) -> object:
    """mongoeco's `command_insert` with `insert_many` in place of its `insert_one` loop."""
    from mongoeco._types.documents import WriteCommandResult
    from mongoeco.api._async._database_admin_write_commands import _write_command_result
    from mongoeco.api._async._write_command_validation import write_command_acknowledged
    from mongoeco.api._command_bson import command_boolean
    from mongoeco.errors import BulkWriteError, OperationFailure, WriteError

    boolean: Any = command_boolean  # untyped in mongoeco

    admin = service._admin
    collection_name = admin._require_collection_name(spec.get("insert"), "insert")
    documents = admin._normalize_insert_documents(spec.get("documents"))
    ordered = admin._normalize_ordered_from_command(spec.get("ordered"))
    bypass = boolean(
        spec.get("bypassDocumentValidation", False), "bypassDocumentValidation", numeric=True
    )
    acknowledged = write_command_acknowledged(spec, dialect=admin._mongodb_dialect.key)
    if not documents:
        return await original(service, spec, session=session)
    collection = admin._database.get_collection(collection_name)
    stored = _record_commits(collection)
    try:
        await collection.insert_many(
            documents, ordered=ordered, bypass_document_validation=bypass, session=session
        )
    except BulkWriteError as error:
        report: dict[str, Any] = error.details  # type: ignore[attr-defined]
        entries = report.get("writeErrors", [])
        result = WriteCommandResult(
            count=int(report.get("nInserted", 0)),
            write_errors=sorted((_entry(e) for e in entries), key=lambda e: e.index),
        )
        return _write_command_result(result, acknowledged=acknowledged)
    except (OperationFailure, WriteError, TypeError, ValueError):
        left = _not_stored(documents, stored)
        rest = {**spec, "documents": [documents[index] for index in left]}
        result = await original(service, rest, session=session)
        if not acknowledged:
            return result
        return _renumbered(result, left, len(documents) - len(left))
    return _write_command_result(
        WriteCommandResult(count=len(documents)), acknowledged=acknowledged
    )


def _record_commits(collection: Any) -> list[Any]:
    """The internal `_id`s of the documents `collection` stores from now on, in commit order:
    what each of its engine batches reports as applied (each batch is one transaction, and
    `insert_many` consumes its outcomes before it starts the next)."""
    stored: list[Any] = []
    runtime = collection._runtime
    insert_documents = runtime.engine_insert_documents

    async def insert_and_record(documents: list[Any], **kwargs: Any) -> Any:
        outcomes = await insert_documents(documents, **kwargs)
        stored.extend(
            doc["_id"] for doc, outcome in zip(documents, outcomes, strict=False) if outcome
        )
        return outcomes

    runtime.engine_insert_documents = insert_and_record
    return stored


def _not_stored(documents: list[dict[str, Any]], stored: list[Any]) -> list[int]:
    """The indexes of `documents` not among `stored` (each stored `_id` claims its first
    document: a later twin in the same command was refused)."""
    from mongoeco.core.codec import DocumentCodec

    claimed: set[int] = set()
    for document_id in stored:
        for index, document in enumerate(documents):
            if (
                index not in claimed
                and "_id" in document
                and DocumentCodec.to_internal(document["_id"]) == document_id
            ):
                claimed.add(index)
                break
    return [index for index in range(len(documents)) if index not in claimed]


def _entry(document: dict[str, Any]) -> Any:
    """A write error of `insert_many`'s report as the command reports it: without the
    document (`op`), which the driver adds itself."""
    from mongoeco._types.documents import WriteErrorEntry

    details = {k: v for k, v in document.items() if k not in ("index", "code", "errmsg", "op")}
    return WriteErrorEntry(
        index=document["index"],
        code=document.get("code"),
        errmsg=document["errmsg"],
        details=details or None,
    )


def _renumbered(result: Any, left: list[int], already: int) -> Any:
    """The original command's result over the documents `left` (by their indexes in the
    whole command), counting the `already` stored before it ran."""
    from dataclasses import replace

    errors = [replace(entry, index=left[entry.index]) for entry in result.write_errors or []]
    return replace(result, count=result.count + already, write_errors=errors or None)
