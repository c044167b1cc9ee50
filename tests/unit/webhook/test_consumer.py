"""The event consumer with its real collaborators, a fake bus and a local HTTPS receiver."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from pymongo.asynchronous.database import AsyncDatabase

from storypost.testing.certificates import make_certificates
from storypost_runtime.backoff import RetrySchedule
from storypost_runtime.clock import SystemClock
from storypost_runtime.mongo import Document
from storypost_runtime.outbox import Event
from tests.support.events import story_event
from tests.support.webhook_receiver import Answer, Receiver
from webhook_svc.consumer import EventConsumer
from webhook_svc.deliveries import DeliveryStore, Status, delivery_uuid
from webhook_svc.directory import WebhookDirectory
from webhook_svc.dispatcher import Dispatcher
from webhook_svc.lanes import Lanes
from webhook_svc.metrics import WebhookMetrics
from webhook_svc.records import WebhookCollections
from webhook_svc.records_writer import BatchWriter
from webhook_svc.sender import Sender, http_client
from webhook_svc.targets import AddressPolicy
from webhook_svc.webhooks import Webhooks


@dataclass
class Metadata:
    num_delivered: int


@dataclass
class FakeMessage:
    data: bytes
    headers: dict[str, str] | None
    metadata: Metadata
    subject: str = "events.test"
    outcome: list[str] = field(default_factory=list)
    on_ack: Callable[[], object] | None = None

    async def ack(self) -> None:
        if self.on_ack is not None:
            await self.on_ack()  # type: ignore[misc]
        self.outcome.append("ack")

    async def nak(self, delay: float | None = None) -> None:
        self.outcome.append("nak")

    async def term(self) -> None:
        self.outcome.append("term")

    async def in_progress(self) -> None:
        self.outcome.append("in_progress")


class FakeBus:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[FakeMessage] = asyncio.Queue()

    def put(self, event: Event | bytes, delivered: int = 1) -> FakeMessage:
        data = event if isinstance(event, bytes) else event.to_message()
        headers = None if isinstance(event, bytes) else event.headers()
        message = FakeMessage(data, headers, Metadata(delivered))
        self.queue.put_nowait(message)
        return message

    async def fetch(self, batch: int, timeout: float) -> Sequence[FakeMessage]:
        first = await asyncio.wait_for(self.queue.get(), timeout)
        taken = [first]
        while len(taken) < batch and not self.queue.empty():
            taken.append(self.queue.get_nowait())
        return taken


@dataclass
class Service:
    bus: FakeBus
    webhooks: Webhooks
    store: DeliveryStore
    receiver: Receiver
    records: WebhookCollections
    dispatcher_task: asyncio.Task[None]
    registry: CollectorRegistry

    def held(self) -> float | None:
        return self.registry.get_sample_value("storypost_webhook_held_deliveries")


@pytest.fixture
async def service(
    request: pytest.FixtureRequest, db: AsyncDatabase[Document], tmp_path: Path
) -> AsyncIterator[Service]:
    """`indirect` parameters: the dispatcher's hold_limit and hold_seconds (none held else)."""
    holding: dict[str, float] = getattr(request, "param", {})
    records = WebhookCollections.of(db)
    await records.ensure_indexes()
    clock = SystemClock()
    policy = AddressPolicy(allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),))
    certs = make_certificates(tmp_path)
    receiver = Receiver(certs)
    await receiver.start()
    webhooks = Webhooks(
        collection=records.webhooks, clock=clock, policy=policy, allow_http_loopback=False
    )
    store = DeliveryStore(records.deliveries, timedelta(days=1))
    registry = CollectorRegistry()
    metrics = WebhookMetrics.create(registry)
    bus = FakeBus()
    async with http_client(policy, str(certs.ca_file), 8, 1.0) as http:
        dispatcher = Dispatcher(
            webhooks=webhooks,
            store=store,
            sender=Sender(client=http, clock=clock, timeout_seconds=1.0),
            lanes=Lanes(
                total=16, per_lane=1
            ),  # one attempt per URL at a time, no waiting in memory
            schedule=RetrySchedule([0.2, 0.2], 0.0),
            clock=clock,
            metrics=metrics,
            lease_seconds=5,
            poll_seconds=0.1,
            hold_limit=int(holding.get("hold_limit", 0)),
            hold_seconds=holding.get("hold_seconds", 0.0),
        )
        writer = BatchWriter(store.insert_new, what="delivery records", retry=True)
        consumer = EventConsumer(
            subscription=bus,
            webhooks=WebhookDirectory(webhooks=webhooks, ttl_seconds=0.0),
            store=store,
            dispatcher=dispatcher,
            writer=writer,
            metrics=metrics,
            batch=10,
            max_inflight=100,
            ack_wait_seconds=30,
        )
        tasks = [asyncio.create_task(t.run()) for t in (writer, dispatcher, consumer)]
        yield Service(bus, webhooks, store, receiver, records, tasks[1], registry)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    await receiver.close()


