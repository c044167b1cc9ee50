"""Backlog gauges: the records a backlog's query selects, and how long the oldest waited."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry
from pymongo.asynchronous.database import AsyncDatabase

from publish_svc.backlogs import POSTS_DUE, posts_due
from storypost_runtime.backlog import BacklogMetrics, BacklogSampler
from storypost_runtime.clock import FrozenClock
from storypost_runtime.mongo import Document

NOW = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)


def value(registry: CollectorRegistry, name: str) -> float | None:
    return registry.get_sample_value(name, {"backlog": POSTS_DUE})


async def test_posts_due_and_unclaimed_and_the_oldest_wait(db: AsyncDatabase[Document]) -> None:
    posts = db["posts"]
    minutes = timedelta(minutes=1)
    await posts.insert_many(
        [
            # Due 7 and 2 minutes ago, leased by nobody: the backlog.
            {"_id": "a", "status": "scheduled", "dueAt": NOW - 7 * minutes, "leaseUntil": NOW},
            {"_id": "b", "status": "in-progress", "dueAt": NOW - 2 * minutes, "leaseUntil": NOW},
            # Leased by a replica now, not yet due, or ended: not waiting.
            {"_id": "c", "status": "scheduled", "dueAt": NOW, "leaseUntil": NOW + minutes},
            {"_id": "d", "status": "scheduled", "dueAt": NOW + minutes, "leaseUntil": NOW},
            {"_id": "e", "status": "executed", "dueAt": NOW - 9 * minutes, "leaseUntil": NOW},
        ]
    )
    registry = CollectorRegistry()
    sampler = BacklogSampler(
        backlogs=[posts_due(posts)], metrics=BacklogMetrics.create(registry), clock=FrozenClock(NOW)
    )
    assert await sampler.sample() == 0
    assert value(registry, "storypost_backlog_records") == 2
    assert value(registry, "storypost_backlog_oldest_seconds") == 7 * 60
    await posts.delete_many({"_id": {"$in": ["a", "b"]}})
    await sampler.sample()
    assert value(registry, "storypost_backlog_records") == 0
    assert value(registry, "storypost_backlog_oldest_seconds") == 0
