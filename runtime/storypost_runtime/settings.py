"""Frozen settings read from STORYPOST_* environment variables; bad values stop start-up."""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Final, Literal, Self

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LogLevel = Literal["debug", "info", "warning", "error"]
# "development": unset secrets fall back to their published development values.
# Anything else (production) refuses those (`refuse_published_secret`).
Environment = Literal["development", "production"]
DEVELOPMENT: Final = "development"
# The embedded stack's S3 identity secret (cli/storypost_cli/stack): published, so it
# protects nothing.
DEV_S3_SECRET_KEY = "storypost-dev-secret"  # noqa: S105 - public development value


class SettingRefused(Exception):
    """A dependency refused what a setting says (NATS an identity, a TLS handshake): the
    process stops at start with the message (exit 2, as for bad settings), since a retry
    cannot help."""


class BaseServiceSettings(BaseSettings):
    """Settings every process shares. Environment names are STORYPOST_<FIELD> upper-cased."""

    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    # Outside "development" no secret may be unset or a published development value.
    environment: Environment = DEVELOPMENT
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
    # Callers this server answers, `name:key,...` (their Ed25519 public keys; not secret).
    # Empty: every call passes (development only). See storypost_runtime.service_auth.
    service_public_keys: str = ""
    # Clients re-resolve and reconnect after a connection has lived this long (plus the grace
    # for calls in flight), so replicas added by an autoscaler get calls. 0 keeps them forever.
    grpc_max_connection_age_seconds: float = Field(default=0.0, ge=0, le=86400)
    grpc_max_connection_age_grace_seconds: float = Field(default=30.0, ge=0, le=3600)

    @model_validator(mode="after")
    def _callers_known(self) -> Self:
        from storypost_runtime.service_auth import parse_public_keys, require_outside_development

        parse_public_keys(self.service_public_keys)
        require_outside_development(
            self.environment,
            "STORYPOST_SERVICE_PUBLIC_KEYS",
            self.service_public_keys,
            "a service outside development answers signed callers only",
        )
        return self


class MongoSettings(BaseSettings):
    """MongoDB connection (the embedded mongoeco server by default)."""

    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    mongo_url: str = "mongodb://127.0.0.1:27017/?directConnection=true"
    mongo_database: str = Field(default="storypost", min_length=1, max_length=63)
    mongo_max_pool_size: int = Field(default=8, ge=1, le=500)
    # Client-side operation timeout: a down database answers UNAVAILABLE, never a hang.
    mongo_timeout_seconds: float = Field(default=5.0, gt=0, le=300)

    @model_validator(mode="after")
    def _production_database(self) -> Self:
        refuse_development_address(
            self, "mongo_url", how="the MongoDB deployment's URL (docs/deploy.md: dependencies)"
        )
        return self


class NatsSettings(BaseSettings):
    """NATS JetStream connection."""

    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    nats_url: str = "nats://127.0.0.1:4222"
    nats_stream: str = Field(default="STORYPOST_EVENTS", pattern=r"^[A-Za-z0-9_-]+$")
    # JetStream deduplicates re-published events (same Nats-Msg-Id) inside this window.
    nats_duplicate_window_seconds: float = Field(default=600.0, ge=1, le=86400)
    # Copies of the stream in a JetStream cluster (1 on a single server; 3 in production, so
    # one NATS node lost loses no event). Raised on an existing stream at the next start.
    nats_stream_replicas: int = Field(default=1, ge=1, le=5)
    # How a component proves who it is to NATS (docs/deploy.md "NATS"): at most one of a user
    # and password, a token, a credentials file (JWT and nkey seed, from a Secret) or an nkey
    # seed file. None: the server admits anyone who reaches it (development).
    nats_user: str = ""
    nats_password: str = Field(default="", repr=False)
    nats_token: str = Field(default="", repr=False)
    nats_creds_file: str = ""
    nats_nkey_seed_file: str = ""
    # TLS: the CA that signed the server's certificate (a `tls://` URL without it trusts the
    # system's CAs), and this component's certificate and key where the server verifies
    # clients.
    nats_tls_ca_file: str = ""
    nats_tls_cert_file: str = ""
    nats_tls_key_file: str = ""

    @model_validator(mode="after")
    def _nats_identity(self) -> Self:
        ways = {
            "STORYPOST_NATS_USER and STORYPOST_NATS_PASSWORD": bool(
                self.nats_user or self.nats_password
            ),
            "STORYPOST_NATS_TOKEN": bool(self.nats_token),
            "STORYPOST_NATS_CREDS_FILE": bool(self.nats_creds_file),
            "STORYPOST_NATS_NKEY_SEED_FILE": bool(self.nats_nkey_seed_file),
        }
        chosen = [way for way, given in ways.items() if given]
        if len(chosen) > 1:
            raise ValueError(f"NATS takes one identity, not {' and '.join(chosen)}")
        if bool(self.nats_user) != bool(self.nats_password):
            raise ValueError("STORYPOST_NATS_USER and STORYPOST_NATS_PASSWORD go together")
        if bool(self.nats_tls_cert_file) != bool(self.nats_tls_key_file):
            raise ValueError(
                "STORYPOST_NATS_TLS_CERT_FILE and STORYPOST_NATS_TLS_KEY_FILE go together"
            )
        for field in (
            "nats_creds_file",
            "nats_nkey_seed_file",
            "nats_tls_ca_file",
            "nats_tls_cert_file",
            "nats_tls_key_file",
        ):
            path = getattr(self, field)
            if path and not Path(path).is_file():
                raise ValueError(f"{env_variable(self, field)}: no file {path}")
        return self

    @model_validator(mode="after")
    def _production_nats(self) -> Self:
        refuse_development_address(
            self, "nats_url", how="the NATS cluster's URL (docs/deploy.md: dependencies)"
        )
        return self


