"""Fixtures for unit tests: an in-process MongoDB wire server and a fresh database per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
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
