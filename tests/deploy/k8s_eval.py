"""Kubernetes' own rules for label selectors and NetworkPolicies, evaluated without a cluster.

Follows the NetworkPolicy API (networking.k8s.io/v1) as the documentation states it:
- a pod is isolated for ingress (egress) when some policy in its namespace selects it and
  lists that policy type; an isolated pod admits only what some such policy's rules allow;
- a connection needs both ends: the source's egress and the destination's ingress;
- policyTypes defaults to Ingress, plus Egress when the policy has egress rules;
- a peer is a podSelector (pods of the policy's namespace), a namespaceSelector (all pods
  of those namespaces), both in one peer (AND), or an ipBlock with `except`;
- a rule without `from`/`to` matches every peer, without `ports` every port; a port is a
  number (with `endPort`, a range) or a name resolved against the destination pod's
  container ports, with protocol TCP unless said otherwise.
Pod IPs are given by the caller: ipBlocks match them too (CNIs differ on this; matching is
the stricter reading for "refused" checks).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Labels = Mapping[str, str]
Object = Mapping[str, Any]


@dataclass(frozen=True)
class Namespace:
    name: str
    labels: Labels = field(default_factory=dict)

    @property
    def all_labels(self) -> dict[str, str]:
        # The API server sets this label on every namespace (Kubernetes >= 1.22).
        return {**self.labels, "kubernetes.io/metadata.name": self.name}


@dataclass(frozen=True)
class ContainerPort:
    number: int
    name: str | None = None
    protocol: str = "TCP"


@dataclass(frozen=True)
class Pod:
    name: str
    namespace: Namespace
    labels: Labels
    ports: tuple[ContainerPort, ...] = ()
    ip: IpAddress | None = None


@dataclass(frozen=True)
class External:
    """An address outside the cluster (or a node, a metadata service): no labels."""

    ip: IpAddress


Endpoint = Pod | External


def selector_matches(selector: Object | None, labels: Labels) -> bool:
    """metav1.LabelSelector: matchLabels AND every matchExpression; {} matches everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        if not _expression_matches(expression, labels):
            return False
    return True


def _expression_matches(expression: Object, labels: Labels) -> bool:
    key, operator = expression["key"], expression["operator"]
    values = expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        # A pod without the key is "not in" any set (labels.Selector semantics).
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise ValueError(f"unknown selector operator {operator!r}")


def policy_types(policy: Object) -> set[str]:
    spec = policy["spec"]
    if spec.get("policyTypes"):
        return set(spec["policyTypes"])
    return {"Ingress", "Egress"} if "egress" in spec else {"Ingress"}


def policy_namespace(policy: Object) -> str:
    return str(policy["metadata"].get("namespace", "default"))


def selects(policy: Object, pod: Pod) -> bool:
    return pod.namespace.name == policy_namespace(policy) and selector_matches(
        policy["spec"]["podSelector"], pod.labels
    )


def _peer_matches(peer: Object, policy_ns: str, other: Endpoint) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        address = other.ip
        if address is None:
            return False
        return _in(address, block["cidr"]) and not any(
            _in(address, excluded) for excluded in block.get("except") or []
        )
    if not isinstance(other, Pod):
        return False
    if "namespaceSelector" in peer:
        if not selector_matches(peer["namespaceSelector"], other.namespace.all_labels):
            return False
    elif other.namespace.name != policy_ns:
        # A podSelector alone means pods of the policy's own namespace.
        return False
    return "podSelector" not in peer or selector_matches(peer["podSelector"], other.labels)


def _in(address: IpAddress, cidr: str) -> bool:
    network = ipaddress.ip_network(cidr, strict=False)
    return address.version == network.version and address in network


def _port_matches(
    rule_ports: Sequence[Object] | None, dest: Endpoint, port: int, proto: str
) -> bool:
    if not rule_ports:
        return True
    for item in rule_ports:
        if item.get("protocol", "TCP") != proto:
            continue
        wanted = item.get("port")
        if wanted is None:
            return True
        if isinstance(wanted, str):
            # A named port means the destination pod's container port of that name.
            if isinstance(dest, Pod) and any(
                p.name == wanted and p.number == port and p.protocol == proto for p in dest.ports
            ):
                return True
            continue
        if wanted <= port <= item.get("endPort", wanted):
            return True
    return False


def _admitted(
    policies: Iterable[Object],
    pod: Pod,
    kind: str,
    peer: Endpoint,
    dest: Endpoint,
    port: int,
    proto: str,
) -> bool:
    """Whether `pod`'s policies of `kind` (Ingress/Egress) let this connection through."""
    rules_key, peers_key = ("ingress", "from") if kind == "Ingress" else ("egress", "to")
    isolating = [p for p in policies if selects(p, pod) and kind in policy_types(p)]
    if not isolating:
        return True
    for policy in isolating:
        for rule in policy["spec"].get(rules_key) or []:
            peers = rule.get(peers_key) or []
            if peers and not any(_peer_matches(x, policy_namespace(policy), peer) for x in peers):
                continue
            if _port_matches(rule.get("ports"), dest, port, proto):
                return True
    return False


def allowed(
    policies: Sequence[Object], source: Endpoint, dest: Endpoint, port: int, proto: str = "TCP"
) -> bool:
    """Whether a connection from `source` to `dest` on `port` gets through."""
    nps = [p for p in policies if p["kind"] == "NetworkPolicy"]
    if isinstance(source, Pod) and not _admitted(nps, source, "Egress", dest, dest, port, proto):
        return False
    return not isinstance(dest, Pod) or _admitted(nps, dest, "Ingress", source, dest, port, proto)


def pods_of(docs: Iterable[Object], namespace: Namespace, first_ip: str) -> dict[str, Pod]:
    """One pod per Deployment (its template's labels and container ports), IPs from first_ip."""
    pods: dict[str, Pod] = {}
    address = ipaddress.ip_address(first_ip)
    for doc in docs:
        if doc["kind"] != "Deployment":
            continue
        template = doc["spec"]["template"]
        ports = tuple(
            ContainerPort(p["containerPort"], p.get("name"), p.get("protocol", "TCP"))
            for c in template["spec"]["containers"]
            for p in c.get("ports", [])
        )
        name = doc["metadata"]["name"]
        pods[name] = Pod(name, namespace, dict(template["metadata"]["labels"]), ports, address)
        address += 1
    return pods
