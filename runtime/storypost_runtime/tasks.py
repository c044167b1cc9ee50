"""Background tasks that live as long as an AsyncExitStack: started on enter, cancelled on exit."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any


@asynccontextmanager
async def background(
    coro: Coroutine[Any, Any, None], name: str
) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(coro, name=name)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class TaskSet:
    """Fire-and-forget tasks of a component: each is referenced until it ends (the event loop
    keeps only weak references to tasks) and all are cancelled together on close."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, None], name: str | None = None) -> asyncio.Task[None]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def wait_idle(self) -> None:
        """Waits until no task runs (those started meanwhile included)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        """Cancels every task and waits for them to end; their errors are theirs to log."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