async def settled(message: FakeMessage) -> list[str]:
    async with asyncio.timeout(10):
        while not {"ack", "nak", "term"} & set(message.outcome):
            await asyncio.sleep(0.01)
    return message.outcome


async def test_an_event_is_acknowledged_only_once_its_record_is_stored(service: Service) -> None:
    webhook = await service.webhooks.add("org", service.receiver.url("/a"), [], "")
    event = story_event("org")
    delivery_id = delivery_uuid(event.id, webhook.webhook_id)
    stored_at_ack: list[bool] = []

    async def check() -> None:
        stored_at_ack.append(bool(await service.store.existing_ids([delivery_id])))

    message = service.bus.put(event)
    message.on_ack = check
    assert await settled(message) == ["ack"]
    assert stored_at_ack == [True]
    [got] = service.receiver.received("/a")
    assert got.delivery == delivery_id
    record = await service.store.get("org", delivery_id)
    assert record.status is Status.SUCCEEDED and record.attempts == 1


async def test_a_redelivered_event_makes_no_second_delivery(service: Service) -> None:
    await service.webhooks.add("org", service.receiver.url("/b"), [], "")
    event = story_event("org")
    assert await settled(service.bus.put(event)) == ["ack"]
    # The bus hands the same event out again (an ack was lost): found, not attempted again.
    assert await settled(service.bus.put(event, delivered=2)) == ["ack"]
    assert len(service.receiver.received("/b")) == 1
    assert len(await service.store.list("org", 10)) == 1


async def test_one_batch_with_an_event_twice_makes_one_delivery(service: Service) -> None:
    await service.webhooks.add("org", service.receiver.url("/dup"), [], "")
    event = story_event("org")
    # Handed out twice before either was acknowledged, fetched in the same batch.
    twice = [service.bus.put(event), service.bus.put(event)]
    for message in twice:
        assert await settled(message) == ["ack"]
    [record] = await service.store.list("org", 10)
    assert record.delivery_id == delivery_uuid(event.id, record.webhook_id)
    assert {r.delivery for r in service.receiver.received("/dup")} == {record.delivery_id}


async def test_a_crash_between_storing_and_acknowledging_a_batch_duplicates_nothing(
    service: Service,
) -> None:
    await service.webhooks.add("org", service.receiver.url("/crash"), [], "")
    events = [story_event("org") for _ in range(5)]

    async def crash() -> None:
        raise ConnectionError("the replica died before its ack reached the bus")

    first = [service.bus.put(event) for event in events]
    for message in first:
        message.on_ack = crash
    async with asyncio.timeout(10):
        while len(await service.store.list("org", 10)) < 5:
            await asyncio.sleep(0.02)
    await service.receiver.wait_count("/crash", 5)
    # The bus hands the whole batch out again: found stored, acknowledged, not sent again.
    again = [service.bus.put(event, delivered=2) for event in events]
    for message in again:
        assert await settled(message) == ["ack"]
    assert len(await service.store.list("org", 10)) == 5
    assert len(service.receiver.received("/crash")) == 5


async def test_unreadable_and_unsubscribed_events(service: Service) -> None:
    assert await settled(service.bus.put(b"{not json")) == ["term"]
    assert await settled(service.bus.put(story_event("nobody-here"))) == ["ack"]
    assert await service.store.list("nobody-here", 10) == []


async def test_planning_failures_send_the_event_back(service: Service) -> None:
    async def broken(orgs: object) -> object:
        raise ConnectionError("database down")

    service.webhooks.of_organizations = broken  # type: ignore[assignment,method-assign]
    assert await settled(service.bus.put(story_event("org"))) == ["nak"]


async def test_a_busy_url_gets_its_deliveries_through_the_scheduler(service: Service) -> None:
    service.receiver.answer("/c", Answer(200, delay=0.3))
    await service.webhooks.add("org", service.receiver.url("/c"), [], "")
    messages = [service.bus.put(story_event("org")) for _ in range(4)]
    for message in messages:
        assert await settled(message) == ["ack"]
    got = await service.receiver.wait_count("/c", 4, timeout=10)
    assert len({r.delivery for r in got}) == 4
    async with asyncio.timeout(10):
        while True:
            log = await service.store.list("org", 10)
            if all(d.status is Status.SUCCEEDED for d in log):
                break
            await asyncio.sleep(0.05)
    assert len(log) == 4


async def leases(service: Service, org: str) -> dict[str, str | None]:
    """Each pending record of `org` and the lease it is under (None: due for the scheduler)."""
    found = service.records.deliveries.find({"organizationId": org, "status": "pending"})
    return {doc["_id"]: doc.get("leaseId") async for doc in found}


async def all_succeeded(service: Service, org: str, count: int) -> None:
    async with asyncio.timeout(10):
        while True:
            log = await service.store.list(org, 50)
            if len(log) == count and all(d.status is Status.SUCCEEDED for d in log):
                return
            await asyncio.sleep(0.05)


