"""Every selector of every rendered overlay picks the pods it is meant for (Deployments,
Services, PDBs, HPAs, topology spread, NetworkPolicies, the PodMonitor), and the HPAs own the
replica count of what they scale."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.k8s_eval import selector_matches
from tests.deploy.support import of_kind, render

TARGETS = ("base", "overlays/dev", "overlays/prod")
NAME = "app.kubernetes.io/name"
PART_OF = {"app.kubernetes.io/part-of": "storypost"}


@pytest.fixture(scope="module", params=TARGETS)
def rendered(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, render(request.param)


def template_labels(docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """The pod labels of every Deployment and Job (the migrate Job's pods are policed too)."""
    return {
        name: d["spec"]["template"]["metadata"]["labels"]
        for kind in ("Deployment", "Job")
        for name, d in of_kind(docs, kind).items()
    }


def selected(selector: dict[str, Any] | None, docs: list[dict[str, Any]]) -> set[str]:
    """The Deployments and Jobs whose pods a label selector picks."""
    return {n for n, labels in template_labels(docs).items() if selector_matches(selector, labels)}


def test_every_pod_carries_the_common_labels(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    # The NetworkPolicies and the PodMonitor select by part-of: a template without it would
    # be refused its metrics scrape (and matched by nothing).
    target, docs = rendered
    for name, labels in template_labels(docs).items():
        assert PART_OF.items() <= labels.items(), f"{target}: {name} pods lack {PART_OF}"
        assert labels[NAME] == name, f"{target}: {name}"


def test_deployments_select_exactly_their_own_pods(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    for name, deployment in of_kind(docs, "Deployment").items():
        selector = deployment["spec"]["selector"]
        # A Deployment's selector is immutable: labels added later (part-of) must not reach
        # it, or `kubectl apply` on a running cluster fails.
        assert selector == {"matchLabels": {NAME: name}}, f"{target}: {name}: {selector}"
        assert selected(selector, docs) == {name}, target


def test_services_and_pdbs_select_their_component_only(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    for name, service in of_kind(docs, "Service").items():
        picked = selected({"matchLabels": service["spec"]["selector"]}, docs)
        assert picked == {name}, f"{target}: Service {name} selects {picked}"
    for name, budget in of_kind(docs, "PodDisruptionBudget").items():
        picked = selected(budget["spec"]["selector"], docs)
        assert picked == {name}, f"{target}: PDB {name} selects {picked}"


def test_hpas_scale_their_deployment_which_sets_no_replicas(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    # An HPA owns the count: a `replicas:` in the manifest would reset it at every apply.
    target, docs = rendered
    deployments = of_kind(docs, "Deployment")
    scaled = set()
    for name, scaler in of_kind(docs, "HorizontalPodAutoscaler").items():
        ref = scaler["spec"]["scaleTargetRef"]
        assert (ref["apiVersion"], ref["kind"], ref["name"]) == ("apps/v1", "Deployment", name)
        assert name in deployments, f"{target}: HPA {name} scales nothing"
        assert "replicas" not in deployments[name]["spec"], f"{target}: {name} sets replicas"
        scaled.add(name)
    for name in set(deployments) - scaled:
        assert deployments[name]["spec"].get("replicas", 0) >= 1, f"{target}: {name}"


def test_topology_spread_balances_each_component_on_its_own(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    spread = 0
    for name, deployment in of_kind(docs, "Deployment").items():
        for constraint in deployment["spec"]["template"]["spec"].get(
            "topologySpreadConstraints", []
        ):
            picked = selected(constraint["labelSelector"], docs)
            assert picked == {name}, f"{target}: {name}'s spread counts {picked}"
            spread += 1
    if target == "overlays/prod":
        assert spread == 2 * len(of_kind(docs, "Deployment")), "zone and node for each"


def test_network_policies_select_the_pods_they_are_named_for(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    # A policy named `<deployment>-...` is about that Deployment's pods; any other policy is
    # namespace-wide (default deny, metrics) and must select every pod.
    target, docs = rendered
    deployments = set(template_labels(docs))
    for name, policy in of_kind(docs, "NetworkPolicy").items():
        spec = policy["spec"]
        owner = next((d for d in deployments if name.startswith(f"{d}-")), None)
        picked = selected(spec["podSelector"], docs)
        assert picked == ({owner} if owner else deployments), f"{target}: {name} → {picked}"
        for rule in [*spec.get("ingress", []), *spec.get("egress", [])]:
            for peer in [*rule.get("from", []), *rule.get("to", [])]:
                if "podSelector" in peer and "namespaceSelector" not in peer:
                    # A peer in our own namespace that matches no pod is a dead rule.
                    assert selected(peer["podSelector"], docs), f"{target}: {name}: {peer}"


def test_the_pod_monitor_scrapes_every_component(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    monitors = of_kind(docs, "PodMonitor")
    # The monitoring component is optional; production includes it.
    assert monitors or target != "overlays/prod"
    for monitor in monitors.values():
        _check_pod_monitor(monitor, docs)


def _check_pod_monitor(monitor: dict[str, Any], docs: list[dict[str, Any]]) -> None:
    assert selected(monitor["spec"]["selector"], docs) == set(of_kind(docs, "Deployment"))
    for deployment in of_kind(docs, "Deployment").values():
        names = {
            p.get("name")
            for c in deployment["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])
        }
        for endpoint in monitor["spec"]["podMetricsEndpoints"]:
            assert endpoint["port"] in names
