"""Builds webhook-svc from its settings: Mongo, NATS consumer, HTTP client, loops, servicer."""

from __future__ import annotations

from contextlib import AsyncExitStack
from datetime import timedelta

import aiohttp
import grpc
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from prometheus_client import CollectorRegistry

from storypost.webhook.v1 import webhook_pb2, webhook_pb2_grpc
from storypost_runtime.backlog import Backlog, BacklogMetrics, BacklogSampler
from storypost_runtime.backoff import RetrySchedule
from storypost_runtime.bus import EVENTS_SUBJECT_PREFIX, ensure_events_stream, nats_connection
from storypost_runtime.clock import Clock, SystemClock
from storypost_runtime.migrations import check_at_start
from storypost_runtime.mongo import mongo_client
from storypost_runtime.secret_box import SecretBox
from storypost_runtime.service import ServiceParts
from storypost_runtime.tasks import background
from webhook_svc import migrations
from webhook_svc.config import WebhookSettings
from webhook_svc.consumer import EventConsumer, Fetcher
from webhook_svc.deliveries import DELIVERIES_DUE, DeliveryStore
from webhook_svc.directory import WebhookDirectory
from webhook_svc.dispatcher import Dispatcher
from webhook_svc.lanes import Lanes
from webhook_svc.metrics import WebhookMetrics
from webhook_svc.records import WebhookCollections
from webhook_svc.records_writer import BatchWriter
from webhook_svc.sender import Sender, http_client
from webhook_svc.servicer import WebhookServicer
from webhook_svc.targets import AddressPolicy
from webhook_svc.webhooks import Webhooks

SERVICE_NAME = webhook_pb2.DESCRIPTOR.services_by_name["WebhookService"].full_name


def consumer_config(settings: WebhookSettings) -> ConsumerConfig:
    """Every replica binds to this one durable consumer; events wait in the stream until a
    replica acknowledges them (from the stream's start the first time it is created)."""
    return ConsumerConfig(
        durable_name=settings.webhook_consumer_name,
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=settings.webhook_ack_wait_seconds,
        max_deliver=-1,
        max_ack_pending=max(1000, settings.webhook_max_inflight_events * 4),
        filter_subject=EVENTS_SUBJECT_PREFIX + ">",
    )


def dispatcher_of(
    settings: WebhookSettings,
    webhooks: Webhooks,
    store: DeliveryStore,
    http: aiohttp.ClientSession,
    clock: Clock,
    metrics: WebhookMetrics,
) -> Dispatcher:
    """Sends due deliveries: per-URL lanes, the retry schedule, leases between replicas."""
    return Dispatcher(
        webhooks=webhooks,
        store=store,
        sender=Sender(
            client=http, clock=clock, timeout_seconds=settings.webhook_attempt_timeout_seconds
        ),
        lanes=Lanes(
            total=settings.webhook_concurrency,
            per_lane=settings.webhook_concurrency_per_url,
            queue_per_lane=settings.webhook_queue_per_url,
            max_wait=settings.webhook_queue_wait_seconds,
        ),
        schedule=RetrySchedule(
            settings.webhook_retry_schedule_seconds, settings.webhook_retry_jitter
        ),
        clock=clock,
        metrics=metrics,
        lease_seconds=settings.webhook_lease_seconds,
        poll_seconds=settings.webhook_poll_seconds,
        hold_limit=settings.webhook_hold_per_replica,
        # A held delivery's attempt must end within its lease, with room for clocks that differ.
        hold_seconds=(settings.webhook_lease_seconds - settings.webhook_attempt_timeout_seconds)
        / 2,
    )


