"""Schema migrations: each service's numbered steps and its indexes, applied by `storypost
migrate` (a Job before the Deployments roll), checked, never applied, by a production service
at start (docs/migrations.md).

A service's `Plan` is its ordered steps (each idempotent: a backfill in batches, resumable at
the `_id` it reached) and its index method (the records' `ensure_indexes`: the indexes are
declared once, there). The collection `schema_migrations` holds one document per service: the
number of the last step done, the digests of the index declarations applied, and where a
backfill stopped. A service needs `version >= plan.version` and its own declaration's digest
among those applied; an older release, rolled back to, finds its digest there too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import ASCENDING, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from storypost_runtime.leases import renewing
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document, declared_indexes
from storypost_runtime.settings import DEVELOPMENT, BaseServiceSettings, SettingRefused

SCHEMA_COLLECTION = "schema_migrations"
MIGRATE_COMMAND = "storypost migrate"
# One migrator per service at a time; a lease renewed while it runs (a killed Job's lock
# lapses after one lease).
LOCK_LEASE = timedelta(seconds=30)
_LOCK_POLL_SECONDS = 0.2
DEFAULT_BATCH = 500
log = get_logger("storypost.migrations")


class MigrationsMissing(SettingRefused):
    """The database's schema is behind what this release needs: the service does not serve
    (it stops at start with the message, exit 2, as for a refused setting)."""


class MigrationTimedOut(Exception):
    """`migrate` ran out of its time; what it did is kept, and running it again resumes."""


@dataclass(frozen=True)
class Backfill:
    """Changes every document of `collection` matching `query` (the ones still to change):
    `change` gives one document's update. In batches in `_id` order, each one bulk write;
    the `_id` reached is stored after each batch, so an interrupted run resumes there. Each
    update is filtered by `query` too: a document changed already is never changed again."""

    collection: AsyncCollection[Document]
    query: Document
    projection: Document
    change: Callable[[Document], Document]
    batch: int = DEFAULT_BATCH


@dataclass(frozen=True)
class Step:
    """One numbered, idempotent change: a backfill, or any other coroutine."""

    number: int
    name: str
    action: Backfill | Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class Plan:
    service: str
    db: AsyncDatabase[Document]
    # The records' method that creates (and drops) the service's indexes.
    indexes: Callable[[], Awaitable[None]]
    steps: Sequence[Step] = ()

    def __post_init__(self) -> None:
        numbers = [step.number for step in self.steps]
        if numbers != sorted(set(numbers)) or any(n < 1 for n in numbers):
            raise ValueError(f"{self.service}: step numbers must be 1, 2, … in order: {numbers}")

    @property
    def version(self) -> int:
        return self.steps[-1].number if self.steps else 0

    @property
    def records(self) -> AsyncCollection[Document]:
        return self.db[SCHEMA_COLLECTION]


@dataclass
class Report:
    """What one `migrate` did for a service."""

    service: str
    version_before: int
    version: int
    steps_run: list[str] = field(default_factory=list)
    changed: int = 0
    seconds: float = 0.0


async def index_digest(plan: Plan) -> str:
    """A digest of the indexes the plan's method declares (collections, definitions, retired
    names), in their order."""
    declared = await declared_indexes(plan.indexes)
    normal = [
        {k: (list(map(list, v.items())) if k == "key" else v) for k, v in doc.items()}
        for doc in declared
    ]
    text = json.dumps(normal, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


async def schema_state(plan: Plan) -> Document:
    return await plan.records.find_one({"_id": plan.service}) or {}


async def missing(plan: Plan) -> str | None:
    """Why the database is not ready for this release, or None when it is."""
    state = await schema_state(plan)
    version = int(state.get("version", 0))
    reasons = []
    if version < plan.version:
        pending = [f"{s.number} {s.name}" for s in plan.steps if s.number > version]
        reasons.append(f"schema version {version} of {plan.version} (to run: {', '.join(pending)})")
    if await index_digest(plan) not in state.get("indexDigests", []):
        reasons.append("its indexes are not this release's")
    if not reasons:
        return None
    return (
        f"{plan.service}: the database {plan.db.name!r} is not ready for this release: "
        f"{'; '.join(reasons)}. Run `{MIGRATE_COMMAND}` (the migrate Job) before starting it "
        "(docs/migrations.md)"
    )


async def require_schema(plan: Plan, *, development: bool, limit_seconds: float = 300.0) -> None:
    """At a service's start: returns when the schema is this release's. Otherwise production
    raises MigrationsMissing (the service stops with its message); development migrates."""
    reason = await missing(plan)
    if reason is None:
        log.info("schema ready", service=plan.service, version=plan.version)
        return
    if not development:
        raise MigrationsMissing(reason)
    log.info("development: migrating at start", service=plan.service, reason=reason)
    await migrate(plan, limit_seconds=limit_seconds)


async def check_at_start(plan: Plan, settings: BaseServiceSettings) -> None:
    """A service's start: its schema checked; migrated only in development."""
    await require_schema(plan, development=settings.environment == DEVELOPMENT)


