"""Insight collection settings (STORYPOST_INSIGHTS_* environment variables)."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Annotated

from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from storypost_runtime.backoff import INSIGHTS_RETRY

HOUR = 3600
DAY = 24 * HOUR


def _offsets(value: object) -> tuple[float, ...]:
    """`0,3600,21600` (seconds after publication) → a strictly increasing tuple."""
    if isinstance(value, str):
        value = [part for part in value.replace(" ", "").split(",") if part]
    if not isinstance(value, (list, tuple)):
        raise ValueError("a comma-separated list of seconds")
    offsets = tuple(float(part) for part in value)
    if not offsets or offsets[0] < 0 or any(b <= a for a, b in itertools.pairwise(offsets)):
        raise ValueError("seconds after publication, at least one, increasing, none negative")
    return offsets


# Seconds after publication, from `0,3600,21600` (the environment) or a sequence.
Offsets = Annotated[tuple[float, ...], NoDecode, BeforeValidator(_offsets)]


class InsightsSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    # Collect insights of published posts at all.
    insights_enabled: bool = True
    # When each point is read, in seconds after the post was published: at once, +1 h, +6 h,
    # +24 h, +7 d, +30 d; stories (whose insights last 24 hours): at once, +1 h, +6 h, +23 h.
    insights_points_seconds: Offsets = (0, HOUR, 6 * HOUR, DAY, 7 * DAY, 30 * DAY)
    insights_story_points_seconds: Offsets = (0, HOUR, 6 * HOUR, 23 * HOUR)
    # A story's insights are readable this long after it was published (photoapp: 24 h); a
    # point moved past it by backoff is given up.
    insights_story_lifetime_seconds: float = Field(default=DAY, gt=0)
    # A point the platform refused (429, 5xx, timeout) is read again after this, doubling
    # per failure up to the maximum (at least the platform's Retry-After): backoff.INSIGHTS_RETRY.
    insights_backoff_seconds: float = Field(default=INSIGHTS_RETRY.first, gt=0)
    insights_max_backoff_seconds: float = Field(default=INSIGHTS_RETRY.most, gt=0)
    # Points read at once by one replica, and how long a claimed point is its own.
    insights_workers: int = Field(default=8, ge=1, le=256)
    insights_lease_seconds: float = Field(default=60.0, ge=1, le=3600)
    # The collector looks for due points at least this often.
    insights_max_idle_seconds: float = Field(default=2.0, gt=0, le=600)
    # get-post-insights with refresh reads the platform at most this often per post (else
    # the stored figures answer).
    insights_refresh_min_seconds: float = Field(default=60.0, ge=0)
    # Raw points expire after this (TTL index); the daily roll-ups per account stay.
    insights_retention_days: int = Field(default=90, ge=1, le=3650)

    @property
    def insights_retention(self) -> timedelta:
        return timedelta(days=self.insights_retention_days)
