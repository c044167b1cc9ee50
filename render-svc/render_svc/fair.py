"""Slots shared fairly between organizations: render slots, video source fetches.

asyncio.Semaphore wakes its waiters in arrival order, so one organization that sends a
burst (or whose renders are slow) takes every slot and every other organization waits
behind it. Here a freed slot goes to the waiting organization with the fewest slots held,
ties broken round robin (the organization served longest ago first); each organization's
own calls keep their order. Waiting is bounded twice: at most `queue_limit` calls wait in
all, at most `per_org_queue_limit` of one organization; a call beyond either, or one that
waits past `queue_seconds`, is refused (RESOURCE_EXHAUSTED: 429 with Retry-After).
"""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY, field

from storypost_runtime.component import component
from storypost_runtime.errors import ResourceExhausted


@component
class FairSlots:
    _: KW_ONLY
    slots: int
    queue_seconds: float
    queue_limit: int
    per_org_queue_limit: int
    busy: Callable[[], ResourceExhausted]
    _free: int = field(init=False)
    _held: Counter[str] = field(init=False, default_factory=Counter)
    # Waiting calls per organization; the order of the keys is the round robin's.
    _queues: OrderedDict[str, deque[asyncio.Future[None]]] = field(
        init=False, default_factory=OrderedDict
    )

    def __post_init__(self) -> None:
        self._free = self.slots

    @property
    def waiting(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    @property
    def in_use(self) -> int:
        return self.slots - self._free

    def held(self, organization_id: str) -> int:
        return self._held[organization_id]

    @asynccontextmanager
    async def slot(self, organization_id: str) -> AsyncIterator[None]:
        await self.acquire(organization_id)
        try:
            yield
        finally:
            self.release(organization_id)

    async def acquire(self, organization_id: str) -> None:
        if self._free > 0 and not self._queues:
            self._free -= 1
            self._held[organization_id] += 1
            return
        queue = self._queues.get(organization_id)
        if self.waiting >= self.queue_limit or (
            queue is not None and len(queue) >= self.per_org_queue_limit
        ):
            raise self.busy()
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(organization_id, deque()).append(turn)
        try:
            async with asyncio.timeout(self.queue_seconds):
                await turn
        except BaseException as error:
            if turn.done() and not turn.cancelled():
                # Handed a slot just as it gave up: the slot goes to the next in line.
                self.release(organization_id)
            else:
                turn.cancel()
                self._forget(organization_id, turn)
            if isinstance(error, TimeoutError):
                raise self.busy() from None
            raise

    def release(self, organization_id: str) -> None:
        self._held[organization_id] -= 1
        if self._held[organization_id] <= 0:
            del self._held[organization_id]
        while self._queues:
            # The fewest slots held first; among equals the earliest in the round robin.
            chosen = min(self._queues, key=lambda org: self._held[org])
            queue = self._queues.pop(chosen)
            turn = queue.popleft()
            if queue:
                self._queues[chosen] = queue  # to the back of the round robin
            if not turn.done():
                self._held[chosen] += 1
                turn.set_result(None)
                return
        self._free += 1

    def _forget(self, organization_id: str, turn: asyncio.Future[None]) -> None:
        queue = self._queues.get(organization_id)
        if queue is None:
            return
        try:
            queue.remove(turn)
        except ValueError:
            return
        if not queue:
            del self._queues[organization_id]
