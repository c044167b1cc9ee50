"""Builds the insights part of publish-svc: its collections, the platform readers, the
collector loop and InsightsService."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass

import grpc
import httpx
from pymongo.asynchronous.database import AsyncDatabase

from publish_svc.config import PublishSettings
from publish_svc.insights.collector import InsightsCollector, Tokens
from publish_svc.insights.readers import InsightsReaders
from publish_svc.insights.servicer import InsightsServicer
from publish_svc.insights.store import SCHEDULES, InsightStore
from storypost.publish.v1 import insights_pb2, insights_pb2_grpc
from storypost_runtime.clock import Clock
from storypost_runtime.mongo import Document
from storypost_runtime.tasks import background

SERVICE_NAME = insights_pb2.DESCRIPTOR.services_by_name["InsightsService"].full_name
# The collection whose records carry `post.insights_updated` events (the outbox relay's).
OUTBOX_COLLECTION = SCHEDULES


@dataclass(frozen=True)
class InsightsParts:
    store: InsightStore
    collector: InsightsCollector
    servicer: InsightsServicer

    def register(self, server: grpc.aio.Server) -> None:
        insights_pb2_grpc.add_InsightsServiceServicer_to_server(self.servicer, server)


async def build_insights(
    settings: PublishSettings,
    stack: AsyncExitStack,
    db: AsyncDatabase[Document],
    accounts: Tokens,
    clock: Clock,
    wake_relay: Callable[[], None],
) -> InsightsParts:
    """The store (its indexes: publish_svc.migrations), the collector (running when enabled)
    and the servicer."""
    store = InsightStore(db=db, wake_relay=wake_relay, retention=settings.insights_retention)
    http = await stack.enter_async_context(
        httpx.AsyncClient(timeout=settings.platform_timeout_seconds)
    )
    collector = InsightsCollector(
        store=store,
        readers=InsightsReaders(http, settings.platform_url),
        accounts=accounts,
        clock=clock,
        settings=settings,
        owner=f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}",
    )
    if settings.insights_enabled:
        await stack.enter_async_context(background(collector.run(), "insights collector"))
    return InsightsParts(store, collector, InsightsServicer(collector, store))
