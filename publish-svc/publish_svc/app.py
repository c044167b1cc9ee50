"""Builds publish-svc: Mongo, NATS outbox relay, account/render clients, drivers, scheduler."""

from __future__ import annotations

import socket
import uuid
from contextlib import AsyncExitStack
from datetime import timedelta

import grpc
import httpx
from prometheus_client import CollectorRegistry

from publish_svc.accounts_client import AccountsClient
from publish_svc.config import PublishSettings
from publish_svc.drivers.registry import DriverRegistry
from publish_svc.intake import PostIntake
from publish_svc.metrics import PublishMetrics
from publish_svc.posts import Posts
from publish_svc.processing import PostProcessor
from publish_svc.quota import StoryQuota
from publish_svc.render_client import RenderClient
from publish_svc.scheduler import DueScheduler
from publish_svc.servicer import PublishServicer
from publish_svc.store import PostStore
from storypost.account.v1 import account_pb2_grpc
from storypost.publish.v1 import publish_pb2, publish_pb2_grpc
from storypost.render.v1 import render_pb2_grpc
from storypost_runtime.bus import JetStreamPublisher, ensure_events_stream, nats_connection
from storypost_runtime.clock import Clock, SystemClock
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.mongo import mongo_client
from storypost_runtime.outbox import OutboxMetrics, OutboxRelay
from storypost_runtime.service import ServiceParts
from storypost_runtime.service_auth import caller_signer
from storypost_runtime.tasks import background

SERVICE_NAME = publish_pb2.DESCRIPTOR.services_by_name["PublishService"].full_name


async def build(
    settings: PublishSettings,
    stack: AsyncExitStack,
    registry: CollectorRegistry,
    clock: Clock | None = None,
) -> ServiceParts:
    clock = clock or SystemClock()
    owner = f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"
    mongo = mongo_client(settings, "publish-svc")
    stack.push_async_callback(mongo.close)
    db = mongo[settings.mongo_database]
    nats = await stack.enter_async_context(nats_connection(settings, "publish-svc"))
    js = nats.jetstream()
    await ensure_events_stream(js, settings)
    relay = OutboxRelay(
        [db["posts"]], JetStreamPublisher(js), metrics=OutboxMetrics.create(registry)
    )
    store = PostStore(db["posts"], relay.wake)
    await store.ensure_indexes()

    signer = caller_signer(settings.service_key)
    account_channel = await stack.enter_async_context(
        aio_channel(settings.account_addr, settings.grpc_deadline_seconds, signer)
    )
    render_channel = await stack.enter_async_context(
        aio_channel(settings.render_addr, settings.grpc_deadline_seconds, signer)
    )
    accounts = AccountsClient(account_pb2_grpc.AccountServiceStub(account_channel), clock)
    renderer = RenderClient(render_pb2_grpc.RenderServiceStub(render_channel))
    http = await stack.enter_async_context(
        httpx.AsyncClient(timeout=settings.platform_timeout_seconds)
    )
    drivers = DriverRegistry(http, settings)
    lease = timedelta(seconds=settings.scheduler_lease_seconds)
    window = timedelta(seconds=settings.posting_window_seconds)
    processor = PostProcessor(
        store,
        accounts,
        renderer,
        drivers,
        clock,
        owner=owner,
        window=window,
        lease=lease,
        hold_recheck=timedelta(seconds=settings.hold_recheck_seconds),
        metrics=PublishMetrics.create(registry),
    )
    scheduler = DueScheduler(
        store,
        processor,
        clock,
        owner=owner,
        workers=settings.scheduler_workers,
        lease=lease,
        max_idle=timedelta(seconds=settings.scheduler_max_idle_seconds),
    )
    intake = PostIntake(
        store,
        StoryQuota(db["story_quota"], settings.story_quota_per_day),
        accounts,
        renderer,
        clock,
        window,
        scheduler.wake,
    )
    servicer = PublishServicer(intake, Posts(store, accounts, renderer, drivers, clock))
    await stack.enter_async_context(background(relay.run(), "outbox relay"))
    await stack.enter_async_context(background(scheduler.run(), "scheduler"))

    def register(server: grpc.aio.Server) -> None:
        publish_pb2_grpc.add_PublishServiceServicer_to_server(servicer, server)

    return ServiceParts([SERVICE_NAME], register)
