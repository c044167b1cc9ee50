"""Each overlay's NetworkPolicies, evaluated the way Kubernetes does (k8s_eval): every call
the code makes is admitted, nothing else between storypost pods is, metrics only from the
monitoring namespace, and render-svc and webhook-svc (which reach addresses tenants choose)
reach only DNS, their dependencies in the dependencies' namespace, the service they call and
the public internet. Every port is a number (some engines resolve names on the wrong pod)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from storypost_runtime.settings import MongoSettings
from tests.deploy.k8s_eval import (
    ContainerPort,
    Endpoint,
    External,
    Namespace,
    Pod,
    allowed,
    pods_of,
    policy_types,
    selects,
)
from tests.deploy.rendered import deployment_envs, secret_value
from tests.deploy.service_calls import Call, calls, grpc_services
from tests.deploy.support import of_kind, render

OVERLAYS = ("overlays/dev", "overlays/prod")
MONITORING = Namespace("monitoring")
ELSEWHERE = Namespace("some-other-app")
INGRESS = Namespace("ingress-nginx")
KUBE_SYSTEM = Namespace("kube-system")
# Ports no storypost container declares: nothing may reach them either.
UNDECLARED_PORTS = (22, 80, 443, 6379, 65000)
# Addresses render-svc must never reach, whatever the port: private ranges, the cloud
# metadata service (169.254.169.254, fd00:ec2::254), loopback, IPv4 mapped into IPv6.
PRIVATE = (
    "10.0.0.5",
    "172.16.4.1",
    "192.168.1.1",
    "100.64.0.1",
    "169.254.169.254",
    "127.0.0.1",
    "fd00:ec2::254",
    "fd12:3456::1",
    "fe80::1",
    "::ffff:10.0.0.5",
)
# A public address of S3 (us-east-1) and of an ordinary web server.
PUBLIC = ("52.216.8.1", "93.184.216.34", "2600:1f18:4c5d::1")


@dataclass(frozen=True)
class Overlay:
    target: str
    docs: list[dict[str, Any]]
    namespace: Namespace
    pods: dict[str, Pod]
    calls: list[Call]

    @property
    def policies(self) -> list[dict[str, Any]]:
        return list(of_kind(self.docs, "NetworkPolicy").values())


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> Overlay:
    docs = render(request.param)
    name = next(d["metadata"]["namespace"] for d in docs if d["kind"] == "Deployment")
    namespace = Namespace(name)
    return Overlay(
        request.param, docs, namespace, pods_of(docs, namespace, "10.244.1.10"), calls(docs)
    )


def ports_of(pod: Pod) -> list[tuple[int, str]]:
    declared = [(p.number, p.protocol) for p in pod.ports]
    return declared + [(port, proto) for port in UNDECLARED_PORTS for proto in ("TCP", "UDP")]


def elsewhere_pod(namespace: Namespace, ip: str) -> Pod:
    return Pod("visitor", namespace, {"app": "visitor"}, (), ipaddress.ip_address(ip))


def test_the_calls_come_from_the_code(overlay: Overlay) -> None:
    # Read from the services' channels and settings (service_calls.py); each gRPC service is
    # called by someone, or the reading broke (or a service became dead code).
    services = {
        name
        for name, service in of_kind(overlay.docs, "Service").items()
        if any(p.get("appProtocol") == "grpc" for p in service["spec"]["ports"])
    }
    assert grpc_services(overlay.calls) == services, overlay.calls
    for call in overlay.calls:
        assert call.caller in overlay.pods and call.callee in overlay.pods, call


def test_every_call_the_components_make_is_admitted(overlay: Overlay) -> None:
    for call in overlay.calls:
        source, dest = overlay.pods[call.caller], overlay.pods[call.callee]
        assert allowed(overlay.policies, source, dest, call.port), f"{overlay.target}: {call}"


def test_every_other_connection_between_storypost_pods_is_refused(overlay: Overlay) -> None:
    expected = {(c.caller, c.callee, c.port) for c in overlay.calls}
    admitted = [
        (source.name, dest.name, port, proto)
        for source in overlay.pods.values()
        for dest in overlay.pods.values()
        for port, proto in ports_of(dest)
        if allowed(overlay.policies, source, dest, port, proto)
        and not (proto == "TCP" and (source.name, dest.name, port) in expected)
    ]
    assert not admitted, f"{overlay.target} admits calls no component makes: {admitted}"


def test_from_outside_only_the_ingress_controller_reaches_the_edge(overlay: Overlay) -> None:
    # The Ingress controller (examples/ingress.yaml: ingress-nginx) is the edge's one way in,
    # so the client address it forwards cannot be forged by anyone else.
    controller = elsewhere_pod(INGRESS, "10.244.7.7")
    strangers: list[Endpoint] = [
        External(ipaddress.ip_address("203.0.113.7")),
        elsewhere_pod(ELSEWHERE, "10.244.9.9"),
    ]
    edge = overlay.pods["edge"]
    http = next(p.number for p in edge.ports if p.name == "http")
    for dest in overlay.pods.values():
        for port, proto in ports_of(dest):
            expected = dest is edge and port == http and proto == "TCP"
            assert allowed(overlay.policies, controller, dest, port, proto) is expected, (
                f"{overlay.target}: ingress controller → {dest.name}:{port}/{proto}"
            )
            for stranger in strangers:
                assert not allowed(overlay.policies, stranger, dest, port, proto), (
                    f"{overlay.target}: {stranger} → {dest.name}:{port}/{proto}"
                )


def test_metrics_are_scraped_from_the_monitoring_namespace_only(overlay: Overlay) -> None:
    prometheus = elsewhere_pod(MONITORING, "10.244.8.8")
    visitor = elsewhere_pod(ELSEWHERE, "10.244.9.9")
    for pod in overlay.pods.values():
        metrics = next(p.number for p in pod.ports if p.name == "metrics")
        assert allowed(overlay.policies, prometheus, pod, metrics), pod.name
        assert not allowed(overlay.policies, visitor, pod, metrics), pod.name
        for port, proto in ports_of(pod):
            if port != metrics:
                assert not allowed(overlay.policies, prometheus, pod, port, proto), (pod.name, port)


# The components whose egress is walled (they fetch, or post to, addresses tenants choose).
WALLED = ("render-svc", "webhook-svc")


def dependencies_namespace(overlay: Overlay) -> Namespace:
    """Where the overlay's dependencies run: the namespace of its NATS address (nats.<ns>)."""
    host = urlsplit(deployment_envs(overlay.docs)["render-svc"]["STORYPOST_NATS_URL"]).hostname
    labels = (host or "").split(".")
    assert len(labels) >= 2, f"{overlay.target}: NATS is not addressed in a namespace: {host}"
    return Namespace(labels[1])


