"""MongoDB client factory (PyMongo async): few pooled connections, bounded operation time.

With tracing on, every command is a client span: opentelemetry-instrumentation-pymongo's
command listener, given to this client only (its instrumentor would register it for every
client in the process). PyMongo's async client fires the listener in the task that runs the
command, so the span's parent is the caller's current span.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any

from opentelemetry.trace import TracerProvider, get_tracer
from pymongo import AsyncMongoClient, IndexModel
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure
from pymongo.monitoring import CommandListener

from storypost_runtime.settings import MongoSettings
from storypost_runtime.tracing import provider_for

Document = dict[str, Any]
# MongoDB's IndexNotFound: another replica dropped it first.
_INDEX_NOT_FOUND = 27
# Set while `declared_indexes` runs a service's index method: the helpers below then note what
# they would do instead of doing it (so an index is declared once, where it is created).
_DECLARING: ContextVar[list[Document] | None] = ContextVar("declaring_indexes", default=None)


def command_listeners(tracer_provider: TracerProvider | None = None) -> list[CommandListener]:
    """The span-making listener when tracing is on; none otherwise (no per-command cost).
    Statements are not captured: filters hold tenants' values."""
    provider = provider_for(tracer_provider)
    if provider is None:
        return []
    # Imported only when tracing is on: the instrumentation package takes ~70 ms to import.
    from opentelemetry.instrumentation.pymongo import CommandTracer

    tracer = get_tracer("opentelemetry.instrumentation.pymongo", tracer_provider=provider)
    return [CommandTracer(tracer)]


def mongo_client(
    settings: MongoSettings, app_name: str, *, tracer_provider: TracerProvider | None = None
) -> AsyncMongoClient[Document]:
    """A client with timeoutMS set, so a database that does not answer fails the call."""
    timeout_ms = int(settings.mongo_timeout_seconds * 1000)
    return AsyncMongoClient(
        settings.mongo_url,
        appname=app_name,
        maxPoolSize=settings.mongo_max_pool_size,
        timeoutMS=timeout_ms,
        serverSelectionTimeoutMS=timeout_ms,
        connectTimeoutMS=min(timeout_ms, 5000),
        tz_aware=True,
        uuidRepresentation="standard",
        event_listeners=command_listeners(tracer_provider),
    )


async def ensure_indexes(
    collection: AsyncCollection[Document], indexes: Sequence[IndexModel]
) -> None:
    """Creates the owning service's indexes; repeating it with the same definitions is a no-op."""
    declaring = _DECLARING.get()
    if declaring is not None:
        declaring.extend({"collection": collection.name, **m.document} for m in indexes)
        return
    if indexes:
        await collection.create_indexes(list(indexes))


async def drop_indexes(collection: AsyncCollection[Document], names: Sequence[str]) -> None:
    """Drops the named indexes where they exist (replicas starting together may race)."""
    declaring = _DECLARING.get()
    if declaring is not None:
        declaring.extend({"collection": collection.name, "retired": name} for name in names)
        return
    present = await collection.index_information()
    for name in names:
        if name not in present:
            continue
        try:
            await collection.drop_index(name)
        except OperationFailure as error:
            if error.code != _INDEX_NOT_FOUND:
                raise


async def declared_indexes(create: Callable[[], Awaitable[None]]) -> list[Document]:
    """What `create` (a records' `ensure_indexes`, made of the helpers above) would create and
    drop, without a call to the database: each index's definition with its collection, and each
    retired name (storypost_runtime.migrations compares them with what was applied)."""
    noted: list[Document] = []
    token = _DECLARING.set(noted)
    try:
        await create()
    finally:
        _DECLARING.reset(token)
    return noted
