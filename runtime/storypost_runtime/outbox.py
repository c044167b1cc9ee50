"""The single-document outbox: a record and its event change in one update; a relay publishes.

A writer merges `with_event(update, event)` into the `update_one`/`find_one_and_update` that
changes the record (guarded by the expected old state), so the change and its event commit
together. The relay finds records with `outboxPending: true`, publishes each event to JetStream
with `Nats-Msg-Id` = event id (JetStream drops re-published ids inside its duplicate window),
then removes exactly the events it published. A crash between publish and removal re-publishes
the same ids: nothing is lost, nothing is invented.

An event keeps the W3C `traceparent` of the span that made it (optional: records written
before traces, or with tracing off, have none), so the relay's publish, though later and in
another task, joins the trace of the call that changed the record.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from prometheus_client import Counter, Gauge
from pymongo import ASCENDING, IndexModel
from pymongo.asynchronous.collection import AsyncCollection

from storypost_runtime.bus import (
    JetStreamPublisher,
    ensure_events_stream,
    nats_connection,
    refuse_wrong_identity,
)
from storypost_runtime.bus_message import BusMessage
from storypost_runtime.component import component
from storypost_runtime.context import current_request_id
from storypost_runtime.documents import from_document
from storypost_runtime.logs import get_logger
from storypost_runtime.metrics import Metrics, counter, gauge
from storypost_runtime.mongo import Document
from storypost_runtime.settings import NatsSettings
from storypost_runtime.tasks import background, run_passes
from storypost_runtime.tracing import current_traceparent, in_stored_trace
from storypost_runtime.vocabulary import ALL_EVENT_TYPES

log = get_logger(__name__)

OUTBOX_FIELD = "outbox"
PENDING_FIELD = "outboxPending"
SERVED_EVENTS = frozenset(event.name for event in ALL_EVENT_TYPES)


@dataclass(frozen=True)
class Event(BusMessage):
    """A status event as it waits in its record's outbox: the bus message it becomes, and the
    trace of its change (the relay publishes in that trace; the trace id travels in the
    publish's headers, not in the body)."""

    # The trace of the change that made the event (W3C traceparent), when one was recorded.
    traceparent: str | None = None

    @classmethod
    def new(
        cls, event_type: str, organization_id: str, occurred_at: datetime, data: Mapping[str, Any]
    ) -> Event:
        """A new event of one of the types webhook URLs receive (every event on the bus has
        that reader: webhook-svc takes `events.>`, so a type it does not serve is refused)."""
        if event_type not in SERVED_EVENTS:
            raise ValueError(f"{event_type!r} is no event type webhook-svc serves")
        return cls(
            id=str(uuid.uuid4()),
            type=event_type,
            organization_id=organization_id,
            occurred_at=occurred_at,
            data=dict(data),
            request_id=current_request_id(),
            traceparent=current_traceparent(),
        )

    def to_document(self) -> Document:
        doc: Document = {
            "id": self.id,
            "type": self.type,
            "organizationId": self.organization_id,
            "occurredAt": self.occurred_at,
            "data": dict(self.data),
            "requestId": self.request_id,
        }
        if self.traceparent:
            doc["traceparent"] = self.traceparent
        return doc

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Event:
        return from_document(cls, doc)

    def to_message(self) -> bytes:
        """The body on the bus (for tests and tools that publish an event themselves)."""
        return self.body()


def with_event(update: Mapping[str, Any], *events: Event) -> dict[str, Any]:
    """Adds events to an update document: `$push` to the outbox and `$set` the pending flag."""
    merged: dict[str, Any] = {key: dict(value) for key, value in update.items()}
    if not events:
        return merged
    docs = [event.to_document() for event in events]
    merged.setdefault("$push", {})[OUTBOX_FIELD] = {"$each": docs}
    merged.setdefault("$set", {})[PENDING_FIELD] = True
    return merged


# The relay's query (`outboxPending: true`) on every collection with an outbox: sparse, since
# only records with unsent events carry the flag.
OUTBOX_INDEX = IndexModel([(PENDING_FIELD, ASCENDING)], sparse=True, name="outbox_pending")


def new_record_outbox(*events: Event) -> dict[str, Any]:
    """Fields for an inserted record that carries its first events."""
    return {OUTBOX_FIELD: [e.to_document() for e in events], PENDING_FIELD: True} if events else {}


class Publisher(Protocol):
    async def publish(self, subject: str, payload: bytes, headers: Mapping[str, str]) -> None: ...


class OutboxMetrics(Metrics):
    """The relay's backlog and throughput, per collection (pass one to OutboxRelay)."""

    published: Counter = counter(
        "storypost_outbox_events_published",
        "Events the outbox relay published to the bus",
        "collection",
    )
    failures: Counter = counter(
        "storypost_outbox_relay_failures",
        "Relay passes that failed (bus or database unavailable)",
    )
    backlog: Gauge = gauge(
        "storypost_outbox_backlog_records",
        "Records with unsent events at the latest pass (at most the batch size)",
        "collection",
    )
    oldest_age: Gauge = gauge(
        "storypost_outbox_oldest_event_age_seconds",
        "Age of the oldest unsent event at the latest pass (0 when none)",
        "collection",
    )


def _age_seconds(occurred_at: datetime, now: datetime) -> float:
    stamp = occurred_at if occurred_at.tzinfo else occurred_at.replace(tzinfo=UTC)
    return max(0.0, (now - stamp).total_seconds())


@component
class OutboxRelay:
    """Publishes pending events of the given collections; wakes at once when told, else polls."""

    _: KW_ONLY
    collections: Sequence[AsyncCollection[Document]]
    publisher: Publisher
    poll_interval_seconds: float = 0.5
    batch_size: int = 100
    metrics: OutboxMetrics | None = None
    _wake: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    published: int = field(init=False, default=0)

    def wake(self) -> None:
        """Called by a writer in this process after it stored events: relay without waiting."""
        self._wake.set()

    async def relay_once(self) -> int:
        """One pass over every collection; returns how many events were published."""
        count, _ = await self._pass()
        return count

    async def _pass(self) -> tuple[int, bool]:
        """One pass: how many events were published, and whether it may have left pending
        events behind (a full batch, or events added to a record while it was relayed)."""
        count = 0
        left_behind = False
        batch = self.batch_size
        for collection in self.collections:
            cursor = collection.find({PENDING_FIELD: True}, {OUTBOX_FIELD: 1}).limit(batch)
            pending = await cursor.to_list(batch)
            self._observe(collection.name, pending)
            left_behind |= len(pending) >= batch
            for doc in pending:
                sent, added_meanwhile = await self._relay_record(collection, doc)
                left_behind |= added_meanwhile
                count += sent
                if self.metrics is not None:
                    self.metrics.published.labels(collection.name).inc(sent)
        self.published += count
        return count, left_behind

    def _observe(self, name: str, pending: list[Document]) -> None:
        """Backlog gauges, set before publishing so a bus outage shows as a growing age."""
        if self.metrics is None:
            return
        now = datetime.now(UTC)
        ages = [
            _age_seconds(raw["occurredAt"], now)
            for doc in pending
            for raw in doc.get(OUTBOX_FIELD) or []
            if isinstance(raw.get("occurredAt"), datetime)
        ]
        self.metrics.backlog.labels(name).set(len(pending))
        self.metrics.oldest_age.labels(name).set(max(ages, default=0.0))

    async def _relay_record(
        self, collection: AsyncCollection[Document], doc: Document
    ) -> tuple[int, bool]:
        """Publishes a record's events and removes them; returns how many, and whether events
        were added to the record meanwhile (they are still pending)."""
        events = list(doc.get(OUTBOX_FIELD) or [])
        for raw in events:
            event = Event.from_document(raw)
            await self._publish(event)
        # Clear in one round trip when nothing new arrived meanwhile; else remove what we sent.
        cleared = await collection.update_one(
            {"_id": doc["_id"], OUTBOX_FIELD: events},
            {"$set": {OUTBOX_FIELD: []}, "$unset": {PENDING_FIELD: ""}},
        )
        added_meanwhile = cleared.matched_count == 0
        if added_meanwhile:
            sent = [raw["id"] for raw in events]
            await collection.update_one(
                {"_id": doc["_id"]}, {"$pull": {OUTBOX_FIELD: {"id": {"$in": sent}}}}
            )
        return len(events), added_meanwhile

    async def _publish(self, event: Event) -> None:
        """Publishes in the stored trace's context, so the publish span joins that trace."""
        with in_stored_trace(event.traceparent):
            await self.publisher.publish(event.subject, event.body(), event.headers())

    async def run(self) -> None:
        """Relays until cancelled; errors (bus or database down) are logged and retried."""
        await run_passes(
            self._backlog_pass,
            self._pass_failed,
            poll_seconds=self.poll_interval_seconds,
            wake=self._wake,
        )

    async def _backlog_pass(self) -> int:
        """A pass; again at once only when it may have left pending events (a full batch, or
        events added to a record while it was relayed). Otherwise the next pass is the next
        write's wake or the poll: a pass that found every pending record emptied them, so an
        immediate second query would find only what a writer, which wakes the relay, or
        another replica (the poll) added since. Under load this halves the relay's queries."""
        _, left_behind = await self._pass()
        return int(left_behind)

    def _pass_failed(self, error: Exception) -> None:
        log.warning("outbox relay pass failed", error=str(error))
        if self.metrics is not None:
            self.metrics.failures.inc()


async def start_outbox_relay(
    stack: AsyncExitStack,
    settings: NatsSettings,
    collections: Sequence[AsyncCollection[Document]],
    *,
    name: str,
    metrics: OutboxMetrics | None = None,
    serves_without_nats: bool = False,
) -> OutboxRelay:
    """Starts a service's outbox relay, which runs until `stack` closes, and returns it (its
    writers call `wake`). The NATS connection, named `name`, drains after the relay stops.

    A service that needs the bus connects now: its start fails when NATS does not answer
    within 30 s. One that serves without it (`serves_without_nats`: account-svc) relays once
    NATS and JetStream answer; its events wait in their records meanwhile, none is lost."""
    if serves_without_nats:
        await refuse_wrong_identity(settings, name)
        relay = OutboxRelay(collections=collections, publisher=_NotConnected(), metrics=metrics)
        await stack.enter_async_context(
            background(_relay_when_reachable(relay, settings, name), "outbox relay")
        )
        return relay
    client = await stack.enter_async_context(nats_connection(settings, name))
    js = client.jetstream()
    await ensure_events_stream(js, settings)
    relay = OutboxRelay(
        collections=collections, publisher=JetStreamPublisher(js=js), metrics=metrics
    )
    await stack.enter_async_context(background(relay.run(), "outbox relay"))
    return relay


class _NotConnected:
    """The publisher of a relay that has not started yet (it starts once NATS answers)."""

    async def publish(self, subject: str, payload: bytes, headers: Mapping[str, str]) -> None:
        raise ConnectionError("the outbox relay is not connected to NATS yet")


async def _relay_when_reachable(
    relay: OutboxRelay, settings: NatsSettings, name: str, retry_seconds: float = 2.0
) -> None:
    async with nats_connection(settings, name, give_up_after_seconds=None) as client:
        js = client.jetstream()
        while True:
            try:
                await ensure_events_stream(js, settings)
                break
            except Exception as error:  # JetStream not ready yet: the stream comes later
                log.info("events wait for JetStream", error=str(error) or type(error).__name__)
                await asyncio.sleep(retry_seconds)
        relay.publisher = JetStreamPublisher(js=js)
        await relay.run()
