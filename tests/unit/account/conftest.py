"""Fixtures of account-svc's unit tests: its collections with their indexes, and the world of
tests.support.accounts (account-svc's parts beside the in-process sandbox network)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from account_svc.records import AccountCollections
from storypost_runtime.mongo import Document
from tests.support.accounts import AccountWorld, account_world


@pytest.fixture
async def records(db: AsyncDatabase[Document]) -> AccountCollections:
    collections = AccountCollections.of(db)
    await collections.ensure_indexes()
    return collections


@pytest.fixture
async def world(db: AsyncDatabase[Document]) -> AsyncIterator[AccountWorld]:
    async with account_world(db) as built:
        yield built
