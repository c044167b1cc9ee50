"""deploy/k8s/examples/ingress.yaml: a valid Ingress for the prod overlay's edge, on the host
of its STORYPOST_PUBLIC_URL, that lets through what the edge itself accepts (body size, the
render deadline), from the namespace the edge's NetworkPolicy admits."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from edge.config import EdgeSettings
from tests.deploy.k8s_eval import Namespace, Pod, allowed, pods_of
from tests.deploy.rendered import deployment_envs, setting
from tests.deploy.support import KUSTOMIZE, of_kind, render

EXAMPLE = KUSTOMIZE / "examples" / "ingress.yaml"
# nginx sizes: k/m/g are binary multiples.
NGINX_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


@pytest.fixture(scope="module")
def prod() -> list[dict[str, Any]]:
    return render("overlays/prod")


@pytest.fixture(scope="module")
def ingress() -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return found


def test_it_validates_and_routes_the_public_host_to_the_edge(
    ingress: dict[str, Any], prod: list[dict[str, Any]]
) -> None:
    kubernetes_validate.validate(ingress, "1.32.0", strict=True)
    edge_env = deployment_envs(prod)["edge"]
    host = urlsplit(edge_env["STORYPOST_PUBLIC_URL"]).hostname
    namespace = of_kind(prod, "Deployment")["edge"]["metadata"]["namespace"]
    assert ingress["metadata"]["namespace"] == namespace
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == host
    assert any(host in tls["hosts"] for tls in ingress["spec"]["tls"])
    (path,) = rule["http"]["paths"]
    assert (path["path"], path["pathType"]) == ("/", "Prefix")
    backend = path["backend"]["service"]
    service = of_kind(prod, "Service")[backend["name"]]
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "edge"}
    assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}


def test_it_passes_what_the_edge_accepts(
    ingress: dict[str, Any], prod: list[dict[str, Any]]
) -> None:
    env = deployment_envs(prod)["edge"]
    notes = ingress["metadata"]["annotations"]
    size = notes["nginx.ingress.kubernetes.io/proxy-body-size"]
    number, unit = size.rstrip("kmg"), size[len(size.rstrip("kmg")) :]
    assert int(number) * NGINX_UNITS[unit] >= int(setting(EdgeSettings, env, "max_body_bytes"))
    deadline = float(setting(EdgeSettings, env, "render_deadline_seconds"))
    for timeout in ("proxy-read-timeout", "proxy-send-timeout"):
        assert int(notes[f"nginx.ingress.kubernetes.io/{timeout}"]) > deadline, timeout


def test_the_controllers_namespace_is_the_one_the_edge_admits(
    ingress: dict[str, Any], prod: list[dict[str, Any]]
) -> None:
    # ingress-nginx runs in `ingress-nginx`: its pods must reach the edge's http port.
    assert ingress["spec"]["ingressClassName"] == "nginx"
    namespace = Namespace(of_kind(prod, "Deployment")["edge"]["metadata"]["namespace"])
    edge = pods_of(prod, namespace, "10.244.1.10")["edge"]
    controller = Pod("controller", Namespace("ingress-nginx"), {"app": "ingress-nginx"})
    http = next(p.number for p in edge.ports if p.name == "http")
    assert allowed(list(of_kind(prod, "NetworkPolicy").values()), controller, edge, http)
