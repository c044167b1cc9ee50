"""Admission of attempts: a bound for the replica and a smaller one per webhook URL."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict, deque
from dataclasses import KW_ONLY, field

from storypost_runtime.component import component


@component
class Lanes:
    """Each webhook URL is a lane with at most `per_lane` attempts at once; the replica runs at
    most `total`. A new delivery whose lane is busy waits in memory for a short while (FIFO,
    at most `queue_per_lane` of them); past that, or when the replica is full, it waits in
    MongoDB (pending) and is either held by this replica for its turn (`wait_turn`: FIFO with
    the lane's other waiters, not counted in `queue_per_lane` since it holds no bus event) or
    taken by the scheduler when room frees up. So a slow endpoint fills only its own lane and a
    short queue: it never holds back another URL."""

    _: KW_ONLY
    total: int
    per_lane: int
    queue_per_lane: int = 0
    max_wait: float = 0.0
    _running: Counter[str] = field(init=False, default_factory=Counter)
    _count: int = field(init=False, default=0)
    _waiters: defaultdict[str, deque[asyncio.Future[None]]] = field(
        init=False, default_factory=lambda: defaultdict(deque)
    )
    # Of each lane's waiters, those held for a turn (wait_turn) rather than new deliveries.
    _held: Counter[str] = field(init=False, default_factory=Counter)

    @property
    def has_room(self) -> bool:
        return self._count < self.total

    @property
    def running(self) -> int:
        return self._count

    @property
    def free(self) -> int:
        return max(0, self.total - self._count)

    def room(self, lane: str) -> int:
        """Attempts the lane could start now (none while others wait for it)."""
        if self._waiters.get(lane):
            return 0
        return max(0, min(self.per_lane - self._running[lane], self.total - self._count))

    def full_lanes(self) -> list[str]:
        return [lane for lane, count in self._running.items() if count >= self.per_lane]

    def try_take(self, lane: str, *, force: bool = False) -> bool:
        """Takes a slot when there is room now (or always, for a one-off like 'send test')."""
        if not force and (self._count >= self.total or self._running[lane] >= self.per_lane):
            return False
        self._running[lane] += 1
        self._count += 1
        return True

    async def enter(self, lane: str) -> bool:
        """A slot now or, when only the lane is busy, within `max_wait`; else False."""
        if self.try_take(lane):
            return True
        waiting = len(self._waiters.get(lane, ())) - self._held[lane]
        if not self.can_hold(lane) or waiting >= self.queue_per_lane:
            return False
        return await self._wait(lane, self.max_wait, held=False)

    def can_hold(self, lane: str) -> bool:
        """Waiting only helps when this lane's own attempts will end and hand their slots on."""
        return self._running[lane] > 0

    async def wait_turn(self, lane: str, timeout: float) -> bool:  # noqa: ASYNC109
        """A slot for a delivery held in memory: now when the lane has room and nobody waits,
        else in turn after the lane's earlier waiters, within `timeout`; False otherwise."""
        if self.room(lane) > 0 and self.try_take(lane):
            return True
        if not self.can_hold(lane):
            return False
        return await self._wait(lane, timeout, held=True)

    async def _wait(self, lane: str, timeout: float, *, held: bool) -> bool:  # noqa: ASYNC109
        queue = self._waiters[lane]
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(turn)
        self._held[lane] += held
        try:
            await asyncio.wait({turn}, timeout=timeout)
        except BaseException:
            if turn.done() and not turn.cancelled():
                self.release(lane)  # cancelled just after the slot came: hand it on
            raise
        finally:
            if held:
                self._held[lane] -= 1
                if self._held[lane] <= 0:
                    del self._held[lane]
            if not turn.done():
                turn.cancel()
                queue.remove(turn)
            if not queue and self._waiters.get(lane) is queue:
                del self._waiters[lane]
        return not turn.cancelled()

    def release(self, lane: str) -> None:
        """Ends an attempt: its slot goes to the lane's next waiter, else back to the pool."""
        queue = self._waiters.get(lane)
        while queue:
            turn = queue.popleft()
            if not turn.done():
                turn.set_result(None)  # the slot passes on; the counts stay
                return
        self._running[lane] -= 1
        if self._running[lane] <= 0:
            del self._running[lane]
        self._count -= 1
