"""Which images a container stack runs, and whether a Docker engine answers."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

DepsMode = Literal["auto", "embedded", "containers"]
# "production": containers in the production shape (replicas, production keys; docs/deploy.md).
StackMode = Literal["processes", "containers", "production"]
# STORYPOST_IMAGES: `local` forces our dependency images, `upstream` the official ones,
# `auto` (default) takes an official image that is present or can be pulled, else ours.
ImagesMode = Literal["auto", "local", "upstream"]

DEPENDENCIES = ("mongo", "nats", "s3")
# Component of the stack → our image (deploy/docker/<image>.Dockerfile).
OUR_IMAGES = {
    "mongo": "mongoeco",
    "nats": "nats",
    "s3": "seaweedfs",
    "account": "account-svc",
    "render": "render-svc",
    "publish": "publish-svc",
    "webhook": "webhook-svc",
    "sandbox": "sandbox-net",
    "edge": "edge",
}
UPSTREAM_DEFAULTS = {"mongo": "mongo:7", "nats": "nats:2.10", "s3": "chrislusf/seaweedfs:latest"}
# The image that holds the stack's network namespace: the base every image of ours is built on.
POD_IMAGE = "debian:trixie-slim"
PULL_SECONDS = 120


class ImageError(Exception):
    """An image the stack needs is not there and cannot be had."""


def storypost_version() -> str:
    return importlib.metadata.version("storypost")


def our_image(component: str, version: str | None = None) -> str:
    return f"storypost/{OUR_IMAGES[component]}:{version or storypost_version()}"


def upstream_image(component: str) -> str:
    """The official image of a dependency; STORYPOST_TEST_<MONGO|NATS|S3>_IMAGE overrides it."""
    return os.environ.get(f"STORYPOST_TEST_{component.upper()}_IMAGE", UPSTREAM_DEFAULTS[component])


def images_mode() -> ImagesMode:
    value = os.environ.get("STORYPOST_IMAGES", "auto").strip().lower() or "auto"
    if value not in ("auto", "local", "upstream"):
        raise ImageError(f"STORYPOST_IMAGES={value!r}: expected auto, local or upstream")
    return value  # type: ignore[return-value]


def docker_client(timeout: int = 10) -> Any:
    """A docker-py client for DOCKER_HOST (or the default socket); raises when none answers."""
    import docker

    client = docker.from_env(timeout=timeout)
    try:
        client.ping()
    except Exception:
        client.close()
        raise
    return client


def docker_answers() -> bool:
    """True when a Docker engine answers at DOCKER_HOST (or the default socket)."""
    try:
        client = docker_client(timeout=3)
    except Exception:
        return False
    client.close()
    return True


def _present(client: Any, image: str) -> bool:
    import docker.errors

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True


def _pull(client: Any, image: str) -> bool:
    with contextlib.suppress(Exception):
        client.api.pull(image, timeout=PULL_SECONDS)
        return True
    return False


@dataclass(frozen=True)
class StackImages:
    """The image of each component, and whether a dependency runs our image or the official."""

    by_component: dict[str, str]
    upstream: frozenset[str]

    def describe(self) -> str:
        return ", ".join(f"{c}={image}" for c, image in self.by_component.items())


def choose_images(client: Any, components: Collection[str], *, pod: bool = False) -> StackImages:
    """Resolves every component's image (and the pod's, for a bridge network); fails naming
    what is missing and how to build it."""
    mode = images_mode()
    chosen: dict[str, str] = {}
    upstream: set[str] = set()
    missing: list[str] = []
    for component in components:
        if component in DEPENDENCIES and mode != "local":
            official = upstream_image(component)
            if _present(client, official) or _pull(client, official):
                chosen[component] = official
                upstream.add(component)
                continue
            if mode == "upstream":
                missing.append(f"{official} (STORYPOST_IMAGES=upstream; cannot be pulled)")
                continue
        ours = our_image(component)
        if _present(client, ours):
            chosen[component] = ours
        else:
            missing.append(ours)
    if pod and not _present(client, POD_IMAGE):
        missing.append(POD_IMAGE)
    if missing:
        raise ImageError(
            f"missing images: {', '.join(missing)}; build them with `make images`"
            " (scripts/images/build.sh)"
        )
    return StackImages(chosen, frozenset(upstream))
