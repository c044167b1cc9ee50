"""render-svc's seccomp profile (components/render-seccomp): an allow list, installed by the
Security Profiles Operator, used by the render-svc pod of every overlay, and the same profile
Docker runs render-svc under in the container suite.

The profile is kept twice, in the two formats its consumers read: render-svc.json (Docker's
`--security-opt seccomp=`, nodes installed by hand) and seccompprofile.yaml (the operator's
SeccompProfile); they must say the same thing."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.deploy.support import KUSTOMIZE, of_kind, render

COMPONENT = KUSTOMIZE / "components" / "render-seccomp"
PROFILE_JSON = COMPONENT / "render-svc.json"
PROFILE_CR = COMPONENT / "seccompprofile.yaml"
OVERLAYS = ("overlays/dev", "overlays/prod")
API_VERSION = "security-profiles-operator.x-k8s.io/v1beta1"
# What the operator's SeccompProfile v1beta1 spec knows (its CRD; unknown fields are dropped
# or refused there, so a field of Docker's format alone would be lost).
SPEC_FIELDS = {
    "defaultAction",
    "architectures",
    "syscalls",
    "flags",
    "baseProfileName",
    "listenerPath",
    "listenerMetadata",
}
SYSCALL_FIELDS = {"names", "action", "errnoRet", "args"}
ARG_FIELDS = {"index", "value", "valueTwo", "op"}
ACTIONS = {
    "SCMP_ACT_KILL",
    "SCMP_ACT_KILL_PROCESS",
    "SCMP_ACT_KILL_THREAD",
    "SCMP_ACT_TRAP",
    "SCMP_ACT_ERRNO",
    "SCMP_ACT_TRACE",
    "SCMP_ACT_ALLOW",
    "SCMP_ACT_LOG",
    "SCMP_ACT_NOTIFY",
}
# The browser's jail (unshare(CLONE_NEWUSER|CLONE_NEWNET)) and Chromium's namespace sandbox
# (clone with namespace flags, chroot into an empty directory): what RuntimeDefault refuses.
SANDBOX = {"unshare", "clone", "chroot"}
# What any process of the image needs (a sample of RuntimeDefault's list: Python, Chromium,
# ffmpeg, tini).
ORDINARY = {
    "read",
    "write",
    "openat",
    "close",
    "mmap",
    "mprotect",
    "munmap",
    "brk",
    "futex",
    "execve",
    "exit_group",
    "wait4",
    "rt_sigaction",
    "rt_sigprocmask",
    "epoll_wait",
    "epoll_pwait",
    "connect",
    "sendmsg",
    "recvmsg",
    "getrandom",
    "prctl",
    "seccomp",
    "memfd_create",
    "set_robust_list",
    "rseq",
    "statx",
    "newfstatat",
    "pipe2",
    "setpriority",
}
# Never allowed, whatever the arguments: kernel attack surface render-svc and Chromium have no
# use for (the user namespace makes some of them reachable without a capability).
NEVER = {
    "mount",
    "umount2",
    "fsopen",
    "fsmount",
    "move_mount",
    "open_tree",
    "pivot_root",
    "setns",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "open_by_handle_at",
    "reboot",
    "swapon",
    "acct",
    "syslog",
    "settimeofday",
    "clock_settime",
}


def profile_json() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(PROFILE_JSON.read_text())
    return loaded


def allowed_names(profile: dict[str, Any]) -> set[str]:
    """Every syscall some rule allows (with or without argument conditions)."""
    return {
        name
        for rule in profile["syscalls"]
        if rule["action"] == "SCMP_ACT_ALLOW"
        for name in rule["names"]
    }


def test_the_profile_is_an_allow_list() -> None:
    profile = profile_json()
    # Whatever is not named fails with an error (EPERM): never "allow, except".
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    assert {"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"} <= set(profile["architectures"])
    for rule in profile["syscalls"]:
        assert rule["action"] in {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO"}, rule
        assert rule["names"], rule
    allowed = allowed_names(profile)
    assert allowed >= ORDINARY, ORDINARY - allowed
    assert allowed >= SANDBOX, SANDBOX - allowed
    assert not NEVER & allowed, NEVER & allowed
    # socket for every family but AF_VSOCK (40), as Docker's default.
    (socket,) = [r for r in profile["syscalls"] if "socket" in r["names"]]
    assert socket["args"] == [{"index": 0, "value": 40, "op": "SCMP_CMP_NE"}]
    # clone3's flags are out of a filter's reach: ENOSYS, and the C library uses clone.
    (clone3,) = [r for r in profile["syscalls"] if "clone3" in r["names"]]
    assert clone3 == {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}
    # Each name once: a later rule for a name would be ambiguous to read.
    plain = [n for r in profile["syscalls"] if "args" not in r for n in r["names"]]
    assert len(plain) == len(set(plain)), "a syscall named twice"
    assert "comment" in profile and any("moby" in line for line in profile["comment"])


def test_the_operators_profile_is_the_same_profile() -> None:
    (cr,) = [d for d in yaml.safe_load_all(PROFILE_CR.read_text()) if d]
    assert cr["apiVersion"] == API_VERSION and cr["kind"] == "SeccompProfile"
    assert cr["metadata"]["name"] == "render-svc"
    spec = cr["spec"]
    assert set(spec) <= SPEC_FIELDS, set(spec) - SPEC_FIELDS
    for rule in spec["syscalls"]:
        assert set(rule) <= SYSCALL_FIELDS, rule
        assert rule["action"] in ACTIONS, rule
        for arg in rule.get("args", []):
            assert set(arg) <= ARG_FIELDS, arg
    docker = {k: v for k, v in profile_json().items() if k != "comment"}
    assert spec == docker, "seccompprofile.yaml and render-svc.json differ"


@pytest.mark.parametrize("target", OVERLAYS)
def test_each_overlay_installs_the_profile_and_render_svc_uses_it(target: str) -> None:
    docs = render(target)
    (profile,) = [d for d in docs if d["kind"] == "SeccompProfile"]
    assert profile["apiVersion"] == API_VERSION
    namespace, name = profile["metadata"]["namespace"], profile["metadata"]["name"]
    pod = of_kind(docs, "Deployment")["render-svc"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["seccompProfile"] == {
        "type": "Localhost",
        # Where the operator writes a namespaced profile on every node.
        "localhostProfile": f"operator/{namespace}/{name}.json",
    }, target
    assert namespace == of_kind(docs, "Deployment")["render-svc"]["metadata"]["namespace"]
    # No container overrides the pod's profile with a weaker one.
    for container in pod["containers"]:
        assert "seccompProfile" not in container.get("securityContext", {}), target


def test_the_container_suite_runs_render_svc_under_the_same_profile() -> None:
    from storypost.testing.containers import render_seccomp_profile

    assert json.loads(render_seccomp_profile()) == profile_json()