HOLDING = {"hold_limit": 100, "hold_seconds": 5.0}


@pytest.mark.parametrize("service", [HOLDING], indirect=True)
async def test_deferred_deliveries_are_held_and_sent_in_order(service: Service) -> None:
    service.receiver.default("/held", Answer(200, delay=0.2))
    webhook = await service.webhooks.add("org", service.receiver.url("/held"), [], "")
    events = [story_event("org") for _ in range(5)]
    messages = [service.bus.put(event) for event in events]
    for message in messages:
        assert await settled(message) == ["ack"]
    # One attempt runs; the other four are stored leased to this replica (the scheduler of no
    # replica can claim them) and wait here for the URL's slot.
    held = await leases(service, "org")
    assert len(held) == 4 and len(set(held.values())) == 1 and None not in held.values()
    assert (service.held() or 0) >= 1  # counted until its attempt ends
    got = await service.receiver.wait_count("/held", 5)
    assert [r.delivery for r in got] == [delivery_uuid(e.id, webhook.webhook_id) for e in events]
    await all_succeeded(service, "org", 5)
    assert service.held() == 0


@pytest.mark.parametrize("service", [{"hold_limit": 2, "hold_seconds": 5.0}], indirect=True)
async def test_past_the_hold_limit_deliveries_wait_for_the_scheduler(service: Service) -> None:
    service.receiver.default("/limit", Answer(200, delay=0.3))
    await service.webhooks.add("org", service.receiver.url("/limit"), [], "")
    for message in [service.bus.put(story_event("org")) for _ in range(5)]:
        assert await settled(message) == ["ack"]
    held = list((await leases(service, "org")).values())
    assert held.count(None) == 2 and len(held) == 4  # two held, two due for the scheduler
    got = await service.receiver.wait_count("/limit", 5)
    assert len({r.delivery for r in got}) == 5
    await all_succeeded(service, "org", 5)


@pytest.mark.parametrize("service", [{"hold_limit": 100, "hold_seconds": 0.3}], indirect=True)
async def test_held_deliveries_without_a_turn_go_to_the_scheduler_once(service: Service) -> None:
    service.receiver.answer("/slow", Answer(200, delay=0.8))
    await service.webhooks.add("org", service.receiver.url("/slow"), [], "")
    first, *deferred = [service.bus.put(story_event("org")) for _ in range(4)]
    for message in deferred:
        assert await settled(message) == ["ack"]
    # The first attempt holds the URL's one slot for 0.8 s: the three held give up after
    # 0.3 s and are handed back due now, and the scheduler sends each once.
    async with asyncio.timeout(5):
        while list((await leases(service, "org")).values()) != [None] * 3:
            await asyncio.sleep(0.02)
    assert await settled(first) == ["ack"]
    got = await service.receiver.wait_count("/slow", 4)
    await all_succeeded(service, "org", 4)
    assert len(service.receiver.received("/slow")) == len({r.delivery for r in got}) == 4


@pytest.mark.parametrize("service", [HOLDING], indirect=True)
async def test_closing_hands_held_deliveries_back_due_now(service: Service) -> None:
    service.receiver.default("/close", Answer(200, delay=3.0))
    await service.webhooks.add("org", service.receiver.url("/close"), [], "")
    _, *deferred = [service.bus.put(story_event("org")) for _ in range(4)]
    for message in deferred:
        assert await settled(message) == ["ack"]
    held = await leases(service, "org")
    assert len(held) == 3 and None not in held.values()
    service.dispatcher_task.cancel()
    await asyncio.gather(service.dispatcher_task, return_exceptions=True)
    # The three that had no turn are due at once for the scheduler of any replica.
    assert await leases(service, "org") == dict.fromkeys(held)
    now = datetime.now(UTC)
    async for doc in service.records.deliveries.find({"_id": {"$in": list(held)}}):
        assert doc["dueAt"].replace(tzinfo=UTC) <= now


@pytest.mark.parametrize("service", [HOLDING], indirect=True)
async def test_a_urls_slot_is_free_once_the_request_ends_not_once_its_outcome_is_written(
    service: Service,
) -> None:
    finish_many = service.store.finish_many

    async def slow(changes: Any) -> int:
        await asyncio.sleep(1.0)
        return await finish_many(changes)

    service.store.finish_many = slow  # type: ignore[method-assign]
    service.receiver.default("/free", Answer(200, delay=0.1))
    await service.webhooks.add("org", service.receiver.url("/free"), [], "")
    for message in [service.bus.put(story_event("org")) for _ in range(3)]:
        assert await settled(message) == ["ack"]
    got = await service.receiver.wait_count("/free", 3)
    # The two held deliveries go one after the other on the URL's one slot, each as soon as
    # the request before it ended: not a second later, when that one's outcome was written.
    assert got[2].at - got[1].at < 0.6
    await all_succeeded(service, "org", 3)
