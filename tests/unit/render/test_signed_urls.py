"""Presigned media URLs are reused while three quarters of their life remain, never past."""

from __future__ import annotations

import asyncio
from dataclasses import field
from datetime import UTC, datetime, timedelta

from render_svc.signed_urls import SignedUrls
from storypost_runtime.clock import FrozenClock
from storypost_runtime.component import component


@component
class CountingPresigner:
    clock: FrozenClock
    calls: list[tuple[str, int]] = field(init=False, default_factory=list)

    async def presign_get(self, key: str, seconds: int) -> str:
        self.calls.append((key, seconds))
        return f"https://s3/{key}?signed={self.clock.now().isoformat()}&for={seconds}"


def test_a_url_is_reused_while_most_of_its_life_is_left_then_signed_anew() -> None:
    start = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    clock = FrozenClock(start)
    store = CountingPresigner(clock)
    urls = SignedUrls(store=store, clock=clock, seconds=3600)

    async def scenario() -> None:
        first, until = await urls.get("o1/media.jpg")
        assert until == start + timedelta(seconds=3600)
        clock.advance(timedelta(minutes=14))
        assert await urls.get("o1/media.jpg") == (first, until)  # 46 minutes left
        other, _ = await urls.get("o2/media.jpg")
        assert other != first  # one URL per object
        clock.advance(timedelta(minutes=2))  # 44 minutes left: less than three quarters
        renewed, renewed_until = await urls.get("o1/media.jpg")
        assert renewed != first
        assert renewed_until == start + timedelta(minutes=16, seconds=3600)

    asyncio.run(scenario())
    assert store.calls == [("o1/media.jpg", 3600), ("o2/media.jpg", 3600), ("o1/media.jpg", 3600)]