async def migrate(plan: Plan, *, limit_seconds: float) -> Report:
    """Runs the steps not done yet in order, then the indexes; within `limit_seconds` (else
    MigrationTimedOut, all done so far kept). One migrator per service: another one waits."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(limit_seconds):
            async with _locked(plan):
                report = await _run(plan)
    except TimeoutError:
        state = await schema_state(plan)
        raise MigrationTimedOut(
            f"{plan.service}: stopped after {limit_seconds:g} s at schema version "
            f"{state.get('version', 0)} of {plan.version}; what was done is kept: run "
            f"`{MIGRATE_COMMAND}` again to resume"
        ) from None
    report.seconds = time.monotonic() - started
    log.info(
        "migrated",
        service=plan.service,
        version=report.version,
        steps=report.steps_run,
        changed=report.changed,
        seconds=round(report.seconds, 2),
    )
    return report


async def _run(plan: Plan) -> Report:
    state = await schema_state(plan)
    before = int(state.get("version", 0))
    report = Report(plan.service, before, before)
    for step in plan.steps:
        if step.number <= before:
            continue
        log.info("step", service=plan.service, step=step.number, name=step.name)
        if isinstance(step.action, Backfill):
            report.changed += await _backfill(plan, step, step.action, state)
        else:
            await step.action()
        await _record(plan, {"version": step.number}, unset=f"cursors.{step.number}")
        report.version = step.number
        report.steps_run.append(f"{step.number} {step.name}")
    digest = await index_digest(plan)
    log.info("indexes", service=plan.service, digest=digest)
    await plan.indexes()
    await plan.records.update_one(
        {"_id": plan.service},
        {"$addToSet": {"indexDigests": digest}, "$set": {"indexes": digest}},
        upsert=True,
    )
    return report


async def _backfill(plan: Plan, step: Step, backfill: Backfill, state: Mapping[str, Any]) -> int:
    cursor: Document = state.get("cursors", {}).get(str(step.number), {})
    after = cursor.get("after")
    changed = int(cursor.get("changed", 0))
    # The collection's size from its metadata (counting the documents left would read them
    # all): an upper bound of what is left to change.
    size = await backfill.collection.estimated_document_count()
    log.info("backfill", service=plan.service, step=step.number, documents=size, done=changed)
    started = time.monotonic()
    while True:
        query = dict(backfill.query)
        if after is not None:
            query["_id"] = {"$gt": after}
        found = backfill.collection.find(query, backfill.projection)
        docs = await found.sort("_id", ASCENDING).limit(backfill.batch).to_list()
        if not docs:
            return changed - int(cursor.get("changed", 0))
        updates = [
            UpdateOne({**backfill.query, "_id": doc["_id"]}, backfill.change(doc)) for doc in docs
        ]
        result = await backfill.collection.bulk_write(updates, ordered=False)
        changed += result.modified_count
        after = docs[-1]["_id"]
        cursors = {f"cursors.{step.number}": {"after": after, "changed": changed}}
        await _record(plan, cursors)
        elapsed = time.monotonic() - started
        log.info(
            "backfill progress",
            service=plan.service,
            step=step.number,
            changed=changed,
            documents=size,
            per_second=round(changed / elapsed) if elapsed else None,
        )


async def _record(plan: Plan, values: Document, *, unset: str | None = None) -> None:
    update: Document = {"$set": {**values, "updatedAt": datetime.now(UTC)}}
    if unset:
        update["$unset"] = {unset: ""}
    await plan.records.update_one({"_id": plan.service}, update, upsert=True)


@asynccontextmanager
async def _locked(plan: Plan) -> AsyncIterator[None]:
    """The service's migration lock: a document with an owner and a lease, renewed while the
    block runs; another migrator waits for it (within its own timeout)."""
    lock_id = f"lock:{plan.service}"
    owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    waited = False
    while not await _take(plan.records, lock_id, owner):
        if not waited:
            log.info("waiting for another migrator", service=plan.service)
            waited = True
        await asyncio.sleep(_LOCK_POLL_SECONDS)

    async def renew() -> bool:
        until = datetime.now(UTC) + LOCK_LEASE
        mine = {"_id": lock_id, "owner": owner}
        return (await plan.records.update_one(mine, {"$set": {"until": until}})).matched_count == 1

    def failed(error: Exception) -> None:
        log.warning("migration lock not renewed", service=plan.service, error=str(error))

    try:
        async with renewing(renew, failed, lease=LOCK_LEASE, name="migration lock"):
            yield
    finally:
        await asyncio.shield(plan.records.delete_one({"_id": lock_id, "owner": owner}))


async def _take(records: AsyncCollection[Document], lock_id: str, owner: str) -> bool:
    now = datetime.now(UTC)
    free = {"_id": lock_id, "until": {"$lt": now}}
    try:
        await records.update_one(
            free, {"$set": {"owner": owner, "until": now + LOCK_LEASE}}, upsert=True
        )
    except DuplicateKeyError:
        return False  # held, and its lease runs still
    return True
