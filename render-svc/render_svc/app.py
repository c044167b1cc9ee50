"""Builds render-svc from its settings: stores, the browser pool, domain objects, loops."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path

import grpc
from prometheus_client import CollectorRegistry

from render_svc import migrations
from render_svc.assets import Assets, load_assets
from render_svc.blob_urls import BlobUrlMatcher
from render_svc.blobs import OBJECT_PREFIX, BlobCache, BlobSettings, TempBlobs, sweep_forever
from render_svc.browser.capture import CaptureSettings, PageCapture
from render_svc.browser.confine import confine_service_process
from render_svc.browser.memory import RendererMemoryGuard
from render_svc.browser.network import NetworkLimits
from render_svc.browser.pool import BrowserPool, PoolSettings
from render_svc.browser.warmup import warm_up
from render_svc.config import MIB, RenderSettings
from render_svc.drafts import Drafts
from render_svc.fair import FairSlots
from render_svc.ffmpeg import MediaTools, VideoSettings
from render_svc.finisher import Finisher, finish_durations
from render_svc.mentions import AccountsMentionClient
from render_svc.netguard import GuardedFetcher, NetRules
from render_svc.quota import DraftQuota
from render_svc.records import RenderCollections
from render_svc.renderer import Renderer
from render_svc.renderings import Renderings
from render_svc.servicer import RenderServicer
from render_svc.sources import VideoSources
from render_svc.storage import MediaStore
from storypost.account.v1 import account_pb2_grpc
from storypost.render.v1 import render_pb2, render_pb2_grpc
from storypost_runtime.clock import Clock, SystemClock
from storypost_runtime.errors import ResourceExhausted
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.metrics import MetricsIn
from storypost_runtime.migrations import check_at_start
from storypost_runtime.mongo import mongo_client
from storypost_runtime.s3 import s3_client_kwargs, s3_session
from storypost_runtime.service import ServiceParts
from storypost_runtime.service_auth import caller_signer
from storypost_runtime.tasks import background

SERVICE_NAME = render_pb2.DESCRIPTOR.services_by_name["RenderService"].full_name
# The store's own expiry is a safety net two days out; the sweeper deletes blobs after one.
BUCKET_EXPIRY_DAYS = 2


def pool_settings(
    settings: RenderSettings, page_script: Callable[[str], str] | None = None
) -> PoolSettings:
    return PoolSettings(
        chromium_path=settings.chromium_path,
        browsers=settings.render_browsers,
        concurrency=settings.render_concurrency,
        spare_pages=settings.render_spare_pages,
        max_renders=settings.render_browser_max_renders,
        page_max_renders=settings.render_page_max_renders,
        queue_seconds=settings.render_queue_seconds,
        queue_limit=settings.render_queue_limit,
        per_org_queue_limit=settings.render_org_queue_limit,
        browser_nice=settings.render_browser_nice,
        js_heap_mib=settings.render_js_heap_mib,
        page_script=page_script,
        warm_up=warm_up if settings.render_warm_spares else None,
    )


def source_slots(settings: RenderSettings) -> FairSlots:
    """Video sources fetched and kept for a render at once: as many as render slots (the
    scratch space of deploy/ is sized so), shared fairly between organizations."""
    return FairSlots(
        slots=settings.render_concurrency,
        queue_seconds=settings.render_queue_seconds,
        queue_limit=settings.render_queue_limit,
        per_org_queue_limit=settings.render_org_queue_limit,
        busy=lambda: ResourceExhausted(
            "every video source slot is busy; retry later with the same UUID",
            retry_after_seconds=5,
        ),
    )


def video_settings(settings: RenderSettings) -> VideoSettings:
    return VideoSettings(
        ffmpeg=settings.ffmpeg_path,
        ffprobe=settings.ffprobe_path,
        preset=settings.video_preset,
        crf=settings.video_crf,
        max_bitrate=settings.video_max_bitrate,
    )


async def storage(
    settings: RenderSettings, stack: AsyncExitStack
) -> tuple[RenderCollections, MediaStore]:
    """The database's collections (schema checked) and the media bucket (made, with expiry)."""
    client = mongo_client(settings, "render-svc")
    stack.push_async_callback(client.close)
    db = client[settings.mongo_database]
    await check_at_start(migrations.plan(db), settings)
    records = RenderCollections.of(db)
    s3 = await stack.enter_async_context(
        s3_session(settings).client("s3", **s3_client_kwargs(settings))
    )
    store = MediaStore(s3, settings.s3_bucket)
    await store.ensure_bucket()
    await store.ensure_expiry_rule(OBJECT_PREFIX, BUCKET_EXPIRY_DAYS)
    return records, store


async def browsers(
    settings: RenderSettings, stack: AsyncExitStack
) -> tuple[BrowserPool, GuardedFetcher, Assets]:
    """The jailed browsers (started, with the renderer memory guard) and the checked fetcher
    that is their only way out."""
    fetcher = GuardedFetcher(NetRules(settings.allowed_hosts()))
    stack.push_async_callback(fetcher.close)
    assets = load_assets()
    pool = BrowserPool(pool_settings(settings, assets.page_script), assets)
    stack.push_async_callback(pool.close)
    await pool.start()
    if settings.render_renderer_memory_mib:
        guard = RendererMemoryGuard(limit_bytes=settings.render_renderer_memory_mib * MIB)
        await stack.enter_async_context(background(guard.run(), "renderer memory guard"))
    return pool, fetcher, assets


