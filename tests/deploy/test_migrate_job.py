"""The migrate Job of every overlay (base/migrate.yaml, docs/migrations.md): the release's
image and the services' own settings, applied before the Deployments (its label, Argo CD's
PreSync hook), bounded in time, and walled: DNS and MongoDB in the dependencies' namespace,
nothing else."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from storypost_cli.migrate import DEFAULT_TIMEOUT_SECONDS, MigrateSettings
from tests.deploy.k8s_eval import ContainerPort, External, Namespace, Pod, allowed, pods_of
from tests.deploy.rendered import containers, effective_env
from tests.deploy.support import of_kind, render
from tests.deploy.test_network_policies import PRIVATE, PUBLIC, Overlay, dependencies_namespace

OVERLAYS = ("overlays/dev", "overlays/prod")
STEP = "storypost/upgrade-step"
KUBE_SYSTEM = Namespace("kube-system")


@pytest.fixture(scope="module", params=OVERLAYS)
def docs(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, render(request.param)


def job_of(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (job,) = of_kind(docs, "Job").values()
    return job


def test_the_job_runs_the_migrate_command_in_the_release_image(
    docs: tuple[str, list[dict[str, Any]]],
) -> None:
    target, rendered = docs
    job = job_of(rendered)
    (container,) = containers(job)
    (publish,) = containers(of_kind(rendered, "Deployment")["publish-svc"])
    assert container["image"] == publish["image"], target
    assert container["command"][:3] == ["python", "-m", "storypost_cli.migrate"]
    timeout = float(container["command"][container["command"].index("--timeout") + 1])
    assert timeout <= DEFAULT_TIMEOUT_SECONDS
    # The cluster's deadline comes after the command's own: it says where it stopped.
    assert job["spec"]["activeDeadlineSeconds"] > timeout
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    # The services' ConfigMap and their MongoDB URL: it builds the schema they check.
    assert container["envFrom"] == publish["envFrom"]
    mongo = {e["name"]: e for e in publish["env"]}["STORYPOST_MONGO_URL"]
    assert {e["name"]: e for e in container["env"]}["STORYPOST_MONGO_URL"] == mongo


def test_its_settings_are_valid_where_it_runs(
    docs: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    target, rendered = docs
    (container,) = containers(job_of(rendered))
    env = effective_env(rendered, container)
    if env["STORYPOST_MONGO_URL"] == "<secret>":  # production's lives outside the repository
        env["STORYPOST_MONGO_URL"] = "mongodb://mongo.storypost-deps:27017/?replicaSet=rs0"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = MigrateSettings()
    assert settings.environment == ("production" if target.endswith("prod") else "development")


def test_it_is_applied_before_the_deployments_with_what_it_needs(
    docs: tuple[str, list[dict[str, Any]]],
) -> None:
    target, rendered = docs
    job = job_of(rendered)
    assert job["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PreSync"
    early = {
        (d["kind"], d["metadata"]["name"])
        for d in rendered
        if STEP in d["metadata"].get("labels", {})
    }
    pod = job["spec"]["template"]["spec"]
    needs = {
        ("Job", job["metadata"]["name"]),
        ("ServiceAccount", pod["serviceAccountName"]),
        ("NetworkPolicy", "migrate-egress"),
        ("ConfigMap", "storypost-config"),
    }
    if of_kind(rendered, "Secret"):  # development's Secret is generated here
        needs.add(("Secret", "storypost-secrets"))
    assert early == needs, target
    assert not [kind for kind, _ in early if kind in ("Deployment", "HorizontalPodAutoscaler")]


def test_it_reaches_mongodb_and_dns_only(docs: tuple[str, list[dict[str, Any]]]) -> None:
    target, rendered = docs
    policies = list(of_kind(rendered, "NetworkPolicy").values())
    namespace = Namespace(job_of(rendered)["metadata"]["namespace"])
    labels = job_of(rendered)["spec"]["template"]["metadata"]["labels"]
    pod = Pod("migrate", namespace, dict(labels), (), ipaddress.ip_address("10.244.1.99"))
    overlay = Overlay(target, rendered, namespace, {}, [])
    deps = dependencies_namespace(overlay)
    mongo = Pod("mongo", deps, {"app": "mongo"}, (ContainerPort(27017),))
    assert allowed(policies, pod, mongo, 27017), target
    dns = Pod("coredns", KUBE_SYSTEM, {"k8s-app": "kube-dns"}, (ContainerPort(53, "dns", "UDP"),))
    assert allowed(policies, pod, dns, 53, "UDP") and allowed(policies, pod, dns, 53, "TCP")
    # Not NATS, not another port of the dependencies, not a storypost pod, not outside.
    for port in (4222, 8333, 9333):
        assert not allowed(policies, pod, mongo, port), (target, port)
    for other in pods_of(rendered, namespace, "10.244.1.10").values():
        for port in [p.number for p in other.ports] or [80]:
            assert not allowed(policies, pod, other, port), (target, other.name, port)
    for address in (*PRIVATE, *PUBLIC):
        assert not allowed(policies, pod, External(ipaddress.ip_address(address)), 27017)
        assert not allowed(policies, pod, External(ipaddress.ip_address(address)), 443)
