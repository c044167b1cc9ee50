"""Builds publish-svc: Mongo, NATS outbox relay, account/render clients, drivers, scheduler."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import timedelta

import grpc
import httpx
from prometheus_client import CollectorRegistry
from pymongo.asynchronous.database import AsyncDatabase

from publish_svc import migrations
from publish_svc.account_checks import AccountChecks
from publish_svc.accounts_client import AccountsClient
from publish_svc.backlogs import posts_due
from publish_svc.config import PublishSettings
from publish_svc.drivers.registry import DriverRegistry
from publish_svc.insights.wiring import OUTBOX_COLLECTION, build_insights
from publish_svc.insights.wiring import SERVICE_NAME as INSIGHTS_SERVICE_NAME
from publish_svc.intake import PostIntake
from publish_svc.metrics import PublishMetrics
from publish_svc.posts import Posts
from publish_svc.processing import PostProcessor
from publish_svc.queues import Queues, QueueStore
from publish_svc.quota import StoryQuota
from publish_svc.records import PostStore
from publish_svc.render_client import RenderClient
from publish_svc.reschedule import Rescheduler
from publish_svc.scheduler import DueScheduler
from publish_svc.series import SeriesService
from publish_svc.series_store import SeriesStore
from publish_svc.series_worker import SeriesWorker
from publish_svc.servicer import PublishServicer
from storypost.account.v1 import account_pb2 as apb
from storypost.account.v1 import account_pb2_grpc
from storypost.publish.v1 import publish_pb2, publish_pb2_grpc
from storypost.render.v1 import render_pb2 as rpb
from storypost.render.v1 import render_pb2_grpc
from storypost_runtime.backlog import BacklogMetrics, BacklogSampler
from storypost_runtime.clock import Clock, SystemClock
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.identity_probe import PROBE_SECONDS, refuse_refused_identity
from storypost_runtime.migrations import check_at_start
from storypost_runtime.mongo import Document, mongo_client
from storypost_runtime.outbox import OutboxMetrics, OutboxRelay, start_outbox_relay
from storypost_runtime.service import ServiceParts
from storypost_runtime.service_auth import TokenSigner, caller_signer
from storypost_runtime.tasks import background

SERVICE_NAME = publish_pb2.DESCRIPTOR.services_by_name["PublishService"].full_name


@dataclass(frozen=True)
class Storage:
    db: AsyncDatabase[Document]
    store: PostStore
    relay: OutboxRelay


@dataclass(frozen=True)
class Clients:
    accounts: AccountsClient
    renderer: RenderClient
    drivers: DriverRegistry


async def storage(
    settings: PublishSettings, stack: AsyncExitStack, registry: CollectorRegistry
) -> Storage:
    """MongoDB's posts, and the outbox relay that publishes their events on NATS."""
    mongo = mongo_client(settings, "publish-svc")
    stack.push_async_callback(mongo.close)
    db = mongo[settings.mongo_database]
    await check_at_start(migrations.plan(db, settings.insights_retention), settings)
    relay = await start_outbox_relay(
        stack,
        settings,
        [db["posts"], db[OUTBOX_COLLECTION]],
        name="publish-svc",
        metrics=OutboxMetrics.create(registry),
    )
    store = PostStore(db["posts"], relay.wake)
    return Storage(db, store, relay)


async def clients(settings: PublishSettings, stack: AsyncExitStack, clock: Clock) -> Clients:
    """account-svc and render-svc (signed calls), and the platforms' drivers."""
    signer = caller_signer(settings.service_key)
    account_channel = await stack.enter_async_context(
        aio_channel(settings.account_addr, settings.grpc_deadline_seconds, signer)
    )
    render_channel = await stack.enter_async_context(
        aio_channel(settings.render_addr, settings.grpc_deadline_seconds, signer)
    )
    http = await stack.enter_async_context(
        httpx.AsyncClient(timeout=settings.platform_timeout_seconds)
    )
    await check_identity(settings, signer)
    return Clients(
        AccountsClient(account_pb2_grpc.AccountServiceStub(account_channel), clock),
        RenderClient(render_pb2_grpc.RenderServiceStub(render_channel)),
        DriverRegistry(http, settings),
    )


async def check_identity(settings: PublishSettings, signer: TokenSigner | None) -> None:
    """A replica whose key its dependencies refuse would claim due posts and hold each back
    with retries: it stops at start instead (CheckAccounts answers publish-svc only). On
    channels of their own, which wait for a dependency still starting (up to the probe's
    time): a probe that met one not listening yet must not leave the service's channels in
    reconnect backoff, where their first calls fail at once (seen: the first schedule calls
    UNAVAILABLE when publish-svc started beside render-svc)."""

    async def probe(
        dependency: str, address: str, call: Callable[[grpc.aio.Channel], Awaitable[object]]
    ) -> None:
        async with aio_channel(address, PROBE_SECONDS, signer, wait_for_ready=True) as channel:
            await refuse_refused_identity(dependency, lambda: call(channel))

    await asyncio.gather(
        probe(
            "account-svc",
            settings.account_addr,
            lambda channel: account_pb2_grpc.AccountServiceStub(channel).CheckAccounts(
                apb.CheckAccountsRequest()
            ),
        ),
        probe(
            "render-svc",
            settings.render_addr,
            lambda channel: render_pb2_grpc.RenderServiceStub(channel).GetRendering(
                rpb.GetRenderingRequest()
            ),
        ),
    )


