"""The prod overlay starts every component in production, and production refuses a development
address: each component's own settings class reads the environment the cluster would give it
(its ConfigMaps and Secret references, the Secret's values made here), as its process would."""

from __future__ import annotations

import os
import secrets
from typing import Any

import pytest
from cryptography.fernet import Fernet
from pydantic import ValidationError
from pydantic_settings import BaseSettings

from storypost_runtime.service_auth import CALLERS, ServiceCredential, public_keys_setting
from tests.deploy.rendered import SECRET_PLACEHOLDER, deployment_envs, settings_classes
from tests.deploy.support import render

# Secrets of the shape each variable needs (the overlay references storypost-secrets, made
# outside the repository: docs/deploy.md lists its keys).
CREDENTIALS = {name: ServiceCredential.generate(name) for name in CALLERS}
FERNET = {"STORYPOST_ACCOUNT_TOKEN_KEY", "STORYPOST_WEBHOOK_SECRET_KEY"}
# Every variable the rule covers, and the components that read it.
ADDRESSES = {
    "STORYPOST_MONGO_URL": {"account-svc", "render-svc", "publish-svc", "webhook-svc"},
    "STORYPOST_NATS_URL": {"account-svc", "publish-svc", "webhook-svc"},
    "STORYPOST_PUBLIC_URL": {"edge", "account-svc", "render-svc"},
    "STORYPOST_SANDBOX_URL": {"account-svc", "publish-svc"},
}


# Optional keys of the Secret, one of which a cluster with NATS authentication sets.
OPTIONAL = {"STORYPOST_NATS_PASSWORD", "STORYPOST_NATS_TOKEN"}


def secret_for(component: str, variable: str) -> str:
    if variable in FERNET:
        return Fernet.generate_key().decode()
    if variable == "STORYPOST_SERVICE_KEY":
        return CREDENTIALS[component].secret()
    if variable == "STORYPOST_SERVICE_PUBLIC_KEYS":
        return public_keys_setting(CREDENTIALS)
    return secrets.token_urlsafe(32)


@pytest.fixture(scope="module")
def production() -> dict[str, dict[str, str]]:
    """Deployment → the environment its process sees in the prod overlay."""
    envs = deployment_envs(render("overlays/prod"))
    return {
        name: {
            k: secret_for(name, k) if v == SECRET_PLACEHOLDER else v
            for k, v in env.items()
            if k not in OPTIONAL
        }
        for name, env in envs.items()
        if name != "sandbox-net"  # development only: not in production's set
    }


def load(cls: type[BaseSettings], env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("STORYPOST_")]:
            patch.delenv(name)
        for name, value in env.items():
            patch.setenv(name, value)
        return cls()


def test_every_component_of_the_prod_overlay_starts_in_production(
    production: dict[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    classes = settings_classes()
    for component, env in production.items():
        settings = load(classes[component], env, monkeypatch)
        assert settings.environment == "production", component


@pytest.mark.parametrize("variable", sorted(ADDRESSES))
def test_production_refuses_each_development_address_naming_it(
    production: dict[str, dict[str, str]], variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    classes = settings_classes()
    for component in ADDRESSES[variable]:
        cls = classes[component]
        field = variable.removeprefix("STORYPOST_").lower()
        unset = {k: v for k, v in production[component].items() if k != variable}
        with pytest.raises(ValidationError, match=f"{variable} is not set, and STORYPOST_"):
            load(cls, unset, monkeypatch)
        default = str(cls.model_fields[field].default)
        with pytest.raises(ValidationError, match=f"{variable} is the development default"):
            load(cls, unset | {variable: default}, monkeypatch)
        # Development takes the default, as the embedded stack always has.
        development = unset | {"STORYPOST_ENVIRONMENT": "development"}
        assert getattr(load(cls, development, monkeypatch), field) == default


def test_publish_svc_needs_no_sandbox_url_when_every_platform_has_its_own(
    production: dict[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = settings_classes()["publish-svc"]
    env = {k: v for k, v in production["publish-svc"].items() if k != "STORYPOST_SANDBOX_URL"}
    own = {
        f"STORYPOST_{api.upper()}_API_URL": f"https://{api}.example.net"
        for api in ("photoapp", "clipapp", "social")
    }
    settings = load(cls, env | own, monkeypatch)
    assert settings.platform_url("clipapp") == "https://clipapp.example.net"
    # One platform without an address of its own would post to the development default.
    partial = {k: v for k, v in own.items() if "SOCIAL" not in k}
    with pytest.raises(ValidationError, match="STORYPOST_SANDBOX_URL is not set"):
        load(cls, env | partial, monkeypatch)
