"""Writes delivery records in batches (new records, attempts' outcomes); each caller waits until
its own are written."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from storypost_runtime.backoff import SERVICE_AWAY, Waits
from storypost_runtime.logs import get_logger

log = get_logger(__name__)


class BatchWriter[T]:
    """Items handed in while a write runs share the next write: one database call per batch
    (up to `max_batch` items, a caller's items never split) rather than one per caller. `run`
    is its loop; a caller waits only for the write that holds its items.

    `retry`: a failed write is retried with backoff until it succeeds, so an outage delays the
    callers but loses nothing; else the error goes to that write's callers."""

    def __init__(
        self,
        write: Callable[[list[T]], Awaitable[object]],
        *,
        what: str,
        retry: bool,
        max_batch: int = 100,
    ) -> None:
        self._write_batch = write
        self._what = what
        self._retry = retry
        self._max_batch = max_batch
        self._queue: list[tuple[list[T], asyncio.Future[None]]] = []
        self._wake = asyncio.Event()

    async def write(self, items: Sequence[T]) -> None:
        if not items:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((list(items), done))
        self._wake.set()
        await done

    async def run(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._queue:
                    await self._write(self._take())
        finally:
            self._fail(self._queue, RuntimeError(f"writing {self._what} stopped"))
            self._queue.clear()

    def _take(self) -> list[tuple[list[T], asyncio.Future[None]]]:
        taken: list[tuple[list[T], asyncio.Future[None]]] = []
        count = 0
        while self._queue and (not taken or count + len(self._queue[0][0]) <= self._max_batch):
            item = self._queue.pop(0)
            taken.append(item)
            count += len(item[0])
        return taken

    async def _write(self, taken: list[tuple[list[T], asyncio.Future[None]]]) -> None:
        # A caller that gave up waiting (cancelled) has its items left out.
        items = [item for batch, waiter in taken if not waiter.done() for item in batch]
        backoff = Waits(SERVICE_AWAY)
        try:
            while items:
                try:
                    await self._write_batch(items)
                    break
                except Exception as error:
                    if not self._retry:
                        self._fail(taken, error)
                        return
                    log.warning(f"writing {self._what} failed; retrying", error=str(error))
                    await backoff.wait()
        except BaseException:
            self._fail(taken, RuntimeError(f"writing {self._what} stopped"))
            raise
        for _, waiter in taken:
            if not waiter.done():
                waiter.set_result(None)

    @staticmethod
    def _fail(taken: Sequence[tuple[list[T], asyncio.Future[None]]], error: BaseException) -> None:
        for _, waiter in taken:
            if not waiter.done():
                waiter.set_exception(error)
