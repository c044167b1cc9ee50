"""The waits between retries: one rule, and the named policies every service uses.

A policy is a tenacity wait strategy, so an in-process retry passes it as `wait=` to
`AsyncRetrying`; a loop that retries a call forever counts its failures with `Waits`; a retry
whose time is stored (a post's or a delivery's `dueAt`: any replica may take it, so tenacity's
in-process sleeping does not fit) asks `delay(attempt)` for the seconds to add to now.

Jitter multiplies a wait by a random factor in [1 - jitter, 1 + jitter] (around `centre`
instead of 1 where a policy says so): retries that failed together (an endpoint that was down)
do not all come back at once. tenacity's own jittered
waits add the jitter (`wait_exponential_jitter`) or draw from zero (`wait_random_exponential`);
the documented schedules (docs/webhooks.md, docs/publishing.md) are multiplicative.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tenacity import RetryCallState
from tenacity.wait import wait_base

Rand = Callable[[], float]


def jittered(seconds: float, jitter: float, rand: Rand, centre: float = 1.0) -> float:
    """`seconds` times a random factor in [centre - jitter, centre + jitter]."""
    return seconds * (centre + jitter * (2 * rand() - 1))


@dataclass(frozen=True)
class Exponential(wait_base):
    """`first` seconds before retry 1, `factor` times more before each next one, at most
    `most`; then jittered, by a factor in [centre - jitter, centre + jitter] (the jittered
    wait may pass `most` by the jitter)."""

    first: float
    most: float
    factor: float = 2.0
    jitter: float = 0.0
    centre: float = 1.0
    rand: Rand = field(default=random.random, compare=False)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt `attempt` (1: the first) before the next."""
        try:
            grown = self.first * self.factor ** max(attempt - 1, 0)
        except OverflowError:
            grown = self.most
        seconds = min(self.most, grown)
        if not self.jitter:
            return seconds * self.centre
        return jittered(seconds, self.jitter, self.rand, self.centre)

    def __call__(self, retry_state: RetryCallState) -> float:
        return self.delay(retry_state.attempt_number)


@dataclass(frozen=True)
class RetrySchedule:
    """Wait `waits[n]` (jittered) before retry n+1; when the waits run out, no more retries.

    For retries planned in a store: a table of waits is the schedule a reader can check."""

    waits: Sequence[float]
    jitter: float
    rand: Rand = field(default=random.random, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "waits", tuple(self.waits))

    @property
    def attempts(self) -> int:
        """Attempts in one round: the first and one per wait."""
        return 1 + len(self.waits)

    def delay(self, attempt: int) -> float | None:
        """Seconds to wait after failed attempt `attempt` (1: the first), or None: no more."""
        if attempt < 1 or attempt > len(self.waits):
            return None
        return jittered(self.waits[attempt - 1], self.jitter, self.rand)

    def next_attempt(self, failures: int, now: datetime) -> datetime | None:
        """When to try again after `failures` failed attempts in this round, or None."""
        seconds = self.delay(failures)
        return None if seconds is None else now + timedelta(seconds=seconds)


class Waits:
    """A loop's waits between failed calls under a policy; back to the first after a success.

    The sleep is passed in for tests: patching asyncio.sleep would hand it to every other task
    of the event loop."""

    def __init__(
        self, policy: Exponential, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ) -> None:
        self._policy = policy
        self._sleep = sleep
        self._failures = 0

    def reset(self) -> None:
        """A call succeeded: the next failure waits the shortest time again."""
        self._failures = 0

    async def wait(self) -> None:
        """A call failed: waits the policy's time for this many failures in a row."""
        self._failures += 1
        await self._sleep(self._policy.delay(self._failures))


# Connecting to NATS at start-up: 0.2 s doubling up to 2 s (nats-py then reconnects itself).
BUS_CONNECT = Exponential(first=0.2, most=2.0)
# A loop's call to NATS or MongoDB while it is away (webhook-svc's consumer and record
# writer): 0.2 s doubling up to 5 s, back to 0.2 s once a call succeeds.
SERVICE_AWAY = Exponential(first=0.2, most=5.0)
# Object-storage hiccups while a rendering is finished: 0.5 s doubling up to 5 s.
STORAGE = Exponential(first=0.5, most=5.0)
# A post's transient platform error (publish-svc, stored as the post's `dueAt`): 1 s before
# the first retry, doubling up to 5 minutes, times 0.5-1.5.
PLATFORM_RETRY = Exponential(first=1.0, most=300.0, jitter=0.5)
# A token refresh that failed for a while (account-svc's token keeper, stored as the account's
# `refreshRetryAt`): 30 s before the first retry, doubling up to 30 min, times 0.5-1.0 (never
# later than the doubling).
TOKEN_REFRESH = Exponential(first=30.0, most=1800.0, centre=0.75, jitter=0.25)
# An insights point the platform refused (publish-svc, stored as the point's `dueAt`): 60 s
# before the first retry, doubling up to 1 h, times 1.0-1.2 (never sooner than the doubling;
# the platform's Retry-After, when longer, wins). publish-svc's settings may replace the
# first and the longest wait (insights_backoff_seconds, insights_max_backoff_seconds).
INSIGHTS_RETRY = Exponential(first=60.0, most=3600.0, centre=1.1, jitter=0.1)
# A webhook delivery's retries (stored as its `dueAt`): 30 s, 2 min, 10 min, 30 min, 1 h,
# 3 h, 6 h, 12 h, each times 0.8-1.2: 9 attempts over about 23 hours (the waits add up to
# 22 h 42 min 30 s). webhook-svc's settings may replace the waits and the jitter.
DELIVERY = RetrySchedule(
    (30.0, 120.0, 600.0, 1800.0, 3600.0, 10800.0, 21600.0, 43200.0), jitter=0.2
)
