"""When each insight point of a post is due, and when a refused point is tried again."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from publish_svc.insights.config import InsightsSettings
from publish_svc.model import Kind


@dataclass(frozen=True)
class Plan:
    """The points of one kind of post: `offsets` after publication; a story's are readable
    only during `lifetime`."""

    offsets: tuple[float, ...]
    backoff: timedelta
    max_backoff: timedelta
    lifetime: timedelta | None = None
    # Spreads the retries of points refused together (1.0 to 1.2 times the wait).
    jitter: Callable[[], float] = field(default=random.random, compare=False)

    @classmethod
    def of(cls, settings: InsightsSettings, kind: Kind) -> Plan:
        story = kind is Kind.STORY
        return cls(
            offsets=(
                settings.insights_story_points_seconds
                if story
                else settings.insights_points_seconds
            ),
            backoff=timedelta(seconds=settings.insights_backoff_seconds),
            max_backoff=timedelta(seconds=settings.insights_max_backoff_seconds),
            lifetime=(
                timedelta(seconds=settings.insights_story_lifetime_seconds) if story else None
            ),
        )

    def due(self, published_at: datetime, index: int) -> datetime | None:
        """When point `index` is due; None past the last one."""
        if index >= len(self.offsets):
            return None
        return published_at + timedelta(seconds=self.offsets[index])

    def readable(self, published_at: datetime, at: datetime) -> bool:
        """Whether the platform still answers insights at `at` (a story's end)."""
        return self.lifetime is None or at < published_at + self.lifetime

    def retry_at(
        self,
        now: datetime,
        failures: int,
        published_at: datetime,
        retry_after_seconds: float | None = None,
    ) -> datetime | None:
        """When a point refused `failures` times (this one included) is read again: the
        backoff doubling from `backoff` up to `max_backoff`, at least the platform's
        Retry-After; None when that is past a story's end (the point is given up)."""
        wait = min(self.max_backoff, self.backoff * 2 ** min(max(failures - 1, 0), 30))
        wait = wait * (1.0 + 0.2 * self.jitter())
        if retry_after_seconds:
            wait = max(wait, timedelta(seconds=retry_after_seconds))
        at = now + wait
        return at if self.readable(published_at, at) else None
