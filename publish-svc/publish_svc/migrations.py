"""publish-svc's schema (storypost_runtime.migrations): its numbered steps and its indexes,
declared where each store creates them. A new step takes the next number; a new index or a
new collection's indexes go in a store's `ensure_indexes`, called from `_indexes` below."""

from __future__ import annotations

from datetime import timedelta

from pymongo.asynchronous.database import AsyncDatabase

from publish_svc.insights.store import InsightStore
from publish_svc.queues import QueueStore
from publish_svc.records import PostStore
from publish_svc.series_store import SeriesStore
from storypost_runtime.migrations import Plan, Step
from storypost_runtime.mongo import Document

SERVICE = "publish-svc"


def _nothing() -> None:
    """The stores' wake-ups: a migration writes no events."""


def plan(db: AsyncDatabase[Document], insights_retention: timedelta) -> Plan:
    posts = PostStore(db["posts"], _nothing)
    queues = QueueStore.of(db)
    insights = InsightStore(db=db, wake_relay=_nothing, retention=insights_retention)
    series = SeriesStore(db["series"], db["series_accounts"])

    async def indexes() -> None:
        await posts.ensure_indexes()
        await queues.ensure_indexes()
        await insights.ensure_indexes()
        await series.ensure_indexes()

    return Plan(
        SERVICE,
        db,
        indexes,
        [
            Step(1, "posts.listedAt", posts.listed_at_backfill()),
            Step(2, "queue_names", queues.count_names_of_stored_queues),
        ],
    )
