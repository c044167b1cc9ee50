"""account-svc settings (STORYPOST_* environment variables)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, SecretStr, model_validator

from storypost_runtime.secret_box import setting_keys, split_keys
from storypost_runtime.settings import (
    GrpcServerSettings,
    MongoSettings,
    NatsSettings,
    PlatformApiSettings,
    PublicUrlSettings,
    refuse_published_secret,
)

# The development key of the embedded stack: published in the repository, so it protects
# nothing. Outside STORYPOST_ENVIRONMENT=development it is refused, and so is no key.
DEV_TOKEN_KEY = "c3Rvcnlwb3N0LWRldmVsb3BtZW50LWtleS0wMDAwMDA="  # noqa: S105 - public dev key
# The client secret the sandbox network is given by default: refused likewise.
DEV_PLATFORM_CLIENT_SECRET = "storypost-sandbox-client-secret"  # noqa: S105 - public


class AccountSettings(
    GrpcServerSettings, PublicUrlSettings, PlatformApiSettings, MongoSettings, NatsSettings
):
    grpc_port: int = Field(default=50051, ge=0, le=65535)
    # The request rate limit of every organization: a token bucket of this size refilled
    # evenly over a minute (60 per minute by the spec).
    rate_limit_per_minute: int = Field(default=60, ge=1, le=100_000)
    # Where the buckets live (ratelimit.py, rate_buckets_kv.py): "nats", a JetStream
    # key-value bucket (MongoDB's buckets while NATS cannot be reached), or "mongo" only.
    rate_limit_store: Literal["nats", "mongo"] = "nats"
    rate_limit_nats_bucket: str = Field(
        default="storypost_rate_limits", pattern=r"^[A-Za-z0-9_-]+$"
    )
    # How long one bucket write may wait for NATS before MongoDB's bucket is used instead.
    rate_limit_nats_timeout_seconds: float = Field(default=0.5, gt=0, le=10)
    # Fernet keys (url-safe base64 of 32 bytes) that encrypt platform tokens at rest, comma
    # separated: the first encrypts, every one decrypts (rotation: put the new key first,
    # re-connect or refresh, then drop the old one). Required outside development.
    account_token_key: SecretStr = SecretStr(DEV_TOKEN_KEY)
    # sandbox_url (PlatformApiSettings): the platforms' API base, <sandbox_url>/<platform>.
    # The sandbox as browsers reach it (authorize pages); sandbox_url when empty.
    sandbox_public_url: str = ""
    # public_url (PublicUrlSettings): the connect callback is <public_url>/connect/callback.
    # OAuth client credentials storypost presents to the platforms (the secret is required
    # outside development).
    # Account health (connections/token_keeper.py): tokens that expire within this are
    # refreshed ahead, checked every `token_keeper_poll_seconds`; an account with a post due
    # within a day is checked (refreshed) at most once per `account_check_interval_seconds`.
    token_refresh_horizon_seconds: float = Field(default=600.0, gt=0, le=7 * 86400)
    token_keeper_poll_seconds: float = Field(default=30.0, gt=0, le=3600)
    account_check_interval_seconds: float = Field(default=3600.0, ge=0, le=7 * 86400)
    platform_client_id: str = "storypost"
    platform_client_secret: SecretStr = SecretStr(DEV_PLATFORM_CLIENT_SECRET)
    # Deadline of one call to a platform.
    platform_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    # Credits a new organization starts with (due social posts wait while not positive).
    default_credits: int = Field(default=1000, ge=0)
    # How long one mention resolution may hold a photoapp account.
    mention_lease_seconds: float = Field(default=15.0, gt=0, le=300)
    # How long an account rests after photoapp answered 429 without Retry-After.
    mention_rate_limit_cooldown_seconds: float = Field(default=60.0, gt=0, le=3600)
    # App sessions (sessions.py): a session ends after this long without use, and at the
    # latest this long after sign-in.
    app_session_idle_minutes: float = Field(default=120.0, gt=0, le=60 * 24 * 30)
    app_session_max_hours: float = Field(default=12.0, gt=0, le=24 * 90)
    # Sign-in attempts (signin_limits.py): this many per email address, per client address in
    # a workspace, and per client address across all workspaces (higher: one address spraying
    # every workspace) in any window of `signin_window_minutes`; successes do not count.
    signin_attempts_per_email: int = Field(default=10, ge=1, le=100_000)
    signin_attempts_per_address: int = Field(default=100, ge=1, le=1_000_000)
    signin_attempts_per_address_everywhere: int = Field(default=1000, ge=1, le=10_000_000)
    signin_window_minutes: float = Field(default=15.0, gt=0, le=60 * 24)

    @model_validator(mode="after")
    def _check_secrets(self) -> Self:
        # Both are checked, so one start-up names every secret that is missing.
        problems: list[str] = []
        for check in (self._check_token_key, self._check_client_secret):
            try:
                check()
            except ValueError as error:
                problems.append(str(error))
        if problems:
            raise ValueError("\n  ".join(problems))
        return self

    def _check_token_key(self) -> None:
        setting_keys(self, "account_token_key", DEV_TOKEN_KEY)

    def _check_client_secret(self) -> None:
        refuse_published_secret(
            self,
            "platform_client_secret",
            [self.platform_client_secret.get_secret_value()],
            published=[DEV_PLATFORM_CLIENT_SECRET],
            noun="secret",
            how="the OAuth client secret each platform issued to storypost; against the sandbox "
            "network any value: python -c 'import secrets; print(secrets.token_urlsafe(32))'",
        )

    def token_keys(self) -> list[str]:
        return split_keys(self.account_token_key.get_secret_value())

    def browser_sandbox_url(self) -> str:
        return (self.sandbox_public_url or self.sandbox_url).rstrip("/")

    def connect_callback_url(self) -> str:
        return f"{self.public_url.rstrip('/')}/connect/callback"