class S3Settings(BaseServiceSettings):
    """The media store: AWS S3 by default, or any S3-compatible store at an endpoint URL.

    No endpoint URL: AWS's regional endpoint with virtual-host addressing. An endpoint URL (the
    embedded stack's SeaweedFS, MinIO): path-style addressing, which such stores need. No keys:
    boto's default credential chain (workload identity such as EKS IRSA, instance roles,
    AWS_* variables); keys: that static identity.
    """

    s3_endpoint_url: str = ""
    s3_region: str = "us-east-1"
    s3_access_key: str = ""
    # The embedded stack's development secret (DEV_S3_SECRET_KEY) is refused outside
    # development; unset means the default credential chain.
    s3_secret_key: str = Field(default="", repr=False)
    s3_bucket: str = Field(default="storypost-media", min_length=3, max_length=63)

    @model_validator(mode="after")
    def _s3_identity(self) -> Self:
        if bool(self.s3_access_key.strip()) != bool(self.s3_secret_key.strip()):
            raise ValueError(
                "STORYPOST_S3_ACCESS_KEY and STORYPOST_S3_SECRET_KEY go together: set both (a "
                "static identity) or neither (the default credential chain, e.g. workload "
                "identity)"
            )
        if self.s3_secret_key.strip():
            refuse_published_secret(
                self,
                "s3_secret_key",
                [self.s3_secret_key],
                published=[DEV_S3_SECRET_KEY],
                noun="secret",
                how="the S3 store's secret access key of STORYPOST_S3_ACCESS_KEY, or neither "
                "key for the default credential chain",
            )
        return self


class PublicUrlSettings(BaseServiceSettings):
    """Where callers and browsers reach the edge (the ingress's URL in production)."""

    # Scheme, host and port callers use to reach the edge: API base URLs, app links, connect
    # callbacks and stable temp blob URLs start with it.
    public_url: str = "http://127.0.0.1:8080"

    @model_validator(mode="after")
    def _production_public_url(self) -> Self:
        refuse_development_address(
            self, "public_url", how="the URL callers reach the edge at (the ingress's https URL)"
        )
        return self


class PlatformApiSettings(BaseServiceSettings):
    """Where the platforms' APIs answer: <sandbox_url>/<platform>, the sandbox network by
    default."""

    sandbox_url: str = "http://127.0.0.1:8090"

    @model_validator(mode="after")
    def _production_platforms(self) -> Self:
        if not self.platforms_addressed_apart():
            refuse_development_address(
                self,
                "sandbox_url",
                how="the platforms' API base (<url>/<platform>): the sandbox network's URL in "
                "a staging cluster, the platforms' gateway in production",
            )
        return self

    def platforms_addressed_apart(self) -> bool:
        """True when every platform has an address of its own, so sandbox_url is unused."""
        return False


