"""Presigned GET URLs of renderings' media, reused while most of their life is left.

Every status call of a story or draft hands out fresh URLs of its rendering's media and
preview; botocore spends about a millisecond of CPU on each signature (it resolves its
endpoint rules every time), the largest cost of those calls in render-svc. A URL signed for
`seconds` is handed out again while at least three quarters of its life remain, so a caller
always gets at least that much, and the answer's expiry is the URL's own.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from cachetools import TTLCache

from storypost_runtime.clock import Clock


class Presigner(Protocol):
    async def presign_get(self, key: str, seconds: int) -> str: ...


class SignedUrls:
    def __init__(
        self, store: Presigner, clock: Clock, seconds: int, *, maxsize: int = 20_000
    ) -> None:
        self._store = store
        self._clock = clock
        self._seconds = seconds
        self._cache: TTLCache[str, tuple[str, datetime]] = TTLCache(
            maxsize, ttl=seconds / 4, timer=lambda: clock.now().timestamp()
        )

    async def get(self, key: str) -> tuple[str, datetime]:
        """A GET URL of `key` and when it stops working."""
        found = self._cache.get(key)
        if found is not None:
            return found
        signed_at = self._clock.now()
        url = await self._store.presign_get(key, self._seconds)
        entry = (url, signed_at + timedelta(seconds=self._seconds))
        self._cache[key] = entry
        return entry
