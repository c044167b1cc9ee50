"""Every pod of every overlay meets Pod Security's `restricted` profile, which the overlays'
namespaces enforce (pod-security.kubernetes.io/enforce: restricted): a pod that did not would
be refused by the API server at its first rollout, not here.

The rules are Pod Security Standards' (kubernetes.io/docs/concepts/security/pod-security-standards,
baseline and restricted, as of v1.32), checked on the rendered pod templates."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.deploy.support import of_kind, render

TARGETS = ("base", "overlays/dev", "overlays/prod")
OVERLAY_NAMESPACES = {"overlays/dev": "storypost-dev", "overlays/prod": "storypost"}
ENFORCE_VERSION = "v1.32"
# restricted: only these volume types.
VOLUME_TYPES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
# baseline: the sysctls a pod may set.
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}
SELINUX_TYPES = {"container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")


def pod_templates(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`Kind/name` → its pod spec, for every object that makes pods."""
    found: dict[str, dict[str, Any]] = {}
    for doc in docs:
        kind, name = doc["kind"], doc["metadata"]["name"]
        if kind in WORKLOADS:
            found[f"{kind}/{name}"] = doc["spec"]["template"]["spec"]
        elif kind == "CronJob":
            found[f"{kind}/{name}"] = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        elif kind == "Pod":
            found[f"{kind}/{name}"] = doc["spec"]
    return found


def violations(pod: dict[str, Any]) -> list[str]:
    """What of `restricted` (baseline included) this pod spec breaks; empty: admitted."""
    found: list[str] = []
    security = pod.get("securityContext") or {}
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            found.append(f"{key}: true")
    if (security.get("windowsOptions") or {}).get("hostProcess"):
        found.append("hostProcess")
    for volume in pod.get("volumes") or []:
        types = set(volume) - {"name"}
        if not types <= VOLUME_TYPES:
            found.append(f"volume {volume['name']}: {sorted(types - VOLUME_TYPES)}")
    for sysctl in security.get("sysctls") or []:
        if sysctl["name"] not in SAFE_SYSCTLS:
            found.append(f"sysctl {sysctl['name']}")
    found += _selinux(security, "pod")
    found += _apparmor(security, "pod")
    containers = [
        *pod.get("initContainers", []),
        *pod.get("containers", []),
        *pod.get("ephemeralContainers", []),
    ]
    pod_seccomp = (security.get("seccompProfile") or {}).get("type")
    for container in containers:
        name = container["name"]
        own = container.get("securityContext") or {}
        if own.get("privileged"):
            found.append(f"{name}: privileged")
        if (own.get("windowsOptions") or {}).get("hostProcess"):
            found.append(f"{name}: hostProcess")
        if own.get("procMount", "Default") != "Default":
            found.append(f"{name}: procMount {own['procMount']}")
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                found.append(f"{name}: hostPort {port['hostPort']}")
        found += _selinux(own, name)
        found += _apparmor(own, name)
        # restricted:
        if own.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation is not false")
        capabilities = own.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            found.append(f"{name}: capabilities do not drop ALL")
        added = set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}
        if added:
            found.append(f"{name}: adds capabilities {sorted(added)}")
        non_root = own.get("runAsNonRoot", security.get("runAsNonRoot"))
        if non_root is not True:
            found.append(f"{name}: runAsNonRoot is not true")
        for context in (security, own):
            if context.get("runAsUser") == 0:
                found.append(f"{name}: runAsUser 0")
        seccomp = (own.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccompProfile {seccomp}")
    return found


def _selinux(context: dict[str, Any], where: str) -> list[str]:
    options = context.get("seLinuxOptions") or {}
    found = []
    if options.get("type", "") not in {"", *SELINUX_TYPES}:
        found.append(f"{where}: seLinuxOptions.type {options['type']}")
    for key in ("user", "role"):
        if options.get(key):
            found.append(f"{where}: seLinuxOptions.{key}")
    return found


def _apparmor(context: dict[str, Any], where: str) -> list[str]:
    kind = (context.get("appArmorProfile") or {}).get("type", "RuntimeDefault")
    return [] if kind in ("RuntimeDefault", "Localhost") else [f"{where}: appArmor {kind}"]


@pytest.mark.parametrize("target", TARGETS)
def test_every_pod_meets_the_restricted_profile(target: str) -> None:
    pods = pod_templates(render(target))
    assert {f"Deployment/{n}" for n in ("edge", "render-svc", "webhook-svc")} <= set(pods)
    broken = {name: found for name, pod in pods.items() if (found := violations(pod))}
    assert not broken, f"{target}: refused by `restricted`: {broken}"


@pytest.mark.parametrize("target", sorted(OVERLAY_NAMESPACES))
def test_the_overlays_namespace_enforces_the_restricted_profile(target: str) -> None:
    docs = render(target)
    name = OVERLAY_NAMESPACES[target]
    namespace = of_kind(docs, "Namespace")[name]
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted", target
    assert labels["pod-security.kubernetes.io/enforce-version"] == ENFORCE_VERSION, target
    # The workloads go there (not to a namespace no Pod Security label covers).
    for pod_name in pod_templates(docs):
        kind, _, short = pod_name.partition("/")
        assert of_kind(docs, kind)[short]["metadata"]["namespace"] == name, pod_name


def test_every_namespace_an_overlay_names_is_created_by_it() -> None:
    # The dev overlay's dependencies live in `storypost-deps`: its addresses and policies name
    # it, and a manifest of the overlay creates it.
    docs = render("overlays/dev")
    namespaces = of_kind(docs, "Namespace")
    assert {"storypost-dev", "storypost-deps"} <= set(namespaces)
    named = {
        peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        for policy in of_kind(docs, "NetworkPolicy").values()
        for rule in policy["spec"].get("egress") or []
        for peer in rule.get("to") or []
        if "namespaceSelector" in peer and peer.get("podSelector") is None
    }
    assert named == {"storypost-deps"}, named


GOOD: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "app",
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
            },
        }
    ],
    "volumes": [{"name": "tmp", "ephemeral": {"volumeClaimTemplate": {}}}],
}


def _with(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    pod = copy.deepcopy(GOOD)
    target: Any = pod
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return pod


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("hostNetwork",), True),
        (("hostPID",), True),
        (("volumes", 0), {"name": "host", "hostPath": {"path": "/"}}),
        (("securityContext", "runAsNonRoot"), False),
        (("securityContext", "runAsUser"), 0),
        (("securityContext", "seccompProfile"), {"type": "Unconfined"}),
        (("containers", 0, "securityContext", "allowPrivilegeEscalation"), True),
        (("containers", 0, "securityContext", "capabilities"), {"drop": ["NET_RAW"]}),
        (("containers", 0, "securityContext", "capabilities", "add"), ["SYS_ADMIN"]),
        (("containers", 0, "securityContext", "privileged"), True),
        (("containers", 0, "ports"), [{"containerPort": 80, "hostPort": 80}]),
    ],
)
def test_the_check_refuses_what_restricted_refuses(path: tuple[str | int, ...], value: Any) -> None:
    assert violations(GOOD) == []
    assert violations(_with(path, value)), (path, value)
