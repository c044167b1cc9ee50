"""Writes delivery records in batches: new records (RecordWriter) and attempts' outcomes
(OutcomeWriter); each caller waits until its own are written."""

from __future__ import annotations

import asyncio

from storypost_runtime.backoff import SERVICE_AWAY, Waits
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document
from webhook_svc.deliveries import DeliveryStore, Outcome

log = get_logger(__name__)


class RecordWriter:
    """Many events finishing at once become one insert: while one batch is written, the next
    gathers. A failed write is retried (with backoff) until it succeeds, so a database outage
    delays acknowledgements but loses nothing."""

    def __init__(self, store: DeliveryStore, max_batch: int = 100) -> None:
        self._store = store
        self._max_batch = max_batch
        self._queue: list[tuple[list[Document], asyncio.Future[None]]] = []
        self._wake = asyncio.Event()

    async def store(self, docs: list[Document]) -> None:
        if not docs:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((docs, done))
        self._wake.set()
        await done

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                await self._write(self._take())

    def _take(self) -> list[tuple[list[Document], asyncio.Future[None]]]:
        taken: list[tuple[list[Document], asyncio.Future[None]]] = []
        count = 0
        while self._queue and (not taken or count + len(self._queue[0][0]) <= self._max_batch):
            item = self._queue.pop(0)
            taken.append(item)
            count += len(item[0])
        return taken

    async def _write(self, items: list[tuple[list[Document], asyncio.Future[None]]]) -> None:
        docs = [doc for batch, waiter in items if not waiter.done() for doc in batch]
        backoff = Waits(SERVICE_AWAY)
        while docs:
            try:
                await self._store.insert_new(docs)
                break
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("storing delivery records failed; retrying", error=str(error))
                await backoff.wait()
        for _, waiter in items:
            if not waiter.done():
                waiter.set_result(None)


class OutcomeWriter:
    """Attempts that end while an outcome is being written share the next write: one bulk
    write per batch rather than one update per attempt. No loop of its own: the first caller
    that finds no write running writes every queued outcome (its own first) until the queue is
    empty. A failed write fails that batch's callers, whose leases then run out and their
    deliveries are attempted again, as when a single update failed."""

    def __init__(self, store: DeliveryStore, max_batch: int = 100) -> None:
        self._store = store
        self._max_batch = max_batch
        self._queue: list[tuple[tuple[str, str, Outcome], asyncio.Future[None]]] = []
        self._writing = False

    async def finish(self, delivery_id: str, lease_id: str, change: Outcome) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(((delivery_id, lease_id, change), done))
        if not self._writing:
            self._writing = True
            try:
                while self._queue:
                    taken = self._queue[: self._max_batch]
                    del self._queue[: self._max_batch]
                    await self._write(taken)
            finally:
                self._writing = False
                # Only when this caller was cancelled mid-way: the rest must not wait forever.
                for _, waiter in self._queue:
                    if not waiter.done():
                        waiter.set_exception(RuntimeError("the outcome writer stopped"))
                self._queue.clear()
        await done

    async def _write(
        self, items: list[tuple[tuple[str, str, Outcome], asyncio.Future[None]]]
    ) -> None:
        try:
            matched = await self._store.finish_many([change for change, _ in items])
        except asyncio.CancelledError:
            for _, waiter in items:
                if not waiter.done():
                    waiter.set_exception(RuntimeError("writing the outcomes was cancelled"))
            raise
        except Exception as error:
            for _, waiter in items:
                if not waiter.done():
                    waiter.set_exception(error)
            return
        if matched < len(items):
            log.warning("delivery leases were lost", lost=len(items) - matched)
        for _, waiter in items:
            if not waiter.done():
                waiter.set_result(None)
