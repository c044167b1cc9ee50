"""pyproject.toml's requirements, extras resolved, and requirements.lock's pins, for the tests of
the installs (test_dependency_bounds.py, test_declared_imports.py)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from scripts.images.wheelhouse import TARGET, flatten

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"


@cache
def project() -> Mapping[str, Any]:
    project: Mapping[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


@cache
def client_project() -> Mapping[str, Any]:
    client: Mapping[str, Any] = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())[
        "project"
    ]
    return client


def requirements(extras: Iterable[str]) -> list[Requirement]:
    """storypost's own requirements plus those of `extras`, `storypost[...]` resolved (as the
    images' wheelhouse resolves them)."""
    return [Requirement(r) for r in flatten(project(), extras)]


def every_requirement() -> list[Requirement]:
    """Every requirement a `make venv` installs: all extras, the SDK's, the build backend's."""
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    return [
        *requirements(project()["optional-dependencies"]),
        *(Requirement(r) for r in client_project()["dependencies"]),
        *(Requirement(r) for e in client_project()["optional-dependencies"].values() for r in e),
        *(Requirement(r) for r in build),
    ]


def names(found: Iterable[Requirement]) -> set[NormalizedName]:
    return {canonicalize_name(r.name) for r in found}


def lowest_allowed(requirement: Requirement) -> Version | None:
    """The lowest version `requirement` allows, from its >=, >, == and ~= clauses."""
    bounds = [
        Version(spec.version)
        for spec in requirement.specifier
        if spec.operator in {">=", ">", "==", "~=", "==="} and "*" not in spec.version
    ]
    return max(bounds, default=None)


def lower_bound(name: str) -> Version | None:
    """The lowest version of `name` that some extra of pyproject.toml still allows (None: one
    requirement of it has no lower bound)."""
    wanted = canonicalize_name(name)
    found = [r for r in every_requirement() if canonicalize_name(r.name) == wanted]
    assert found, f"pyproject.toml does not require {name} at all"
    bounds = [lowest_allowed(r) for r in found]
    if any(bound is None for bound in bounds):
        return None
    return min(bound for bound in bounds if bound is not None)


@dataclass(frozen=True)
class Pin:
    name: NormalizedName
    version: Version
    marker: Marker | None
    hashes: tuple[str, ...]

    def applies(self) -> bool:
        return self.marker is None or self.marker.evaluate(dict(TARGET))


PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)")


@cache
def locked() -> dict[NormalizedName, list[Pin]]:
    """requirements.lock, each package's pins (one per marker)."""
    text = re.sub(r"\\\n", " ", LOCK.read_text())
    pins: dict[NormalizedName, list[Pin]] = {}
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        hashes = tuple(re.findall(r"--hash=(sha256:[0-9a-f]{64})", line))
        requirement, _, marker = re.sub(r"--hash=\S+", "", line).partition(";")
        match = PIN.fullmatch(requirement.strip())
        assert match, f"requirements.lock: not an exact pin: {line[:120]}"
        pin = Pin(
            name=canonicalize_name(match.group("name")),
            version=Version(match.group("version")),
            marker=Marker(marker.strip()) if marker.strip() else None,
            hashes=hashes,
        )
        pins.setdefault(pin.name, []).append(pin)
    return pins


def locked_version(name: str) -> Version | None:
    """The version requirements.lock installs on the target machines."""
    for pin in locked().get(canonicalize_name(name), []):
        if pin.applies():
            return pin.version
    return None