def dependency(value: str, default_port: int) -> tuple[list[Any], int]:
    """Where a connection to a configured dependency (URL) lands, and its port.

    `svc.namespace` names a pod in that namespace; a public name a public address.
    """
    if value.startswith("mongodb"):
        host_port = value.split("://", 1)[1].split("/", 1)[0].split("@")[-1].split(",")[0]
        value = f"mongodb://{host_port}"
    parts = urlsplit(value)
    host, port = parts.hostname or "", parts.port or default_port
    labels = host.split(".")
    if len(labels) == 2 or (len(labels) > 2 and labels[2] == "svc"):
        in_cluster = Pod("dep", Namespace(labels[1]), {"app": labels[0]}, (ContainerPort(port),))
        return [in_cluster], port
    return [External(ipaddress.ip_address(PUBLIC[0]))], port


def dependencies(overlay: Overlay, component: str) -> dict[str, tuple[list[Any], int]]:
    """MongoDB and NATS (and render-svc's S3) as the component's environment names them."""
    env = deployment_envs(overlay.docs)[component]
    nats = env["STORYPOST_NATS_URL"]
    mongo = secret_value(overlay.docs, "storypost-secrets", "mongo-url")
    found = {"nats": dependency(nats, 4222)}
    if mongo is not None:
        found["mongo"] = dependency(mongo, 27017)
    else:
        # Production's URL lives in its Secret: MongoDB in the dependencies' namespace
        # (docs/deploy-kubernetes.md; one outside the cluster needs a rule of the operator's own).
        port = urlsplit(MongoSettings.model_fields["mongo_url"].default).port or 27017
        mongo_pod = Pod(
            "mongo", dependencies_namespace(overlay), {"app": "mongo"}, (ContainerPort(port),)
        )
        found["mongo"] = ([mongo_pod], port)
    if component == "render-svc":
        # No endpoint URL: AWS S3 itself (storypost_runtime.s3), a public address on 443.
        s3 = env.get("STORYPOST_S3_ENDPOINT_URL") or (
            f"https://s3.{env['STORYPOST_S3_REGION']}.amazonaws.com"
        )
        found["s3"] = dependency(s3, 443 if s3.startswith("https") else 80)
    return found


