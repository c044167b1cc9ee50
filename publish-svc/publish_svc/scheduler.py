"""Claims due posts with a lease and hands each to a worker; sleeps until the next due time.
Beside it, every replica pays the credits published posts still owe (see processing.py)."""

from __future__ import annotations

import asyncio
from dataclasses import KW_ONLY, field
from datetime import timedelta

from publish_svc.processing import PostProcessor
from publish_svc.records import PostStore
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger
from storypost_runtime.tasks import Next, TaskSet, background, claim_due, run_passes

log = get_logger(__name__)
DRAIN_SECONDS = 10.0
# How often owed credits are looked for.
SETTLE_EVERY = timedelta(seconds=10)


@component
class DueScheduler:
    """Any number of replicas may run one: the atomic claim gives each post to one of them.

    One query finds as many due posts as there are free workers; each is then claimed by
    its id (a cheap guarded update), so a burst of due posts costs one search per batch.
    """

    _: KW_ONLY
    store: PostStore
    processor: PostProcessor
    clock: Clock
    owner: str
    workers: int
    lease: timedelta
    max_idle: timedelta
    settle_every: timedelta = SETTLE_EVERY
    _wake: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    _running: TaskSet = field(init=False, default_factory=TaskSet)

    def wake(self) -> None:
        """A post became due now (scheduled without a date): look at once."""
        self._wake.set()

    async def run(self) -> None:
        try:
            async with background(self._settle_loop(), "credit settler"):
                await run_passes(
                    self._claim_pass,
                    self._claim_failed,
                    poll_seconds=self.max_idle.total_seconds(),
                    wake=self._wake,
                    due_in=self._due_in,
                )
        finally:
            await self.drain()

    async def _settle_loop(self) -> None:
        """Owed credits, at start (a crashed replica's) and then every `settle_every`."""
        while True:
            try:
                settled = await self.processor.settle_owed()
                if settled:
                    log.info("owed credits and reservations settled", count=settled)
            except Exception as error:
                log.warning("settling credits failed", error=str(error))
            await asyncio.sleep(self.settle_every.total_seconds())

    async def _claim_pass(self) -> Next:
        free = await self._running.room(self.workers)
        found, claimed = await claim_due(
            self.store, owner=self.owner, now=self.clock.now(), lease=self.lease, most=free
        )
        for post, _ in claimed:
            self._running.spawn(self.processor.process(post), name=f"publish {post.id}")
        return Next.after_claims(found, len(claimed))

    def _claim_failed(self, error: Exception) -> None:
        log.warning("claim failed", error=str(error))

    async def _due_in(self) -> float | None:
        now = self.clock.now()
        next_due = await self.store.next_due_at(now)
        return None if next_due is None else (next_due - now).total_seconds()

    async def drain(self) -> None:
        """On shutdown: let running attempts finish (their leases expire otherwise)."""
        await self._running.drain(DRAIN_SECONDS)
