"""webhook-svc's URL rules are compound unique indexes on the real fields, on both databases."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pymongo import ASCENDING, IndexModel
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from storypost_cli.embedded_mongo import (
    add_sqlite_indexes_for_mongo_indexes,
    skip_full_scan_for_plain_ids,
    use_sql_prefilter_for_compound_unique_indexes,
)
from storypost_runtime.clock import FrozenClock
from storypost_runtime.errors import AlreadyExists, FailedPrecondition
from storypost_runtime.mongo import Document
from tests.support.mongo import count_scans, sqlite_mongo_database
from webhook_svc.event_types import subscription
from webhook_svc.records import RETIRED_WEBHOOK_INDEXES, WebhookCollections
from webhook_svc.targets import AddressPolicy
from webhook_svc.webhooks import Webhooks

NOW = datetime(2026, 11, 23, 10, 0, 0, tzinfo=UTC)
LOCAL = AddressPolicy(allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),))


def hook(n: int) -> str:
    return f"https://127.0.0.1:8443/hook/{n}"


def webhooks_of(records: WebhookCollections) -> Webhooks:
    return Webhooks(
        collection=records.webhooks, clock=FrozenClock(NOW), policy=LOCAL, allow_http_loopback=False
    )


def old_record(organization_id: str, slot: int, url: str) -> Document:
    """A URL as earlier versions stored it: the real fields plus the joined keys."""
    return {
        "_id": f"old-{organization_id}-{slot}",
        "organizationId": organization_id,
        "url": url,
        "urlKey": f"{organization_id} {url}",
        "events": subscription([]),
        "createdAt": NOW,
        "slot": slot,
        "slotKey": f"{organization_id}/{slot}",
    }


async def test_the_indexes_are_compound_on_the_real_fields(db: AsyncDatabase[Document]) -> None:
    records = WebhookCollections.of(db)
    await records.ensure_indexes()
    await records.ensure_indexes()  # again: nothing changes
    indexes = await records.webhooks.index_information()
    assert indexes["organization_slot"]["key"] == [("organizationId", 1), ("slot", 1)]
    assert indexes["organization_url"]["key"] == [("organizationId", 1), ("url", 1)]
    assert indexes["organization_slot"]["unique"] and indexes["organization_url"]["unique"]
    assert not set(RETIRED_WEBHOOK_INDEXES) & set(indexes)
    added = await webhooks_of(records).add("org", hook(1), [], "")
    stored = await records.webhooks.find_one({"_id": added.webhook_id})
    assert stored is not None and "slotKey" not in stored and "urlKey" not in stored
    # The database itself refuses a second slot 0 or a second copy of a URL in one
    # organization, whoever writes; another organization has its own.
    twin = {"organizationId": "org", "url": hook(2), "slot": stored["slot"]}
    with pytest.raises(DuplicateKeyError):
        await records.webhooks.insert_one(twin)
    with pytest.raises(DuplicateKeyError):
        await records.webhooks.insert_one({"organizationId": "org", "url": hook(1), "slot": 3})
    await records.webhooks.insert_one({"organizationId": "org-2", "url": hook(1), "slot": 0})


async def test_records_written_with_the_joined_keys_still_count(
    db: AsyncDatabase[Document],
) -> None:
    """An existing database: the old indexes go, its records keep deduplicating and filling
    slots, and new records (without joined keys) are stored beside them."""
    records = WebhookCollections.of(db)
    await records.webhooks.create_indexes(
        [
            IndexModel([("slotKey", ASCENDING)], unique=True, name="slot_key"),
            IndexModel([("urlKey", ASCENDING)], unique=True, name="url_key"),
            IndexModel([("organizationId", ASCENDING)], name="organization"),
        ]
    )
    await records.webhooks.insert_many([old_record("org", slot, hook(slot)) for slot in (0, 2)])
    # Two replicas of the new version start together.
    await asyncio.gather(records.ensure_indexes(), records.ensure_indexes())
    assert not set(RETIRED_WEBHOOK_INDEXES) & set(await records.webhooks.index_information())
    webhooks = webhooks_of(records)
    # The same URL again is the old record (a retry), or a clear conflict.
    assert (await webhooks.add("org", hook(2), [], "")).webhook_id == "old-org-2"
    with pytest.raises(AlreadyExists):
        await webhooks.add("org", hook(2), ["social_post.status_changed"], "")
    # New URLs take the free slots around the old ones, racing or not; the limit counts all.
    results = await asyncio.gather(
        *(webhooks.add("org", hook(n), [], "") for n in range(10, 16)), return_exceptions=True
    )
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(refused) == 3 and all(isinstance(r, FailedPrecondition) for r in refused)
    slots = sorted([d["slot"] async for d in records.webhooks.find({"organizationId": "org"})])
    assert slots == [0, 1, 2, 3, 4]
    assert await records.webhooks.count_documents({"slotKey": {"$exists": False}}) == 3


# --- the embedded stand-in (mongoeco on SQLite, with the launcher's compatibility layer) ------


@pytest.fixture
async def embedded(tmp_path: Path) -> AsyncIterator[AsyncDatabase[Document]]:
    skip_full_scan_for_plain_ids()
    use_sql_prefilter_for_compound_unique_indexes()
    add_sqlite_indexes_for_mongo_indexes()
    async with sqlite_mongo_database(tmp_path / "db.sqlite") as database:
        yield database


async def test_the_embedded_stand_in_enforces_them_without_scanning(
    embedded: AsyncDatabase[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    records = WebhookCollections.of(embedded)
    await records.ensure_indexes()
    await records.webhooks.insert_many(
        [
            {"organizationId": f"seed-{n // 5}", "url": hook(n), "slot": n % 5, "createdAt": NOW}
            for n in range(200)
        ]
    )
    scans = count_scans(monkeypatch)
    webhooks = webhooks_of(records)
    results = await asyncio.gather(
        *(webhooks.add("org", hook(n), [], "") for n in range(8)), return_exceptions=True
    )
    assert sum(isinstance(r, FailedPrecondition) for r in results) == 3
    stored = await webhooks.list("org")
    assert len(stored) == 5
    # A slot equal as a number (0 and 0.0) is the same slot; a URL once per organization
    # (one that won a slot in the race: which ones did is up to the race).
    with pytest.raises(DuplicateKeyError):
        await records.webhooks.insert_one({"organizationId": "org", "url": "u", "slot": 0.0})
    with pytest.raises(DuplicateKeyError):
        await records.webhooks.insert_one(
            {"organizationId": "org", "url": stored[0].url, "slot": 9}
        )
    assert scans == [], "a compound key with a string is checked in SQL, not by a scan"
