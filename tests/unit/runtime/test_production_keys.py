"""Production never runs on a published key: one rule, every secret, every service's start-up."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr, ValidationError, model_validator

from account_svc.config import DEV_PLATFORM_CLIENT_SECRET, DEV_TOKEN_KEY, AccountSettings
from edge.config import EdgeSettings
from publish_svc.config import PublishSettings
from render_svc.config import RenderSettings
from sandbox_net.config import SandboxProcessSettings
from storypost_runtime.secret_box import setting_keys
from storypost_runtime.service_auth import (
    CALLERS,
    EDGE,
    PUBLISH_SVC,
    RENDER_SVC,
    ServiceCredential,
    public_keys_setting,
)
from storypost_runtime.settings import (
    BaseServiceSettings,
    load_settings,
    refuse_published_secret,
)
from tests.support.production import ADDRESS_ENV
from webhook_svc.config import DEV_WEBHOOK_SECRET_KEY, WebhookSettings

SERVICE_SETTINGS: list[type[BaseServiceSettings]] = [
    EdgeSettings,
    AccountSettings,
    RenderSettings,
    PublishSettings,
    WebhookSettings,
]
# Every secret a service keeps: its settings class, variable and published development value.
SECRETS: list[tuple[type[BaseServiceSettings], str, str]] = [
    (AccountSettings, "STORYPOST_ACCOUNT_TOKEN_KEY", DEV_TOKEN_KEY),
    (AccountSettings, "STORYPOST_PLATFORM_CLIENT_SECRET", DEV_PLATFORM_CLIENT_SECRET),
    (WebhookSettings, "STORYPOST_WEBHOOK_SECRET_KEY", DEV_WEBHOOK_SECRET_KEY),
]
# Secret-shaped fields (SecretStr or hidden from repr) that the rule does not cover, and why.
NOT_PUBLISHED = {
    # storypost_runtime.service_auth: a caller's own signing credential, empty by default
    # (calls unsigned); no value of it is published. Production requires it (tested below).
    "service_key",
    # Empty by default: the default credential chain. Its published development value is
    # refused outside development (tests/unit/runtime/test_s3_addressing.py).
    "s3_secret_key",
    # NATS identities (tests/integration/test_nats_identity.py): empty by default (a server
    # that admits anyone), no value of them is published; the server refuses a wrong one.
    "nats_password",
    "nats_token",
}
# What production needs beyond the secrets: each gRPC server its callers' public keys, each
# component that calls others its own credential (docs/service-auth.md).
CALLER_KEYS = {name: ServiceCredential.generate(name) for name in CALLERS}
SIGNING: dict[type[BaseServiceSettings], dict[str, str]] = {
    AccountSettings: {"STORYPOST_SERVICE_PUBLIC_KEYS": public_keys_setting(CALLER_KEYS)},
    WebhookSettings: {"STORYPOST_SERVICE_PUBLIC_KEYS": public_keys_setting(CALLER_KEYS)},
    RenderSettings: {
        "STORYPOST_SERVICE_PUBLIC_KEYS": public_keys_setting(CALLER_KEYS),
        "STORYPOST_SERVICE_KEY": CALLER_KEYS[RENDER_SVC].secret(),
    },
    PublishSettings: {
        "STORYPOST_SERVICE_PUBLIC_KEYS": public_keys_setting(CALLER_KEYS),
        "STORYPOST_SERVICE_KEY": CALLER_KEYS[PUBLISH_SVC].secret(),
    },
    EdgeSettings: {"STORYPOST_SERVICE_KEY": CALLER_KEYS[EDGE].secret()},
}
# Settings that hold lists of Fernet keys (the others take any string).
FERNET_KEYS = {"STORYPOST_ACCOUNT_TOKEN_KEY", "STORYPOST_WEBHOOK_SECRET_KEY"}
MODULES = {
    AccountSettings: "account_svc",
    WebhookSettings: "webhook_svc",
    RenderSettings: "render_svc",
    PublishSettings: "publish_svc",
}


def fernet_key() -> str:
    return Fernet.generate_key().decode()


def own_value(variable: str) -> str:
    """A secret of our own for `variable`, of the shape it needs."""
    return fernet_key() if variable in FERNET_KEYS else secrets.token_urlsafe(32)


def own_secrets(settings: type[BaseServiceSettings]) -> dict[str, str]:
    """Its secrets and signing keys, and the addresses production needs besides."""
    own = {variable: own_value(variable) for cls, variable, _ in SECRETS if cls is settings}
    return ADDRESS_ENV | own | SIGNING.get(settings, {})


@pytest.fixture
def production(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("STORYPOST_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("STORYPOST_ENVIRONMENT", "production")


# --- the rule ------------------------------------------------------------------------------

DEMO_DEV_KEY = fernet_key()


class Demo(BaseServiceSettings):
    demo_key: SecretStr = SecretStr(DEMO_DEV_KEY)

    @model_validator(mode="after")
    def _check(self) -> Self:
        setting_keys(self, "demo_key", DEMO_DEV_KEY)
        return self


def test_the_rule_refuses_unset_and_published_keys_outside_development_only() -> None:
    own, other = fernet_key(), fernet_key()
    # Development: unset is the development key, and any key is accepted.
    assert setting_keys(Demo(), "demo_key", DEMO_DEV_KEY) == [DEMO_DEV_KEY]
    Demo(demo_key=SecretStr(DEMO_DEV_KEY))
    # Outside development: no key, a blank one, the published one, or a list holding it.
    with pytest.raises(ValidationError, match="STORYPOST_DEMO_KEY is not set, and "):
        Demo(environment="production")
    with pytest.raises(ValidationError, match="STORYPOST_DEMO_KEY is not set, and "):
        Demo(environment="production", demo_key=SecretStr(" , "))
    for published in (DEMO_DEV_KEY, f"{own},{DEMO_DEV_KEY}", f" {DEMO_DEV_KEY} "):
        with pytest.raises(ValidationError) as refused:
            Demo(environment="production", demo_key=SecretStr(published))
        message = str(refused.value)
        assert "STORYPOST_DEMO_KEY is the published development key" in message
        assert "Fernet.generate_key()" in message  # how to make one
        assert own not in message and DEMO_DEV_KEY not in message  # no key is ever shown
    # Keys of one's own pass (rotation: new first, old after), and still must be Fernet keys.
    settings = Demo(environment="production", demo_key=SecretStr(f"{own}, {other}"))
    assert setting_keys(settings, "demo_key", DEMO_DEV_KEY) == [own, other]
    with pytest.raises(ValidationError, match="STORYPOST_DEMO_KEY: each key must be url-safe"):
        Demo(environment="production", demo_key=SecretStr("not-a-key"))


def test_the_rule_for_plain_secrets() -> None:
    settings = Demo(environment="production", demo_key=SecretStr(fernet_key()))

    def check(*values: str) -> None:
        refuse_published_secret(
            settings, "demo_key", list(values), published=["pub"], noun="secret", how="ask"
        )

    check("mine")
    with pytest.raises(ValueError, match="is the published development secret, refused with "):
        check("pub")
    with pytest.raises(ValueError, match=r"^STORYPOST_DEMO_KEY is not set.*secret one \(ask\)$"):
        check("")


def test_every_service_reads_the_one_environment_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STORYPOST_ENVIRONMENT", raising=False)
    classes: list[type[BaseServiceSettings]] = [*SERVICE_SETTINGS, SandboxProcessSettings]
    for cls in classes:
        assert issubclass(cls, BaseServiceSettings)
        assert cls().environment == "development"
    monkeypatch.setenv("STORYPOST_ENVIRONMENT", "staging")
    with pytest.raises(ValidationError, match="environment"):
        EdgeSettings()


def test_every_secret_setting_follows_the_rule() -> None:
    """A secret-shaped setting added later must join SECRETS (or say why not)."""
    covered = {variable for _, variable, _ in SECRETS}
    for cls in SERVICE_SETTINGS:
        for name, info in cls.model_fields.items():
            hidden = info.annotation is SecretStr or info.repr is False
            if hidden and name not in NOT_PUBLISHED:
                assert f"STORYPOST_{name.upper()}" in covered, f"{cls.__name__}.{name}"


@pytest.mark.usefixtures("production")
@pytest.mark.parametrize(("cls", "variable", "published"), SECRETS)
def test_production_settings_refuse_a_missing_or_published_secret(
    cls: type[BaseServiceSettings],
    variable: str,
    published: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in own_secrets(cls).items():
        monkeypatch.setenv(name, value)
    load_settings(cls)  # every secret of its own: accepted
    monkeypatch.delenv(variable)
    with pytest.raises(SystemExit) as stopped:
        load_settings(cls)
    assert stopped.value.code == 2
    assert f"\n  {variable} is not set, and STORYPOST_ENVIRONMENT=production" in (
        capsys.readouterr().err
    )
    monkeypatch.setenv(variable, published)
    with pytest.raises(SystemExit):
        load_settings(cls)
    err = capsys.readouterr().err
    assert f"\n  {variable} is the published development " in err
    assert published not in err


def test_development_falls_back_to_the_development_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in list(os.environ):
        if name.startswith("STORYPOST_"):
            monkeypatch.delenv(name)
    assert AccountSettings().token_keys() == [DEV_TOKEN_KEY]
    assert AccountSettings().platform_client_secret.get_secret_value() == (
        DEV_PLATFORM_CLIENT_SECRET
    )
    assert WebhookSettings().secret_keys() == [DEV_WEBHOOK_SECRET_KEY]


# --- the real entry points -------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A listener the service's MongoDB and NATS URLs point at: a connection to it means the
    process got past its settings (each service opens one of them first)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0.2)
        yield listener


def start(
    module: str, env: dict[str, str], listener: socket.socket | None = None, stderr: Any = None
) -> Any:
    port = listener.getsockname()[1] if listener else 9  # discard: nothing answers
    clean = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "STORYPOST_ENVIRONMENT": "production",
        "STORYPOST_MONGO_TIMEOUT_SECONDS": "60",
        "STORYPOST_GRPC_PORT": "0",
        **env,
        # Set (so production takes them), and where this test listens.
        "STORYPOST_MONGO_URL": f"mongodb://127.0.0.1:{port}/?directConnection=true",
        "STORYPOST_NATS_URL": f"nats://127.0.0.1:{port}",
    }
    return subprocess.Popen(
        [sys.executable, "-m", module],
        env=clean,
        stdout=subprocess.DEVNULL,
        stderr=stderr or subprocess.PIPE,
        text=True,
    )


def refusal(module: str, env: dict[str, str]) -> str:
    process = start(module, env)
    try:
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 2, err
    assert "invalid settings for " in err
    return str(err)


@pytest.mark.parametrize(("cls", "variable", "published"), SECRETS)
def test_a_service_refuses_to_start_in_production_without_its_secret_or_with_the_published_one(
    cls: type[BaseServiceSettings], variable: str, published: str
) -> None:
    module = MODULES[cls]
    others = {k: v for k, v in own_secrets(cls).items() if k != variable}
    err = refusal(module, others)
    assert f"{variable} is not set, and STORYPOST_ENVIRONMENT=production refuses" in err
    err = refusal(module, others | {variable: published})
    assert f"{variable} is the published development " in err
    assert "set a secret one" in err and published not in err


@pytest.mark.parametrize(
    ("cls", "variable"),
    [(cls, variable) for cls, needed in SIGNING.items() for variable in needed],
)
def test_a_service_refuses_to_start_in_production_without_its_signing_keys(
    cls: type[BaseServiceSettings], variable: str
) -> None:
    others = {k: v for k, v in own_secrets(cls).items() if k != variable}
    module = {**MODULES, EdgeSettings: "edge"}[cls]
    err = refusal(module, others)
    assert f"{variable} is not set, and STORYPOST_ENVIRONMENT=production needs it" in err
    # A credential that is not one is refused in any environment, naming the variable.
    err = refusal(module, others | {variable: "edge:not-a-key"})
    assert variable in err


@pytest.mark.parametrize("cls", list(MODULES))
def test_a_service_with_secrets_of_its_own_starts_in_production(
    cls: type[BaseServiceSettings], listener: socket.socket, tmp_path: Path
) -> None:
    """publish-svc keeps no secret: it starts in production with none."""
    log = tmp_path / "stderr"
    with log.open("w") as stderr:
        process = start(MODULES[cls], own_secrets(cls), listener, stderr)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connection.close()
            break
        else:
            pytest.fail(
                f"{MODULES[cls]} never reached MongoDB or NATS "
                f"(exit {process.poll()}): {log.read_text()}"
            )
    finally:
        # Still waiting for the database, it would not stop on SIGTERM before its timeout.
        process.kill()
        process.wait()
    assert "invalid settings" not in log.read_text()
