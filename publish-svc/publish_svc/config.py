"""publish-svc settings (STORYPOST_* environment variables)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field

from publish_svc.insights.config import InsightsSettings
from storypost_runtime.settings import (
    GrpcServerSettings,
    MongoSettings,
    NatsSettings,
    PlatformApiSettings,
    ServiceAddresses,
)


class PublishSettings(
    GrpcServerSettings,
    PlatformApiSettings,
    MongoSettings,
    NatsSettings,
    ServiceAddresses,
    InsightsSettings,
):
    grpc_port: int = Field(default=50053, ge=0, le=65535)
    # Where the platforms' APIs answer: each its own URL, else sandbox_url (PlatformApiSettings,
    # the sandbox network by default). A real platform is a driver of the same interface
    # pointed at another base URL.
    photoapp_api_url: str | None = None
    clipapp_api_url: str | None = None
    social_api_url: str | None = None
    # Posts published concurrently by one replica.
    scheduler_workers: int = Field(default=8, ge=1, le=256)
    # A claimed post is this replica's for this long; renewed while a driver call runs.
    scheduler_lease_seconds: float = Field(default=60.0, ge=5, le=3600)
    # The scheduler sleeps until the next due post, but checks at least this often (a
    # safety net for posts other replicas scheduled).
    scheduler_max_idle_seconds: float = Field(default=2.0, gt=0, le=60)
    # Series (recurring posts): how long a worker holds a series' next occurrence while it
    # creates it (a killed worker's is taken over after this), and its longest sleep.
    series_lease_seconds: float = Field(default=120.0, ge=1, le=3600)
    series_max_idle_seconds: float = Field(default=10.0, gt=0, le=300)
    # A post not published within this long after its date is failed, never posted late.
    posting_window_seconds: float = Field(default=3600.0, gt=0)
    # How often a due post waiting for credits or for its rendering is looked at again.
    hold_recheck_seconds: float = Field(default=5.0, gt=0, le=600)
    # Deadline of each HTTP call to a platform.
    platform_timeout_seconds: float = Field(default=20.0, gt=0, le=300)
    # How often accounts with posts due within a day are checked (account_checks.py).
    account_check_poll_seconds: float = Field(default=600.0, gt=0, le=86400)
    # Story posts per photoapp account in any rolling 24 hours.
    story_quota_per_day: int = Field(default=100, ge=1, le=100_000)

    @property
    def posting_window(self) -> timedelta:
        return timedelta(seconds=self.posting_window_seconds)

    def platform_url(self, api: str) -> str:
        return (self._platform_urls()[api] or self.sandbox_url).rstrip("/")

    def platforms_addressed_apart(self) -> bool:
        return all(self._platform_urls().values())

    def _platform_urls(self) -> dict[str, str | None]:
        return {
            "photoapp": self.photoapp_api_url,
            "clipapp": self.clipapp_api_url,
            "social": self.social_api_url,
        }
