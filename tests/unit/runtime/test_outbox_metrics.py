"""The outbox relay's metrics: backlog and oldest unsent event per collection, published
events, failed passes (what docs/operations.md alerts on)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.mongo import Document
from storypost_runtime.outbox import OutboxMetrics, OutboxRelay, new_record_outbox
from tests.unit.runtime.test_outbox import RecordingPublisher, status_event


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    assert value is not None, name
    return value


async def test_backlog_is_seen_before_publishing_and_clears_after(
    db: AsyncDatabase[Document],
) -> None:
    posts = db["posts"]
    await posts.insert_one({"_id": "m1", **new_record_outbox(status_event("m1", "scheduled"))})
    await posts.insert_one({"_id": "m2", **new_record_outbox(status_event("m2", "scheduled"))})
    registry = CollectorRegistry()
    metrics = OutboxMetrics.create(registry)

    # The bus is down: nothing is published, and the backlog shows it.
    with pytest.raises(ConnectionError):
        await OutboxRelay(
            collections=[posts], publisher=RecordingPublisher(fail_after=0), metrics=metrics
        ).relay_once()
    assert sample(registry, "storypost_outbox_backlog_records", collection="posts") == 2
    # status_event() stamps a fixed past time: the oldest event is that old.
    assert sample(registry, "storypost_outbox_oldest_event_age_seconds", collection="posts") > 60

    relay = OutboxRelay(collections=[posts], publisher=RecordingPublisher(), metrics=metrics)
    assert await relay.relay_once() == 2
    assert sample(registry, "storypost_outbox_events_published_total", collection="posts") == 2
    await relay.relay_once()
    assert sample(registry, "storypost_outbox_backlog_records", collection="posts") == 0
    assert sample(registry, "storypost_outbox_oldest_event_age_seconds", collection="posts") == 0
