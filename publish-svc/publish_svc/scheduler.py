"""Claims due posts with a lease and hands each to a worker; sleeps until the next due time.
Beside it, every replica pays the credits published posts still owe (see processing.py)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from dataclasses import KW_ONLY, field
from datetime import timedelta

from publish_svc.processing import PostProcessor
from publish_svc.records import PostStore
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger

log = get_logger(__name__)
DRAIN_SECONDS = 10.0
# When every candidate was taken by other replicas, look again after this pause.
CONTENDED_PAUSE_SECONDS = 0.05
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
    _slot_freed: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    _running: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    def wake(self) -> None:
        """A post became due now (scheduled without a date): look at once."""
        self._wake.set()

    async def run(self) -> None:
        settler = asyncio.create_task(self._settle_loop(), name="credit settler")
        try:
            while True:
                free = self.workers - len(self._running)
                if free <= 0:
                    self._slot_freed.clear()
                    await self._slot_freed.wait()
                    continue
                try:
                    found, claimed = await self._claim_batch(free)
                except Exception as error:
                    log.warning("claim failed", error=str(error))
                    await self._sleep(self.max_idle.total_seconds())
                    continue
                if claimed:
                    continue
                if found:
                    await asyncio.sleep(CONTENDED_PAUSE_SECONDS)
                    continue
                await self._sleep(await self._idle_seconds())
        finally:
            settler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await settler
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

    async def _claim_batch(self, free: int) -> tuple[int, int]:
        """(candidates found, posts claimed and started)."""
        now = self.clock.now()
        ids = await self.store.due_ids(now, free)
        claimed = 0
        for record_id in ids:
            # Each claim is one attempt's lease, not the replica's: when an attempt outlives
            # its lease (a renewal lost while the database was away) and this replica claims
            # the post again, the earlier attempt's guarded writes fail (LeaseLost) instead of
            # letting two attempts of one replica both publish.
            holder = f"{self.owner}/{secrets.token_hex(4)}"
            post = await self.store.claim(record_id, holder, now, now + self.lease)
            if post is None:
                continue
            claimed += 1
            task = asyncio.create_task(self.processor.process(post), name=f"publish {post.id}")
            self._running.add(task)
            task.add_done_callback(self._done)
        return len(ids), claimed

    def _done(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        self._slot_freed.set()

    async def _idle_seconds(self) -> float:
        now = self.clock.now()
        limit = self.max_idle.total_seconds()
        try:
            next_due = await self.store.next_due_at(now)
        except Exception:
            return limit
        if next_due is None:
            return limit
        return max(0.0, min(limit, (next_due - now).total_seconds()))

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)
        self._wake.clear()

    async def drain(self) -> None:
        """On shutdown: let running attempts finish (their leases expire otherwise)."""
        if self._running:
            await asyncio.wait(set(self._running), timeout=DRAIN_SECONDS)
