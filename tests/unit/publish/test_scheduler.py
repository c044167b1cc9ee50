"""The claim loop itself: batches of due posts, two replicas, wake-ups, no post twice."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from publish_svc.model import Kind, Status
from publish_svc.processing import PostProcessor
from publish_svc.scheduler import DueScheduler
from storypost_runtime.clock import SystemClock
from tests.unit.publish.conftest import LEASE, WINDOW, Core
from tests.unit.publish.fakes import OneDriver


def replica(core: Core, owner: str, workers: int) -> DueScheduler:
    clock = SystemClock()
    processor = PostProcessor(
        core.store,
        core.accounts,  # type: ignore[arg-type]
        core.renderer,  # type: ignore[arg-type]
        OneDriver(core.driver),
        clock,
        owner=owner,
        window=WINDOW,
        lease=LEASE,
        hold_recheck=timedelta(seconds=5),
    )
    return DueScheduler(
        core.store,
        processor,
        clock,
        owner=owner,
        workers=workers,
        lease=LEASE,
        max_idle=timedelta(seconds=30),
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
