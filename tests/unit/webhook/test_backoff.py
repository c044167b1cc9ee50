"""The wait between retries while NATS or MongoDB is away: doubling up to 5 s, reset on success."""

from __future__ import annotations

import asyncio

import pytest

from webhook_svc.backoff import Backoff


async def test_doubles_up_to_the_most_and_starts_over_after_a_success(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    backoff = Backoff()
    for _ in range(7):
        await backoff.wait()
    backoff.reset()
    await backoff.wait()
    assert waits == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 0.2]
