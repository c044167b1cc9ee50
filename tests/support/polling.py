"""Waiting for something a stack does in the background."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def wait_until[T](
    check: Callable[[], Awaitable[T | None]], within: float, what: str, every: float = 0.5
) -> T:
    """Polls `check` until it returns something other than None."""
    deadline = time.monotonic() + within
    while True:
        found = await check()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within} s waiting for {what}")
        await asyncio.sleep(every)
