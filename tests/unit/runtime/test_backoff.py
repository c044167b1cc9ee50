"""The named retry policies: their figures (as documented), jitter, and use by tenacity."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from storypost_runtime.backoff import (
    BUS_CONNECT,
    DELIVERY,
    INSIGHTS_RETRY,
    PLATFORM_RETRY,
    SERVICE_AWAY,
    STORAGE,
    TOKEN_REFRESH,
    Exponential,
    RetrySchedule,
    Waits,
)

NOW = datetime(2026, 11, 23, 10, 0, 0, tzinfo=UTC)


async def test_a_loop_doubles_up_to_the_most_and_starts_over_after_a_success() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    # The sleep is passed in: patching asyncio.sleep would also hand it to every other task of
    # the session's shared event loop (PyMongo's monitors spin on it and block the loop).
    backoff = Waits(SERVICE_AWAY, sleep)
    for _ in range(7):
        await backoff.wait()
    backoff.reset()
    await backoff.wait()
    assert waits == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 0.2]


def test_in_process_policies_wait_as_tenacity_exponential_did() -> None:
    for policy, old in [
        (BUS_CONNECT, wait_exponential(multiplier=0.2, max=2)),
        (STORAGE, wait_exponential(multiplier=0.5, max=5)),
    ]:
        for attempt in range(1, 12):
            state = type("State", (), {"attempt_number": attempt})()
            assert policy(state) == old(state) == policy.delay(attempt)


async def test_a_policy_is_tenacity_s_wait() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(4),
        wait=STORAGE,
        retry=retry_if_exception_type(OSError),
        sleep=sleep,
        reraise=True,
    )
    with pytest.raises(OSError, match="away"):
        async for attempt in retrying:
            with attempt:
                raise OSError("away")
    assert slept == [0.5, 1.0, 2.0]


def test_platform_retries_double_from_one_second_to_five_minutes_times_half_to_one_and_a_half() -> (
    None
):
    low = Exponential(first=1.0, most=300.0, jitter=0.5, rand=lambda: 0.0)
    high = Exponential(first=1.0, most=300.0, jitter=0.5, rand=lambda: 1.0)
    assert (PLATFORM_RETRY.first, PLATFORM_RETRY.most, PLATFORM_RETRY.jitter) == (1.0, 300.0, 0.5)
    assert [low.delay(n) for n in (1, 2, 3, 9, 10, 5000)] == [0.5, 1, 2, 128, 150, 150]
    assert [high.delay(n) for n in (1, 2, 10)] == [1.5, 3, 450]
    for attempt in range(1, 40):
        assert 0.5 * min(300, 2 ** (attempt - 1)) <= PLATFORM_RETRY.delay(attempt)
        assert PLATFORM_RETRY.delay(attempt) <= 1.5 * min(300, 2 ** (attempt - 1))


def test_the_delivery_schedule_is_the_documented_one_with_jitter_and_runs_out() -> None:
    assert list(DELIVERY.waits) == [30, 120, 600, 1800, 3600, 10800, 21600, 43200]
    assert DELIVERY.attempts == 9 and DELIVERY.jitter == 0.2
    assert timedelta(seconds=sum(DELIVERY.waits)) == timedelta(hours=22, minutes=42, seconds=30)
    low = RetrySchedule([30, 120, 600], jitter=0.2, rand=lambda: 0.0)
    high = RetrySchedule([30, 120, 600], jitter=0.2, rand=lambda: 1.0)
    assert low.next_attempt(1, NOW) == NOW + timedelta(seconds=24)
    assert high.next_attempt(1, NOW) == NOW + timedelta(seconds=36)
    assert low.next_attempt(3, NOW) == NOW + timedelta(seconds=480)
    assert low.next_attempt(0, NOW) is None and low.next_attempt(4, NOW) is None
    assert RetrySchedule([], 0.2).next_attempt(1, NOW) is None


def test_token_refreshes_double_from_half_a_minute_to_half_an_hour_times_half_to_one() -> None:
    low = replace(TOKEN_REFRESH, rand=lambda: 0.0)
    high = replace(TOKEN_REFRESH, rand=lambda: 1.0)
    assert [low.delay(n) for n in (1, 2, 3, 7, 8, 500)] == [15, 30, 60, 900, 900, 900]
    assert [high.delay(n) for n in (1, 2, 3, 7, 8, 500)] == [30, 60, 120, 1800, 1800, 1800]


def test_insights_retries_double_from_a_minute_to_an_hour_times_one_to_one_point_two() -> None:
    low = replace(INSIGHTS_RETRY, rand=lambda: 0.0)
    high = replace(INSIGHTS_RETRY, rand=lambda: 1.0)
    assert [low.delay(n) for n in (1, 2, 6, 7, 8, 500)] == pytest.approx(
        [60, 120, 1920, 3600, 3600, 3600]
    )
    assert [high.delay(n) for n in (1, 2, 7)] == pytest.approx([72, 144, 4320])
    assert replace(INSIGHTS_RETRY, jitter=0.0).delay(1) == pytest.approx(66)  # the centre
