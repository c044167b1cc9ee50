"""The Kubernetes manifests: they render with kustomize, validate against the Kubernetes schemas
offline, and say what docs/deploy-kubernetes.md promises (probes, non-root, limits, PDBs, HPAs,
policies)."""

from __future__ import annotations

from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
from pydantic import SecretStr

from storypost_runtime.settings import env_variable
from tests.deploy.rendered import containers, effective_env, settings_classes
from tests.deploy.support import (
    DOCKERFILES,
    OTHER_ENV,
    VERSION,
    component_settings,
    of_kind,
    render,
)

# The Kubernetes version whose schemas the manifests must satisfy (strict: no unknown fields).
K8S_VERSION = "1.32.0"
TARGETS = ("base", "overlays/dev", "overlays/prod")
SERVICES = {"account-svc": 50051, "render-svc": 50052, "publish-svc": 50053, "webhook-svc": 50054}
SECRET_KEYS = {
    "mongo-url",
    "s3-access-key",
    "s3-secret-key",
    "account-token-key",
    "webhook-secret-key",
    "platform-client-secret",
    # Caller credentials and the servers' list of their public keys (docs/service-auth.md).
    "edge-service-key",
    "publish-svc-service-key",
    "render-svc-service-key",
    "service-public-keys",
    # NATS's identity of each component, either (optional: docs/deploy.md "NATS").
    "nats-password",
    "nats-token",
}
# Custom resources of the monitoring and render-seccomp components: no schema ships for them
# here (test_monitoring.py and test_render_seccomp.py check their shape).
CRD_GROUPS = ("monitoring.coreos.com/", "security-profiles-operator.x-k8s.io/")


