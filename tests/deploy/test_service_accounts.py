"""One ServiceAccount per component, none with a token mounted, and a cloud identity (S3
through workload identity) only on render-svc's and publish-svc's (docs/deploy-kubernetes.md)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.support import of_kind, render

TARGETS = ("base", "overlays/dev", "overlays/prod")
# The components allowed an S3 role.
S3_USERS = {"render-svc", "publish-svc"}
# Annotations (and prefixes) that bind a ServiceAccount to a cloud identity.
CLOUD_IDENTITY = (
    "eks.amazonaws.com/",
    "iam.gke.io/",
    "azure.workload.identity/",
)


@pytest.fixture(scope="module", params=TARGETS)
def rendered(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, render(request.param)


def test_each_component_runs_as_its_own_service_account(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    accounts = of_kind(docs, "ServiceAccount")
    used: dict[str, str] = {}
    # The Deployments' pods and the migrate Job's.
    workloads = of_kind(docs, "Deployment") | of_kind(docs, "Job")
    for name, deployment in workloads.items():
        pod = deployment["spec"]["template"]["spec"]
        account = pod["serviceAccountName"]
        assert account == f"storypost-{name}", (target, name)
        assert account in accounts, f"{target}: {name} runs as {account}, which no manifest makes"
        assert account not in used, f"{target}: {name} and {used[account]} share {account}"
        used[account] = name
        assert pod["automountServiceAccountToken"] is False, (target, name)
    # No account left over that no component uses (the old shared `storypost` one).
    assert set(accounts) == set(used), target


def test_no_service_account_mounts_a_token(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    target, docs = rendered
    for name, account in of_kind(docs, "ServiceAccount").items():
        assert account.get("automountServiceAccountToken") is False, (target, name)
        assert not account.get("secrets"), (target, name)


def test_only_render_svc_and_publish_svc_may_hold_a_cloud_identity(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    target, docs = rendered
    for name, account in of_kind(docs, "ServiceAccount").items():
        component = account["metadata"]["labels"]["app.kubernetes.io/name"]
        assert name == f"storypost-{component}", (target, name)
        annotations = account["metadata"].get("annotations") or {}
        identity = [key for key in annotations if key.startswith(CLOUD_IDENTITY)]
        if component not in S3_USERS:
            assert not identity, f"{target}: {name} holds a cloud identity: {identity}"
    # Nor through the pod: azure's label, GKE's annotation on a pod template.
    for name, deployment in of_kind(docs, "Deployment").items():
        if name in S3_USERS:
            continue
        metadata = deployment["spec"]["template"]["metadata"]
        keys = [*(metadata.get("labels") or {}), *(metadata.get("annotations") or {})]
        assert not [k for k in keys if k.startswith(CLOUD_IDENTITY)], (target, name)
