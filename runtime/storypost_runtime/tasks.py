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