class ServiceAddresses(BaseSettings):
    """host:port of each gRPC service, for callers."""

    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    account_addr: str = "127.0.0.1:50051"
    render_addr: str = "127.0.0.1:50052"
    publish_addr: str = "127.0.0.1:50053"
    webhook_addr: str = "127.0.0.1:50054"
    # Deadline of every internal call unless the caller sets a longer one.
    grpc_deadline_seconds: float = Field(default=5.0, gt=0, le=600)
    # This process's own caller credential, `name:key` (storypost_runtime.service_auth);
    # every call it makes is signed with it. Empty: calls carry no token (development only).
    service_key: str = Field(default="", repr=False)

    @model_validator(mode="after")
    def _signed_calls(self) -> Self:
        from storypost_runtime.service_auth import (
            ServiceCredential,
            require_outside_development,
        )

        if self.service_key.strip():
            ServiceCredential.parse(self.service_key)
        # Combined with BaseServiceSettings in each component's settings; the CLI alone has
        # no environment (an operator's tool: signs when given a key).
        environment = getattr(self, "environment", DEVELOPMENT)
        require_outside_development(
            environment,
            "STORYPOST_SERVICE_KEY",
            self.service_key,
            "every call a component makes outside development is signed",
        )
        return self


def refuse_published_secret(
    settings: BaseServiceSettings,
    field: str,
    values: Sequence[str],
    *,
    published: Collection[str],
    noun: str = "key",
    how: str,
) -> None:
    """Production never runs on a published key: the one rule every secret setting follows.

    Outside development, raises ValueError naming the variable when `field` was not set (its
    default is a development value, published in this repository), when it holds no value, or
    when any of `values` (a key list gives each key) is in `published`. In development nothing
    is refused: an unset secret is its development value. `how` says how to get a real one.
    """
    where = _outside_development(settings)
    if where is None:
        return
    variable = env_variable(settings, field)
    if field not in settings.model_fields_set or not any(v.strip() for v in values):
        raise ValueError(
            f"{variable} is not set, and {where} refuses its published development {noun}; "
            f"set a secret one ({how})"
        )
    if any(value.strip() in published for value in values):
        raise ValueError(
            f"{variable} is the published development {noun}, refused with {where}; "
            f"set a secret one ({how})"
        )


def refuse_development_address(settings: BaseSettings, field: str, *, how: str) -> None:
    """Production never sends traffic where the development stack listens: the rule of
    published keys, for addresses (a database, NATS, the platforms, the public URL).

    Outside development, raises ValueError naming the variable when `field` was not set (its
    default is the embedded stack's loopback address) or holds that very default. An address
    that is set is taken as meant, loopback included (a sidecar proxy listens there).
    """
    where = _outside_development(settings)
    if where is None:
        return
    variable = env_variable(settings, field)
    default = type(settings).model_fields[field].default
    if field not in settings.model_fields_set:
        raise ValueError(
            f"{variable} is not set, and {where} refuses its development default ({default}): "
            f"set it to {how}"
        )
    if getattr(settings, field) == default:
        raise ValueError(
            f"{variable} is the development default ({default}), refused with {where}: "
            f"set it to {how}"
        )


def _outside_development(settings: BaseSettings) -> str | None:
    """`STORYPOST_ENVIRONMENT=<name>` when `settings` run outside development, else None.
    Connection mixins (MongoSettings, NatsSettings, ServiceAddresses) have no environment of
    their own: a component's settings combine them with BaseServiceSettings, the CLI alone is
    an operator's tool with none."""
    environment = getattr(settings, "environment", DEVELOPMENT)
    return None if environment == DEVELOPMENT else f"STORYPOST_ENVIRONMENT={environment}"


def env_variable(settings: BaseSettings | type[BaseSettings], field: str) -> str:
    """The environment variable a settings field is read from (STORYPOST_MONGO_URL for
    MongoSettings' `mongo_url`)."""
    return f"{settings.model_config.get('env_prefix', '')}{field.upper()}"


def load_settings[T: BaseSettings](cls: type[T]) -> T:
    """Builds settings from the environment, or exits with a message naming each bad variable."""
    try:
        return cls()
    except ValidationError as error:
        # A check across settings (a model validator) has no location: its message names them.
        lines = [
            f"  {env_variable(cls, '.'.join(str(p) for p in e['loc']))}: {e['msg']}"
            if e["loc"]
            else f"  {e['msg'].removeprefix('Value error, ')}"
            for e in error.errors()
        ]
        print(f"invalid settings for {cls.__name__}:", *lines, sep="\n", file=sys.stderr)
        raise SystemExit(2) from None
