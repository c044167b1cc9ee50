"""Fixtures of the caller CLI's tests: a config file of their own."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the CLI keeps its login in this test (nothing from the environment)."""
    path = tmp_path / "home" / "storypost" / "config.json"
    monkeypatch.setenv("STORYPOST_CONFIG", str(path))
    monkeypatch.delenv("STORYPOST_BASE_URL", raising=False)
    monkeypatch.delenv("STORYPOST_API_TOKEN", raising=False)
    return path
