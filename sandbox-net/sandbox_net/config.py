"""Sandbox network settings (STORYPOST_SANDBOX_* environment variables)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from storypost_runtime.settings import BaseServiceSettings


class SandboxSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STORYPOST_SANDBOX_", frozen=True, extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8090, ge=0, le=65535)
    # Worker threads: concurrent requests (a `slow` or `late-answer` switch holds one per
    # request while it waits; the failure matrix holds dozens at once).
    threads: int = Field(default=128, ge=1, le=512)
    # When set, the state (accounts, published posts, switches, containers) is kept in
    # <data_dir>/sandbox-state.json and survives restarts; else it lives in memory only.
    data_dir: Path | None = None
    # Signs the tokens it issues (they stay valid across restarts).
    secret: SecretStr = SecretStr("storypost-sandbox-development-secret")
    # Lifetimes of issued tokens (also settable at run time: PUT /_sandbox/config).
    access_token_seconds: int = Field(default=3600, ge=1)
    refresh_token_seconds: int = Field(default=60 * 24 * 3600, ge=1)
    # How long a photoapp container stays IN_PROGRESS (and a clipapp post in
    # PROCESSING_DOWNLOAD) after its media was fetched.
    image_processing_seconds: float = Field(default=0.2, ge=0)
    video_processing_seconds: float = Field(default=1.0, ge=0)
    # An unpublished photoapp container expires after this long.
    container_ttl_seconds: float = Field(default=24 * 3600, gt=0)
    # photoapp's own publishing limit per account and rolling 24 hours.
    photoapp_publish_limit: int = Field(default=25, ge=0)
    # Download media URLs like a real platform (failures make the container ERROR).
    fetch_media: bool = True
    # Insights: a post's figures grow once per step of its age; a story's insights answer
    # only during its lifetime (then 400 story_expired, as the real photo network).
    insights_step_seconds: float = Field(default=3600.0, gt=0)
    story_lifetime_seconds: float = Field(default=24 * 3600, gt=0)


class SandboxProcessSettings(BaseServiceSettings):
    """The process-wide settings every storypost process reads (log level, metrics port)."""
