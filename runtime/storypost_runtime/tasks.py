"""Background tasks: those that live as long as an AsyncExitStack (started on enter, cancelled on
exit), a component's fire-and-forget set, and the loop of passes a background worker runs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
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


async def run_passes(
    one_pass: Callable[[], Awaitable[int]],
    failed: Callable[[Exception], None],
    *,
    poll_seconds: float,
    wake: asyncio.Event | None = None,
) -> None:
    """Runs passes until cancelled: the next one at once after a pass that did something
    (returned more than 0), else when `wake` is set or `poll_seconds` have passed. A pass
    that raises is handed to `failed` (to log it) and counts as having done nothing."""
    while True:
        try:
            done = await one_pass()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            failed(error)
            done = 0
        if done:
            continue
        if wake is None:
            await asyncio.sleep(poll_seconds)
            continue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), timeout=poll_seconds)
        wake.clear()
