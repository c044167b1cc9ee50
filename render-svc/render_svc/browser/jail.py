"""Chromium in a network namespace of its own: no interface but a loopback that is down.

Pages get everything they load from render-svc through Playwright's routes (the DevTools
pipe, not the network). What Chromium would send by itself, around the routes (beacons,
prefetches and preconnects, WebRTC's STUN/TURN over UDP and TCP, QUIC, its own DNS), has
no network to go to: the kernel refuses it, whatever the page does. This file is run
(`python -I jail.py CHROMIUM ARGS…`, standard library only) as the browser's executable
through a small wrapper script, so the namespace is made before Chromium's first
instruction and every process Chromium starts inherits it.

A user namespace comes with it, which makes the network namespace possible without
privilege and lets Chromium's own sandbox (its nested user, PID and network namespaces and
seccomp-bpf for renderers) stay on. Inside, the browser runs as a non-root user
(`INSIDE_ID` when render-svc runs as root), because Chromium refuses its sandbox as root.
Containers need user namespaces allowed: the Docker/Kubernetes default seccomp profiles
refuse `unshare(CLONE_NEWUSER)`; deploy/k8s/components/render-seccomp/render-svc.json allows it
(docs/render.md).
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from pathlib import Path

# The id the browser has inside its user namespace when render-svc runs as root.
INSIDE_ID = 10001
# Exit status when the namespace cannot be made: the launch fails with the reason on stderr.
EXIT_NO_NAMESPACE = 71
PROBE = "--probe"


def enter() -> None:
    """Moves this process into new user and network namespaces (raises OSError if refused)."""
    uid, gid = os.getuid(), os.getgid()
    os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNET)
    # One id mapped each way: the files of the browser's profile stay owned by render-svc.
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid or INSIDE_ID} {uid} 1\n")
    Path("/proc/self/gid_map").write_text(f"{gid or INSIDE_ID} {gid} 1\n")


# Switches whose values are lists Chromium reads from their last occurrence only.
LIST_SWITCHES = ("--disable-features=", "--enable-features=")


def merge_feature_lists(argv: list[str]) -> list[str]:
    """One `--disable-features` and one `--enable-features`, each holding every value given.

    Playwright passes lists of its own and render-svc adds to them (pool.BASE_ARGS); Chromium
    would keep only the last occurrence and silently drop the others' features. The merged
    switch stands where the first occurrence stood."""
    merged: dict[str, list[str]] = {}
    out: list[str] = []
    for arg in argv:
        prefix = next((p for p in LIST_SWITCHES if arg.startswith(p)), None)
        if prefix is None:
            out.append(arg)
            continue
        if prefix not in merged:
            merged[prefix] = []
            out.append(prefix)  # a placeholder, filled below
        for name in arg[len(prefix) :].split(","):
            if name and name not in merged[prefix]:
                merged[prefix].append(name)
    return [arg + ",".join(merged[arg]) if arg in merged else arg for arg in out]


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: jail.py (--probe | CHROMIUM [ARGS…])", file=sys.stderr)
        return 2
    try:
        enter()
    except OSError as error:
        print(
            "render sandbox: cannot create a network namespace for the browser "
            f"(unshare(CLONE_NEWUSER|CLONE_NEWNET): {error}). User namespaces must be "
            "allowed: kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0, and "
            "in a container the seccomp profile "
            "deploy/k8s/components/render-seccomp/render-svc.json",
            file=sys.stderr,
        )
        return EXIT_NO_NAMESPACE
    if argv[0] == PROBE:
        return 0
    # The browser replaces this process: Playwright's pipe and pid stay what they were.
    argv = merge_feature_lists(argv)
    os.execv(argv[0], argv)  # noqa: S606


def command(*argv: str) -> list[str]:
    """The command line that runs `argv` (a program, or PROBE) jailed by this file."""
    return [sys.executable, "-I", str(Path(__file__).resolve()), *argv]


def wrapper(chromium: str, directory: Path) -> Path:
    """Writes the executable Playwright launches: Chromium started by this file, jailed."""
    script = directory / "chromium-jailed"
    script.write_text(f'#!/bin/sh\nexec {shlex.join(command(chromium))} "$@"\n')
    script.chmod(0o700)
    return script


def private_directory() -> Path:
    return Path(tempfile.mkdtemp(prefix="storypost-browser-"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
