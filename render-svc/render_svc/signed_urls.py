"""Presigned GET URLs of renderings' media, reused while most of their life is left.

Every status call of a story or draft hands out fresh URLs of its rendering's media and
preview; botocore spends about a millisecond of CPU on each signature (it resolves its
endpoint rules every time), the largest cost of those calls in render-svc. A URL signed for
`seconds` is handed out again while at least three quarters of its life remain, so a caller
always gets at least that much, and the answer's expiry is the URL's own.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, field
from datetime import datetime, timedelta
from typing import Protocol

from cachetools import TTLCache

from storypost_runtime.clock import Clock
from storypost_runtime.component import component


class Presigner(Protocol):
    async def presign_get(self, key: str, seconds: int) -> str: ...


@component
class SignedUrls:
    _: KW_ONLY
    store: Presigner
    clock: Clock
    seconds: int
    maxsize: int = 20_000
    _cache: TTLCache[str, tuple[str, datetime]] = field(init=False)

    def __post_init__(self) -> None:
        clock = self.clock
        self._cache = TTLCache(
            self.maxsize, ttl=self.seconds / 4, timer=lambda: clock.now().timestamp()
        )

    async def get(self, key: str) -> tuple[str, datetime]:
        """A GET URL of `key` and when it stops working."""
        found = self._cache.get(key)
        if found is not None:
            return found
        signed_at = self.clock.now()
        url = await self.store.presign_get(key, self.seconds)
        entry = (url, signed_at + timedelta(seconds=self.seconds))
        self._cache[key] = entry
        return entry
