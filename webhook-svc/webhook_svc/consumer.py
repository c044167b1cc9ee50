"""Takes status events from JetStream and turns each into deliveries, one per subscribed URL.

Every replica pulls from one durable consumer, so each event goes to one replica at a time.
An event is acknowledged only after its delivery records are stored; a crash before that
makes JetStream hand it out again (after the ack wait), and the derived delivery ids make
the second pass find the records instead of creating new ones.

Each event is handled in a consumer span whose parent is the publish span named by the
message's `traceparent` header, so its deliveries join the trace of the change that made it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import KW_ONLY, field
from typing import Any, Protocol

from opentelemetry.trace import SpanKind, Tracer

from storypost_runtime.backoff import SERVICE_AWAY, Waits
from storypost_runtime.bus import process_span_name
from storypost_runtime.bus_message import BusMessage
from storypost_runtime.component import component
from storypost_runtime.context import clean_request_id, request_scope
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document
from storypost_runtime.tasks import TaskSet
from storypost_runtime.tracing import current_traceparent, extract, tracer
from webhook_svc.deliveries import DeliveryStore, NewDelivery, delivery_uuid
from webhook_svc.directory import WebhookDirectory
from webhook_svc.dispatcher import Dispatcher
from webhook_svc.event_types import payload_json
from webhook_svc.metrics import WebhookMetrics
from webhook_svc.records_writer import BatchWriter
from webhook_svc.webhooks import Webhook

log = get_logger(__name__)
FETCH_WAIT_SECONDS = 2.0
NAK_DELAY_SECONDS = 2.0


class Delivered(Protocol):
    @property
    def num_delivered(self) -> int: ...


class Message(Protocol):
    """The part of a JetStream message (nats.aio.msg.Msg) the consumer uses."""

    @property
    def data(self) -> bytes: ...
    @property
    def metadata(self) -> Delivered: ...
    @property
    def headers(self) -> dict[str, str] | None: ...
    @property
    def subject(self) -> str: ...
    async def ack(self) -> None: ...
    async def nak(self, delay: float | None = None) -> None: ...
    async def term(self) -> None: ...
    async def in_progress(self) -> None: ...


class Fetcher(Protocol):
    async def fetch(self, batch: int, timeout: float) -> Sequence[Message]: ...  # noqa: ASYNC109


@component
class EventConsumer:
    """Pulls batches, plans deliveries, attempts the new ones, stores them, acknowledges."""

    _: KW_ONLY
    subscription: Fetcher
    webhooks: WebhookDirectory
    store: DeliveryStore
    dispatcher: Dispatcher
    # Inserts new delivery records, batched across events (retried until stored).
    writer: BatchWriter[Document]
    metrics: WebhookMetrics
    batch: int
    max_inflight: int
    ack_wait_seconds: float
    spans: Tracer | None = None
    _spans: Tracer = field(init=False)
    _keepalive: float = field(init=False)
    _inflight: int = field(init=False, default=0)
    _room: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    _tasks: TaskSet = field(init=False, default_factory=TaskSet)

    def __post_init__(self) -> None:
        self._spans = self.spans or tracer()
        self._keepalive = self.ack_wait_seconds / 3

    async def run(self) -> None:
        backoff = Waits(SERVICE_AWAY)
        try:
            while True:
                free = self.max_inflight - self._inflight
                if free <= 0:
                    self._room.clear()
                    await self._room.wait()
                    continue
                try:
                    messages = await self.subscription.fetch(
                        min(self.batch, free), FETCH_WAIT_SECONDS
                    )
                except TimeoutError:
                    backoff.reset()
                    continue
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    # NATS restarting or unreachable: nats-py reconnects; ask again shortly.
                    log.warning("fetching events failed", error=str(error) or type(error).__name__)
                    await backoff.wait()
                    continue
                backoff.reset()
                if messages:
                    self._inflight += len(messages)
                    self._spawn(self._handle(list(messages)))
        finally:
            await self._close()

    async def _handle(self, messages: list[Message]) -> None:
        try:
            events: list[tuple[Message, BusMessage]] = []
            for message in messages:
                try:
                    events.append((message, BusMessage.parse(message.data, message.headers)))
                except ValueError as error:
                    log.warning(
                        "dropping an unreadable event", subject=message.subject, error=str(error)
                    )
                    self.metrics.events.labels("invalid").inc()
                    await _quietly(message.term())
            if events:
                await self._handle_events(events)
        finally:
            self._inflight -= len(messages)
            self._room.set()

    async def _handle_events(self, events: list[tuple[Message, BusMessage]]) -> None:
        try:
            # The organizations' URLs (cached briefly), and the records that exist already, read
            # only when JetStream hands an event out again (a crash or a lost ack): a first
            # delivery cannot have records yet.
            hooks = await self.webhooks.of_organizations({e.organization_id for _, e in events})
            plans = [(message, event, _plan(event, hooks)) for message, event in events]
            existing = await self.store.existing_ids(
                [
                    new.delivery_id
                    for message, _, planned in plans
                    if _redelivered(message)
                    for new, _ in planned
                ]
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("cannot plan deliveries; events will come again", error=str(error))
            for message, _ in events:
                await _quietly(message.nak(NAK_DELAY_SECONDS))
            return
        await asyncio.gather(
            *(
                self._deliver(
                    message, event, [p for p in planned if p[0].delivery_id not in existing]
                )
                for message, event, planned in plans
            )
        )

    async def _deliver(
        self, message: Message, event: BusMessage, todo: list[tuple[NewDelivery, Webhook]]
    ) -> None:
        headers = message.headers or {}
        with (
            self._spans.start_as_current_span(
                process_span_name(message.subject),
                context=extract(headers),
                kind=SpanKind.CONSUMER,
                attributes={
                    "messaging.system": "nats",
                    "messaging.operation.type": "process",
                    "messaging.destination.name": message.subject,
                    "messaging.message.id": event.id,
                    "storypost.organization_id": event.organization_id,
                    "storypost.deliveries": len(todo),
                },
            ),
            request_scope(clean_request_id(event.request_id)),
        ):
            if not todo:
                self.metrics.events.labels("no_subscriber_or_duplicate").inc()
                await _quietly(message.ack())
                return
            # The records keep this span's context: the scheduler's retries join the trace.
            traceparent = current_traceparent()
            if traceparent:
                todo = [(dataclasses.replace(n, traceparent=traceparent), w) for n, w in todo]
            docs = list(await asyncio.gather(*(self._first_attempt(n, w) for n, w in todo)))
            try:
                await self._store(message, docs)
            except BaseException as error:
                self.dispatcher.not_stored(docs)
                if not isinstance(error, Exception):
                    raise
                log.warning(
                    "storing deliveries failed; the event will come again", error=str(error)
                )
                await _quietly(message.nak(NAK_DELAY_SECONDS))
                return
            self.dispatcher.stored(
                [(doc, webhook) for doc, (_, webhook) in zip(docs, todo, strict=True)]
            )
            self.metrics.events.labels("delivered").inc()
            await _quietly(message.ack())

    async def _first_attempt(self, new: NewDelivery, webhook: Webhook) -> Document:
        """The record to store: with the attempt's outcome, or deferred when its URL has no
        room (held for its turn, or due for the scheduler)."""
        if not await self.dispatcher.admit(webhook):
            return self.dispatcher.deferred(new, webhook)
        try:
            return await self.dispatcher.first_attempt(new, webhook)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning(
                "first attempt failed unexpectedly", delivery_id=new.delivery_id, error=str(error)
            )
            return self.dispatcher.deferred(new, webhook)

    async def _store(self, message: Message, docs: list[Document]) -> None:
        """Waits for the records to be stored, telling JetStream the event is still being
        worked on so that a slow database does not make it hand the event out again."""
        stored = asyncio.ensure_future(self.writer.write(docs))
        try:
            while True:
                done, _ = await asyncio.wait({stored}, timeout=self._keepalive)
                if done:
                    stored.result()
                    return
                await _quietly(message.in_progress())
        finally:
            stored.cancel()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(coro)

    async def _close(self) -> None:
        await self._tasks.close()


def _redelivered(message: Message) -> bool:
    try:
        return message.metadata.num_delivered > 1
    except Exception:
        return True  # no JetStream metadata: assume the worst and look


def _plan(
    event: BusMessage, hooks: Mapping[str, list[Webhook]]
) -> list[tuple[NewDelivery, Webhook]]:
    """One delivery per URL of the event's organization that receives its type."""
    receivers = [w for w in hooks.get(event.organization_id, []) if w.receives(event.type)]
    if not receivers:
        return []
    body = payload_json(event.type, event.data)
    return [
        (
            NewDelivery(
                delivery_id=delivery_uuid(event.id, webhook.webhook_id),
                organization_id=event.organization_id,
                webhook_id=webhook.webhook_id,
                event_id=event.id,
                event=event.type,
                url=webhook.url,
                body=body,
                occurred_at=event.occurred_at,
            ),
            webhook,
        )
        for webhook in receivers
    ]


async def _quietly(action: Coroutine[Any, Any, None]) -> None:
    """Acks and naks are best effort: a lost one only means the event comes again."""
    try:
        await action
    except asyncio.CancelledError:
        raise
    except Exception as error:
        log.info("acknowledging an event failed", error=str(error) or type(error).__name__)
