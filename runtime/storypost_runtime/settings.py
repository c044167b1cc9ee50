"""Frozen settings read from STORYPOST_* environment variables; bad values stop start-up."""

from __future__ import annotations

import sys
from typing import Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

LogLevel = Literal["debug", "info", "warning", "error"]


class BaseServiceSettings(BaseSettings):
    """Settings every process shares. Environment names are STORYPOST_<FIELD> upper-cased."""

    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    log_level: LogLevel = "info"
    # Prometheus endpoint port on 127.0.0.1/metrics_host; 0 picks a free port, -1 turns it off.
    metrics_port: int = Field(default=-1, ge=-1, le=65535)
    metrics_host: str = "127.0.0.1"


class GrpcServerSettings(BaseServiceSettings):
    """Where a service's gRPC server listens and how it stops."""

    grpc_host: str = "127.0.0.1"
    grpc_port: int = Field(default=0, ge=0, le=65535)
    # After SIGTERM: health says NOT_SERVING, then in-flight calls get this long to finish.
    shutdown_grace_seconds: float = Field(default=10.0, ge=0, le=600)
    # Pause between NOT_SERVING and stopping, so load balancers notice (0 in development).
    shutdown_drain_seconds: float = Field(default=0.0, ge=0, le=120)


class MongoSettings(BaseSettings):
    """MongoDB connection (the embedded mongoeco server by default)."""

    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    mongo_url: str = "mongodb://127.0.0.1:27017/?directConnection=true"
    mongo_database: str = Field(default="storypost", min_length=1, max_length=63)
    mongo_max_pool_size: int = Field(default=8, ge=1, le=500)
    # Client-side operation timeout: a down database answers UNAVAILABLE, never a hang.
    mongo_timeout_seconds: float = Field(default=5.0, gt=0, le=300)


class NatsSettings(BaseSettings):
    """NATS JetStream connection."""

    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    nats_url: str = "nats://127.0.0.1:4222"
    nats_stream: str = Field(default="STORYPOST_EVENTS", pattern=r"^[A-Za-z0-9_-]+$")
    # JetStream deduplicates re-published events (same Nats-Msg-Id) inside this window.
    nats_duplicate_window_seconds: float = Field(default=600.0, ge=1, le=86400)


class S3Settings(BaseSettings):
    """S3-compatible media store (SeaweedFS by default)."""

    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    s3_endpoint_url: str = "http://127.0.0.1:8333"
    s3_region: str = "us-east-1"
    s3_access_key: str = "storypost"
    s3_secret_key: str = Field(default="storypost-dev-secret", repr=False)
    s3_bucket: str = Field(default="storypost-media", min_length=3, max_length=63)


class ServiceAddresses(BaseSettings):
    """host:port of each gRPC service, for callers."""

    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    account_addr: str = "127.0.0.1:50051"
    render_addr: str = "127.0.0.1:50052"
    publish_addr: str = "127.0.0.1:50053"
    webhook_addr: str = "127.0.0.1:50054"
    # Deadline of every internal call unless the caller sets a longer one.
    grpc_deadline_seconds: float = Field(default=5.0, gt=0, le=600)


def load_settings[T: BaseSettings](cls: type[T]) -> T:
    """Builds settings from the environment, or exits with a message naming each bad variable."""
    try:
        return cls()
    except ValidationError as error:
        prefix = str(cls.model_config.get("env_prefix", ""))
        lines = [
            f"  {prefix}{'.'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
            for e in error.errors()
        ]
        print(f"invalid settings for {cls.__name__}:", *lines, sep="\n", file=sys.stderr)
        raise SystemExit(2) from None