def slot_gauges(pool: BrowserPool, registry: CollectorRegistry) -> None:
    """Render slots busy and renders waiting, read at each scrape (what limits render-svc:
    its HPA scales on them, docs/operations.md)."""
    slots = MetricsIn(registry).gauge(
        "storypost_render_slots",
        "Render slots in use (busy) and renders waiting (waiting)",
        "state",
    )
    slots.labels("busy").set_function(lambda: pool.slot_use()[0])
    slots.labels("waiting").set_function(lambda: pool.slot_use()[1])


async def work_root(settings: RenderSettings, stack: AsyncExitStack) -> Path:
    """The scratch folder of renders (video sources, composites), removed at exit."""
    root = Path(settings.render_work_dir or tempfile.mkdtemp(prefix="render-svc-"))
    await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
    stack.callback(shutil.rmtree, root, True)
    return root


def temp_blobs(
    settings: RenderSettings, records: RenderCollections, store: MediaStore, clock: Clock
) -> TempBlobs:
    return TempBlobs(
        records=records,
        store=store,
        clock=clock,
        settings=BlobSettings(
            upload_seconds=settings.temp_blob_upload_seconds,
            download_seconds=settings.temp_blob_download_seconds,
            ttl_seconds=settings.temp_blob_ttl_seconds,
        ),
        cache=BlobCache(settings.render_blob_cache_bytes),
    )


def renderer(
    settings: RenderSettings,
    stack: AsyncExitStack,
    browser: tuple[BrowserPool, GuardedFetcher, Assets],
    blobs: TempBlobs,
    tools: MediaTools,
    clock: Clock,
) -> Renderer:
    """Page capture, video sources and mention look-ups (account-svc) put together."""
    pool, fetcher, assets = browser
    accounts = aio_channel(
        settings.account_addr, settings.grpc_deadline_seconds, caller_signer(settings.service_key)
    )
    stack.push_async_callback(accounts.close)
    matcher = BlobUrlMatcher(settings.public_url)
    capture = PageCapture(
        pool=pool,
        fetcher=fetcher,
        blobs=matcher,
        read_blob=blobs.read_for_page,
        assets=assets,
        settings=CaptureSettings(
            settings.render_settle_seconds,
            NetworkLimits(settings.render_max_resource_bytes, settings.render_max_page_bytes),
        ),
    )
    sources = VideoSources(
        blobs=blobs,
        matcher=matcher,
        fetcher=fetcher,
        max_bytes=settings.render_max_video_bytes,
        timeout_seconds=settings.render_video_fetch_seconds,
    )
    return Renderer(
        capture=capture,
        sources=sources,
        tools=tools,
        mentions=AccountsMentionClient(account_pb2_grpc.AccountServiceStub(accounts)),
        clock=clock,
        source_slots=source_slots(settings),
    )


def draft_quota(settings: RenderSettings, records: RenderCollections, clock: Clock) -> DraftQuota:
    return DraftQuota(
        slots=records.draft_quota,
        clock=clock,
        limit=settings.draft_quota,
        window=timedelta(seconds=settings.draft_quota_window_seconds),
    )


async def start_background_work(
    settings: RenderSettings, stack: AsyncExitStack, blobs: TempBlobs, finisher: Finisher
) -> None:
    """The sweeper of expired temp blobs and the resumer of interrupted finishes, stopped
    with the stack."""
    await stack.enter_async_context(
        background(
            sweep_forever(blobs, settings.temp_blob_sweep_interval_seconds), "temp blob sweeper"
        )
    )
    await stack.enter_async_context(
        background(
            finisher.resume_forever(settings.render_resume_interval_seconds), "finish resumer"
        )
    )


async def build(
    settings: RenderSettings,
    stack: AsyncExitStack,
    registry: CollectorRegistry,
    clock: Clock | None = None,
) -> ServiceParts:
    """render-svc's composition root: storage, events, browsers, then the domain objects."""
    clock = clock or SystemClock()
    # Before the first child process (the browser's driver, ffmpeg) starts.
    confine_service_process(settings)
    records, store = await storage(settings, stack)
    browser = await browsers(settings, stack)
    slot_gauges(browser[0], registry)
    root = await work_root(settings, stack)
    blobs = temp_blobs(settings, records, store, clock)
    tools = MediaTools(video_settings(settings))
    render = renderer(settings, stack, browser, blobs, tools, clock)
    renderings = Renderings(
        records=records,
        store=store,
        renderer=render,
        clock=clock,
        work_root=root,
        media_url_seconds=settings.render_media_url_seconds,
        kept_video_sources=settings.render_kept_video_sources,
    )
    finisher = Finisher(
        records=records,
        renderings=renderings,
        renderer=render,
        store=store,
        tools=tools,
        clock=clock,
        lease_seconds=settings.render_finish_lease_seconds,
        durations=finish_durations(registry),
    )
    stack.push_async_callback(finisher.close)
    drafts = Drafts(
        records=records,
        renderings=renderings,
        finisher=finisher,
        store=store,
        quota=draft_quota(settings, records, clock),
        clock=clock,
    )
    await start_background_work(settings, stack, blobs, finisher)
    servicer = RenderServicer(renderings=renderings, finisher=finisher, blobs=blobs, drafts=drafts)

    def register(server: grpc.aio.Server) -> None:
        render_pb2_grpc.add_RenderServiceServicer_to_server(servicer, server)

    return ServiceParts([SERVICE_NAME], register)
