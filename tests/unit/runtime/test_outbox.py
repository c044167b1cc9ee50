"""The single-document outbox: a change and its event commit together; the relay is crash-safe."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import field
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.component import component
from storypost_runtime.context import request_scope
from storypost_runtime.mongo import Document
from storypost_runtime.outbox import (
    PENDING_FIELD,
    Event,
    OutboxRelay,
    new_record_outbox,
    with_event,
)
from tests.support.polling import wait_until

WHEN = datetime(2026, 11, 23, 10, 0, 0, 123000, tzinfo=UTC)


@component
class RecordingPublisher:
    fail_after: int | None = None
    messages: list[tuple[str, dict[str, object], dict[str, str]]] = field(
        init=False, default_factory=list
    )

    async def publish(self, subject: str, payload: bytes, headers: Mapping[str, str]) -> None:
        if self.fail_after is not None and len(self.messages) >= self.fail_after:
            raise ConnectionError("bus down")
        self.messages.append((subject, json.loads(payload), dict(headers)))


def status_event(post: str, status: str) -> Event:
    return Event.new(
        "photoapp_story_post.status_changed",
        "org1",
        WHEN,
        {"storyPostUuid": post, "status": status},
    )


async def test_change_and_event_are_one_update_guarded_by_old_state(
    db: AsyncDatabase[Document],
) -> None:
    posts = db["posts"]
    with request_scope("req-1"):
        first = status_event("p1", "scheduled")
    await posts.insert_one({"_id": "p1", "status": "scheduled", **new_record_outbox(first)})
    done = status_event("p1", "executed")
    changed = await posts.update_one(
        {"_id": "p1", "status": "scheduled"}, with_event({"$set": {"status": "executed"}}, done)
    )
    assert changed.modified_count == 1
    # A second writer expecting the old state changes nothing and adds no event.
    stale = await posts.update_one(
        {"_id": "p1", "status": "scheduled"},
        with_event({"$set": {"status": "canceled"}}, status_event("p1", "canceled")),
    )
    assert stale.modified_count == 0
    doc = await posts.find_one({"_id": "p1"})
    assert doc is not None and [e["data"]["status"] for e in doc["outbox"]] == [
        "scheduled",
        "executed",
    ]

    publisher = RecordingPublisher()
    relay = OutboxRelay(collections=[posts], publisher=publisher)
    assert await relay.relay_once() == 2
    subjects = [m[0] for m in publisher.messages]
    assert subjects == ["events.photoapp_story_post.status_changed"] * 2
    body = publisher.messages[0][1]
    assert body["id"] == first.id and body["organizationId"] == "org1"
    assert body["data"] == {
        "storyPostUuid": "p1",
        "status": "scheduled",
        "occurredAt": "2026-11-23T10:00:00.123Z",
    }
    assert publisher.messages[0][2] == {"Nats-Msg-Id": first.id, "X-Request-Id": "req-1"}
    doc = await posts.find_one({"_id": "p1"})
    assert doc is not None and doc["outbox"] == [] and PENDING_FIELD not in doc
    assert await relay.relay_once() == 0


async def test_bus_failure_keeps_events_and_retry_republishes_same_ids(
    db: AsyncDatabase[Document],
) -> None:
    posts = db["posts"]
    events = [status_event("p2", "scheduled"), status_event("p2", "executed")]
    await posts.insert_one({"_id": "p2", **new_record_outbox(*events)})
    failing = RecordingPublisher(fail_after=1)
    with pytest.raises(ConnectionError):
        await OutboxRelay(collections=[posts], publisher=failing).relay_once()
    doc = await posts.find_one({"_id": "p2"})
    assert doc is not None and len(doc["outbox"]) == 2 and doc[PENDING_FIELD] is True
    healthy = RecordingPublisher()
    await OutboxRelay(collections=[posts], publisher=healthy).relay_once()
    ids = [m[2]["Nats-Msg-Id"] for m in failing.messages + healthy.messages]
    # The first event went out twice with the same id (JetStream drops the repeat); none lost.
    assert ids == [events[0].id, events[0].id, events[1].id]


async def test_event_added_while_relaying_is_kept(db: AsyncDatabase[Document]) -> None:
    posts = db["posts"]
    await posts.insert_one({"_id": "p3", **new_record_outbox(status_event("p3", "scheduled"))})
    late = status_event("p3", "canceled")

    class InterleavingPublisher(RecordingPublisher):
        async def publish(self, subject: str, payload: bytes, headers: Mapping[str, str]) -> None:
            await super().publish(subject, payload, headers)
            if len(self.messages) == 1:
                await posts.update_one({"_id": "p3"}, with_event({}, late))

    publisher = InterleavingPublisher()
    relay = OutboxRelay(collections=[posts], publisher=publisher)
    await relay.relay_once()
    doc = await posts.find_one({"_id": "p3"})
    assert doc is not None and [e["id"] for e in doc["outbox"]] == [late.id]
    await relay.relay_once()
    assert [m[2]["Nats-Msg-Id"] for m in publisher.messages][-1] == late.id
    doc = await posts.find_one({"_id": "p3"})
    assert doc is not None and doc["outbox"] == [] and PENDING_FIELD not in doc


async def test_run_loop_wakes_on_demand(db: AsyncDatabase[Document]) -> None:
    posts = db["posts"]
    publisher = RecordingPublisher()
    relay = OutboxRelay(collections=[posts], publisher=publisher, poll_interval_seconds=30)
    task = asyncio.create_task(relay.run())
    await asyncio.sleep(0.05)
    await posts.insert_one({"_id": "p4", **new_record_outbox(status_event("p4", "scheduled"))})
    relay.wake()
    for _ in range(100):
        if publisher.messages:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    assert len(publisher.messages) == 1


@component
class CountedFinds:
    """A collection whose `find` calls are counted (the relay's queries)."""

    collection: AsyncCollection[Document]
    finds: int = field(init=False, default=0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.collection, name)

    def find(self, *args: Any, **kwargs: Any) -> Any:
        self.finds += 1
        return self.collection.find(*args, **kwargs)


async def published_count(publisher: RecordingPublisher, count: int) -> None:
    async def enough() -> bool | None:
        return True if len(publisher.messages) >= count else None

    await wait_until(enough, 2.0, f"{count} events published", every=0.01)


async def test_the_relay_queries_again_at_once_only_when_events_may_be_left(
    db: AsyncDatabase[Document],
) -> None:
    posts = CountedFinds(db["posts"])
    publisher = RecordingPublisher()
    relay = OutboxRelay(
        collections=[cast(AsyncCollection[Document], posts)],
        publisher=publisher,
        poll_interval_seconds=30,
        batch_size=2,
    )
    task = asyncio.create_task(relay.run())
    try:
        await asyncio.sleep(0.05)
        assert posts.finds == 1  # the first pass, at start
        await db["posts"].insert_one({"_id": "a", **new_record_outbox(status_event("a", "x"))})
        relay.wake()
        await published_count(publisher, 1)
        await asyncio.sleep(0.2)
        # One query found the record and emptied it; none followed without a wake.
        assert posts.finds == 2
        # A full batch may have left more: the relay goes on without a wake.
        await db["posts"].insert_many(
            [{"_id": p, **new_record_outbox(status_event(p, "x"))} for p in ("b", "c", "d")]
        )
        relay.wake()
        await published_count(publisher, 4)
        await asyncio.sleep(0.2)
        assert posts.finds == 4  # two records, then one (not full: no more queries)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_every_event_has_a_reader_webhook_svc_serves_each_type_made() -> None:
    # webhook-svc takes every subject under `events.>`: an event of another type would have
    # no reader, so none can be made.
    with pytest.raises(ValueError, match="no event type webhook-svc serves"):
        Event.new("render.rendering.finished", "org1", WHEN, {})
    assert Event.new("account.status_changed", "org1", WHEN, {}).subject == (
        "events.account.status_changed"
    )
