"""The NetworkPolicy evaluator against policies whose meaning the Kubernetes documentation
states (concepts/services-networking/network-policies): a broken evaluator fails here, not
silently in test_network_policies.py."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from tests.deploy.k8s_eval import (
    ContainerPort,
    External,
    Namespace,
    Pod,
    allowed,
    policy_types,
    selector_matches,
)

DEFAULT = Namespace("default")
MYPROJECT = Namespace("myproject", {"project": "myproject"})
OTHER = Namespace("other")


def pod(name: str, namespace: Namespace, ip: str, **labels: str) -> Pod:
    ports = (ContainerPort(6379, "redis"), ContainerPort(8080, "http"))
    return Pod(name, namespace, labels, ports, ipaddress.ip_address(ip))


def outside(ip: str) -> External:
    return External(ipaddress.ip_address(ip))


def policy(spec: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    return {
        "kind": "NetworkPolicy",
        "metadata": {"name": "p", "namespace": namespace},
        "spec": spec,
    }


# The documentation's first example, "test-network-policy", verbatim in meaning.
DOCS_EXAMPLE = policy(
    {
        "podSelector": {"matchLabels": {"role": "db"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {
                "from": [
                    {"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}},
                    {"namespaceSelector": {"matchLabels": {"project": "myproject"}}},
                    {"podSelector": {"matchLabels": {"role": "frontend"}}},
                ],
                "ports": [{"protocol": "TCP", "port": 6379}],
            }
        ],
        "egress": [
            {
                "to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
                "ports": [{"protocol": "TCP", "port": 5978}],
            }
        ],
    }
)
DB = pod("db", DEFAULT, "10.244.0.10", role="db")
FRONTEND = pod("frontend", DEFAULT, "10.244.0.11", role="frontend")


def test_the_documentations_example_admits_what_it_says_on_6379_only() -> None:
    policies = [DOCS_EXAMPLE]
    # "any pod in the default namespace with the label role=frontend"
    assert allowed(policies, FRONTEND, DB, 6379)
    assert not allowed(policies, FRONTEND, DB, 6380)
    assert not allowed(policies, FRONTEND, DB, 6379, "UDP")
    # "any pod in a namespace with the label project=myproject"
    assert allowed(policies, pod("any", MYPROJECT, "10.244.1.5"), DB, 6379)
    # ... but a role=frontend pod of another namespace is not "in the default namespace".
    assert not allowed(policies, pod("fe", OTHER, "10.244.2.5", role="frontend"), DB, 6379)
    # "IP addresses in 172.17.0.0-172.17.0.255 and 172.17.2.0-172.17.255.255"
    assert allowed(policies, outside("172.17.0.200"), DB, 6379)
    assert allowed(policies, outside("172.17.2.1"), DB, 6379)
    assert not allowed(policies, outside("172.17.1.9"), DB, 6379)
    assert not allowed(policies, outside("172.18.0.1"), DB, 6379)


def test_the_documentations_example_limits_the_db_pods_egress() -> None:
    policies = [DOCS_EXAMPLE]
    # "connections from any pod in default with role=db to 10.0.0.0/24 on TCP 5978"
    assert allowed(policies, DB, outside("10.0.0.7"), 5978)
    assert not allowed(policies, DB, outside("10.0.0.7"), 443)
    assert not allowed(policies, DB, outside("10.0.1.7"), 5978)
    # The frontend is not selected: neither its egress nor its ingress is isolated.
    assert allowed(policies, FRONTEND, outside("8.8.8.8"), 53, "UDP")
    assert allowed(policies, outside("8.8.8.8"), FRONTEND, 8080)
    # Both ends must agree: db may not send to the frontend (egress), whatever it admits.
    assert not allowed(policies, DB, FRONTEND, 8080)


def test_one_peer_with_both_selectors_is_and_two_peers_are_or() -> None:
    both = {
        "namespaceSelector": {"matchLabels": {"user": "alice"}},
        "podSelector": {"matchLabels": {"role": "client"}},
    }
    alice = Namespace("alice", {"user": "alice"})
    client_of_alice = pod("c", alice, "10.244.3.1", role="client")
    other_of_alice = pod("o", alice, "10.244.3.2", role="server")
    client_in_default = pod("c2", DEFAULT, "10.244.0.20", role="client")
    target = pod("t", DEFAULT, "10.244.0.21", app="target")
    and_policy = policy(
        {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [both]}]}
    )
    assert allowed([and_policy], client_of_alice, target, 8080)
    assert not allowed([and_policy], other_of_alice, target, 8080)
    assert not allowed([and_policy], client_in_default, target, 8080)
    either = [
        {"namespaceSelector": both["namespaceSelector"]},
        {"podSelector": both["podSelector"]},
    ]
    or_policy = policy(
        {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": either}]}
    )
    assert allowed([or_policy], client_of_alice, target, 8080)
    assert allowed([or_policy], other_of_alice, target, 8080)
    assert allowed([or_policy], client_in_default, target, 8080)


def test_default_deny_allow_all_and_policies_add_up() -> None:
    deny_all = policy({"podSelector": {}, "policyTypes": ["Ingress"]})
    allow_all = policy({"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{}]})
    assert not allowed([deny_all], FRONTEND, DB, 6379)
    assert not allowed([deny_all], outside("1.2.3.4"), DB, 6379)
    # Policies are additive: any one admitting is enough.
    assert allowed([deny_all, allow_all], outside("1.2.3.4"), DB, 6379)
    # A policy of another namespace does not isolate these pods.
    assert allowed(
        [policy({"podSelector": {}, "policyTypes": ["Ingress"]}, "other")], FRONTEND, DB, 1
    )
    deny_egress = policy({"podSelector": {}, "policyTypes": ["Egress"]})
    assert not allowed([deny_egress], FRONTEND, outside("1.2.3.4"), 443)
    assert allowed([deny_egress], outside("1.2.3.4"), FRONTEND, 8080)


def test_policy_types_default_to_ingress_plus_egress_when_egress_rules_exist() -> None:
    egress_only = policy({"podSelector": {}, "egress": [{}]})
    assert policy_types(egress_only) == {"Ingress", "Egress"}
    assert policy_types(policy({"podSelector": {}})) == {"Ingress"}
    # So that policy, without ingress rules, refuses all ingress of the pods it selects.
    assert not allowed([egress_only], outside("1.2.3.4"), DB, 6379)
    assert allowed([egress_only], DB, outside("1.2.3.4"), 443)


def test_named_ports_resolve_against_the_destination_and_port_ranges() -> None:
    named = policy(
        {
            "podSelector": {"matchLabels": {"role": "db"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"port": "http"}]}],
        }
    )
    assert allowed([named], FRONTEND, DB, 8080)
    assert not allowed([named], FRONTEND, DB, 6379)
    assert not allowed([named], FRONTEND, DB, 8080, "UDP")
    ranged = policy(
        {
            "podSelector": {"matchLabels": {"role": "db"}},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
                    "ports": [{"protocol": "TCP", "port": 32000, "endPort": 32768}],
                }
            ],
        }
    )
    assert allowed([ranged], DB, outside("10.0.0.1"), 32000)
    assert allowed([ranged], DB, outside("10.0.0.1"), 32768)
    assert not allowed([ranged], DB, outside("10.0.0.1"), 32769)
    # A named egress port needs a pod with that port: an address has none.
    by_name = policy(
        {
            "podSelector": {"matchLabels": {"role": "frontend"}},
            "policyTypes": ["Egress"],
            "egress": [{"ports": [{"port": "redis"}]}],
        }
    )
    assert allowed([by_name], FRONTEND, DB, 6379)
    assert not allowed([by_name], FRONTEND, outside("10.0.0.1"), 6379)
    # A name stands for a port of its own protocol: "dns" here is UDP 53, not TCP 53.
    resolver = Pod("dns", DEFAULT, {"role": "dns"}, (ContainerPort(53, "dns", "UDP"),))
    to_dns = policy(
        {
            "podSelector": {"matchLabels": {"role": "dns"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"port": "dns", "protocol": "TCP"}]}],
        }
    )
    assert not allowed([to_dns], FRONTEND, resolver, 53, "TCP")
    assert not allowed([to_dns], FRONTEND, resolver, 53, "UDP")


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({}, {"a": "1"}, True),
        ({}, {}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]},
            {"a": "2"},
            True,
        ),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {"a": "1"},
            False,
        ),
        # NotIn also matches a pod without the key.
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "1"}, False),
        # matchLabels and matchExpressions must all hold.
        (
            {"matchLabels": {"b": "2"}, "matchExpressions": [{"key": "a", "operator": "Exists"}]},
            {"a": "1"},
            False,
        ),
    ],
)
def test_label_selectors(selector: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    assert selector_matches(selector, labels) is expected
