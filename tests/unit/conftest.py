"""Fixtures for unit tests: an in-process MongoDB wire server and a fresh database per test,
and an OpenTelemetry tracer provider that keeps its spans in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.mongo import Document
from tests.support.mongo import fresh_database, memory_mongo_server


@pytest.fixture(scope="session")
async def mongo_url() -> AsyncIterator[str]:
    async with memory_mongo_server() as url:
        yield url


@pytest.fixture
async def db(mongo_url: str) -> AsyncIterator[AsyncDatabase[Document]]:
    async with fresh_database(mongo_url) as database:
        yield database


@pytest.fixture
def traces() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A tracer provider (not the global one) and the exporter holding its spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()
