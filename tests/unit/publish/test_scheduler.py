"""The claim loop itself: batches of due posts, two replicas, wake-ups, no post twice."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

from publish_svc.drivers.base import Credentials, Media, Outcome, Progress
from publish_svc.model import Kind, Post, Status
from publish_svc.processing import PostProcessor
from publish_svc.scheduler import DueScheduler
from storypost_runtime.clock import SystemClock
from tests.unit.publish.conftest import LEASE, WINDOW, Core
from tests.unit.publish.fakes import OneDriver


def replica(
    core: Core,
    owner: str,
    workers: int,
    lease: timedelta = LEASE,
    max_idle: timedelta = timedelta(seconds=30),
) -> DueScheduler:
    clock = SystemClock()
    processor = PostProcessor(
        store=core.store,
        accounts=core.accounts,  # type: ignore[arg-type]
        renderer=core.renderer,  # type: ignore[arg-type]
        drivers=OneDriver(core.driver),
        clock=clock,
        window=WINDOW,
        lease=lease,
        hold_recheck=timedelta(seconds=5),
    )
    return DueScheduler(
        store=core.store,
        processor=processor,
        clock=clock,
        owner=owner,
        workers=workers,
        lease=lease,
        max_idle=max_idle,
    )


async def test_two_replicas_publish_a_burst_once_each(core: Core) -> None:
    core.quota.per_day = 1000
    core.intake.clock = SystemClock()
    for n in range(40):
        await core.intake.story(core.new(Kind.STORY, f"6f1c1f9e-4f0e-4c7a-9d6b-{n:012d}"), "alice")
    replicas = [replica(core, "a", 3), replica(core, "b", 5)]
    tasks = [asyncio.create_task(r.run()) for r in replicas]
    try:
        for _ in range(200):
            if await core.db["posts"].count_documents({"status": "executed"}) == 40:
                break
            await asyncio.sleep(0.05)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert await core.db["posts"].count_documents({"status": "executed"}) == 40
    assert len(core.driver.calls) == 40 == len(set(core.driver.calls))


async def test_wake_starts_a_post_due_now_without_waiting_for_the_idle_timer(core: Core) -> None:
    core.intake.clock = SystemClock()
    scheduler = replica(core, "a", 2)
    task = asyncio.create_task(scheduler.run())
    try:
        await asyncio.sleep(0.1)  # idle: sleeping up to 30 s
        uuid = "6f1c1f9e-4f0e-4c7a-9d6b-2f6f0a4b9c55"
        await core.intake.story(core.new(Kind.STORY, uuid), "alice")
        scheduler.wake()
        for _ in range(100):
            post = await core.store.get(Kind.STORY, "org", uuid)
            if post and post.status is Status.EXECUTED:
                break
            await asyncio.sleep(0.05)
        assert post is not None and post.status is Status.EXECUTED
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@dataclass
class OverlappingAttempts:
    """A platform whose first attempt is held until a second attempt of the same post has
    started, then sends; the second sends after it. Records which attempts sent."""

    calls: int = 0
    sent: list[int] = field(default_factory=list)
    second_started: asyncio.Event = field(default_factory=asyncio.Event)
    first_done: asyncio.Event = field(default_factory=asyncio.Event)

    async def publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome:
        attempt, self.calls = self.calls, self.calls + 1
        if attempt == 0:
            await asyncio.wait_for(self.second_started.wait(), 20)
            try:
                await progress.irreversible()
                self.sent.append(attempt)
            finally:
                self.first_done.set()
            return Outcome.executed("m-first")
        self.second_started.set()
        await asyncio.wait_for(self.first_done.wait(), 20)
        await progress.irreversible()
        self.sent.append(attempt)
        return Outcome.executed(f"m-{attempt}")

    async def reachable(self, credentials: Credentials | None = None) -> bool:
        return True


async def test_an_attempt_that_outlived_its_lease_sends_nothing_after_the_post_is_claimed_again(
    core: Core,
) -> None:
    """The database went away while an attempt renewed its lease: the lease ran out and the
    same replica claimed the post again. Only the attempt holding the lease may send."""
    core.intake.clock = SystemClock()
    platform = OverlappingAttempts()
    core.driver = platform  # type: ignore[assignment]

    async def renewal_lost(*args: object) -> bool:
        raise ConnectionError("the database is away")

    core.store.renew_lease = renewal_lost  # type: ignore[method-assign,assignment]
    lease = timedelta(seconds=0.5)
    scheduler = replica(core, "a", 4, lease=lease, max_idle=timedelta(seconds=0.05))
    uuid = "6f1c1f9e-4f0e-4c7a-9d6b-2f6f0a4b9c56"
    await core.intake.story(core.new(Kind.STORY, uuid), "alice")
    task = asyncio.create_task(scheduler.run())
    try:
        for _ in range(200):
            post = await core.store.get(Kind.STORY, "org", uuid)
            if platform.first_done.is_set() and post and post.status is Status.EXECUTED:
                break
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert platform.calls >= 2, "the post was not claimed again after its lease ran out"
    assert post is not None and post.status is Status.EXECUTED
    # The first attempt lost its lease before it sent: it sent nothing, one later one did.
    assert len(platform.sent) == 1 and 0 not in platform.sent, platform.sent
