"""The retry schedule: waits grow roughly exponentially, each one jittered."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from storypost_runtime.component import component


@component
class RetrySchedule:
    """Wait `waits[n]` (times a random factor in [1 - jitter, 1 + jitter]) before retry n+1.

    `None` once the waits run out: the delivery is failed. Jitter spreads the retries of many
    deliveries that failed together (an endpoint that was down) so they do not return at once.
    """

    waits: Sequence[float]
    jitter: float
    rand: Callable[[], float] = random.random

    def __post_init__(self) -> None:
        self.waits = tuple(self.waits)

    @property
    def attempts(self) -> int:
        """Attempts a delivery gets in one round: the first and one per wait."""
        return 1 + len(self.waits)

    def next_attempt(self, failures: int, now: datetime) -> datetime | None:
        """When to try again after `failures` failed attempts in this round, or None."""
        if failures < 1 or failures > len(self.waits):
            return None
        factor = 1 + self.jitter * (2 * self.rand() - 1)
        return now + timedelta(seconds=self.waits[failures - 1] * factor)