@pytest.fixture(scope="module", params=TARGETS)
def rendered(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, render(request.param)


def test_every_resource_validates_against_the_kubernetes_schemas(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    assert len(docs) >= 20, f"{target} rendered only {len(docs)} resources"
    for doc in docs:
        if doc["apiVersion"].startswith(CRD_GROUPS):
            continue
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            raise AssertionError(
                f"{target}: {doc['kind']}/{doc['metadata']['name']}: {error.message}"
            ) from None


def test_a_broken_manifest_is_refused_by_the_validator() -> None:
    # The validator really checks: a wrong type and an unknown field both fail.
    bad = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {"replicas": "two", "selector": {}, "template": {}, "replica": 1},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_every_deployment_is_hardened_limited_and_probed(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    deployments = of_kind(docs, "Deployment")
    assert {"edge", *SERVICES} <= set(deployments), target
    for name, deployment in deployments.items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        profile = pod["securityContext"]["seccompProfile"]
        if name == "render-svc":
            # The browser's jail needs user namespaces, which RuntimeDefault refuses: our
            # allow list (components/render-seccomp), installed on the nodes by hand in the
            # base, by the Security Profiles Operator in the overlays (test_render_seccomp.py
            # checks that path).
            assert profile["type"] == "Localhost", name
            if target == "base":
                assert profile["localhostProfile"] == "storypost/render-svc.json", name
        else:
            assert profile["type"] == "RuntimeDefault", name
        assert pod["automountServiceAccountToken"] is False, name
        # Its own ServiceAccount (test_service_accounts.py).
        assert pod["serviceAccountName"] == f"storypost-{name}", name
        for container in pod["containers"]:
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["capabilities"]["drop"] == ["ALL"], name
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), name
            assert "memory" in resources["limits"], name
            assert container["readinessProbe"] and container["livenessProbe"], name
            image = container["image"]
            assert image.startswith("storypost/") and ":" in image, image
            assert not image.endswith(":latest"), image
            assert (DOCKERFILES / f"{image.split('/')[1].split(':')[0]}.Dockerfile").is_file()
            if target == "base":
                assert image.endswith(f":{VERSION}"), image
            mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
            assert "/tmp" in mounts, f"{name}: a read-only root needs a writable /tmp"


def test_services_use_native_grpc_probes_and_the_edge_its_http_ones(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    _, docs = rendered
    deployments = of_kind(docs, "Deployment")
    for name, port in SERVICES.items():
        (container,) = containers(deployments[name])
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"]["port"] == port, (name, probe)
        assert {p["containerPort"] for p in container["ports"]} == {port, 9100}
    (edge,) = containers(deployments["edge"])
    assert edge["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert edge["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_the_grace_period_covers_drain_and_in_flight_calls(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    for name, deployment in of_kind(docs, "Deployment").items():
        grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        env = effective_env(docs, containers(deployment)[0])
        drain = float(env.get("STORYPOST_SHUTDOWN_DRAIN_SECONDS", 0))
        finish = float(env.get("STORYPOST_SHUTDOWN_GRACE_SECONDS", 10))
        assert grace >= drain + finish + 5, f"{target} {name}: {grace} < {drain} + {finish} + 5"


def test_every_environment_variable_is_a_setting_of_its_component(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    known = component_settings()
    everyone = set().union(*known.values())
    # The ConfigMaps processes load as their environment (others hold files: the adapter's).
    loaded = {
        source["configMapRef"]["name"]
        for deployment in of_kind(docs, "Deployment").values()
        for container in containers(deployment)
        for source in container.get("envFrom", [])
        if "configMapRef" in source
    }
    assert loaded, target
    for name, data in ((n, m["data"]) for n, m in of_kind(docs, "ConfigMap").items()):
        if name not in loaded:
            continue
        unknown = set(data) - everyone
        assert not unknown, f"{target}: ConfigMap {name} sets unknown settings {unknown}"
    for name, deployment in of_kind(docs, "Deployment").items():
        for container in containers(deployment):
            names = {item["name"] for item in container.get("env", [])}
            unknown = names - known[name] - OTHER_ENV
            assert not unknown, f"{target}: {name} sets {unknown}, which it does not read"


def test_secrets_come_from_storypost_secrets_with_known_keys(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    used: set[str] = set()
    required: set[str] = set()
    for deployment in of_kind(docs, "Deployment").values():
        for container in containers(deployment):
            for item in container.get("env", []):
                ref = item.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["name"] == "storypost-secrets"
                    used.add(ref["key"])
                    if not ref.get("optional"):
                        required.add(ref["key"])
    assert used == SECRET_KEYS
    # Caller credentials are optional refs: a development cluster runs without them (no key
    # of them is published here), production refuses to start without them.
    assert {k for k in SECRET_KEYS if "service" in k}.isdisjoint(required)
    secrets = of_kind(docs, "Secret")
    if target == "overlays/dev":
        assert required <= set(secrets["storypost-secrets"]["data"]) <= SECRET_KEYS
        assert not any("service" in key for key in secrets["storypost-secrets"]["data"])
    else:
        assert not secrets, f"{target} must not carry secret values"


def test_services_select_their_deployments_and_named_ports(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    _, docs = rendered
    deployments = of_kind(docs, "Deployment")
    for name, service in of_kind(docs, "Service").items():
        selector = service["spec"]["selector"]
        matches = [
            d
            for d in deployments.values()
            if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(matches) == 1, f"Service {name} selects {len(matches)} deployments"
        port_names = {p["name"] for c in containers(matches[0]) for p in c["ports"]}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in port_names, (name, port)


def test_every_deployment_has_a_pdb_and_the_loaded_ones_an_hpa(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    deployments = of_kind(docs, "Deployment")
    budgets = of_kind(docs, "PodDisruptionBudget")
    for name in ("edge", *SERVICES):
        assert budgets[name]["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": name}
    scalers = of_kind(docs, "HorizontalPodAutoscaler")
    assert set(scalers) == {"edge", "render-svc", "publish-svc"}
    for name, scaler in scalers.items():
        assert scaler["spec"]["scaleTargetRef"]["name"] in deployments
        assert scaler["spec"]["minReplicas"] <= scaler["spec"]["maxReplicas"]
        if target == "overlays/prod":
            assert scaler["spec"]["minReplicas"] >= 3, name


def test_no_policy_admits_everyone_and_the_namespace_denies_by_default(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    _, docs = rendered
    policies = of_kind(docs, "NetworkPolicy")
    deny = policies["default-deny-ingress"]["spec"]
    assert deny["podSelector"] == {} and deny["policyTypes"] == ["Ingress"]
    assert "ingress" not in deny
    open_to_all = [
        name
        for name, policy in policies.items()
        for rule in [*policy["spec"].get("ingress", []), *policy["spec"].get("egress", [])]
        if not rule.get("from") and not rule.get("to")
    ]
    assert open_to_all == [], "a rule without peers admits every address"
    # The edge is reached through the Ingress controller only (examples/ingress.yaml).
    (rule,) = policies["edge-from-ingress"]["spec"]["ingress"]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
    ]


def test_secret_settings_are_wired_from_the_secret(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    # Every setting a component marks secret (SecretStr, or repr=False) comes from
    # storypost-secrets, so production never starts on its published development default.
    target, docs = rendered
    classes = settings_classes()
    for name, deployment in of_kind(docs, "Deployment").items():
        if name == "sandbox-net":
            continue  # development only: its secret signs the sandbox's own tokens
        cls = classes[name]
        secret = {
            env_variable(cls, field)
            for field, info in cls.model_fields.items()
            if info.annotation is SecretStr or info.repr is False
        }
        (container,) = containers(deployment)
        wired = {
            item["name"]
            for item in container.get("env", [])
            if item.get("valueFrom", {}).get("secretKeyRef")
        }
        assert secret <= wired, f"{target}: {name} leaves {secret - wired} to its default"


def test_grpc_services_are_headless_and_addressed_through_dns(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    services = of_kind(docs, "Service")
    deployments = of_kind(docs, "Deployment")
    config = of_kind(docs, "ConfigMap")["storypost-config"]["data"]
    for name, port in SERVICES.items():
        spec = services[name]["spec"]
        # Headless: clients resolve every ready pod and balance round robin over them.
        assert spec["clusterIP"] == "None", f"{target}: {name}"
        assert spec.get("publishNotReadyAddresses", False) is False, f"{target}: {name}"
        (service_port,) = spec["ports"]
        # No proxy rewrites the port: the address's port is the pod's.
        assert service_port["port"] == port
        container_ports = {
            p["name"]: p["containerPort"] for p in containers(deployments[name])[0]["ports"]
        }
        assert container_ports[service_port["targetPort"]] == port
        variable = f"STORYPOST_{name.removesuffix('-svc').upper()}_ADDR"
        assert config[variable] == f"dns:///{name}:{port}", f"{target}: {variable}"
    # The edge's Service stays a normal ClusterIP (HTTP behind the Ingress).
    assert "clusterIP" not in services["edge"]["spec"]


def test_connections_age_out_after_the_longest_call(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    # Servers send GOAWAY after max age so clients re-resolve (new replicas get calls); the
    # grace lets a render (the edge's render deadline, also through publish-svc) finish, and
    # a draining publish-svc or render-svc waits for one too.
    from edge.config import EdgeSettings

    target, docs = rendered
    deployments = of_kind(docs, "Deployment")
    edge_env = effective_env(docs, containers(deployments["edge"])[0])
    longest = float(
        edge_env.get(
            "STORYPOST_RENDER_DEADLINE_SECONDS",
            EdgeSettings.model_fields["render_deadline_seconds"].default,
        )
    )
    for name in SERVICES:
        env = effective_env(docs, containers(deployments[name])[0])
        assert float(env["STORYPOST_GRPC_MAX_CONNECTION_AGE_SECONDS"]) > 0, f"{target}: {name}"
        grace = float(env["STORYPOST_GRPC_MAX_CONNECTION_AGE_GRACE_SECONDS"])
        assert grace >= longest, f"{target}: {name}: connection age grace {grace} < {longest}"
        if name in ("render-svc", "publish-svc"):
            assert float(env["STORYPOST_SHUTDOWN_GRACE_SECONDS"]) >= longest - 10, name


def test_render_svc_keeps_its_images_init() -> None:
    # tini is the image's ENTRYPOINT (test_dockerfiles.py): a `command:` would replace it.
    for target in TARGETS:
        (container,) = containers(of_kind(render(target), "Deployment")["render-svc"])
        assert "command" not in container, target


def test_overlays_set_their_namespace_replicas_and_environment() -> None:
    dev, prod = render("overlays/dev"), render("overlays/prod")
    for docs, namespace, replicas in ((dev, "storypost-dev", 1), (prod, "storypost", 3)):
        for doc in docs:
            if doc["kind"] == "Namespace":
                continue
            assert doc["metadata"].get("namespace") == namespace, doc["metadata"]["name"]
        assert namespace in of_kind(docs, "Namespace"), f"no manifest creates {namespace}"
        scaled = {
            s["spec"]["scaleTargetRef"]["name"]: s
            for s in of_kind(docs, "HorizontalPodAutoscaler").values()
        }
        for name, deployment in of_kind(docs, "Deployment").items():
            if name in scaled:
                assert scaled[name]["spec"]["minReplicas"] == replicas, name
            else:
                assert deployment["spec"]["replicas"] == replicas, name
    assert "sandbox-net" in of_kind(dev, "Deployment")
    assert "sandbox-net" not in of_kind(prod, "Deployment")
    dev_config = of_kind(dev, "ConfigMap")["storypost-config"]["data"]
    assert dev_config["STORYPOST_SANDBOX_URL"] == "http://sandbox-net:8090"
    # The merge keeps the base's keys.
    assert dev_config["STORYPOST_ACCOUNT_ADDR"] == "dns:///account-svc:50051"
    # Production refuses published development keys; development keeps them working.
    prod_config = of_kind(prod, "ConfigMap")["storypost-config"]["data"]
    assert prod_config["STORYPOST_ENVIRONMENT"] == "production"
    assert dev_config.get("STORYPOST_ENVIRONMENT", "development") == "development"
    (render_svc,) = containers(of_kind(prod, "Deployment")["render-svc"])
    assert render_svc["resources"]["limits"]["memory"] == "4Gi"
