"""webhook-svc settings (STORYPOST_* environment variables)."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from storypost_runtime.backoff import DELIVERY
from storypost_runtime.secret_box import setting_keys, split_keys
from storypost_runtime.settings import GrpcServerSettings, MongoSettings, NatsSettings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# The development key of the embedded stack: published in the repository, so it protects
# nothing. Outside STORYPOST_ENVIRONMENT=development it is refused, and so is no key.
DEV_WEBHOOK_SECRET_KEY = "c3Rvcnlwb3N0LXdlYmhvb2stc2VjcmV0cy1rZXktMDA="  # noqa: S105 - public


def _split_list(value: object) -> object:
    """Env values are comma-separated (`30,120,600`); a JSON-ish `[..]` is accepted too."""
    if isinstance(value, str):
        return [part for part in value.strip().strip("[]").replace(" ", "").split(",") if part]
    return value


class WebhookSettings(GrpcServerSettings, MongoSettings, NatsSettings):
    grpc_port: int = Field(default=50054, ge=0, le=65535)

    # --- which URLs may be added and reached (SSRF) ---
    # Development only: accept http:// URLs whose host is a loopback address or `localhost`,
    # and let deliveries reach loopback addresses. Production keeps it false (https only).
    webhook_allow_http_loopback: bool = False
    # CIDR networks exempt from the private-address refusal, comma-separated, e.g.
    # `127.0.0.0/8` for tests with local receivers or an on-premises receiver's subnet.
    # Empty in production: private, loopback, link-local and metadata addresses are refused.
    webhook_allowed_networks: Annotated[tuple[Network, ...], NoDecode] = ()
    # An extra PEM file of trusted CA certificates (added to the public ones), e.g. for a test
    # receiver's self-signed certificate or a private CA.
    webhook_ca_file: str | None = None
    # Fernet keys (url-safe base64 of 32 bytes), comma separated, that encrypt the URLs'
    # signing secrets at rest: the first encrypts, every one decrypts (rotation: put the new
    # key first; secrets encrypted with a dropped key stop signing until the URL is re-added).
    # Required outside development.
    webhook_secret_key: SecretStr = SecretStr(DEV_WEBHOOK_SECRET_KEY)

    # --- attempts and retries ---
    # Waits before retry 1, 2, ... in seconds; when they run out the delivery is failed.
    webhook_retry_schedule_seconds: Annotated[tuple[float, ...], NoDecode] = tuple(DELIVERY.waits)
    # Each wait is multiplied by a random factor in [1 - jitter, 1 + jitter].
    webhook_retry_jitter: float = Field(default=DELIVERY.jitter, ge=0, lt=1)
    # One attempt (connect, TLS, request, answer) must finish within this time.
    webhook_attempt_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    # A claimed retry is owned this long; a replica that dies while holding it loses it then.
    # Must exceed the attempt timeout.
    webhook_lease_seconds: float = Field(default=60.0, gt=0, le=3600)
    # Attempts running at once in this replica, and at most this many per webhook URL, so a
    # slow endpoint never takes every slot.
    webhook_concurrency: int = Field(default=256, ge=1, le=10_000)
    webhook_concurrency_per_url: int = Field(default=16, ge=1, le=1_000)
    # A new delivery whose URL is at its bound waits in memory up to this long (at most
    # `webhook_queue_per_url` of them per URL); after that it waits in MongoDB instead.
    webhook_queue_wait_seconds: float = Field(default=2.0, ge=0, le=60)
    webhook_queue_per_url: int = Field(default=64, ge=0, le=10_000)
    # Past that, a replica holds up to this many of them in memory for their URL's next free
    # slot, in order (each record leased to it; given to the scheduler if no turn comes
    # within half of what the lease leaves after an attempt's timeout); the rest wait for the
    # scheduler's claim. 0: the scheduler takes every one.
    webhook_hold_per_replica: int = Field(default=5_000, ge=0, le=100_000)
    # How often due retries are looked for when nothing woke the scheduler.
    webhook_poll_seconds: float = Field(default=0.5, gt=0, le=60)
    # The consumer keeps each organization's URLs this long; a URL added or removed through
    # another replica takes effect within it (at once through this one).
    webhook_directory_ttl_seconds: float = Field(default=2.0, ge=0, le=300)
    # Deliveries are kept (with their log entry) this long after they were created.
    webhook_retention_days: float = Field(default=30.0, gt=0, le=3650)

    # --- the event consumer ---
    # Durable JetStream consumer shared by every replica (competing consumers).
    webhook_consumer_name: str = Field(default="webhook-svc", pattern=r"^[A-Za-z0-9_-]+$")
    # An unacknowledged event is handed out again after this long.
    webhook_ack_wait_seconds: float = Field(default=60.0, ge=5, le=3600)
    # Events taken from the bus at once, and events being handled in this replica at most.
    webhook_fetch_batch: int = Field(default=100, ge=1, le=1_000)
    webhook_max_inflight_events: int = Field(default=1_000, ge=1, le=100_000)

    @field_validator("webhook_allowed_networks", mode="before")
    @classmethod
    def _networks(cls, value: object) -> object:
        value = _split_list(value)
        if isinstance(value, list | tuple):
            return tuple(ipaddress.ip_network(str(item), strict=False) for item in value)
        return value

    @field_validator("webhook_retry_schedule_seconds", mode="before")
    @classmethod
    def _schedule(cls, value: object) -> object:
        return _split_list(value)

    @field_validator("webhook_retry_schedule_seconds")
    @classmethod
    def _schedule_bounds(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if len(value) > 50 or any(not 0 < wait <= 7 * 86400 for wait in value):
            raise ValueError("at most 50 waits, each above 0 and at most 7 days")
        return value

    @model_validator(mode="after")
    def _check_secret_key(self) -> Self:
        setting_keys(self, "webhook_secret_key", DEV_WEBHOOK_SECRET_KEY)
        return self

    def secret_keys(self) -> list[str]:
        return split_keys(self.webhook_secret_key.get_secret_value())

    @model_validator(mode="after")
    def _lease_outlasts_attempt(self) -> Self:
        if self.webhook_lease_seconds <= self.webhook_attempt_timeout_seconds:
            raise ValueError("webhook_lease_seconds must exceed webhook_attempt_timeout_seconds")
        if self.webhook_ack_wait_seconds <= self.webhook_attempt_timeout_seconds:
            raise ValueError("webhook_ack_wait_seconds must exceed webhook_attempt_timeout_seconds")
        return self
