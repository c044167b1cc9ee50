"""An in-process mongoeco wire server (memory engine) for tests of one store at a time."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mongoeco.engines.memory import MemoryEngine
from mongoeco.engines.sqlite import SQLiteEngine
from mongoeco.wire.proxy import AsyncMongoEcoProxyServer
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.mongo import Document, mongo_client
from storypost_runtime.settings import MongoSettings, env_variable


@asynccontextmanager
async def memory_mongo_server() -> AsyncIterator[str]:
    """Yields a mongodb:// URL of a wire server living in this event loop."""
    server = AsyncMongoEcoProxyServer(engine=MemoryEngine(), host="127.0.0.1", port=0)
    address = await server.start()
    try:
        yield f"mongodb://127.0.0.1:{address.port}/?directConnection=true"
    finally:
        await server.close()


@asynccontextmanager
async def fresh_database(url: str) -> AsyncIterator[AsyncDatabase[Document]]:
    """A database of its own for one test, dropped afterwards."""
    settings = MongoSettings(mongo_url=url, mongo_database=f"t{uuid.uuid4().hex[:12]}")
    client: AsyncMongoClient[Document] = mongo_client(settings, "tests")
    try:
        yield client[settings.mongo_database]
        await client.drop_database(settings.mongo_database)
    finally:
        await client.close()


@asynccontextmanager
async def sqlite_mongo_database(path: Path) -> AsyncIterator[AsyncDatabase[Document]]:
    """The `storypost` database of a mongoeco wire server on the SQLite file `path` (the
    embedded stand-in; a test applies the launcher's patches it relies on first); the client
    and the server are closed afterwards."""
    server = AsyncMongoEcoProxyServer(engine=SQLiteEngine(str(path)), port=0)
    address = await server.start()
    client: AsyncMongoClient[Document] = AsyncMongoClient(
        f"mongodb://127.0.0.1:{address.port}/?directConnection=true", tz_aware=True
    )
    try:
        yield client["storypost"]
    finally:
        await client.close()
        await server.close()


def stack_mongo_url(env: Mapping[str, str]) -> str:
    """The MongoDB URL of the stack whose client environment is `env` (a StackHandle's `env`,
    an EmbeddedStack's `env()`)."""
    return env[env_variable(MongoSettings, "mongo_url")]


def stack_database_name(env: Mapping[str, str]) -> str:
    """The database the stack's services use: as set in `env`, else MongoSettings' default."""
    default: str = MongoSettings.model_fields["mongo_database"].default
    return env.get(env_variable(MongoSettings, "mongo_database"), default)


@asynccontextmanager
async def stack_database(
    env: Mapping[str, str], **client_options: Any
) -> AsyncIterator[AsyncDatabase[Document]]:
    """The database of the stack whose client environment is `env`, read and written directly;
    `client_options` go to AsyncMongoClient as given. The client is closed afterwards."""
    client: AsyncMongoClient[Document] = AsyncMongoClient(stack_mongo_url(env), **client_options)
    try:
        yield client[stack_database_name(env)]
    finally:
        await client.close()


def count_scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every whole-collection read of mongoeco's SQLite engine (the embedded stand-in)
    in the list it returns (the collection read, where known): a check that an index lookup
    did not fall back to a scan."""
    scans: list[str] = []
    load = SQLiteEngine._load_documents

    def counting(self: SQLiteEngine, *args: object, **kwargs: object) -> object:
        scans.append(str(args[1]) if len(args) > 1 else "?")
        return load(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SQLiteEngine, "_load_documents", counting)
    return scans


def trace_sqlite_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every SQL statement of the SQLite connections opened from now on (the
    embedded stand-in's engine among them) in the list it returns."""
    statements: list[str] = []
    connect = sqlite3.connect

    def tracing(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", tracing)
    return statements


def plans_of(path: Path, statements: list[str], needle: str) -> list[str]:
    """SQLite's query plan of each statement that reads documents and mentions `needle`."""
    selects = [s for s in statements if s.lstrip().startswith("SELECT document") and needle in s]
    with sqlite3.connect(path) as conn:
        return [str(conn.execute("EXPLAIN QUERY PLAN " + s).fetchall()) for s in selects]