def scheduling(
    settings: PublishSettings,
    stored: Storage,
    used: Clients,
    clock: Clock,
    registry: CollectorRegistry,
) -> DueScheduler:
    """The scheduler of due posts and the processor that publishes each."""
    owner = f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"
    lease = timedelta(seconds=settings.scheduler_lease_seconds)
    processor = PostProcessor(
        store=stored.store,
        accounts=used.accounts,
        renderer=used.renderer,
        drivers=used.drivers,
        clock=clock,
        window=settings.posting_window,
        lease=lease,
        hold_recheck=timedelta(seconds=settings.hold_recheck_seconds),
        metrics=PublishMetrics.create(registry),
    )
    return DueScheduler(
        store=stored.store,
        processor=processor,
        clock=clock,
        owner=owner,
        workers=settings.scheduler_workers,
        lease=lease,
        max_idle=timedelta(seconds=settings.scheduler_max_idle_seconds),
    )


async def planning(stored: Storage, used: Clients, clock: Clock) -> Queues:
    """The queues of connected accounts and the slots posts take from them."""
    store = QueueStore.of(stored.db)
    return Queues(store=store, accounts=used.accounts, clock=clock)


async def recurring(
    settings: PublishSettings,
    stored: Storage,
    intake: PostIntake,
    posts: Posts,
    used: Clients,
    queues: Queues,
    clock: Clock,
) -> tuple[SeriesService, SeriesWorker]:
    """Series of recurring posts, and the worker that creates their next occurrences."""
    # Its indexes are publish-svc's schema (publish_svc.migrations), built by `storypost migrate`.
    store = SeriesStore(stored.db["series"], stored.db["series_accounts"])
    service = SeriesService(
        store=store,
        posts=stored.store,
        intake=intake,
        cancels=posts,
        accounts=used.accounts,
        clock=clock,
    )
    worker = SeriesWorker(
        store=store,
        series=service,
        intake=intake,
        clock=clock,
        queues=queues,
        lease=timedelta(seconds=settings.series_lease_seconds),
        max_idle=timedelta(seconds=settings.series_max_idle_seconds),
    )
    return service, worker


async def build(
    settings: PublishSettings,
    stack: AsyncExitStack,
    registry: CollectorRegistry,
    clock: Clock | None = None,
) -> ServiceParts:
    clock = clock or SystemClock()
    stored = await storage(settings, stack, registry)
    used = await clients(settings, stack, clock)
    scheduler = scheduling(settings, stored, used, clock, registry)
    intake = PostIntake(
        store=stored.store,
        quota=StoryQuota(stored.db["story_quota"], settings.story_quota_per_day),
        accounts=used.accounts,
        renderer=used.renderer,
        clock=clock,
        window=settings.posting_window,
        wake_scheduler=scheduler.wake,
        queues=(queues := await planning(stored, used, clock)),
    )
    posts = Posts(
        store=stored.store,
        accounts=used.accounts,
        renderer=used.renderer,
        drivers=used.drivers,
        clock=clock,
    )
    rescheduler = Rescheduler(
        store=stored.store,
        accounts=used.accounts,
        clock=clock,
        window=settings.posting_window,
        wake_scheduler=scheduler.wake,
        slots=queues.store,
        queues=queues,
    )
    series, series_worker = await recurring(settings, stored, intake, posts, used, queues, clock)
    servicer = PublishServicer(
        intake=intake, posts=posts, rescheduler=rescheduler, queues=queues, series=series
    )
    insights = await build_insights(
        settings, stack, stored.db, used.accounts, clock, stored.relay.wake
    )
    await stack.enter_async_context(background(scheduler.run(), "scheduler"))
    await stack.enter_async_context(background(series_worker.run(), "series worker"))
    checks = AccountChecks(
        posts=stored.db["posts"],
        accounts=used.accounts,
        clock=clock,
        poll_seconds=settings.account_check_poll_seconds,
    )
    await stack.enter_async_context(background(checks.run(), "account checks"))
    gauges = BacklogMetrics.create(registry)
    sampler = BacklogSampler(backlogs=[posts_due(stored.db["posts"])], metrics=gauges, clock=clock)
    await stack.enter_async_context(background(sampler.run(), "backlog gauges"))

    def register(server: grpc.aio.Server) -> None:
        publish_pb2_grpc.add_PublishServiceServicer_to_server(servicer, server)
        insights.register(server)

    return ServiceParts([SERVICE_NAME, INSIGHTS_SERVICE_NAME], register)