def test_no_policy_names_a_port() -> None:
    # aws-network-policy-agent #149: a named port resolved on the wrong pod. Numbers only, in
    # every overlay, ingress and egress alike.
    for target in ("base", *OVERLAYS):
        for name, policy in of_kind(render(target), "NetworkPolicy").items():
            for key in ("ingress", "egress"):
                for rule in policy["spec"].get(key) or []:
                    for port in rule.get("ports") or []:
                        assert "port" not in port or isinstance(port["port"], int), (
                            f"{target}: {name} names port {port['port']!r}"
                        )


def test_dependencies_live_in_the_namespace_the_policies_name(overlay: Overlay) -> None:
    # The overlay's value (its patch of rule 1) and its addresses agree: NATS and the
    # in-cluster MongoDB are in the one namespace the walled components may reach them in.
    namespace = dependencies_namespace(overlay)
    for component in WALLED:
        for name, (endpoints, _port) in dependencies(overlay, component).items():
            for endpoint in endpoints:
                if isinstance(endpoint, Pod):
                    assert endpoint.namespace == namespace, (overlay.target, component, name)


@pytest.mark.parametrize("component", WALLED)
def test_walled_components_reach_their_dependencies_dns_and_the_public_internet(
    overlay: Overlay, component: str
) -> None:
    pod = overlay.pods[component]
    for name, (endpoints, port) in dependencies(overlay, component).items():
        for endpoint in endpoints:
            assert allowed(overlay.policies, pod, endpoint, port), (overlay.target, name)
    dns = Pod("coredns", KUBE_SYSTEM, {"k8s-app": "kube-dns"}, (ContainerPort(53, "dns", "UDP"),))
    assert allowed(overlay.policies, pod, dns, 53, "UDP")
    assert allowed(overlay.policies, pod, dns, 53, "TCP")
    for address in PUBLIC:
        for port in (443, 80, 8443):
            outside = External(ipaddress.ip_address(address))
            assert allowed(overlay.policies, pod, outside, port), (address, port)


@pytest.mark.parametrize("component", WALLED)
def test_walled_components_never_reach_private_addresses_or_the_metadata_service(
    overlay: Overlay, component: str
) -> None:
    pod = overlay.pods[component]
    isolating = [p for p in overlay.policies if selects(p, pod) and "Egress" in policy_types(p)]
    assert isolating, f"{overlay.target}: {component}'s egress is not isolated"
    for address in PRIVATE:
        outside = External(ipaddress.ip_address(address))
        # MongoDB's and NATS's ports too: never "open to every private address".
        for port in (80, 443, 8080, 53, 27017, 4222):
            assert not allowed(overlay.policies, pod, outside, port), (address, port)
    # DNS means the cluster's resolver, not any server on 53.
    assert not allowed(
        overlay.policies, pod, External(ipaddress.ip_address("10.0.0.53")), 53, "UDP"
    )
    other = Pod("other", KUBE_SYSTEM, {"k8s-app": "metrics-server"}, (ContainerPort(53),))
    assert not allowed(overlay.policies, pod, other, 53, "UDP")
    # MongoDB's and NATS's ports in any namespace but the dependencies' one.
    for namespace in (ELSEWHERE, KUBE_SYSTEM, MONITORING, overlay.namespace):
        stranger = Pod("db", namespace, {"app": "mongo"}, (), ipaddress.ip_address("10.244.9.1"))
        for port in (27017, 4222):
            assert not allowed(overlay.policies, pod, stranger, port), (namespace, port)
    # A dependency's namespace, on another port than the dependencies'.
    for endpoints, _port in dependencies(overlay, component).values():
        for endpoint in endpoints:
            if isinstance(endpoint, Pod):
                assert not allowed(overlay.policies, pod, endpoint, 9333), endpoint


def test_webhook_svc_reaches_no_storypost_pod(overlay: Overlay) -> None:
    # It calls no storypost service: every port of every storypost pod is out of its reach,
    # by its own egress policy already (whatever the others' ingress says).
    webhook = overlay.pods["webhook-svc"]
    egress_only = [p for p in overlay.policies if "Egress" in policy_types(p)]
    for dest in overlay.pods.values():
        for port, proto in ports_of(dest):
            assert not allowed(egress_only, webhook, dest, port, proto), (dest.name, port, proto)
