"""The embedded MongoDB launcher runs only on the mongoeco its patches were written for."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from storypost_cli import embedded_mongo
from storypost_cli.embedded_mongo import (
    MONGOECO_VERSION,
    MongoecoVersionError,
    check_mongoeco_version,
    server,
)


def test_the_installed_mongoeco_is_the_one_the_patches_are_for() -> None:
    assert check_mongoeco_version() == MONGOECO_VERSION
    assert importlib.metadata.version("mongoeco") == MONGOECO_VERSION


def test_another_version_is_refused_naming_both() -> None:
    with pytest.raises(MongoecoVersionError) as refused:
        check_mongoeco_version("4.12.0")
    message = str(refused.value)
    assert f"needs mongoeco {MONGOECO_VERSION} exactly, found 4.12.0" in message
    assert "make venv" in message and "make lock" in message


def test_the_launcher_exits_before_patching_anything_on_another_version(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def installed(name: str) -> str:
        assert name == "mongoeco"
        return "4.10.2"

    def must_not_run(path: Path) -> None:
        raise AssertionError("a patch was applied to an unchecked mongoeco")

    monkeypatch.setattr(importlib.metadata, "version", installed)
    monkeypatch.setattr(server, "apply_patches", must_not_run)
    code = embedded_mongo.main(["--path", str(tmp_path / "db.sqlite"), "--port", "0"])
    assert code == 2
    error = capsys.readouterr().err
    assert MONGOECO_VERSION in error and "found 4.10.2" in error
    assert not (tmp_path / "db.sqlite").exists()


def test_a_missing_mongoeco_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(MongoecoVersionError, match=f"needs mongoeco {MONGOECO_VERSION}, and none"):
        check_mongoeco_version()
