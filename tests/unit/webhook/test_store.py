"""Webhook URLs and delivery records in MongoDB: limits under races, leases, redelivery, scope."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.clock import FrozenClock
from storypost_runtime.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from storypost_runtime.mongo import Document
from webhook_svc.deliveries import (
    Delivery,
    DeliveryStore,
    NewDelivery,
    Outcome,
    Status,
    delivery_uuid,
)
from webhook_svc.directory import WebhookDirectory
from webhook_svc.records import WebhookCollections
from webhook_svc.records_writer import BatchWriter
from webhook_svc.targets import AddressPolicy
from webhook_svc.webhooks import Webhooks

NOW = datetime(2026, 11, 23, 10, 0, 0, tzinfo=UTC)
LOCAL = AddressPolicy(allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),))


@pytest.fixture
async def records(db: AsyncDatabase[Document]) -> WebhookCollections:
    collections = WebhookCollections.of(db)
    await collections.ensure_indexes()
    return collections


def webhooks_of(records: WebhookCollections, policy: AddressPolicy = LOCAL) -> Webhooks:
    return Webhooks(
        collection=records.webhooks,
        clock=FrozenClock(NOW),
        policy=policy,
        allow_http_loopback=False,
    )


def hook(n: int) -> str:
    return f"https://127.0.0.1:8443/hook/{n}"


async def test_five_urls_at_most_even_when_adds_race(records: WebhookCollections) -> None:
    webhooks = webhooks_of(records)
    results = await asyncio.gather(
        *(webhooks.add("org", hook(n), [], "") for n in range(9)), return_exceptions=True
    )
    refused = [r for r in results if isinstance(r, Exception)]
    assert len(refused) == 4 and all(isinstance(r, FailedPrecondition) for r in refused)
    stored = await webhooks.list("org")
    assert len(stored) == 5
    slots = [d["slot"] async for d in records.webhooks.find({"organizationId": "org"})]
    assert sorted(slots) == [0, 1, 2, 3, 4]
    # Another organization has its own five.
    assert (await webhooks.add("org-2", hook(1), [], "")).organization_id == "org-2"
    await webhooks.remove("org", stored[2].webhook_id)
    assert (await webhooks.add("org", hook(99), [], "")).url == hook(99)


async def test_signing_secrets_are_stored_encrypted(records: WebhookCollections) -> None:
    secret = "a-signing-secret-0123456789"
    webhooks = webhooks_of(records)
    added = await webhooks.add("org", hook(1), [], secret)
    stored = await records.webhooks.find_one({"_id": added.webhook_id})
    assert stored is not None and secret not in str(stored)
    assert "signingSecret" not in stored and stored["signingSecretEncrypted"]
    assert (await webhooks.get("org", added.webhook_id)).signing_secret == secret
    # The same URL and secret again is still a retry (the comparison sees the plain secret).
    assert (await webhooks.add("org", hook(1), [], secret)).webhook_id == added.webhook_id
    # A record written before secrets were encrypted keeps working.
    await records.webhooks.update_one(
        {"_id": added.webhook_id},
        {"$set": {"signingSecret": secret}, "$unset": {"signingSecretEncrypted": ""}},
    )
    assert (await webhooks.get("org", added.webhook_id)).signing_secret == secret


async def test_the_same_url_twice_is_a_retry_or_a_clear_conflict(
    records: WebhookCollections,
) -> None:
    webhooks = webhooks_of(records)
    first, again = await asyncio.gather(
        webhooks.add("org", hook(1), ["social_post.status_changed"], "secret-0123456789"),
        webhooks.add("org", hook(1), ["social_post.status_changed"], "secret-0123456789"),
    )
    assert first.webhook_id == again.webhook_id and first.signed
    with pytest.raises(AlreadyExists, match=first.webhook_id):
        await webhooks.add("org", hook(1), [], "secret-0123456789")
    with pytest.raises(AlreadyExists):
        await webhooks.add("org", hook(1), ["social_post.status_changed"], "")
    assert len(await webhooks.list("org")) == 1


async def test_inward_urls_are_refused_before_anything_is_stored(
    records: WebhookCollections,
) -> None:
    webhooks = webhooks_of(records, AddressPolicy())
    with pytest.raises(InvalidArgument, match="loopback"):
        await webhooks.add("org", hook(1), [], "")
    with pytest.raises(InvalidArgument, match="organization_id is required"):
        await webhooks.add("", "https://example.com/h", [], "")
    assert await records.webhooks.count_documents({}) == 0


async def test_webhooks_are_scoped_by_organization(records: WebhookCollections) -> None:
    webhooks = webhooks_of(records)
    added = await webhooks.add("org", hook(1), [], "")
    with pytest.raises(NotFound):
        await webhooks.get("intruder", added.webhook_id)
    with pytest.raises(NotFound):
        await webhooks.remove("intruder", added.webhook_id)
    assert await webhooks.list("intruder") == []
    assert (await webhooks.of_organizations(["org", "intruder"])).keys() == {"org"}


async def test_the_directory_caches_shares_lookups_and_forgets_on_change(
    records: WebhookCollections,
) -> None:
    webhooks = webhooks_of(records)
    reads = 0
    original = webhooks.of_organizations

    async def counted(orgs: object) -> object:
        nonlocal reads
        reads += 1
        await asyncio.sleep(0.01)
        return await original(orgs)  # type: ignore[arg-type]

    webhooks.of_organizations = counted  # type: ignore[assignment,method-assign]
    clock = [0.0]
    directory = WebhookDirectory(webhooks=webhooks, ttl_seconds=2.0, monotonic=lambda: clock[0])
    answers = await asyncio.gather(*(directory.of_organizations(["org"]) for _ in range(5)))
    assert answers == [{}] * 5 and reads == 1  # one query for concurrent lookups
    await original(["org"])
    added = await webhooks.add("org", hook(1), [], "")
    assert await directory.of_organizations(["org"]) == {}  # cached "none" within the TTL
    directory.forget("org")
    assert [w.webhook_id for w in (await directory.of_organizations(["org"]))["org"]] == [
        added.webhook_id
    ]
    assert reads == 2
    clock[0] = 2.5  # past the TTL: read again
    await directory.of_organizations(["org"])
    assert reads == 3


def new_delivery(event: str, webhook: str = "w1", org: str = "org") -> NewDelivery:
    return NewDelivery(
        delivery_id=delivery_uuid(event, webhook),
        organization_id=org,
        webhook_id=webhook,
        event_id=event,
        event="photoapp_story_post.status_changed",
        url="https://127.0.0.1/h",
        body="{}",
        occurred_at=NOW,
    )


async def test_records_are_unique_per_event_and_url(records: WebhookCollections) -> None:
    store = DeliveryStore(records.deliveries, timedelta(days=30))
    docs = [new_delivery("e1").document(NOW, store.retention)]
    assert await store.insert_new(docs) == 1
    again = [new_delivery(e).document(NOW, store.retention) for e in ("e1", "e2")]
    assert await store.insert_new(again) == 1  # e1 exists already: kept as it was
    assert await records.deliveries.count_documents({}) == 2
    assert await store.existing_ids([delivery_uuid("e1", "w1"), "nope"]) == {
        delivery_uuid("e1", "w1")
    }


async def claim_one(
    store: DeliveryStore,
    now: datetime,
    lease_until: datetime,
    lease_id: str,
    skip_webhooks: Sequence[str] = (),
) -> Delivery | None:
    """One due delivery claimed, as a replica with room for one attempt claims it."""
    batch = await store.claim_batch(
        now, lease_until, lease_id, room=lambda _: 1, limit=1, skip_webhooks=skip_webhooks
    )
    return batch[0] if batch else None


async def test_a_due_delivery_is_claimed_once_and_a_lost_lease_writes_nothing(
    records: WebhookCollections,
) -> None:
    store = DeliveryStore(records.deliveries, timedelta(days=30))
    await store.insert_new([new_delivery("e1").document(NOW, store.retention)])
    lease = NOW + timedelta(seconds=30)
    claims = await asyncio.gather(*(claim_one(store, NOW, lease, f"lease-{n}") for n in range(6)))
    won = [c for c in claims if c is not None]
    assert len(won) == 1 and won[0].lease_id is not None
    assert await claim_one(store, NOW + timedelta(seconds=29), lease, "late") is None
    assert await claim_one(store, NOW, lease, "x") is None
    # A busy URL is skipped; after the lease runs out another replica takes it over.
    later = NOW + timedelta(seconds=31)
    assert await claim_one(store, later, later + timedelta(seconds=30), "l2", ["w1"]) is None
    taken = await claim_one(store, later, later + timedelta(seconds=30), "l2")
    assert taken is not None
    done = Outcome({"status": Status.SUCCEEDED.value}, ("dueAt", "leaseId"))
    assert await store.finish_many([(taken.delivery_id, won[0].lease_id or "", done)]) == 0
    assert await store.finish_many([(taken.delivery_id, "l2", done)]) == 1
    stored = await store.get("org", taken.delivery_id)
    assert stored.status is Status.SUCCEEDED and stored.due_at is None


async def test_due_deliveries_are_claimed_in_batches_within_each_urls_room(
    records: WebhookCollections,
) -> None:
    store = DeliveryStore(records.deliveries, timedelta(days=30))
    hooks = {"w1": 5, "w2": 3, "w3": 2}
    docs = [
        new_delivery(f"{webhook}-e{n}", webhook=webhook).document(NOW, store.retention)
        for webhook, count in hooks.items()
        for n in range(count)
    ]
    await store.insert_new(docs)
    lease = NOW + timedelta(seconds=30)
    room = {"w1": 2, "w2": 5}.get
    first = await store.claim_batch(
        NOW, lease, "one", room=lambda w: room(w, 0), limit=10, skip_webhooks=["w3"]
    )
    assert sorted(d.webhook_id for d in first) == ["w1", "w1", "w2", "w2", "w2"]
    assert all(d.lease_id == "one" and d.due_at == lease for d in first)
    # Replicas claiming at once split the rest: every record goes to exactly one of them.
    claims = await asyncio.gather(
        *(store.claim_batch(NOW, lease, f"r{n}", room=lambda w: 10, limit=10) for n in range(4))
    )
    rest = [d.delivery_id for claim in claims for d in claim]
    assert len(rest) == len(set(rest)) == 5
    assert not {d.delivery_id for d in first} & set(rest)
    assert await store.claim_batch(NOW, lease, "late", room=lambda w: 10, limit=10) == []
    # Outcomes are written in one go, only where the lease still holds.
    done = Outcome({"status": Status.SUCCEEDED.value}, ("dueAt", "leaseId"))
    changes = [(d.delivery_id, "one", done) for d in first]
    assert await store.finish_many([*changes, (rest[0], "one", done)]) == 5
    assert await records.deliveries.count_documents({"status": "succeeded"}) == 5
    assert await records.deliveries.count_documents({"leaseId": {"$ne": None}}) == 5


async def test_the_writer_stores_one_record_per_event_and_url_within_a_batch(
    records: WebhookCollections,
) -> None:
    store = DeliveryStore(records.deliveries, timedelta(days=30))
    writer = BatchWriter(store.insert_new, what="delivery records", retry=True)
    task = asyncio.create_task(writer.run())
    try:
        await writer.write([new_delivery("e0").document(NOW, store.retention)])
        # One batch: the same event twice (handed out twice at once), one stored already.
        await asyncio.gather(
            *(
                writer.write([new_delivery(e).document(NOW, store.retention)])
                for e in ("e1", "e1", "e0", "e2")
            )
        )
    finally:
        task.cancel()
    stored = [d["eventId"] async for d in records.deliveries.find({})]
    assert sorted(stored) == ["e0", "e1", "e2"]


async def test_writes_that_come_together_share_a_write_and_fail_or_retry_together() -> None:
    writes: list[list[int]] = []
    failing = [True]

    async def write(items: list[int]) -> None:
        await asyncio.sleep(0.01)
        if failing[0]:
            raise ConnectionError("database down")
        writes.append(items)

    failing[0] = False
    writer = BatchWriter(write, what="numbers", retry=False, max_batch=3)
    task = asyncio.create_task(writer.run())
    try:
        await asyncio.gather(*(writer.write([n]) for n in range(7)))
        assert writes == [[0, 1, 2], [3, 4, 5], [6]]  # 7 callers, 3 writes of at most 3
        await writer.write([7, 8, 9, 10])  # one caller's items are never split
        assert writes[-1] == [7, 8, 9, 10]
        failing[0] = True
        results = await asyncio.gather(
            *(writer.write([n]) for n in range(2)), return_exceptions=True
        )
        assert all(isinstance(r, ConnectionError) for r in results)
    finally:
        task.cancel()
    # Retrying: an outage delays the callers, and the write goes through once it ends.
    patient = BatchWriter(write, what="numbers", retry=True)
    task = asyncio.create_task(patient.run())
    try:
        pending = asyncio.ensure_future(patient.write([11]))
        await asyncio.sleep(0.05)
        assert not pending.done()
        failing[0] = False
        await asyncio.wait_for(pending, 5)
        assert writes[-1] == [11]
    finally:
        task.cancel()
    # A writer that stops fails whoever still waits, rather than leaving them waiting.
    stopped = BatchWriter(write, what="numbers", retry=True)
    task = asyncio.create_task(stopped.run())
    failing[0] = True
    waiting = asyncio.ensure_future(stopped.write([12]))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(RuntimeError, match="writing numbers"):
        await waiting


async def test_redelivery_restarts_the_schedule_but_never_during_an_attempt(
    records: WebhookCollections,
) -> None:
    store = DeliveryStore(records.deliveries, timedelta(days=30))
    await store.insert_new([new_delivery("e1").document(NOW, store.retention)])
    delivery_id = delivery_uuid("e1", "w1")
    claimed = await claim_one(store, NOW, NOW + timedelta(seconds=30), "lease")
    assert claimed is not None
    with pytest.raises(FailedPrecondition, match="being attempted"):
        await store.redeliver("org", delivery_id, NOW)
    with pytest.raises(NotFound):
        await store.redeliver("intruder", delivery_id, NOW)
    failed = Outcome({"status": Status.FAILED.value, "retryStep": 9}, ("dueAt", "leaseId"))
    assert await store.finish_many([(delivery_id, "lease", failed)]) == 1
    again = await store.redeliver("org", delivery_id, NOW + timedelta(hours=1))
    assert again.status is Status.PENDING and again.retry_step == 0
    assert again.due_at == NOW + timedelta(hours=1) and again.delivery_id == delivery_id
    # A lease whose holder died does not block a redelivery.
    await claim_one(store, NOW + timedelta(hours=1), NOW + timedelta(hours=1, seconds=5), "x")
    assert (await store.redeliver("org", delivery_id, NOW + timedelta(hours=2))).lease_id is None


async def test_the_log_is_newest_first_and_scoped(records: WebhookCollections) -> None:
    store = DeliveryStore(records.deliveries, timedelta(days=30))
    docs = [
        new_delivery(f"e{n}", webhook="w1" if n % 2 else "w2").document(
            NOW + timedelta(seconds=n), store.retention
        )
        for n in range(5)
    ]
    docs.append(new_delivery("other", org="org-2").document(NOW, store.retention))
    await store.insert_new(docs)
    log = await store.list("org", 3)
    assert [d.event_id for d in log] == ["e4", "e3", "e2"]
    assert [d.event_id for d in await store.list("org", 0, "w1")] == ["e3", "e1"]
    assert [d.event_id for d in await store.list("org-2", 500)] == ["other"]
    with pytest.raises(NotFound):
        await store.get("org-2", delivery_uuid("e1", "w1"))
