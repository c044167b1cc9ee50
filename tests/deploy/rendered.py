"""Reading a rendered overlay as the cluster would: effective environments, Secret values,
settings classes per component, and Kubernetes quantities."""

from __future__ import annotations

import base64
import re
from typing import Any

from pydantic_settings import BaseSettings

from storypost_runtime.settings import env_variable
from tests.deploy.support import of_kind

SECRET_PLACEHOLDER = "<secret>"
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$")
_FACTORS = {
    None: 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
}


def quantity_bytes(value: str | int) -> int:
    """A resource.Quantity of bytes ("21Gi", "512M", 1024) as an int."""
    found = _QUANTITY.match(str(value))
    assert found, f"not a byte quantity: {value!r}"
    return int(float(found.group(1)) * _FACTORS[found.group(2)])


def containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    return found


def secret_value(docs: list[dict[str, Any]], name: str, key: str) -> str | None:
    """A rendered Secret's value (dev generates one; prod's lives outside the repository)."""
    secret = of_kind(docs, "Secret").get(name)
    if secret is None or key not in secret.get("data", {}):
        return None
    return base64.b64decode(secret["data"][key]).decode()


def effective_env(docs: list[dict[str, Any]], container: dict[str, Any]) -> dict[str, str]:
    """What the process sees: the ConfigMaps it loads, then its own env (which wins); a
    Secret's value where the overlay renders it, else a placeholder."""
    maps = of_kind(docs, "ConfigMap")
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(maps[source["configMapRef"]["name"]]["data"])
    for item in container.get("env", []):
        ref = item.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            env[item["name"]] = secret_value(docs, ref["name"], ref["key"]) or SECRET_PLACEHOLDER
        else:
            env[item["name"]] = item.get("value", "")
    return env


def deployment_envs(docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Deployment name → its (first) container's effective environment."""
    return {
        name: effective_env(docs, containers(deployment)[0])
        for name, deployment in of_kind(docs, "Deployment").items()
    }


def settings_classes() -> dict[str, type[BaseSettings]]:
    """Deployment name → the settings class its process reads."""
    from account_svc.config import AccountSettings
    from edge.config import EdgeSettings
    from publish_svc.config import PublishSettings
    from render_svc.config import RenderSettings
    from sandbox_net.config import SandboxSettings
    from webhook_svc.config import WebhookSettings

    return {
        "edge": EdgeSettings,
        "account-svc": AccountSettings,
        "render-svc": RenderSettings,
        "publish-svc": PublishSettings,
        "webhook-svc": WebhookSettings,
        "sandbox-net": SandboxSettings,
    }


def setting(cls: type[BaseSettings], env: dict[str, str], field: str) -> Any:
    """A field's value as the process would read it: the environment's, else the default."""
    raw = env.get(env_variable(cls, field))
    info = cls.model_fields[field]
    if raw is None:
        return info.default
    annotation = info.annotation
    return annotation(raw) if annotation in (int, float, str) else raw
