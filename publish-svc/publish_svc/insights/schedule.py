"""When each insight point of a post is due, and when a refused point is tried again."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from publish_svc.insights.config import InsightsSettings
from publish_svc.model import Kind
from storypost_runtime.backoff import INSIGHTS_RETRY, Exponential, Rand


@dataclass(frozen=True)
class Plan:
    """The points of one kind of post: `offsets` after publication; a story's are readable
    only during `lifetime`."""

    offsets: tuple[float, ...]
    # The waits before a refused point is read again (INSIGHTS_RETRY with the settings').
    retry: Exponential
    lifetime: timedelta | None = None

    @classmethod
    def of(cls, settings: InsightsSettings, kind: Kind, rand: Rand | None = None) -> Plan:
        """The settings' plan of `kind`; `rand` draws the retries' jitter (tests fix it)."""
        story = kind is Kind.STORY
        retry = replace(
            INSIGHTS_RETRY,
            first=settings.insights_backoff_seconds,
            most=settings.insights_max_backoff_seconds,
        )
        return cls(
            offsets=(
                settings.insights_story_points_seconds
                if story
                else settings.insights_points_seconds
            ),
            retry=retry if rand is None else replace(retry, rand=rand),
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
        `retry` policy's wait, at least the platform's Retry-After; None when that is past a
        story's end (the point is given up)."""
        wait = self.retry.delay(failures)
        if retry_after_seconds:
            wait = max(wait, retry_after_seconds)
        at = now + timedelta(seconds=wait)
        return at if self.readable(published_at, at) else None
