"""MongoDB client factory (PyMongo async): few pooled connections, bounded operation time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pymongo import AsyncMongoClient, IndexModel
from pymongo.asynchronous.collection import AsyncCollection

from storypost_runtime.settings import MongoSettings

Document = dict[str, Any]


def mongo_client(settings: MongoSettings, app_name: str) -> AsyncMongoClient[Document]:
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
    )


async def ensure_indexes(
    collection: AsyncCollection[Document], indexes: Sequence[IndexModel]
) -> None:
    """Creates the owning service's indexes; repeating it with the same definitions is a no-op."""
    if indexes:
        await collection.create_indexes(list(indexes))