async def events_subscription(settings: WebhookSettings, stack: AsyncExitStack) -> Fetcher:
    """The durable pull subscription to every status event on the bus."""
    nats = await stack.enter_async_context(nats_connection(settings, "webhook-svc"))
    js = nats.jetstream()
    await ensure_events_stream(js, settings)
    subscription = await js.pull_subscribe(
        EVENTS_SUBJECT_PREFIX + ">",
        durable=settings.webhook_consumer_name,
        stream=settings.nats_stream,
        config=consumer_config(settings),
    )
    # Unsubscribed before the connection drains (the exit stack runs in reverse): messages
    # fetched into its queue but not handled would otherwise hold the drain up; JetStream
    # hands them out again after the ack wait.
    stack.push_async_callback(subscription.unsubscribe)
    fetcher: Fetcher = subscription
    return fetcher


async def storage(settings: WebhookSettings, stack: AsyncExitStack) -> WebhookCollections:
    """The webhook and delivery collections (schema checked); the client closes with the stack."""
    client = mongo_client(settings, "webhook-svc")
    stack.push_async_callback(client.close)
    db = client[settings.mongo_database]
    await check_at_start(migrations.plan(db), settings)
    return WebhookCollections.of(db)


def delivery_client(
    settings: WebhookSettings, stack: AsyncExitStack, policy: AddressPolicy
) -> aiohttp.ClientSession:
    """The HTTP client that sends deliveries, to addresses the policy allows only."""
    http = http_client(
        policy,
        settings.webhook_ca_file,
        settings.webhook_concurrency,
        settings.webhook_attempt_timeout_seconds,
    )
    stack.push_async_callback(http.close)
    return http


async def build(
    settings: WebhookSettings,
    stack: AsyncExitStack,
    registry: CollectorRegistry,
    clock: Clock | None = None,
) -> ServiceParts:
    """webhook-svc's composition root: storage, the delivery client, the dispatcher, then the
    event consumer that feeds it."""
    clock = clock or SystemClock()
    records = await storage(settings, stack)
    policy = AddressPolicy(
        allowed_networks=settings.webhook_allowed_networks,
        allow_loopback=settings.webhook_allow_http_loopback,
    )
    http = delivery_client(settings, stack, policy)
    metrics = WebhookMetrics.create(registry)
    webhooks = Webhooks(
        collection=records.webhooks,
        clock=clock,
        policy=policy,
        allow_http_loopback=settings.webhook_allow_http_loopback,
        box=SecretBox(settings.secret_keys()),
    )
    store = DeliveryStore(records.deliveries, timedelta(days=settings.webhook_retention_days))
    dispatcher = dispatcher_of(settings, webhooks, store, http, clock, metrics)
    writer = BatchWriter(store.insert_new, what="delivery records", retry=True)
    directory = WebhookDirectory(
        webhooks=webhooks, ttl_seconds=settings.webhook_directory_ttl_seconds
    )
    consumer = EventConsumer(
        subscription=await events_subscription(settings, stack),
        webhooks=directory,
        store=store,
        dispatcher=dispatcher,
        writer=writer,
        metrics=metrics,
        batch=settings.webhook_fetch_batch,
        max_inflight=settings.webhook_max_inflight_events,
        ack_wait_seconds=settings.webhook_ack_wait_seconds,
    )
    await stack.enter_async_context(background(writer.run(), "webhook-record-writer"))
    await stack.enter_async_context(background(dispatcher.run(), "webhook-dispatcher"))
    await stack.enter_async_context(background(consumer.run(), "webhook-consumer"))
    # Deliveries due and claimed by no dispatcher (a claim moves `dueAt` to its lease's end;
    # finished deliveries have none): the `due_at` index serves both queries.
    due = Backlog(DELIVERIES_DUE, records.deliveries, lambda now: {"dueAt": {"$lte": now}}, "dueAt")
    sampler = BacklogSampler(backlogs=[due], metrics=BacklogMetrics.create(registry), clock=clock)
    await stack.enter_async_context(background(sampler.run(), "backlog gauges"))

    servicer = WebhookServicer(
        webhooks=webhooks, directory=directory, store=store, dispatcher=dispatcher
    )

    def register(server: grpc.aio.Server) -> None:
        webhook_pb2_grpc.add_WebhookServiceServicer_to_server(servicer, server)

    return ServiceParts([SERVICE_NAME], register)
