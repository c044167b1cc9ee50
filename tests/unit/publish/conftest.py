"""A publish-svc core wired to fakes and the in-process MongoDB, with a frozen clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.trace import Tracer
from pymongo.asynchronous.database import AsyncDatabase

from publish_svc.intake import NewPost, PostIntake
from publish_svc.model import Kind, Post
from publish_svc.posts import Posts
from publish_svc.processing import PostProcessor
from publish_svc.queues import Queues, QueueStore
from publish_svc.quota import StoryQuota
from publish_svc.records import PostStore
from publish_svc.reschedule import Rescheduler
from publish_svc.servicer import PublishServicer
from storypost.render.v1 import render_pb2 as rpb
from storypost_runtime.clock import FrozenClock
from storypost_runtime.mongo import Document
from tests.unit.publish.fakes import (
    FakeAccounts,
    FakeRenderer,
    OneDriver,
    ScriptedDriver,
    params,
    photoapp_account,
    social_account,
)

START = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
WINDOW = timedelta(minutes=60)
LEASE = timedelta(seconds=60)


@dataclass
class Core:
    db: AsyncDatabase[Document]
    clock: FrozenClock
    store: PostStore
    accounts: FakeAccounts
    renderer: FakeRenderer
    driver: ScriptedDriver
    intake: PostIntake
    posts: Posts
    quota: StoryQuota
    rescheduler: Rescheduler

    queues: Queues

    def servicer(self) -> PublishServicer:
        return PublishServicer(
            intake=self.intake, posts=self.posts, rescheduler=self.rescheduler, queues=self.queues
        )

    def processor(self, spans: Tracer | None = None) -> PostProcessor:
        return PostProcessor(
            store=self.store,
            accounts=self.accounts,  # type: ignore[arg-type]
            renderer=self.renderer,  # type: ignore[arg-type]
            drivers=OneDriver(self.driver),
            clock=self.clock,
            window=WINDOW,
            lease=LEASE,
            hold_recheck=timedelta(seconds=5),
            spans=spans,
        )

    async def run_due(self, owner: str = "replica-a", spans: Tracer | None = None) -> list[Post]:
        """Claims and processes every due post once, like one scheduler pass."""
        processed: list[Post] = []
        processor = self.processor(spans)
        while True:
            now = self.clock.now()
            post = await self.store.claim_due(owner, now, now + LEASE)
            if post is None:
                return processed
            await processor.process(post)
            processed.append(post)

    async def events(self, post: Post) -> list[dict[str, Any]]:
        doc = await self.db["posts"].find_one({"_id": post.id})
        assert doc is not None
        return [event["data"] for event in doc.get("outbox", [])]

    def new(
        self, kind: Kind, post_uuid: str, date: datetime | None = None, **fields: Any
    ) -> NewPost[Any]:
        """A schedule call's post; `fields` are its request's (as in `fakes.params`)."""
        return NewPost("org", post_uuid, rpb.Design(html="<p>hi</p>"), date, params(kind, **fields))


@pytest.fixture
async def core(db: AsyncDatabase[Document]) -> Core:
    clock = FrozenClock(START)
    store = PostStore(db["posts"], lambda: None)
    await store.ensure_indexes()
    accounts = FakeAccounts(
        accounts={"alice": photoapp_account("alice"), "sa_social": social_account()}
    )
    renderer = FakeRenderer()
    driver = ScriptedDriver()
    quota = StoryQuota(db["story_quota"], 3)
    queue_store = QueueStore.of(db)
    await queue_store.ensure_indexes()
    queues = Queues(store=queue_store, accounts=accounts, clock=clock)  # type: ignore[arg-type]
    intake = PostIntake(
        store=store,
        quota=quota,
        accounts=accounts,  # type: ignore[arg-type]
        renderer=renderer,  # type: ignore[arg-type]
        clock=clock,
        window=WINDOW,
        wake_scheduler=lambda: None,
        queues=queues,
    )
    posts = Posts(
        store=store,
        accounts=accounts,  # type: ignore[arg-type]
        renderer=renderer,  # type: ignore[arg-type]
        drivers=OneDriver(driver),
        clock=clock,
    )
    rescheduler = Rescheduler(
        store=store,
        accounts=accounts,  # type: ignore[arg-type]
        clock=clock,
        window=WINDOW,
        wake_scheduler=lambda: None,
        slots=queue_store,
    )
    return Core(
        db, clock, store, accounts, renderer, driver, intake, posts, quota, rescheduler, queues
    )
