"""The wait between retries of a call to a service that is away (NATS, MongoDB): 0.2 s,
doubled after each failure up to 5 s, and back to 0.2 s once a call succeeds."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

FIRST_SECONDS = 0.2
MOST_SECONDS = 5.0


class Backoff:
    def __init__(self, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._sleep = sleep
        self._next = FIRST_SECONDS

    def reset(self) -> None:
        """A call succeeded: the next failure waits the shortest time again."""
        self._next = FIRST_SECONDS

    async def wait(self) -> None:
        """A call failed: waits, and doubles the next wait (up to the most)."""
        await self._sleep(self._next)
        self._next = min(self._next * 2, MOST_SECONDS)
