"""The wait between retries while NATS or MongoDB is away: doubling up to 5 s, reset on success."""

from __future__ import annotations

from webhook_svc.backoff import Backoff


async def test_doubles_up_to_the_most_and_starts_over_after_a_success() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    # The sleep is passed in: patching asyncio.sleep would also hand it to every other task of
    # the session's shared event loop (PyMongo's monitors spin on it and block the loop).
    backoff = Backoff(sleep)
    for _ in range(7):
        await backoff.wait()
    backoff.reset()
    await backoff.wait()
    assert waits == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 0.2]
