"""Shared helpers of the deploy checks: rendering kustomize, settings names, repository paths."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic_settings import BaseSettings

from storypost_runtime.settings import env_variable

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKERFILES = DEPLOY / "docker"
KUSTOMIZE = DEPLOY / "k8s"
VERSION: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
# Environment variables an image or manifest may set besides STORYPOST_* settings.
OTHER_ENV = {
    "HOME",
    "PLAYWRIGHT_NODEJS_PATH",
    "PATH",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
}


def kustomize_command() -> list[str]:
    """Real kustomize: the `kustomize` binary, else the one built into kubectl."""
    if found := shutil.which("kustomize"):
        return [found, "build"]
    if found := shutil.which("kubectl"):
        return [found, "kustomize"]
    pytest.fail(
        "neither kustomize nor kubectl is installed: the manifests cannot be rendered "
        "(install kubectl, which has kustomize built in)"
    )


def render(target: str) -> list[dict[str, Any]]:
    """`kustomize build deploy/k8s/<target>` as a list of resources."""
    result = subprocess.run(
        [*kustomize_command(), str(KUSTOMIZE / target)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, f"kustomize build {target} failed:\n{result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def setting_names(*classes: type[BaseSettings]) -> set[str]:
    """The environment variable of every field of the given settings classes."""
    names: set[str] = set()
    for cls in classes:
        names |= {env_variable(cls, field) for field in cls.model_fields}
    return names


def component_settings() -> dict[str, set[str]]:
    """Deployment/compose service name → the STORYPOST_* variables its process reads."""
    from account_svc.config import AccountSettings
    from edge.config import EdgeSettings
    from publish_svc.config import PublishSettings
    from render_svc.config import RenderSettings
    from sandbox_net.config import SandboxProcessSettings, SandboxSettings
    from webhook_svc.config import WebhookSettings

    return {
        "edge": setting_names(EdgeSettings),
        "account-svc": setting_names(AccountSettings),
        "render-svc": setting_names(RenderSettings),
        "publish-svc": setting_names(PublishSettings),
        "webhook-svc": setting_names(WebhookSettings),
        "sandbox-net": setting_names(SandboxSettings, SandboxProcessSettings),
    }


def of_kind(docs: Iterable[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == kind}
