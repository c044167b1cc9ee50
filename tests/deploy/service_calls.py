"""Which component calls which, read from the code and the rendered configuration.

Nothing here is a hand-written list: a gRPC call is a channel a component's package opens
(`aio_channel(settings.<x>_addr, ...)` / `sync_channel(...)`) whose address setting, in that
component's effective environment, names a Service of the overlay; an HTTP call is a URL
setting the package reads (`settings.<field>`) whose value names such a Service. The port is
where the connection lands on the callee's pod (a headless Service: the address's own port;
a ClusterIP Service: its targetPort).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic_settings import BaseSettings

from storypost_runtime.settings import ServiceAddresses, env_variable
from tests.deploy.k8s_eval import selector_matches
from tests.deploy.rendered import deployment_envs, settings_classes
from tests.deploy.support import ROOT, of_kind

CHANNEL_FACTORIES = frozenset({"aio_channel", "sync_channel"})


@dataclass(frozen=True, order=True)
class Call:
    caller: str
    callee: str
    port: int
    setting: str


def package_dir(component: str) -> Path:
    """edge → edge/edge, account-svc → account-svc/account_svc (the repository's layout)."""
    return ROOT / component / component.replace("-", "_")


@cache
def _trees(package: Path) -> tuple[ast.Module, ...]:
    return tuple(ast.parse(path.read_text(), str(path)) for path in sorted(package.rglob("*.py")))


def _callee_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def channel_settings(package: Path) -> set[str]:
    """The ServiceAddresses fields a package opens a gRPC channel to."""
    fields = {name for name in ServiceAddresses.model_fields if name.endswith("_addr")}
    found: set[str] = set()
    for tree in _trees(package):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _callee_name(node) in CHANNEL_FACTORIES:
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Attribute) and first.attr in fields:
                    found.add(first.attr)
    return found


def attributes_read(package: Path) -> set[str]:
    """Every `x.<name>` a package reads (settings fields among them)."""
    return {
        node.attr
        for tree in _trees(package)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
    }


def _host_port(value: str) -> tuple[str, int | None]:
    """Host and port of `dns:///host:port`, `host:port` or a URL."""
    if value.startswith("dns:"):
        value = value.removeprefix("dns:").lstrip("/")
    if "://" not in value:
        value = f"grpc://{value}"
    parts = urlsplit(value)
    return parts.hostname or "", parts.port


def _service_of(host: str, namespace: str, services: Mapping[str, Any]) -> Any | None:
    """The overlay's Service a host names (`svc`, `svc.ns`, `svc.ns.svc...`), if any."""
    labels = host.split(".")
    if len(labels) > 1 and labels[1] != namespace:
        return None
    if len(labels) > 2 and labels[2] != "svc":
        return None
    return services.get(labels[0])


def _landing_port(service: Any, port: int | None, target: Any) -> int | None:
    """Where a connection to `service:port` reaches the pod (None: no such port)."""
    for item in service["spec"]["ports"]:
        if port is not None and item["port"] != port:
            continue
        if service["spec"].get("clusterIP") == "None":
            # DNS gives the pods' own addresses: the client dials the port it was given.
            return port
        wanted = item.get("targetPort", item["port"])
        for container in target["spec"]["template"]["spec"]["containers"]:
            for declared in container.get("ports", []):
                if wanted in (declared.get("name"), declared["containerPort"]):
                    return int(declared["containerPort"])
    return None


def calls(docs: list[dict[str, Any]]) -> list[Call]:
    """Every connection one storypost component opens to another in a rendered overlay."""
    return _calls(docs, deployment_envs(docs), settings_classes())


def _calls(
    docs: list[dict[str, Any]],
    env_of: Mapping[str, Mapping[str, str]],
    settings: Mapping[str, type[BaseSettings]],
) -> list[Call]:
    deployments = of_kind(docs, "Deployment")
    services = of_kind(docs, "Service")
    namespace = next(iter(deployments.values()))["metadata"].get("namespace", "default")
    found: set[Call] = set()
    for caller, env in env_of.items():
        package = package_dir(caller)
        if not package.is_dir():
            continue
        grpc_fields = channel_settings(package)
        read = attributes_read(package)
        for field in settings[caller].model_fields:
            variable = env_variable(settings[caller], field)
            value = env.get(variable)
            is_url = value is not None and value.startswith(("http://", "https://"))
            if not value or not (field in grpc_fields or (is_url and field in read)):
                continue
            host, port = _host_port(value)
            service = _service_of(host, namespace, services)
            if service is None:
                continue
            for callee, target in deployments.items():
                labels = target["spec"]["template"]["metadata"]["labels"]
                if selector_matches({"matchLabels": service["spec"]["selector"]}, labels):
                    landing = _landing_port(service, port or _default_port(value), target)
                    assert landing is not None, f"{caller}: {value} names no port of {callee}"
                    found.add(Call(caller, callee, landing, variable))
    return sorted(found)


def _default_port(value: str) -> int | None:
    scheme = urlsplit(value).scheme
    return {"http": 80, "https": 443}.get(scheme)


def grpc_services(found: Iterable[Call]) -> set[str]:
    return {call.callee for call in found if call.setting.endswith("_ADDR")}
